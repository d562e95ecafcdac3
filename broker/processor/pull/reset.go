package pull

import (
	"maps"
	"strconv"
	"sync"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ResetTable holds the offsets reset on the server side and not yet
// handed to a consumer (Java 5's ConsumerOffsetManager.resetOffsetTable,
// useServerSideResetOffset): INVOKE_BROKER_TO_RESET_OFFSET assigns them,
// and the next pull of the queue takes its entry and answers
// PULL_OFFSET_MOVED with nextBeginOffset = the reset offset, which every
// client (Java, client-go) obeys by moving there. In memory, as in Java:
// the reset offsets are committed too, so a restart still starts from
// them; only the forced move of a running client is lost.
type ResetTable struct {
	mu sync.Mutex
	m  map[pullKey]int64
	// wake answers the pulls parked on a queue now (set by New): a
	// parked pull would otherwise learn of the reset only at its
	// deadline, 15 s later for Java and client-go.
	wake func(topic string, qid int32)
}

// NewResetTable returns an empty table.
func NewResetTable() *ResetTable { return &ResetTable{m: map[pullKey]int64{}} }

// Assign records a reset of (group, topic, queue) to offset; invalid
// arguments are ignored (Java's assignResetOffset).
func (t *ResetTable) Assign(group, topic string, qid int32, offset int64) {
	if group == "" || topic == "" || qid < 0 || offset < 0 {
		return
	}
	t.mu.Lock()
	t.m[pullKey{group, topic, qid}] = offset
	wake := t.wake
	t.mu.Unlock()
	if wake != nil {
		wake(topic, qid)
	}
}

func (t *ResetTable) setWake(f func(topic string, qid int32)) {
	t.mu.Lock()
	t.wake = f
	t.mu.Unlock()
}

// Pending reports the reset offset waiting for (group, topic, queue).
func (t *ResetTable) Pending(group, topic string, qid int32) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	off, ok := t.m[pullKey{group, topic, qid}]
	return off, ok
}

// Take removes and returns the reset offset of (group, topic, queue)
// (Java's queryThenEraseResetOffset).
func (t *ResetTable) Take(group, topic string, qid int32) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := pullKey{group, topic, qid}
	off, ok := t.m[k]
	if ok {
		delete(t.m, k)
	}
	return off, ok
}

// ForgetGroup drops a group's entries (group deleted).
func (t *ResetTable) ForgetGroup(group string) {
	t.forget(func(k pullKey) bool { return k.group == group })
}

// ForgetTopic drops a topic's entries (topic deleted).
func (t *ResetTable) ForgetTopic(topic string) {
	t.forget(func(k pullKey) bool { return k.topic == topic })
}

func (t *ResetTable) forget(match func(pullKey) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	maps.DeleteFunc(t.m, func(k pullKey, _ int64) bool { return match(k) })
}

// resetResponse answers a pull whose queue was reset: PULL_OFFSET_MOVED
// with the reset offset (Java's OFFSET_RESET status). The client's
// commitOffset is not stored [our choice; Java stores it]: it predates the
// reset, and the reset offset is already committed.
func (p *Processor) resetResponse(req *remoting.Command, h header, topicSysFlag int, sg subscription.GroupConfig, offset int64) *remoting.Command {
	p.recordPullOffset(h, offset)
	p.log.Info("the queue under pulling was previously reset", "group", h.group, "topic", h.topic, "queue", h.queueID,
		"requestOffset", h.queueOffset, "resetOffset", offset)
	resp := remoting.NewResponse(req, code.PullOffsetMoved, store.OffsetReset.String())
	resp.SetExt("suggestWhichBrokerId", "0")
	resp.SetExt("nextBeginOffset", strconv.FormatInt(offset, 10))
	resp.SetExt("minOffset", strconv.FormatInt(max(p.d.Store.MinOffset(h.topic, h.queueID), 0), 10))
	resp.SetExt("maxOffset", strconv.FormatInt(max(p.d.Store.MaxOffset(h.topic, h.queueID), 0), 10))
	resp.SetExt("topicSysFlag", strconv.Itoa(topicSysFlag))
	resp.SetExt("groupSysFlag", strconv.Itoa(sg.GroupSysFlag))
	return resp
}
