package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/framework"
)

// StopTimeout is how long Stop (and the automatic stop at cleanup) waits
// after SIGTERM before sending SIGKILL.
const StopTimeout = 15 * time.Second

// logTailBytes is how much of a process log is dumped on test failure.
const logTailBytes = 64 << 10

// ErrWaitTimeout is returned by WaitTimeout when the process is still running.
var ErrWaitTimeout = errors.New("harness: process still running")

// ProcOptions are the optional settings of StartProcessWith.
type ProcOptions struct {
	// Env is added to the test's environment (KEY=value entries).
	Env []string
	// Dir is the working directory (default: the test's working directory).
	Dir string
	// Name prefixes the log file and the log dump (default: base name of bin).
	Name string
}

// Proc is a process started by StartProcess. Its stdout and stderr go to
// LogPath, a file in the test's temporary directory.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string

	done    chan struct{} // closed when the process has been waited for
	waitErr error         // valid after done is closed

	stopOnce sync.Once
	stopErr  error

	// mu guards signalled and cleaning: an exit the test did not cause
	// (no signal sent) is reported in the test log as it happens, which
	// must not happen once the test's cleanup began.
	mu        sync.Mutex
	signalled bool
	cleaning  bool
}

// StartProcess starts bin with args; see StartProcessWith.
func StartProcess(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	return StartProcessWith(t, ProcOptions{}, bin, args...)
}

// StartProcessWith starts bin with args, stdout and stderr appended to a
// log file in t.TempDir(). At cleanup the process is stopped (SIGTERM, then
// SIGKILL after StopTimeout) and, if the test failed, the tail of its log is
// written to the test log. On Linux the process also gets SIGKILL if the
// test binary dies, so no server outlives a crashed test run.
func StartProcessWith(t testing.TB, opts ProcOptions, bin string, args ...string) *Proc {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = filepath.Base(bin)
	}
	logFile, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = opts.Dir
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("harness: start %s: %v", bin, err)
	}
	// The child holds its own descriptor now.
	logFile.Close()

	p := &Proc{Name: name, Cmd: cmd, LogPath: logFile.Name(), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
		p.reportUnexpectedExit(t)
	}()
	t.Logf("harness: started %s (pid %d): %s %s; log %s", name, cmd.Process.Pid, bin, strings.Join(args, " "), p.LogPath)
	t.Cleanup(func() {
		p.mu.Lock()
		p.cleaning = true
		p.mu.Unlock()
		exitedEarly := p.Exited()
		err := p.Stop()
		if t.Failed() {
			state := "stopped at cleanup"
			if exitedEarly {
				state = "had exited before cleanup"
			}
			t.Logf("harness: %s (pid %d) %s, exit: %v\n----- %s log (%s) -----\n%s----- end of %s log -----",
				name, cmd.Process.Pid, state, describeExit(p.waitErr), name, p.LogPath, p.logTail(logTailBytes), name)
		} else if err != nil && !exitedEarly {
			t.Logf("harness: stopping %s: %v", name, err)
		}
	})
	return p
}

// exitReportBytes is how much of the log an unexpected exit reports at once
// (the full tail follows at cleanup if the test fails; a CI summary may
// show only the first lines of a failed test's output).
const exitReportBytes = 2 << 10

// reportUnexpectedExit logs, while the test runs, an exit no signal of the
// test caused: a crash or a fatal error shows where it happened in the
// test's log, before whatever failure it leads to.
func (p *Proc) reportUnexpectedExit(t testing.TB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signalled || p.cleaning {
		return
	}
	t.Logf("harness: %s (pid %d) exited on its own: %v; end of its log:\n%s", p.Name, p.Cmd.Process.Pid, describeExit(p.waitErr), p.logTail(exitReportBytes))
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait blocks until the process exits and returns its exit error (nil for
// exit status 0; an *exec.ExitError otherwise).
func (p *Proc) Wait() error {
	<-p.done
	return p.waitErr
}

// WaitTimeout is Wait bounded by d; it returns ErrWaitTimeout if the process
// is still running then.
func (p *Proc) WaitTimeout(d time.Duration) error {
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(d):
		return ErrWaitTimeout
	}
}

// Signal sends sig to the process (no-op once it has exited).
func (p *Proc) Signal(sig os.Signal) error {
	if p.Exited() {
		return nil
	}
	if sig != syscall.SIGSTOP && sig != syscall.SIGCONT {
		p.mu.Lock()
		p.signalled = true // an exit from now on may be the test's doing
		p.mu.Unlock()
	}
	err := p.Cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Stop stops the process gracefully: SIGTERM, then SIGKILL if it has not
// exited after StopTimeout. It returns the exit error, except that exiting
// because of our SIGTERM counts as success. Calling it again returns the
// first result.
func (p *Proc) Stop() error {
	p.stopOnce.Do(func() {
		if p.Exited() {
			p.stopErr = p.waitErr
			return
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			p.stopErr = err
			return
		}
		if err := p.WaitTimeout(StopTimeout); err == ErrWaitTimeout {
			p.Signal(syscall.SIGKILL)
			<-p.done
			p.stopErr = fmt.Errorf("harness: %s did not exit within %v of SIGTERM; killed", p.Name, StopTimeout)
			return
		}
		p.stopErr = p.waitErr
		if signalled(p.waitErr, syscall.SIGTERM) {
			p.stopErr = nil
		}
	})
	return p.stopErr
}

// Kill sends SIGKILL and waits for the process to be gone (a crash, as far
// as the process is concerned).
func (p *Proc) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Logs returns everything the process wrote to stdout and stderr so far.
func (p *Proc) Logs() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("<cannot read %s: %v>", p.LogPath, err)
	}
	return string(b)
}

// WaitTCP waits until addr accepts connections, failing the test (with the
// process log) if the process exits first or timeout passes.
func (p *Proc) WaitTCP(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	if err := waitTCP(addr, timeout, p.done); err != nil {
		t.Fatalf("harness: %s: %v (exit: %v)\n----- %s log -----\n%s", p.Name, err, describeExit(p.exitErrIfDone()), p.Name, p.logTail(logTailBytes))
	}
}

func (p *Proc) exitErrIfDone() error {
	if p.Exited() {
		return p.waitErr
	}
	return errors.New("still running")
}

func (p *Proc) logTail(n int64) string { return framework.FileTail(p.LogPath, n) }

// signalled reports whether err is an exit caused by sig.
func signalled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
