package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// CleanExpiredQueues is Apache's cleanExpiredConsumerQueue (the broker's
// CLEAN_EXPIRED_CONSUMEQUEUE): every consume queue of a non-system topic
// whose newest entry points below the CommitLog's min offset (all its
// messages were deleted with their CommitLog files) is destroyed, its
// offset counter with it, so the queue's next message gets offset 0 as in
// Apache. Queues that never held an entry (Apache: "created just now")
// and LMQs are kept. First, entries below the min offset are dropped from
// every queue (what the CommitLog's deletions already trigger; done again
// in case one of those failed). It returns the queues destroyed.
func (s *Store) CleanExpiredQueues() ([]consumequeue.QueueID, error) {
	minPhy := s.cl.MinOffset()
	if _, err := s.cq.CorrectMin(minPhy); err != nil {
		return nil, fmt.Errorf("store: drop entries below %d: %w", minPhy, err)
	}
	expired := func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		return st.Max > 0 && st.LastPhyOffset < minPhy
	}
	return s.destroyQueues(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		return !protocol.IsSystemTopic(id.Topic) && !strings.HasPrefix(id.Topic, protocol.LMQPrefix) && expired(id, st)
	})
}

// CleanUnusedTopics is Apache's cleanUnusedTopic (CLEAN_UNUSED_TOPIC): the
// consume queues of every topic that inUse denies (the broker: topics no
// longer in its topic table), except system topics and LMQs, are
// destroyed with their offset counters. Consumer offsets are kept, as in
// Apache. inUse is asked again for each topic just before its queues go,
// so a topic created meanwhile keeps them. It returns the topics cleaned.
func (s *Store) CleanUnusedTopics(inUse func(topic string) bool) ([]string, error) {
	ids, err := s.destroyQueues(func(id consumequeue.QueueID, _ consumequeue.QueueState) bool {
		return !protocol.IsSystemTopic(id.Topic) && !strings.HasPrefix(id.Topic, protocol.LMQPrefix) && !inUse(id.Topic)
	})
	seen := map[string]bool{}
	var topics []string
	for _, id := range ids {
		if !seen[id.Topic] {
			seen[id.Topic] = true
			topics = append(topics, id.Topic)
		}
	}
	return topics, err
}

// destroyQueues deletes every queue pick chooses. pick runs once over the
// in-memory table (under its shard locks: it must not call into the
// store) and again for each candidate under the offset assigner's lock,
// where a queue is also kept when a message for it was appended but not
// dispatched yet: a send racing with the clean is never lost.
func (s *Store) destroyQueues(pick func(id consumequeue.QueueID, st consumequeue.QueueState) bool) ([]consumequeue.QueueID, error) {
	var cands []consumequeue.QueueID
	s.cq.Range(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		if pick(id, st) {
			cands = append(cands, id)
		}
		return true
	})
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].Topic != cands[j].Topic {
			return cands[i].Topic < cands[j].Topic
		}
		return cands[i].QueueID < cands[j].QueueID
	})
	var done []consumequeue.QueueID
	for _, id := range cands {
		ok, err := s.assign.destroyIf(id, func(st consumequeue.QueueState) bool { return pick(id, st) })
		if err != nil {
			return done, fmt.Errorf("store: destroy queue %s-%d: %w", id.Topic, id.QueueID, err)
		}
		if ok {
			s.log.Info("consume queue destroyed", "topic", id.Topic, "queueId", id.QueueID, "commitlogMin", s.cl.MinOffset())
			done = append(done, id)
		}
	}
	return done, nil
}

// destroyIf deletes queue id when still wants its current state and no
// appended message of it waits for dispatch; its next offset starts again
// from the (now empty) consume queue.
func (a *assigner) destroyIf(id consumequeue.QueueID, still func(consumequeue.QueueState) bool) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.cq.State(id.Topic, id.QueueID)
	if !ok || !still(st) {
		return false, nil
	}
	offs := a.topics[id.Topic]
	if int(id.QueueID) < len(offs) && offs[id.QueueID] >= 0 && offs[id.QueueID] != st.Max {
		return false, nil // appended, not dispatched yet
	}
	if err := a.cq.DeleteQueue(id.Topic, id.QueueID); err != nil {
		return false, err
	}
	if int(id.QueueID) < len(offs) {
		offs[id.QueueID] = -1
	}
	return true, nil
}
