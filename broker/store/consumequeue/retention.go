package consumequeue

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// CorrectMin moves every queue's min offset past entries whose CommitLog
// offset is below minPhy (the CommitLog deleted the files that held them)
// and deletes those entries. It returns the number of queues changed.
func (s *Store) CorrectMin(minPhy int64) (int, error) {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	type change struct {
		id     QueueID
		newMin int64
	}
	var pending []QueueID
	s.Range(func(id QueueID, st QueueState) bool {
		if st.Min < st.Max {
			pending = append(pending, id)
		}
		return true
	})
	var changes []change
	for _, id := range pending {
		st, ok := s.State(id.Topic, id.QueueID)
		if !ok || st.Min >= st.Max {
			continue
		}
		if st.LastPhyOffset < minPhy {
			changes = append(changes, change{id, st.Max})
			continue
		}
		first, found, err := s.Entry(id.Topic, id.QueueID, st.Min)
		if err != nil {
			return 0, err
		}
		if found && first.CommitLogOffset >= minPhy {
			continue
		}
		var searchErr error
		n := int(st.Max - st.Min)
		i := sort.Search(n, func(i int) bool {
			e, ok, err := s.Entry(id.Topic, id.QueueID, st.Min+int64(i))
			if err != nil && searchErr == nil {
				searchErr = err
			}
			return ok && e.CommitLogOffset >= minPhy
		})
		if searchErr != nil {
			return 0, searchErr
		}
		changes = append(changes, change{id, st.Min + int64(i)})
	}
	if len(changes) == 0 {
		return 0, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, c := range changes {
		st, _ := s.State(c.id.Topic, c.id.QueueID)
		if err := b.DeleteRange(entryKey(c.id.Topic, c.id.QueueID, st.Min), entryKey(c.id.Topic, c.id.QueueID, c.newMin), nil); err != nil {
			return 0, err
		}
		if err := b.Set(metaKey(c.id.Topic, c.id.QueueID, metaMin), binary.BigEndian.AppendUint64(nil, uint64(c.newMin)), nil); err != nil {
			return 0, err
		}
		if c.newMin >= st.Max && maxFromEntries(c.id) {
			// No entry is left to read the LMQ's max from at load.
			v := make([]byte, 24)
			binary.BigEndian.PutUint64(v[0:], uint64(st.Max))
			binary.BigEndian.PutUint64(v[8:], uint64(st.LastPhyOffset))
			binary.BigEndian.PutUint64(v[16:], uint64(st.LastStoreTime))
			if err := b.Set(metaKey(c.id.Topic, c.id.QueueID, metaMax), v, nil); err != nil {
				return 0, err
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("consumequeue: correct min offsets: %w", err)
	}
	for _, c := range changes {
		sh := s.shard(c.id)
		sh.mu.Lock()
		st, _ := sh.queues.Get(c.id)
		if c.newMin > st.Min {
			st.Min = c.newMin
			sh.queues.Set(c.id, st)
		}
		sh.mu.Unlock()
	}
	return len(changes), nil
}

// TruncateAbove removes entries whose CommitLog offset is ≥ maxPhy: the
// CommitLog lost its tail in a crash (or an HA slave truncated to its
// master's epoch) and the consume queue must not point past it.
func (s *Store) TruncateAbove(maxPhy int64) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	var pending []QueueID
	s.Range(func(id QueueID, st QueueState) bool {
		if st.Max > st.Min && st.LastPhyOffset >= maxPhy {
			pending = append(pending, id)
		}
		return true
	})
	b := s.db.NewBatch()
	defer b.Close()
	type change struct {
		id QueueID
		st QueueState
	}
	var changes []change
	for _, id := range pending {
		st, _ := s.State(id.Topic, id.QueueID)
		newMax := st.Max
		var last Entry
		for newMax > st.Min {
			e, ok, err := s.Entry(id.Topic, id.QueueID, newMax-1)
			if err != nil {
				return err
			}
			if ok && e.CommitLogOffset < maxPhy {
				last = e
				break
			}
			newMax--
		}
		// Runs are keyed by their last offset: the range takes every run
		// ending at newMax or later, and the one holding newMax-1 (if it
		// goes on past it) is written again, cut there.
		first, run, _, cut, err := s.run(id.Topic, id.QueueID, newMax-1, true)
		if err != nil {
			return err
		}
		if err := b.DeleteRange(entryKey(id.Topic, id.QueueID, newMax), entryKey(id.Topic, id.QueueID, st.Max), nil); err != nil {
			return err
		}
		if cut && newMax > st.Min {
			if err := b.Set(entryKey(id.Topic, id.QueueID, newMax-1), run[:(newMax-first)*entryValueLen], nil); err != nil {
				return err
			}
		}
		st.Max = newMax
		st.LastPhyOffset = last.CommitLogOffset
		st.LastStoreTime = last.StoreTimestamp
		v := make([]byte, 24)
		binary.BigEndian.PutUint64(v[0:], uint64(st.Max))
		binary.BigEndian.PutUint64(v[8:], uint64(st.LastPhyOffset))
		binary.BigEndian.PutUint64(v[16:], uint64(st.LastStoreTime))
		if err := b.Set(metaKey(id.Topic, id.QueueID, metaMax), v, nil); err != nil {
			return err
		}
		changes = append(changes, change{id, st})
	}
	s.dispatchedMu.Lock()
	defer s.dispatchedMu.Unlock()
	if s.dispatched > maxPhy {
		if err := b.Set(checkpointKey, binary.BigEndian.AppendUint64(nil, uint64(maxPhy)), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: truncate above %d: %w", maxPhy, err)
	}
	if s.dispatched > maxPhy {
		s.dispatched = maxPhy
	}
	for _, c := range changes {
		sh := s.shard(c.id)
		sh.mu.Lock()
		sh.queues.Set(c.id, c.st)
		sh.mu.Unlock()
	}
	return nil
}
