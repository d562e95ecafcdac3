package send

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeReplicas records the offsets sends wait for and fails when told.
type fakeReplicas struct {
	mu   sync.Mutex
	ends []int64
	err  error
}

func (r *fakeReplicas) WaitReplicas(_ context.Context, end int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, end)
	return r.err
}

func TestSendWaitsForReplicas(t *testing.T) {
	f := newFixture(t)
	r := &fakeReplicas{}
	f.p.d.Replicas = r
	resp := f.call(t, sendV2("TopicTest", 1, basicProps, "b"))
	wantCode(t, resp, code.Success)
	if len(r.ends) != 1 || r.ends[0] != f.store.phy || r.ends[0] == 0 {
		t.Fatalf("waited for %v, store ends at %d", r.ends, f.store.phy)
	}

	// Not enough acks: FLUSH_SLAVE_TIMEOUT, stored, with its fields.
	r.err = errors.New("2 replicas needed")
	resp = f.call(t, sendV2("TopicTest", 1, basicProps, "b"))
	wantCode(t, resp, code.FlushSlaveTimeout)
	if resp.Ext("msgId") == "" || resp.Ext("queueOffset") != "1" || len(f.store.records) != 2 {
		t.Fatalf("ext %v, %d records", resp.ExtFields, len(f.store.records))
	}
	// The replica failure wins over a flush timeout.
	f.store.flushTimedOut = true
	wantCode(t, f.call(t, sendV2("TopicTest", 1, basicProps, "b")), code.FlushSlaveTimeout)
	r.err = nil
	wantCode(t, f.call(t, sendV2("TopicTest", 1, basicProps, "b")), code.FlushDiskTimeout)
	f.store.flushTimedOut = false

	// WAIT=false never waits.
	n := len(r.ends)
	r.err = errors.New("would time out")
	wantCode(t, f.call(t, sendV2("TopicTest", 1, basicProps+"WAIT\x01false\x02", "b")), code.Success)
	if len(r.ends) != n {
		t.Fatal("a WAIT=false send waited")
	}

	// A batch waits for the end of its last message.
	resp = f.call(t, batchReq("TopicTest", 2, batchBody(t, 3, func(int) map[string]string { return map[string]string{"TAGS": "t"} })))
	wantCode(t, resp, code.FlushSlaveTimeout)
	if r.ends[len(r.ends)-1] != f.store.phy {
		t.Fatalf("batch waited for %d, store ends at %d", r.ends[len(r.ends)-1], f.store.phy)
	}

	// A failed put does not wait.
	n = len(r.ends)
	f.store.err = store.ErrDiskFull
	wantCode(t, f.call(t, sendV2("TopicTest", 1, basicProps, "b")), code.ServiceNotAvailable)
	if len(r.ends) != n {
		t.Fatal("a failed put waited")
	}
}
