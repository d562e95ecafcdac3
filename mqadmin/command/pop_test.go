package command

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// popStatus has no Java counterpart: its golden files testdata/pop_*.golden
// are our own output, reviewed by hand. Regenerate them with
//
//	RMQ_UPDATE_GOLDEN=1 go test ./command -run TestPopStatusGolden

const popNow = int64(1700000010000)

// popSampleStatus is broker-a's pop state: an orderly group blocked on
// one queue, a plain group with messages overdue for revive.
func popSampleStatus(detail bool) protocol.PopStatusBody {
	g1 := protocol.PopGroupStatus{Group: "g1", Topic: "TopicTest", InFlight: 7, Overdue: 3, Checkpoints: 3, Backlog: 40,
		RetryBacklog: 2, SuspendedPops: 1, OldestPopTime: popNow - 65_500, ReviveLagMillis: 1500, ReviveFailing: 1}
	g2 := protocol.PopGroupStatus{Group: "g2", Topic: "OrderTopic", InFlight: 2, BlockedQueues: 1, OldestPopTime: popNow - 2000}
	idle := protocol.PopGroupStatus{Group: "g3", Topic: "TopicTest", Backlog: 5}
	if detail {
		g1.Queues = []protocol.PopQueueStatus{
			{Topic: "TopicTest", QueueID: 0, PopOffset: 100, MaxOffset: 120, InFlight: 4, Overdue: 3, Checkpoints: 2, OldestPopTime: popNow - 65_500},
			{Topic: "TopicTest", QueueID: 1, PopOffset: 7, MaxOffset: 27, InFlight: 3, Checkpoints: 1, OldestPopTime: popNow - 1000},
			{Topic: "%RETRY%g1_TopicTest", QueueID: 0, PopOffset: -1, MaxOffset: 2, Retry: true},
		}
		g2.Queues = []protocol.PopQueueStatus{
			{Topic: "OrderTopic", QueueID: 0, PopOffset: 10, MaxOffset: 15, InFlight: 2, Orderly: true, Blocked: true,
				BlockedUntil: popNow + 28_000, OldestPopTime: popNow - 2000},
		}
	}
	return protocol.PopStatusBody{
		BrokerName: "broker-a", Now: popNow, Groups: []protocol.PopGroupStatus{g1, g2, idle},
		Revive: protocol.PopReviveStatus{Topic: "rmq_sys_REVIVE_LOG_DefaultCluster", Checkpoints: 9, Overdue: 2, LagMillis: 1500,
			OldestDue: popNow - 1500, LastRoundTime: popNow - 400, LastRoundCount: 12, Revived: 31, DeadLettered: 1, Failed: 2,
			Queues: []protocol.PopReviveQueue{{QueueID: 0, Applied: 50, MaxOffset: 50}, {QueueID: 1, Applied: 48, MaxOffset: 49}}},
		Totals: protocol.PopStatusTotals{Groups: 3, InFlight: 9, Overdue: 3, Checkpoints: 3, BlockedQueues: 1, OldestPopTime: popNow - 65_500,
			SuspendedPops: 1, SuspendedNotifications: 4},
	}
}

// popSample answers GET_POP_STATUS on broker-a; broker-b is an Apache
// broker (the fake answers REQUEST_CODE_NOT_SUPPORTED) and broker-c is down.
func popSample(t *testing.T) (*admintest.Cluster, *[]map[string]string) {
	fc := admintest.NewSample()
	var headers []map[string]string
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetPopStatus || addr != admintest.SampleBrokerA0 {
			return nil, false
		}
		headers = append(headers, req.ExtFields)
		st := popSampleStatus(req.ExtFields["detail"] == "true")
		if g := req.ExtFields["consumerGroup"]; g != "" {
			st.Groups = slicesFilter(st.Groups, func(s protocol.PopGroupStatus) bool { return s.Group == g })
		}
		b, err := protocol.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = b
		return resp, true
	}
	return fc, &headers
}

func slicesFilter[T any](s []T, keep func(T) bool) []T {
	out := []T{}
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func TestPopStatusGolden(t *testing.T) {
	a := admintest.SampleBrokerA0
	tests := []struct {
		name    string
		args    []string
		exit    int
		stderr  string // must contain
		headers []map[string]string
	}{
		{"pop_popStatus_b", []string{"popStatus", "-b", a}, ExitOK, "", []map[string]string{{}}},
		{"pop_popStatus_b_d", []string{"popStatus", "-b", a, "-d", "-m", "5"}, ExitOK, "",
			[]map[string]string{{"detail": "true", "maxQueues": "5"}}},
		{"pop_popStatus_c", []string{"popStatus", "-c", "DefaultCluster", "-g", "g1", "-t", "TopicTest"}, ExitError,
			"does not support pop status", []map[string]string{{"consumerGroup": "g1", "topic": "TopicTest"}}},
		{"pop_popStatus_all", []string{"popStatus"}, ExitError, "127.0.0.1:20941", []map[string]string{{}}},
		{"pop_popStatus_json", []string{"popStatus", "-b", a, "-g", "g2", "-d", "--output", "json"}, ExitOK, "",
			[]map[string]string{{"consumerGroup": "g2", "detail": "true"}}},
	}
	update := os.Getenv("RMQ_UPDATE_GOLDEN") == "1"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc, headers := popSample(t)
			var out, errb bytes.Buffer
			args := append(append([]string{}, tc.args...), "-n", sampleNS)
			if got := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); got != tc.exit {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tc.exit, errb.String())
			}
			if tc.stderr != "" && !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q does not mention %q", errb.String(), tc.stderr)
			} else if tc.stderr == "" && errb.Len() > 0 {
				t.Errorf("stderr: %s", errb.String())
			}
			if !reflect.DeepEqual(*headers, tc.headers) {
				t.Errorf("request headers %v, want %v", *headers, tc.headers)
			}
			if update {
				if err := os.WriteFile(goldenPath(tc.name), out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("stdout differs from %s\n--- got\n%s\n--- want\n%s", goldenPath(tc.name), out.String(), want)
			}
		})
	}
}

func TestPopStatusUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"popStatus", "-b", admintest.SampleBrokerA0, "-c", "DefaultCluster"}, "none of the others can be"},
		{[]string{"popStatus", "-b", admintest.SampleBrokerA0, "-m", "x"}, "invalid maxQueues"},
		{[]string{"popStatus", "-b", admintest.SampleBrokerA0, "-m", "0"}, "invalid maxQueues"},
		{[]string{"popStatus", "extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		fc, _ := popSample(t)
		var out, errb bytes.Buffer
		args := append(append([]string{}, tc.args...), "-n", sampleNS)
		if got := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); got != ExitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, got, ExitUsage)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q does not mention %q", tc.args, errb.String(), tc.want)
		}
	}
	// A single broker that fails is the command's error (exit 1).
	fc, _ := popSample(t)
	var out, errb bytes.Buffer
	if got := Main(context.Background(), []string{"popStatus", "-b", admintest.SampleBrokerB0, "-n", sampleNS}, fakeEnv(fc, &out, &errb)); got != ExitError {
		t.Errorf("unsupported broker: exit %d", got)
	}
	if out.Len() != 0 || !strings.Contains(errb.String(), "REQUEST_CODE_NOT_SUPPORTED") {
		t.Errorf("unsupported broker: stdout %q stderr %q", out.String(), errb.String())
	}
}
