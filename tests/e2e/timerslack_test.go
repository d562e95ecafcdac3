package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// TestBrokerRunsWithTimerSlack: the broker re-executes itself at start so
// that every one of its threads, the Go runtime's monitor thread included,
// has the timer slack timerSlackMicros asks for (default 250 µs; docs/
// operations.md "Timer slack"), and serves under the PID it was started
// with; timerSlackMicros=0 leaves the slack it inherited.
func TestBrokerRunsWithTimerSlack(t *testing.T) {
	t.Parallel()
	inherited, err := os.ReadFile("/proc/self/timerslack_ns")
	if err != nil {
		t.Skipf("no /proc/self/timerslack_ns on this kernel: %v", err)
	}
	c := harness.StartCluster(t, harness.ClusterOptions{Namesrvs: 1})
	def := c.StartBroker(t, "broker-slack", nil)
	off := c.StartBroker(t, "broker-noslack", map[string]string{"timerSlackMicros": "0"})
	out, err := c.MQAdmin(t, "clusterList")
	if err != nil || !strings.Contains(out, "broker-slack") || !strings.Contains(out, "broker-noslack") {
		t.Fatalf("clusterList: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		b    *harness.BrokerProc
		want string
	}{
		{def, "250000"},
		{off, strings.TrimSpace(string(inherited))},
	} {
		slacks, unreadable := threadSlacks(t, tc.b.Proc.Pid())
		if len(slacks) == 0 {
			t.Skipf("another process's timer slack is unreadable without CAP_SYS_NICE: %v", unreadable)
		}
		if len(slacks) < 3 {
			t.Errorf("%s: only %d threads read", tc.b.Name, len(slacks))
		}
		for tid, s := range slacks {
			if s != tc.want {
				t.Errorf("%s: thread %s has slack %s ns, want %s", tc.b.Name, tid, s, tc.want)
			}
		}
	}
	// The re-exec is logged nowhere as a failure.
	if b, err := os.ReadFile(def.Proc.LogPath); err != nil || strings.Contains(string(b), "timer slack not applied") {
		t.Errorf("broker log: %v\n%s", err, b)
	}
}

// threadSlacks reads /proc/<tid>/timerslack_ns of every thread of pid.
func threadSlacks(t *testing.T, pid int) (map[string]string, error) {
	t.Helper()
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	out := map[string]string{}
	var last error
	for _, d := range dirs {
		tid := filepath.Base(d)
		b, err := os.ReadFile("/proc/" + tid + "/timerslack_ns")
		if err != nil {
			last = err
			continue
		}
		out[tid] = strings.TrimSpace(string(b))
	}
	return out, last
}
