package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "mqadmin-java.sh")); err != nil {
		t.Fatal(err)
	}
}

func TestFreePort(t *testing.T) {
	p1, p2 := FreePort(t), FreePort(t)
	if p1 <= 0 || p1 > 65535 || p2 <= 0 {
		t.Fatalf("ports %d %d", p1, p2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p1))
	if err != nil {
		t.Fatalf("port %d not usable: %v", p1, err)
	}
	defer ln.Close()
	WaitTCP(t, ln.Addr().String(), 2*time.Second)
}

func TestWaitTCPGivesUpWhenProcessExits(t *testing.T) {
	p := StartProcess(t, "/bin/true")
	addr := FreeAddr(t)
	start := time.Now()
	if err := waitTCP(addr, 10*time.Second, p.Done()); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitTCP = %v, want a process-exited error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("waitTCP took %v after the process exited", time.Since(start))
	}
}

func TestStartProcessTrue(t *testing.T) {
	p := StartProcess(t, "/bin/true")
	if err := p.WaitTimeout(10 * time.Second); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if !p.Exited() {
		t.Fatal("not exited")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop after exit: %v", err)
	}
}

func TestStartProcessLogs(t *testing.T) {
	p := StartProcessWith(t, ProcOptions{Env: []string{"HARNESS_GREETING=hello"}, Name: "greeter"},
		"/bin/sh", "-c", `echo "out $HARNESS_GREETING"; echo "err line" >&2; exit 3`)
	err := p.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("wait = %v, want exit status 3", err)
	}
	logs := p.Logs()
	if !strings.Contains(logs, "out hello") || !strings.Contains(logs, "err line") {
		t.Fatalf("logs = %q", logs)
	}
	if !strings.HasPrefix(filepath.Base(p.LogPath), "greeter-") {
		t.Fatalf("log path %s", p.LogPath)
	}
}

func TestStartProcessStop(t *testing.T) {
	p := StartProcess(t, "sleep", "60")
	if p.Exited() {
		t.Fatal("sleep exited at once")
	}
	if err := p.WaitTimeout(100 * time.Millisecond); err != ErrWaitTimeout {
		t.Fatalf("WaitTimeout = %v, want ErrWaitTimeout", err)
	}
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Stop took %v", time.Since(start))
	}
	if !signalled(p.Wait(), syscall.SIGTERM) {
		t.Fatalf("exit = %v, want killed by SIGTERM", p.Wait())
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartProcessKill(t *testing.T) {
	// The shell ignores SIGTERM, so only SIGKILL ends it.
	p := StartProcess(t, "/bin/sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
	p.Kill()
	if !signalled(p.Wait(), syscall.SIGKILL) {
		t.Fatalf("exit = %v, want killed by SIGKILL", p.Wait())
	}
}

// logRecorder is a testing.TB whose Logf is kept for the test to read.
type logRecorder struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (r *logRecorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *logRecorder) find(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.logs {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// A process that dies while the test runs is reported at once, with the end
// of its log; one the test killed is not.
func TestStartProcessReportsUnexpectedExit(t *testing.T) {
	rec := &logRecorder{TB: t}
	p := StartProcessWith(rec, ProcOptions{Name: "crasher"}, "/bin/sh", "-c", `echo "dying words"; exit 7`)
	killed := StartProcessWith(rec, ProcOptions{Name: "victim"}, "sleep", "60")
	killed.Kill()
	p.Wait()
	deadline := time.Now().Add(5 * time.Second)
	// The report is logged after Wait returns; "crasher" alone would match
	// the start line at once.
	for !rec.find("exited on its own: exit status 7") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !rec.find("crasher (pid") || !rec.find("exited on its own: exit status 7") || !rec.find("dying words") {
		t.Fatalf("no report of the crash: %q", rec.logs)
	}
	time.Sleep(100 * time.Millisecond)
	if rec.find(fmt.Sprintf("victim (pid %d) exited on its own", killed.Pid())) {
		t.Fatalf("the killed process was reported as an unexpected exit: %q", rec.logs)
	}
}

func TestStartProcessCleanupStops(t *testing.T) {
	var p *Proc
	t.Run("inner", func(t *testing.T) {
		p = StartProcess(t, "sleep", "60")
	})
	if err := p.WaitTimeout(5 * time.Second); err == ErrWaitTimeout {
		t.Fatal("process still running after its test's cleanup")
	}
}

func TestBuildIntoMissingPackage(t *testing.T) {
	root := t.TempDir()
	// namesrv has a main package, broker only an empty folder.
	if err := os.MkdirAll(filepath.Join(root, "broker", "cmd", "broker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "namesrv", "cmd", "namesrv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "namesrv", "cmd", "namesrv", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := buildInto(root, t.TempDir(), []string{Namesrv, Broker})
	if err == nil {
		t.Fatal("no error for a missing main package")
	}
	msg := err.Error()
	if !strings.Contains(msg, "github.com/rmqgo/rmq/broker/cmd/broker") || strings.Contains(msg, "namesrv/cmd/namesrv") {
		t.Fatalf("error does not name exactly the missing package: %v", err)
	}
	if err := buildInto(root, t.TempDir(), []string{"nosuch"}); err == nil || !strings.Contains(err.Error(), "unknown binary") {
		t.Fatalf("unknown binary: %v", err)
	}
}

func TestProcessBuildDirStable(t *testing.T) {
	a, err := processBuildDir()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := processBuildDir()
	if a != b || !strings.Contains(filepath.Base(a), strconv.Itoa(os.Getpid())) {
		t.Fatalf("build dirs %q %q", a, b)
	}
}

func TestRunMQAdminErrors(t *testing.T) {
	out, err := RunMQAdmin(t, "/bin/sh", "-c", "echo fine")
	if err != nil || out != "fine\n" {
		t.Fatalf("RunMQAdmin = %q, %v", out, err)
	}
	_, err = RunMQAdmin(t, "/bin/sh", "-c", "echo bad >&2; exit 2")
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("RunMQAdmin error = %v, want stderr in it", err)
	}
}

func TestRunJavaMQAdminHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the Java mqadmin run (JVM start, first run resolves Maven)")
	}
	out, err := RunJavaMQAdmin(t, "help", "topicRoute")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "usage: mqadmin topicRoute") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}

// TestBuildIntoWorkspace builds a stand-in namesrv main package in a
// throw-away workspace laid out like the repository.
func TestBuildIntoWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a go build")
	}
	root := t.TempDir()
	write := func(rel, text string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.22\n\nuse ./namesrv\n")
	write("namesrv/go.mod", "module github.com/rmqgo/rmq/namesrv\n\ngo 1.22\n")
	write("namesrv/cmd/namesrv/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"stand-in namesrv\") }\n")
	dir := filepath.Join(t.TempDir(), "bin")
	if err := buildInto(root, dir, []string{Namesrv}); err != nil {
		t.Fatal(err)
	}
	out, err := RunMQAdmin(t, filepath.Join(dir, Namesrv))
	if err != nil || out != "stand-in namesrv\n" {
		t.Fatalf("built binary: %q, %v", out, err)
	}
	// A second call finds the binary and builds nothing (even with the
	// source gone).
	if err := os.RemoveAll(filepath.Join(root, "namesrv", "cmd", "namesrv", "main.go")); err != nil {
		t.Fatal(err)
	}
	if err := buildInto(root, dir, []string{Namesrv}); err != nil {
		t.Fatalf("second build: %v", err)
	}
}
