package schedule

import (
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Behind is how far the timer service is behind, read from its Pebble
// state (broker/metrics: the rocketmq_timer_* families, Java's
// TimerMessageStore getEnqueueBehind* / getDequeueBehind* and the timer
// wheel snapshot).
type Behind struct {
	// EnqueueLag is the messages of the delay-level and timer queues not
	// yet indexed; EnqueueLatencyMs the age of the oldest of them.
	EnqueueLag, EnqueueLatencyMs int64
	// DequeueLag is the indexed timers already due and not yet delivered
	// (counted up to the limit); DequeueLatencyMs how long ago the
	// earliest of them came due.
	DequeueLag, DequeueLatencyMs int64
	// Upcoming[i] counts the timers due within bounds[i] from now and
	// after bounds[i-1] (the whole scan stops at the limit).
	Upcoming []int64
}

// Behind reports the timer backlog at now. It walks at most limit pending
// keys; bounds are ascending.
func (s *Service) Behind(now time.Time, bounds []time.Duration, limit int) Behind {
	var b Behind
	nowMs := now.UnixMilli()
	// Enqueue: each delay-level queue and the timer queue, from its
	// persisted indexer checkpoint (written in the batch that holds the
	// index keys; none yet: the queue's start, where the indexer begins)
	// to its end.
	qs := []queueRef{{TimerTopic, 0}}
	for i := range s.levelsNow() {
		qs = append(qs, queueRef{ScheduleTopic, int32(i)})
	}
	for _, q := range qs {
		off, ok, err := s.getInt(checkpointKey(q.topic, q.qid))
		if err != nil {
			continue
		}
		if !ok {
			off = s.st.MinOffset(q.topic, q.qid)
		}
		if behind := s.st.MaxOffset(q.topic, q.qid) - off; behind > 0 {
			b.EnqueueLag += behind
			if ts := s.st.MessageStoreTime(q.topic, q.qid, off); ts > 0 {
				b.EnqueueLatencyMs = max(b.EnqueueLatencyMs, nowMs-ts)
			}
		}
	}
	// Dequeue and the snapshot: the pending keys sort by due time.
	b.Upcoming = make([]int64, len(bounds))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pendingPrefix(), UpperBound: kv.PrefixEnd(pendingPrefix())})
	if err != nil {
		return b
	}
	defer it.Close()
	i, n := 0, 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
		ms, _, okk := parseTimerKey(it.Key())
		if !okk {
			continue
		}
		if ms <= nowMs {
			if b.DequeueLag == 0 {
				b.DequeueLatencyMs = nowMs - ms
			}
			b.DequeueLag++
			continue
		}
		for i < len(bounds) && ms > nowMs+bounds[i].Milliseconds() {
			i++
		}
		if i == len(bounds) {
			break
		}
		b.Upcoming[i]++
	}
	return b
}
