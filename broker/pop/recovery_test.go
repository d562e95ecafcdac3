package pop

import (
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"slices"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting/code"
)

// popAll pops until nothing comes, acking those ack says to.
func popAll(r *rig, invisible int64, ack func(popped) bool) (got, acked, unacked []popped) {
	r.t.Helper()
	for {
		res := r.pop(-1, 3, invisible, nil)
		if len(res.msgs) == 0 {
			return
		}
		for _, m := range res.msgs {
			got = append(got, m)
			if ack(m) {
				r.mustAck(m)
				acked = append(acked, m)
			} else {
				unacked = append(unacked, m)
			}
		}
	}
}

func sortedBodies(ms []popped) []string {
	b := bodies(ms)
	slices.Sort(b)
	return b
}

// checkAfterRestart pops what is left and waits out the invisible time:
// exactly the un-acked messages come back, no acked one, nothing twice.
func checkAfterRestart(t *testing.T, r *rig, acked, unacked []popped, invisible time.Duration) {
	t.Helper()
	fresh, _, _ := popAll(r, invisible.Milliseconds(), func(popped) bool { return true })
	if len(fresh) != 0 {
		t.Fatalf("after restart popped already popped messages: %v", bodies(fresh))
	}
	r.clk.Advance(invisible + time.Second)
	r.p.Revive()
	r.waitDispatched(popcodec.RetryTopicV1(testTopic, testGroup), 0, int64(len(unacked)))
	back, _, _ := popAll(r, invisible.Milliseconds(), func(popped) bool { return true })
	if got, want := sortedBodies(back), sortedBodies(unacked); !slices.Equal(got, want) {
		t.Fatalf("redelivered %v\nwant the un-acked %v", got, want)
	}
	ackedSet := map[string]bool{}
	for _, b := range bodies(acked) {
		ackedSet[b] = true
	}
	for _, b := range bodies(back) {
		if ackedSet[b] {
			t.Errorf("acked message %s redelivered", b)
		}
	}
	for _, m := range back {
		if m.msg.ReconsumeTimes != 1 {
			t.Errorf("%s: reconsumeTimes %d", m.msg.Body, m.msg.ReconsumeTimes)
		}
	}
}

func TestCrashKeepsAcksAndInflight(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 15, "A")
	r.send(testTopic, 1, 15, "A")
	i := 0
	_, acked, unacked := popAll(r, 10_000, func(popped) bool { i++; return i%3 != 0 })
	if len(acked)+len(unacked) != 30 || len(unacked) != 10 {
		t.Fatalf("popped %d acked, %d un-acked", len(acked), len(unacked))
	}
	r.crash()
	if st := r.p.Stats(); st.JournalReplayed == 0 {
		t.Fatalf("nothing replayed: the crash copy kept Pebble's memtable?")
	}
	checkAfterRestart(t, r, acked, unacked, 10*time.Second)
}

func TestCleanRestartKeepsState(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 12, "A")
	i := 0
	_, acked, unacked := popAll(r, 10_000, func(popped) bool { i++; return i%2 == 0 })
	r.restart()
	checkAfterRestart(t, r, acked, unacked, 10*time.Second)
}

func TestCrashKeepsOrderInfo(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 3, "A")
	order := map[string]string{"order": "true"}
	first := r.pop(0, 3, 5_000, order)
	r.mustAck(first.msgs[0])
	r.crash()
	if res := r.pop(0, 3, 5_000, order); res.resp.Code == code.Success {
		t.Fatalf("orderly queue unblocked by the crash: %v", bodies(res.msgs))
	}
	r.clk.Advance(6 * time.Second)
	res := r.pop(0, 3, 5_000, order)
	if len(res.msgs) != 2 || res.msgs[0].msg.QueueOffset != 1 {
		t.Fatalf("after crash and timeout popped %v", bodies(res.msgs))
	}
	if res.msgs[0].count != 1 || res.msgs[1].count != 1 {
		t.Errorf("consume counts %d %d, want 1 1", res.msgs[0].count, res.msgs[1].count)
	}
}

func TestOffsetResetSurvivesCleanRestart(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 5, "A")
	res := r.pop(0, 32, 60_000, nil)
	for _, m := range res.msgs {
		r.mustAck(m)
	}
	r.st.CommitOffset(testGroup, testTopic, 0, 1) // an admin reset
	r.restart()
	if again := r.pop(0, 32, 60_000, nil); len(again.msgs) != 4 {
		t.Fatalf("after reset and clean restart popped %d, want 4", len(again.msgs))
	}
}
