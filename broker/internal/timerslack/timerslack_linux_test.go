//go:build linux

package timerslack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a process that re-executes itself
// (helperMain) instead of running tests.
const (
	helperEnv    = "TIMERSLACK_TEST_HELPER"
	helperPIDEnv = "TIMERSLACK_TEST_PID"
	helperSlack  = 300 * time.Microsecond
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := helperMain(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperMain re-executes itself with helperSlack, then prints its PID
// check, the calling thread's slack and every thread's it may read.
func helperMain() error {
	cur, err := Current()
	if err != nil {
		return err
	}
	again, err := Decide(helperSlack, cur, os.Environ())
	if err != nil {
		return err
	}
	if again {
		env := append(os.Environ(), helperPIDEnv+"="+strconv.Itoa(os.Getpid()))
		return Reexec(helperSlack, os.Args, env)
	}
	if os.Getenv(helperPIDEnv) == strconv.Itoa(os.Getpid()) {
		fmt.Println("pid kept")
	}
	fmt.Println("self", cur.Nanoseconds())
	// Another thread's /proc/<tid>/timerslack_ns needs CAP_SYS_NICE.
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		b, err := os.ReadFile("/proc/" + filepath.Base(dir) + "/timerslack_ns")
		if err != nil {
			fmt.Println("unreadable", filepath.Base(dir), err)
			continue
		}
		fmt.Println("thread", strings.TrimSpace(string(b)))
	}
	return nil
}

// TestReexecEveryThread runs the helper: after its re-exec the process has
// the same PID and every thread, the runtime's own included, the slack.
func TestReexecEveryThread(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := strconv.FormatInt(helperSlack.Nanoseconds(), 10)
	var self bool
	var threads, unreadable int
	for _, line := range strings.Split(string(out), "\n") {
		kind, v, _ := strings.Cut(line, " ")
		switch kind {
		case "self":
			self = true
			if v != want {
				t.Errorf("the re-executed thread's slack is %s ns, want %s", v, want)
			}
		case "thread":
			threads++
			if v != want {
				t.Errorf("a thread's slack is %s ns, want %s", v, want)
			}
		case "unreadable":
			unreadable++
		}
	}
	if !self || !strings.Contains(string(out), "pid kept") {
		t.Fatalf("the helper did not re-exec in place\n%s", out)
	}
	switch {
	case threads >= 2:
	case unreadable > 0:
		t.Logf("other threads' slack is unreadable without CAP_SYS_NICE: only the calling thread was checked\n%s", out)
	default:
		t.Fatalf("helper read %d threads, want the runtime's too\n%s", threads, out)
	}
}
