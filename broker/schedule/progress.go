package schedule

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// The delivery progress in Java's terms, for GET_ALL_DELAY_OFFSET (45) and
// GET_TIMER_CHECK_POINT (60): what an Apache slave copies so that, once
// promoted, its ScheduleMessageService and TimerMessageStore carry on
// where this broker stopped.

// delayWalkBudget bounds the consume-queue entries one DelayOffsets call
// examines per level (the next call continues).
const delayWalkBudget = 1 << 20

func delayOffKey(qid int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{kv.PrefixTimer, subDelayOff}, uint32(qid))
}

// DelayOffsets returns, per delay level (1-based) whose queue exists, the
// consume-queue offset of SCHEDULE_TOPIC_XXXX queue level−1 below which
// every message was delivered (Java's ScheduleMessageService offsetTable:
// where its delivery of the level continues).
//
// A message is delivered once its index key is gone (keys are deleted
// after the delivered copy is flushed). From the last offset found, each
// level's entries are checked in queue order up to the indexer's
// checkpoint: the first whose key (its store time plus the level's delay,
// as the indexer wrote it) is still pending, or is not due yet, stops the
// walk. The offsets found are kept in Pebble (a crash loses at most the
// last ones: the walk starts lower and finds them again). A level whose
// delay was shortened while messages of it were parked can be reported
// past messages still waiting under their old due time.
func (s *Service) DelayOffsets() (map[int32]int64, error) {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	levels := s.levelsNow()
	now := s.now().UnixMilli()
	out := map[int32]int64{}
	b := s.db.NewBatch()
	defer b.Close()
	for _, qid := range s.cq.TopicQueues(ScheduleTopic) {
		st, ok := s.cq.State(ScheduleTopic, qid)
		if !ok || qid < 0 {
			continue
		}
		from, found, err := readInt(snap.Get, delayOffKey(qid))
		if err != nil {
			return nil, err
		}
		if !found || from < st.Min {
			from = st.Min
		}
		ckpt, seen, err := readInt(snap.Get, checkpointKey(ScheduleTopic, qid))
		if err != nil {
			return nil, err
		}
		if !seen {
			ckpt = st.Min // nothing indexed yet
		}
		ckpt = min(ckpt, st.Max)
		start := from
		delay := levelDelay(levels, int(qid)+1).Milliseconds()
	walk:
		for from < ckpt && from-start < delayWalkBudget {
			es, err := s.cq.Entries(ScheduleTopic, qid, from, int(min(int64(indexChunk), ckpt-from)))
			if err != nil {
				return nil, fmt.Errorf("schedule: delay offsets of queue %d: %w", qid, err)
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				due := e.StoreTimestamp + delay
				if e.Offset >= ckpt || due > now {
					break walk
				}
				pending, err := has(snap.Get, timerKey(s.keyTime(due, e.StoreTimestamp), e.CommitLogOffset))
				if err != nil {
					return nil, err
				}
				if pending {
					break walk
				}
				from = e.Offset + 1
			}
		}
		out[qid+1] = from
		if !found || from != start {
			if err := b.Set(delayOffKey(qid), u64(from), nil); err != nil {
				return nil, err
			}
		}
	}
	if !b.Empty() {
		if err := b.Commit(pebble.NoSync); err != nil {
			return nil, fmt.Errorf("schedule: keep delay offsets: %w", err)
		}
	}
	return out, nil
}

// TimerProgress is the timer service's progress in Java's TimerCheckpoint
// terms.
type TimerProgress struct {
	// ReadTimeMs: every timer (and delay-level) message due before it was
	// delivered: the earliest pending key, at most now, down to the timer
	// precision (Java's currReadTimeMs moves slot by slot).
	ReadTimeMs int64
	// QueueOffset: the entries of rmq_sys_wheel_timer queue 0 below it are
	// in the index (Java's commitQueueOffset, its masterTimerQueueOffset
	// on a master).
	QueueOffset int64
}

// Progress reads the timer progress from one Pebble snapshot.
func (s *Service) Progress() (TimerProgress, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	var p TimerProgress
	off, seen, err := readInt(snap.Get, checkpointKey(TimerTopic, 0))
	if err != nil {
		return p, err
	}
	if !seen {
		off = 0
		if st, ok := s.cq.State(TimerTopic, 0); ok {
			off = st.Min
		}
	}
	p.QueueOffset = off
	p.ReadTimeMs = s.now().UnixMilli()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: pendingPrefix(), UpperBound: kv.PrefixEnd(pendingPrefix())})
	if err != nil {
		return p, fmt.Errorf("schedule: timer progress: %w", err)
	}
	if it.First() {
		if ms, _, ok := parseTimerKey(it.Key()); ok && ms < p.ReadTimeMs {
			p.ReadTimeMs = ms
		}
	}
	if err := it.Close(); err != nil {
		return p, fmt.Errorf("schedule: timer progress: %w", err)
	}
	if prec := s.precision().Milliseconds(); prec > 0 {
		p.ReadTimeMs -= p.ReadTimeMs % prec
	}
	return p, nil
}
