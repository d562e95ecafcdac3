package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// rebalance works out which queues this consumer should hold and starts or
// stops their pull loops (Java's RebalanceImpl.doRebalance). A topic whose
// queues or members cannot be read keeps the queues held now. It reports
// false when an orderly queue could not be locked, so the caller retries
// soon.
func (c *PushConsumer) rebalance(ctx context.Context) bool {
	c.rbMu.Lock()
	defer c.rbMu.Unlock()
	if ctx.Err() != nil {
		return true
	}
	subs := c.topicSubscriptions()
	want := make(map[protocol.MessageQueue]bool)
	keep := make(map[string]bool) // topics left as they are this round
	for _, topic := range slices.Sorted(maps.Keys(subs)) {
		mqs, err := c.subscribeQueues(ctx, topic)
		if err != nil {
			keep[topic] = true
			if ctx.Err() == nil {
				c.log.Debug("client: rebalance: no queues for topic", "topic", topic, "err", err)
			}
			continue
		}
		if c.cfg.Model == Clustering {
			cids, err := c.consumerIDs(ctx, topic)
			if err != nil || len(cids) == 0 {
				keep[topic] = true
				if ctx.Err() == nil {
					c.log.Warn("client: rebalance: cannot list the group's consumers", "topic", topic, "err", err)
				}
				continue
			}
			mqs = c.cfg.Allocate(mqs, cids, c.core.clientID)
		}
		for _, mq := range mqs {
			want[mq] = true
		}
	}

	var drop []*pushQueue
	c.qmu.RLock()
	for mq, q := range c.queues {
		if !want[mq] && !keep[mq.Topic] {
			drop = append(drop, q)
		}
	}
	var add []protocol.MessageQueue
	for mq := range want {
		if _, ok := c.queues[mq]; !ok {
			add = append(add, mq)
		}
	}
	c.qmu.RUnlock()
	protocol.SortMessageQueues(add)

	for _, q := range drop {
		c.releaseQueue(ctx, q)
	}
	allLocked := true
	if c.lockingOrderly() && len(add) > 0 {
		// An orderly queue is consumed only by the client holding its
		// broker lock; queues another client still holds wait for the
		// next round.
		granted := c.lockQueues(ctx, add)
		var ok []protocol.MessageQueue
		for _, mq := range add {
			if granted[mq] {
				ok = append(ok, mq)
			} else {
				allLocked = false
				c.log.Info("client: rebalance: queue locked by another consumer, retrying", "queue", mq.String())
			}
		}
		add = ok
	}
	for _, mq := range add {
		off, err := c.startOffset(ctx, mq)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("client: rebalance: cannot position queue", "queue", mq.String(), "err", err)
			}
			if c.lockingOrderly() {
				c.unlockQueues(ctx, []protocol.MessageQueue{mq})
			}
			continue
		}
		c.startQueue(mq, off)
	}
	if len(add) > 0 || len(drop) > 0 {
		c.log.Info("client: rebalance", "added", len(add), "removed", len(drop), "holding", len(c.Assigned()))
	}
	return allLocked
}

// startQueue begins consuming mq at offset.
func (c *PushConsumer) startQueue(mq protocol.MessageQueue, offset int64) {
	q := &pushQueue{mq: mq, pq: newProcessQueue()}
	q.ctx, q.cancel = context.WithCancel(c.ctx)
	if c.lockingOrderly() {
		q.pq.setLocked(true, time.Now())
	}
	c.store.update(mq, offset, false)
	c.qmu.Lock()
	c.queues[mq] = q
	c.qmu.Unlock()
	q.wg.Add(1)
	go c.pullLoop(q, offset)
	if c.cfg.Orderly {
		q.wg.Add(1)
		go c.orderlyLoop(q)
	}
}

// stopQueue stops q's goroutines (a handler call in flight sees its ctx
// cancelled and is waited for) and forgets it. Results of concurrent
// handler calls still running are ignored from now on.
func (c *PushConsumer) stopQueue(q *pushQueue) {
	c.qmu.Lock()
	q.pq.dropped.Store(true) // under qmu: no offset update after this
	delete(c.queues, q.mq)
	c.qmu.Unlock()
	q.cancel()
	q.wg.Wait()
}

// releaseQueue hands q over to whoever gets it next: stop, commit its
// offset, forget it and release its orderly lock (Java's
// removeUnnecessaryMessageQueue).
func (c *PushConsumer) releaseQueue(ctx context.Context, q *pushQueue) {
	c.stopQueue(q)
	c.store.persist(ctx, []protocol.MessageQueue{q.mq})
	c.store.remove(q.mq)
	if c.lockingOrderly() {
		c.unlockQueues(ctx, []protocol.MessageQueue{q.mq})
	}
}

// lockBatchBody is LockBatchRequestBody / UnlockBatchRequestBody (docs/protocol.md §4.7),
// fields in fastjson order.
type lockBatchBody struct {
	ClientID       string                  `json:"clientId"`
	ConsumerGroup  string                  `json:"consumerGroup"`
	MQSet          []protocol.MessageQueue `json:"mqSet"`
	OnlyThisBroker bool                    `json:"onlyThisBroker"`
}

// byMaster groups queues by the address of their broker's master
// (a static topic's logic queue by its leader's), addresses sorted; queues
// whose master is unknown are left out.
func (c *PushConsumer) byMaster(ctx context.Context, mqs []protocol.MessageQueue) ([]string, map[string][]protocol.MessageQueue) {
	m := make(map[string][]protocol.MessageQueue)
	for _, mq := range mqs {
		addr, err := c.core.brokerAddrFor(ctx, mq, false, routeFetch{ifMissing: true})
		if err != nil {
			c.log.Warn("client: no master for queue", "queue", mq.String(), "err", err)
			continue
		}
		m[addr] = append(m[addr], mq)
	}
	return slices.Sorted(maps.Keys(m)), m
}

// lockQueues asks the masters of mqs to lock them for this client
// (LOCK_BATCH_MQ) and returns the queues granted.
func (c *PushConsumer) lockQueues(ctx context.Context, mqs []protocol.MessageQueue) map[protocol.MessageQueue]bool {
	granted := make(map[protocol.MessageQueue]bool)
	c.lockMu.Lock()
	if c.lockClosed || ctx.Err() != nil {
		c.lockMu.Unlock()
		return granted
	}
	c.locking.Add(1)
	c.lockMu.Unlock()
	defer c.locking.Done()
	// Once sent, a lock request is waited for even if ctx ends: Shutdown
	// must know it was answered before it unlocks.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
	defer cancel()
	addrs, groups := c.byMaster(ctx, mqs)
	for _, addr := range addrs {
		body := protocol.MustMarshal(lockBatchBody{ClientID: c.core.clientID, ConsumerGroup: c.cfg.Group, MQSet: groups[addr]})
		resp, err := c.core.invokeOK(rctx, addr, code.LockBatchMQ, nil, body)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("client: lock queues failed", "broker", addr, "err", err)
			}
			continue
		}
		var out struct {
			LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
		}
		if err := protocol.Unmarshal(resp.Body, &out); err != nil {
			c.log.Warn("client: lock queues: bad answer", "broker", addr, "err", err)
			continue
		}
		for _, mq := range out.LockOKMQSet {
			granted[mq] = true
		}
	}
	return granted
}

// stopLocking refuses new lock requests and waits for those in flight.
func (c *PushConsumer) stopLocking() {
	c.lockMu.Lock()
	c.lockClosed = true
	c.lockMu.Unlock()
	c.locking.Wait()
}

// unlockQueues releases this client's locks on mqs (UNLOCK_BATCH_MQ).
func (c *PushConsumer) unlockQueues(ctx context.Context, mqs []protocol.MessageQueue) {
	addrs, groups := c.byMaster(ctx, mqs)
	for _, addr := range addrs {
		body := protocol.MustMarshal(lockBatchBody{ClientID: c.core.clientID, ConsumerGroup: c.cfg.Group, MQSet: groups[addr]})
		if _, err := c.core.invokeOK(ctx, addr, code.UnlockBatchMQ, nil, body); err != nil {
			c.log.Debug("client: unlock queues failed", "broker", addr, "err", err)
		}
	}
}

// renewLocks re-locks every held queue (Java's lockAll, every 20 s); a
// queue whose lock is refused stops being consumed until it is granted
// again.
func (c *PushConsumer) renewLocks(ctx context.Context) {
	c.qmu.RLock()
	qs := maps.Clone(c.queues)
	c.qmu.RUnlock()
	if len(qs) == 0 {
		return
	}
	granted := c.lockQueues(ctx, slices.Collect(maps.Keys(qs)))
	now := time.Now()
	for mq, q := range qs {
		ok := granted[mq]
		if !ok && q.pq.locked.Load() {
			c.log.Warn("client: lost the lock of an orderly queue", "queue", mq.String())
		}
		q.pq.setLocked(ok, now)
	}
}

// relockQueue tries to lock one queue again after its lock expired.
func (c *PushConsumer) relockQueue(ctx context.Context, q *pushQueue) bool {
	ok := c.lockQueues(ctx, []protocol.MessageQueue{q.mq})[q.mq]
	q.pq.setLocked(ok, time.Now())
	return ok
}

// resetOffsets moves the queues of topic this consumer holds to offsets
// (RESET_CONSUMER_CLIENT_OFFSET, Java's resetOffset): their loops stop,
// the new offsets are stored, and the next rebalance picks them up again
// from there.
func (c *PushConsumer) resetOffsets(ctx context.Context, topic string, offsets map[protocol.MessageQueue]int64) error {
	c.rbMu.Lock()
	defer c.rbMu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.qmu.RLock()
	var hit []*pushQueue
	for mq, q := range c.queues {
		if _, ok := offsets[mq]; ok && mq.Topic == topic {
			hit = append(hit, q)
		}
	}
	c.qmu.RUnlock()
	if len(hit) == 0 {
		return nil
	}
	var mqs []protocol.MessageQueue
	for _, q := range hit {
		c.stopQueue(q)
		c.store.update(q.mq, offsets[q.mq], false)
		mqs = append(mqs, q.mq)
	}
	c.store.persist(ctx, mqs)
	if c.lockingOrderly() {
		c.unlockQueues(ctx, mqs)
	}
	for _, mq := range mqs {
		if c.cfg.Model == Clustering {
			c.store.remove(mq)
		}
	}
	c.log.Info("client: offsets reset by the broker", "topic", topic, "queues", len(mqs))
	c.rebalanceNow()
	return nil
}

// String is for logs.
func (q *pushQueue) String() string { return fmt.Sprint(q.mq) }
