package command

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestTriggerLiteDispatchExit: every broker of the route gets a row; one that
// fails prints "error", says why on stderr and makes the command exit 1.
// TopicTest lives on broker-a (answers) and broker-b (the fake does not know
// TRIGGER_LITE_DISPATCH: REQUEST_CODE_NOT_SUPPORTED).
func TestTriggerLiteDispatchExit(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		exit       int
		rows       []string
		stderr     string
		wantCalled int
	}{
		{"one broker fails", []string{"-p", "TopicTest", "-g", "g1"}, ExitError,
			[]string{"broker-a                       dispatched", "broker-b                       error"}, "REQUEST_CODE_NOT_SUPPORTED", 1},
		{"only the good broker", []string{"-p", "TopicTest", "-g", "g1", "-b", "broker-a"}, ExitOK,
			[]string{"broker-a                       dispatched"}, "", 1},
		{"only the failing broker", []string{"-p", "TopicTest", "-g", "g1", "-b", "broker-b", "-c", "cid"}, ExitError,
			[]string{"broker-b                       error"}, "broker-b", 0},
		{"unknown broker name", []string{"-p", "TopicTest", "-g", "g1", "-b", "broker-x"}, ExitError, nil, "not in the route", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := admintest.NewSample()
			called := 0
			fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
				if req.Code != code.TriggerLiteDispatch || addr != admintest.SampleBrokerA0 {
					return nil, false
				}
				called++
				return remoting.NewResponse(req, code.Success, ""), true
			}
			var out, errb bytes.Buffer
			args := append(append([]string{"triggerLiteDispatch"}, tc.args...), "-n", sampleNS)
			if got := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); got != tc.exit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.exit, out.String(), errb.String())
			}
			for _, row := range tc.rows {
				if !strings.Contains(out.String(), row) {
					t.Errorf("stdout lacks %q:\n%s", row, out.String())
				}
			}
			if tc.stderr != "" && !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q does not mention %q", errb.String(), tc.stderr)
			} else if tc.stderr == "" && errb.Len() > 0 {
				t.Errorf("stderr: %s", errb.String())
			}
			if called != tc.wantCalled {
				t.Errorf("broker-a got %d triggers, want %d", called, tc.wantCalled)
			}
		})
	}
}
