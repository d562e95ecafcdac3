package pop

import (
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// status asks the processor through its handler, as mqadmin does.
func (r *rig) status(ext map[string]string) protocol.PopStatusBody {
	r.t.Helper()
	resp, err := call(r.t, r.p.handleStatus, remoting.NewRequest(code.GetPopStatus, ext, nil))
	if err != nil || resp.Code != code.Success {
		r.t.Fatalf("pop status: %v %+v", err, resp)
	}
	var b protocol.PopStatusBody
	if err := protocol.Unmarshal(resp.Body, &b); err != nil {
		r.t.Fatalf("decode pop status %s: %v", resp.Body, err)
	}
	return b
}

func findGroup(t *testing.T, b protocol.PopStatusBody, group, topic string) protocol.PopGroupStatus {
	t.Helper()
	return findOne(t, b.Groups, func(g protocol.PopGroupStatus) bool { return g.Group == group && g.Topic == topic })
}

func findQueue(t *testing.T, g protocol.PopGroupStatus, topic string, qid int32) protocol.PopQueueStatus {
	t.Helper()
	return findOne(t, g.Queues, func(q protocol.PopQueueStatus) bool { return q.Topic == topic && q.QueueID == qid })
}

// findOne returns the first of items that match accepts, failing t when
// none does.
func findOne[T any](t *testing.T, items []T, match func(T) bool) T {
	t.Helper()
	if i := slices.IndexFunc(items, match); i >= 0 {
		return items[i]
	}
	var zero T
	t.Fatalf("no %T matches in %+v", zero, items)
	return zero
}

// TestStatusInFlightAckAndRevive follows one group through pop, ack,
// invisible-time expiry and revive.
func TestStatusInFlightAckAndRevive(t *testing.T) {
	r := newRig(t)
	r.cfg.PopFromRetryProbability = 0
	r.send(testTopic, 0, 3, "A")
	r.send(testTopic, 1, 2, "A")
	popTime := r.clk.Now().UnixMilli()
	a := r.pop(0, 32, 10_000, nil)
	r.clk.Advance(time.Second)
	b := r.pop(1, 32, 10_000, nil)
	if len(a.msgs) != 3 || len(b.msgs) != 2 {
		t.Fatalf("popped %d and %d", len(a.msgs), len(b.msgs))
	}
	detail := map[string]string{"detail": "true"}

	st := r.status(detail)
	g := findGroup(t, st, testGroup, testTopic)
	if g.InFlight != 5 || g.Checkpoints != 2 || g.Overdue != 0 || g.OldestPopTime != popTime || g.ReviveLagMillis != 0 {
		t.Fatalf("after pops: %+v", g)
	}
	if q := findQueue(t, g, testTopic, 0); q.InFlight != 3 || q.PopOffset != 3 || q.MaxOffset != 3 || q.Retry || q.Orderly {
		t.Errorf("queue 0: %+v", q)
	}
	if q := findQueue(t, g, testTopic, 1); q.InFlight != 2 || q.OldestPopTime != popTime+1000 {
		t.Errorf("queue 1: %+v", q)
	}
	if st.Totals.InFlight != 5 || st.Totals.Groups != 1 || st.Totals.Checkpoints != 2 {
		t.Errorf("totals %+v", st.Totals)
	}
	if st.Revive.Checkpoints != 2 || st.Revive.Overdue != 0 || st.Revive.OldestDue != popTime+10_000 || st.Revive.LagMillis != 0 {
		t.Errorf("revive %+v", st.Revive)
	}
	// Every pop went through the journal, applied at once; the journal's
	// queue shows it once the store has dispatched those records.
	testutil.WaitFor(t, 5*time.Second, "the journal records dispatched", func() bool {
		st = r.status(detail)
		var n int64
		for _, q := range st.Revive.Queues {
			n += q.MaxOffset
		}
		return n >= 2
	})
	var applied int64
	for _, q := range st.Revive.Queues {
		if q.Applied != q.MaxOffset {
			t.Errorf("journal queue %d applied %d of %d", q.QueueID, q.Applied, q.MaxOffset)
		}
		applied += q.Applied
	}
	if applied != 2 || !strings.HasPrefix(st.Revive.Topic, "rmq_sys_REVIVE_LOG_") {
		t.Errorf("journal %s: %d records applied, want 2", st.Revive.Topic, applied)
	}

	r.mustAck(a.msgs[0])
	r.mustAck(b.msgs[1])
	if g := findGroup(t, r.status(nil), testGroup, testTopic); g.InFlight != 3 || g.Checkpoints != 2 || g.Queues != nil {
		t.Fatalf("after 2 acks: %+v", g)
	}

	// Past the first checkpoint's due time: its two messages wait for revive.
	r.clk.Advance(9500 * time.Millisecond)
	st = r.status(nil)
	g = findGroup(t, st, testGroup, testTopic)
	if g.InFlight != 3 || g.Overdue != 2 || g.ReviveLagMillis != 500 {
		t.Fatalf("overdue: %+v", g)
	}
	if st.Revive.Overdue != 1 || st.Revive.LagMillis != 500 {
		t.Errorf("revive behind: %+v", st.Revive)
	}

	r.clk.Advance(time.Second)
	r.p.Revive()
	retry := popcodec.RetryTopicV1(testTopic, testGroup)
	r.waitDispatched(retry, 0, 3)
	st = r.status(detail)
	g = findGroup(t, st, testGroup, testTopic)
	if g.InFlight != 0 || g.Checkpoints != 0 || g.RetryBacklog != 3 || g.Backlog != 0 {
		t.Fatalf("after revive: %+v", g)
	}
	if q := findQueue(t, g, retry, 0); !q.Retry || q.MaxOffset != 3 || q.PopOffset != -1 {
		t.Errorf("retry queue: %+v", q)
	}
	if st.Revive.Revived != 3 || st.Revive.Checkpoints != 0 || st.Revive.LastRoundTime != r.clk.Now().UnixMilli() || st.Revive.LastRoundCount != 2 {
		t.Errorf("revive after round: %+v", st.Revive)
	}
	if st.Totals.OldestPopTime != 0 {
		t.Errorf("oldest pop with nothing in flight: %d", st.Totals.OldestPopTime)
	}
}

func TestStatusOrderlyBlocked(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 3, "A")
	order := map[string]string{"order": "true"}
	res := r.pop(0, 2, 3_000, order)
	if len(res.msgs) != 2 {
		t.Fatalf("popped %d", len(res.msgs))
	}
	popTime := res.msgs[0].receipt.PopTime
	st := r.status(map[string]string{"detail": "true"})
	g := findGroup(t, st, testGroup, testTopic)
	q := findQueue(t, g, testTopic, 0)
	if g.BlockedQueues != 1 || g.InFlight != 2 || g.Checkpoints != 0 || !q.Orderly || !q.Blocked || q.BlockedUntil != popTime+3000 {
		t.Fatalf("orderly pop: group %+v queue %+v", g, q)
	}
	if st.Totals.BlockedQueues != 1 {
		t.Errorf("totals %+v", st.Totals)
	}
	r.mustAck(res.msgs[0])
	g = findGroup(t, r.status(nil), testGroup, testTopic)
	if g.BlockedQueues != 1 || g.InFlight != 1 {
		t.Fatalf("half acked: %+v", g)
	}
	// The invisible time passes: unblocked, the message is due again.
	r.clk.Advance(4 * time.Second)
	g = findGroup(t, r.status(nil), testGroup, testTopic)
	if g.BlockedQueues != 0 || g.InFlight != 1 || g.Overdue != 1 {
		t.Fatalf("expired: %+v", g)
	}
	again := r.pop(0, 2, 3_000, order)
	for _, m := range again.msgs {
		r.mustAck(m)
	}
	g = findGroup(t, r.status(nil), testGroup, testTopic)
	if g.BlockedQueues != 0 || g.InFlight != 0 || g.Backlog != 0 {
		t.Fatalf("all acked: %+v", g)
	}
}

func TestStatusFilters(t *testing.T) {
	r := newRig(t)
	r.cfg.PopFromRetryProbability = 0
	other := protocol.NewTopicConfig("OtherTopic")
	other.ReadQueueNums, other.WriteQueueNums, other.Perm = 1, 1, 6
	if _, err := r.topics.Update(other); err != nil {
		t.Fatal(err)
	}
	r.send(testTopic, 0, 4, "A")
	r.send("OtherTopic", 0, 1, "A")
	if n := len(r.pop(0, 2, 10_000, nil).msgs); n != 2 {
		t.Fatalf("popped %d", n)
	}
	if n := len(r.popFrom("g2", testTopic, 0, 1, 10_000, nil).msgs); n != 1 {
		t.Fatalf("g2 popped %d", n)
	}
	if n := len(r.popFrom("g2", "OtherTopic", 0, 1, 10_000, nil).msgs); n != 1 {
		t.Fatalf("g2 popped %d from OtherTopic", n)
	}
	tests := []struct {
		name string
		ext  map[string]string
		want []string // group/topic:inFlight
	}{
		{"all", nil, []string{"g2/OtherTopic:1", "g2/PopTopic:1", "pop_cg/PopTopic:2"}},
		{"group", map[string]string{"consumerGroup": "g2"}, []string{"g2/OtherTopic:1", "g2/PopTopic:1"}},
		{"topic", map[string]string{"topic": testTopic}, []string{"g2/PopTopic:1", "pop_cg/PopTopic:2"}},
		{"both", map[string]string{"consumerGroup": "g2", "topic": "OtherTopic"}, []string{"g2/OtherTopic:1"}},
		{"idle pair asked for", map[string]string{"consumerGroup": "idle", "topic": testTopic}, []string{"idle/PopTopic:0"}},
		{"unknown group", map[string]string{"consumerGroup": "nobody"}, nil},
	}
	for _, tc := range tests {
		st := r.status(tc.ext)
		var got []string
		for _, g := range st.Groups {
			got = append(got, g.Group+"/"+g.Topic+":"+strconv.FormatInt(g.InFlight, 10))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// An idle group asked for still shows its backlog.
	if g := findGroup(t, r.status(map[string]string{"consumerGroup": "g2", "topic": testTopic}), "g2", testTopic); g.Backlog != 3 {
		t.Errorf("g2 backlog %d, want 3", g.Backlog)
	}
}

func TestStatusTruncatesQueues(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 1, "A")
	r.pop(0, 1, 10_000, nil)
	st := r.status(map[string]string{"detail": "true", "maxQueues": "1"})
	g := findGroup(t, st, testGroup, testTopic)
	if !st.Truncated || len(g.Queues) != 1 {
		t.Fatalf("truncated %v, %d queues", st.Truncated, len(g.Queues))
	}
	st = r.status(map[string]string{"detail": "true"})
	if st.Truncated || len(findGroup(t, st, testGroup, testTopic).Queues) != 2 {
		t.Fatalf("untruncated: %+v", st)
	}
	// Booleans read as Java's Boolean.parseBoolean: "maybe" is false.
	if st = r.status(map[string]string{"detail": "maybe"}); len(findGroup(t, st, testGroup, testTopic).Queues) != 0 {
		t.Fatalf("detail=maybe listed queues: %+v", st)
	}
}

func TestStatusBadHeader(t *testing.T) {
	r := newRig(t)
	tests := []map[string]string{
		{"maxQueues": "-1"},
		{"maxQueues": "x"},
		{"maxQueues": "100001"},
		{"consumerGroup": "a\x00b"},
		{"topic": strings.Repeat("t", 600)},
	}
	for _, ext := range tests {
		resp, err := r.p.handleStatus(t.Context(), nil, remoting.NewRequest(code.GetPopStatus, ext, nil))
		if c := codeOf(resp, err); c != code.InvalidParameter {
			t.Errorf("%q: code %d, want INVALID_PARAMETER", ext, c)
		}
	}
}
