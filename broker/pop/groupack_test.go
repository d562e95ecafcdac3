package pop

import (
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// waitAcks waits until ok holds of journal queue rq's waiting acks.
func waitAcks(t *testing.T, p *Processor, rq int32, what string, ok func(q *jqueue) bool) {
	t.Helper()
	q := p.j.queue(rq)
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.amu.Lock()
		done := ok(q)
		q.amu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Acks that arrive while a batch is being recorded are recorded together
// in one journal record; each is answered as alone (repeats succeed, a
// forged receipt is NO_MESSAGE), and after a kill -9 no acked message comes
// back while the un-acked one does.
func TestConcurrentAcksAreGroupCommitted(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 20, "A")
	res := r.pop(0, 32, 10_000, nil)
	if len(res.msgs) != 20 {
		t.Fatalf("popped %d", len(res.msgs))
	}
	rq := res.msgs[0].receipt.ReviveQid
	acked, unacked := res.msgs[:19], res.msgs[19:]
	forged := res.msgs[0]
	forged.receipt.PopTime++

	// The first ack leads; the others queue behind it.
	unlock := r.p.j.lock(rq)
	before := r.p.Stats().JournalAppended
	type answer struct {
		what string
		code int32
		err  error
	}
	answers := make(chan answer, 64)
	var wg sync.WaitGroup
	ack := func(what string, pm popped) {
		defer wg.Done()
		resp, err := r.ack(pm)
		answers <- answer{what, codeOf(resp, err), err}
	}
	wg.Add(1)
	go ack("first", acked[0])
	// It took the batch of one and waits for the journal lock the test
	// holds.
	waitAcks(t, r.p, rq, "an ack caller takes the lead", func(q *jqueue) bool { return q.leading && len(q.acks) == 0 })
	for i, m := range acked[1:] {
		wg.Add(2)
		go ack("ack "+strconv.Itoa(i+1), m)
		go ack("repeat "+strconv.Itoa(i+1), m)
	}
	wg.Add(1)
	go ack("forged", forged)
	n := 2*len(acked[1:]) + 1
	waitAcks(t, r.p, rq, "the other acks queue", func(q *jqueue) bool { return len(q.acks) == n })
	unlock()
	wg.Wait()
	close(answers)
	for a := range answers {
		want := int32(code.Success)
		if a.what == "forged" {
			want = code.NoMessage
		}
		if a.code != want {
			t.Errorf("%s: code %d (%v), want %d", a.what, a.code, a.err, want)
		}
	}
	if n := r.p.Stats().JournalAppended - before; n != 2 {
		t.Errorf("%d journal records for the acks, want 2 (the first, then the rest together)", n)
	}
	for _, m := range acked {
		if resp, err := r.ack(m); codeOf(resp, err) != code.Success {
			t.Errorf("repeated ack after the batch: code %d %v", codeOf(resp, err), err)
		}
	}
	r.crash()
	checkAfterRestart(t, r, acked, unacked, 10*time.Second)
}

// With a checkpoint cache of one entry, checkpoints are evicted and read
// back from Pebble between acks, changes and revives: the outcome is the
// same as with every checkpoint cached.
func TestCheckpointCacheEviction(t *testing.T) {
	r := newRig(t)
	for q := range int32(popcodec.OrderReviveQueue) {
		if q >= 8 {
			break
		}
		r.p.j.queue(q).cks.limit = 1
	}
	r.send(testTopic, 0, 9, "A")
	var pops []popResult
	for range 3 {
		pops = append(pops, r.pop(0, 3, 10_000, nil))
	}
	var acked, unacked []popped
	// Interleave the checkpoints: each ack finds another one cached.
	for i := range 3 {
		for _, p := range pops {
			m := p.msgs[i]
			if i == 2 && len(acked) > 6 {
				unacked = append(unacked, m)
				continue
			}
			r.mustAck(m)
			acked = append(acked, m)
		}
	}
	// The revive of one that is unacked, with the cache full of another.
	if resp, err := call(t, r.p.handleChangeInvisible, changeReq(testGroup, acked[0], 1000)); codeOf(resp, err) != code.NoMessage {
		t.Fatalf("change of an acked message: code %d %v", codeOf(resp, err), err)
	}
	r.clk.Advance(11 * time.Second)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != int64(len(unacked)) {
		t.Fatalf("revived %d, want %d", st.Revived, len(unacked))
	}
	for _, m := range acked {
		if resp, err := r.ack(m); codeOf(resp, err) != code.NoMessage && codeOf(resp, err) != code.Success {
			t.Fatalf("ack after revive: code %d %v", codeOf(resp, err), err)
		}
	}
	for _, m := range unacked {
		if resp, err := r.ack(m); codeOf(resp, err) != code.NoMessage {
			t.Fatalf("ack of a revived message: code %d %v, want NO_MESSAGE", codeOf(resp, err), err)
		}
	}
}

// A batch ack spanning several checkpoints is recorded as one journal
// record per revive queue, and replayed after a crash.
func TestBatchAckOneRecordPerReviveQueue(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 6, "A")
	a := r.pop(0, 3, 10_000, nil)
	b := r.pop(0, 3, 10_000, nil)
	entry := func(p popResult, offs ...int64) string {
		ei := p.msgs[0].receipt
		return `{"c":"pop_cg","t":"PopTopic","r":"0","so":` + strconv.FormatInt(ei.CkQueueOffset, 10) +
			`,"q":0,"rq":` + strconv.Itoa(int(ei.ReviveQid)) + `,"pt":` + strconv.FormatInt(ei.PopTime, 10) +
			`,"it":10000,"b":"` + b64(popcodec.EncodeBitSet(ei.CkQueueOffset, offs)) + `"}`
	}
	body := []byte(`{"acks":[` + entry(a, 0, 2) + `,` + entry(b, 3, 4, 5) + `],"brokerName":"broker-a"}`)
	before := r.p.Stats().JournalAppended
	resp, err := call(t, r.p.handleBatchAck, remoting.NewRequest(code.BatchAckMessage, nil, body))
	if codeOf(resp, err) != code.Success || resp.Remark != "" {
		t.Fatalf("batch ack: %d %q %v", codeOf(resp, err), resp.Remark, err)
	}
	queues := map[int32]bool{a.msgs[0].receipt.ReviveQid: true, b.msgs[0].receipt.ReviveQid: true}
	if n := r.p.Stats().JournalAppended - before; n != int64(len(queues)) {
		t.Errorf("%d journal records, want %d", n, len(queues))
	}
	acked := []popped{a.msgs[0], a.msgs[2], b.msgs[0], b.msgs[1], b.msgs[2]}
	r.crash()
	checkAfterRestart(t, r, acked, []popped{a.msgs[1]}, 10*time.Second)
}
