package client

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
)

// processQueue holds one queue's messages between pull and consumption
// (Java's ProcessQueue): msgs is kept sorted by queue offset so that the
// committable offset is always the smallest one not yet consumed.
type processQueue struct {
	mu        sync.Mutex
	msgs      []*message.Message // fetched, not consumed, ascending offsets
	consuming []*message.Message // orderly: taken by the consume loop, ascending
	highest   int64              // highest offset ever put, -1 before the first
	bytes     int64              // body bytes in msgs and consuming

	// arrived gets a token when messages are put or rolled back (orderly
	// loops wait on it for work); room gets one when messages leave (the
	// pull loop waits on it while the queue is full). Two channels, so
	// that one waiter never swallows the other's wake-up.
	arrived chan struct{}
	room    chan struct{}

	dropped      atomic.Bool
	locked       atomic.Bool
	lastLock     atomic.Int64 // unix ms of the last granted lock
	lastPull     atomic.Int64 // unix ms
	lastConsume  atomic.Int64 // unix ms
	tryUnlock    atomic.Int64
	everLocked   atomic.Bool // the queue was locked at least once (orderly positioning)
	lockedSignal chan struct{}
}

func newProcessQueue() *processQueue {
	return &processQueue{highest: -1, arrived: make(chan struct{}, 1), room: make(chan struct{}, 1), lockedSignal: make(chan struct{}, 1)}
}

// wake leaves a token in ch unless one is there already.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// setLocked records a lock grant (or its loss) from LOCK_BATCH_MQ.
func (pq *processQueue) setLocked(ok bool, now time.Time) {
	pq.locked.Store(ok)
	if ok {
		pq.lastLock.Store(now.UnixMilli())
		pq.everLocked.Store(true)
		select {
		case pq.lockedSignal <- struct{}{}:
		default:
		}
	}
}

// lockValid reports whether the queue's broker lock is held and fresh.
func (pq *processQueue) lockValid(now time.Time) bool {
	return pq.locked.Load() && now.UnixMilli()-pq.lastLock.Load() <= lockMaxLive.Milliseconds()
}

// put adds pulled messages (ascending offsets, all above what was put
// before unless the offset was reset) and returns how many are cached.
func (pq *processQueue) put(msgs []*message.Message) int {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		i, found := slices.BinarySearchFunc(pq.msgs, m.QueueOffset, cmpOffset)
		if found {
			continue // pulled twice (offset reset): keep the first copy
		}
		pq.msgs = slices.Insert(pq.msgs, i, m)
		pq.bytes += int64(len(m.Body))
		pq.highest = max(pq.highest, m.QueueOffset)
	}
	n := len(pq.msgs) + len(pq.consuming)
	wake(pq.arrived)
	return n
}

func cmpOffset(m *message.Message, off int64) int {
	switch {
	case m.QueueOffset < off:
		return -1
	case m.QueueOffset > off:
		return 1
	}
	return 0
}

// count is the number of messages held (cached and being consumed
// orderly) and their body bytes.
func (pq *processQueue) count() (int, int64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return len(pq.msgs) + len(pq.consuming), pq.bytes
}

// remove drops consumed messages and returns the offset to commit: the
// smallest offset still held, or one past the highest ever put when none
// is (Java's ProcessQueue.removeMessage). It returns -1 when nothing was
// ever put.
func (pq *processQueue) remove(msgs []*message.Message) int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		if i, found := slices.BinarySearchFunc(pq.msgs, m.QueueOffset, cmpOffset); found {
			pq.bytes -= int64(len(pq.msgs[i].Body))
			pq.msgs = slices.Delete(pq.msgs, i, i+1)
		}
	}
	wake(pq.room)
	return pq.commitOffsetLocked()
}

func (pq *processQueue) commitOffsetLocked() int64 {
	switch {
	case len(pq.consuming) > 0:
		return pq.consuming[0].QueueOffset
	case len(pq.msgs) > 0:
		return pq.msgs[0].QueueOffset
	case pq.highest >= 0:
		return pq.highest + 1
	}
	return -1
}

// take moves up to n of the oldest cached messages to the consuming set
// (orderly consumption) and returns them; nil when there are none.
func (pq *processQueue) take(n int) []*message.Message {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	n = min(n, len(pq.msgs))
	if n == 0 {
		return nil
	}
	out := slices.Clone(pq.msgs[:n])
	pq.consuming = append(pq.consuming, out...)
	pq.msgs = slices.Delete(pq.msgs, 0, n)
	return out
}

// commit forgets the consuming set (consumed) and returns the offset to
// commit, -1 when nothing was consuming.
func (pq *processQueue) commit() int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.consuming) == 0 {
		return -1
	}
	next := pq.consuming[len(pq.consuming)-1].QueueOffset + 1
	for _, m := range pq.consuming {
		pq.bytes -= int64(len(m.Body))
	}
	pq.consuming = nil
	wake(pq.room)
	return next
}

// rollback puts the consuming set back in front of the cache so that it
// is delivered again (orderly suspend; Java's makeMessageToConsumeAgain).
func (pq *processQueue) rollback() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.msgs = append(pq.consuming, pq.msgs...)
	pq.consuming = nil
	wake(pq.arrived)
}

// clear drops everything (the queue is being reset).
func (pq *processQueue) clear() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.msgs, pq.consuming, pq.bytes, pq.highest = nil, nil, 0, -1
	wake(pq.room)
}

// info fills the running-info view of the queue.
func (pq *processQueue) info(commitOffset int64) processQueueInfo {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pi := processQueueInfo{
		CommitOffset:         commitOffset,
		CachedMsgCount:       len(pq.msgs),
		CachedMsgSizeInMiB:   int(pq.bytes >> 20),
		Locked:               pq.locked.Load(),
		TryUnlockTimes:       pq.tryUnlock.Load(),
		LastLockTimestamp:    pq.lastLock.Load(),
		Droped:               pq.dropped.Load(),
		LastPullTimestamp:    pq.lastPull.Load(),
		LastConsumeTimestamp: pq.lastConsume.Load(),
	}
	if len(pq.msgs) > 0 {
		pi.CachedMsgMinOffset = pq.msgs[0].QueueOffset
		pi.CachedMsgMaxOffset = pq.msgs[len(pq.msgs)-1].QueueOffset
	}
	pi.TransactionMsgCount = len(pq.consuming)
	if len(pq.consuming) > 0 {
		pi.TransactionMsgMinOffset = pq.consuming[0].QueueOffset
		pi.TransactionMsgMaxOffset = pq.consuming[len(pq.consuming)-1].QueueOffset
	}
	return pi
}
