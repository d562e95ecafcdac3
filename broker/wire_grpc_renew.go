package broker

import (
	"context"
	"time"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/remoting/code"
)

// Receipt handles of auto_renew receives (a push consumer's), renewed
// until acked as the proxy's ReceiptHandleProcessor does (Apache
// proxy/.../processor/ReceiptHandleProcessor.java): a message popped for
// renewSliceTimeMillis gets another slice (CHANGE_MESSAGE_INVISIBLETIME)
// whenever less than renewAheadTimeMillis is left, for renewMaxTimeMillis
// at most. The client keeps naming the message by the handle it received:
// an ack, change or dead-lettering takes the renewed handle in its place.
// When the client is gone (NotifyClientTermination, or its registry
// channel expired) its messages are made visible again within a second.

// renewTick is how often due handles are looked for.
const renewTick = 500 * time.Millisecond

// clearInvisible is the invisible time left to the messages of a client
// that went away (the proxy's invisibleTimeMillisWhenClear).
const clearInvisible = time.Second

type renewKey struct{ group, handle string }

type renewEntry struct {
	group, topic, clientID string
	lite                   string // the lite topic of a lite message
	cur                    grpcserver.Receipt
	since                  time.Time
	// registered: the client had a registry channel (heartbeats) when
	// it received the message; without one later it is gone.
	registered bool
}

// renewLater records the popped messages' handles for renewal and starts
// the renewal loop if it is not running.
func (g grpcBackend) renewLater(group, topic, lite, clientID string, handles []string) {
	c := &g.b.grpcClients
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped() {
		return
	}
	if c.renew == nil {
		c.renew = map[renewKey]*renewEntry{}
	}
	now := time.Now()
	for _, h := range handles {
		r, err := grpcserver.ParseReceipt(h)
		if err != nil {
			continue
		}
		_, registered := c.chans[clientID]
		c.renew[renewKey{group, h}] = &renewEntry{group: group, topic: topic, lite: lite, clientID: clientID, cur: r, since: now, registered: registered}
	}
	if !c.renewing && len(c.renew) > 0 {
		c.renewing = true
		c.wg.Add(1)
		go g.renewLoop()
	}
}

// Current takes the message named by r out of the renewal and returns its
// current receipt (r itself when it is not renewed).
func (g grpcBackend) Current(group string, r grpcserver.Receipt) grpcserver.Receipt {
	c := &g.b.grpcClients
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.renew[renewKey{group, r.Handle}]; ok {
		delete(c.renew, renewKey{group, r.Handle})
		return e.cur
	}
	return r
}

// renewLoop renews due handles until none is left or the broker stops.
func (g grpcBackend) renewLoop() {
	c := &g.b.grpcClients
	defer c.wg.Done()
	t := time.NewTicker(renewTick)
	defer t.Stop()
	stop := c.stopping()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		g.renewDue()
		c.mu.Lock()
		if len(c.renew) == 0 {
			c.renewing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// renewDue gives another slice to the handles about to expire, and
// releases those of clients that are gone or renewed for too long.
func (g grpcBackend) renewDue() {
	cfg := g.b.cfg.Get()
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	slice, ahead, maxAge := ms(cfg.RenewSliceTimeMillis), ms(cfg.RenewAheadTimeMillis), ms(cfg.RenewMaxTimeMillis)
	now := time.Now()
	c := &g.b.grpcClients
	type job struct {
		key   renewKey
		e     renewEntry
		clear bool
	}
	var jobs []job
	c.mu.Lock()
	for k, e := range c.renew {
		ch, ok := c.chans[e.clientID]
		gone := (ok && !ch.IsActive()) || (!ok && e.registered)
		expires := time.UnixMilli(e.cur.PopTime + e.cur.InvisibleTime)
		switch {
		case gone:
			jobs = append(jobs, job{k, *e, true})
			delete(c.renew, k)
		case now.Sub(e.since) > maxAge:
			delete(c.renew, k) // left to expire as it is
		case expires.Sub(now) <= ahead:
			jobs = append(jobs, job{k, *e, false})
		}
	}
	c.mu.Unlock()
	for _, j := range jobs {
		d := slice
		if j.clear {
			d = clearInvisible
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		h, res, err := g.changeInvisibleOf(ctx, j.e.group, j.e.topic, j.e.lite, j.e.cur, d)
		cancel()
		if j.clear {
			continue
		}
		next, perr := grpcserver.ParseReceipt(h)
		c.mu.Lock()
		if e, ok := c.renew[j.key]; ok {
			if err != nil || res.Code != code.Success || perr != nil {
				// Acked meanwhile, or no longer known: nothing to renew.
				delete(c.renew, j.key)
			} else {
				e.cur = next
			}
		}
		c.mu.Unlock()
		if err != nil || (res.Code != code.Success && res.Code != code.NoMessage) {
			g.b.log.Debug("grpc: renew receipt handle", "group", j.e.group, "topic", j.e.topic, "err", err, "code", res.Code, "remark", res.Remark)
		}
	}
}

// releaseClient makes the renewed messages of a client that said goodbye
// visible again soon.
func (g grpcBackend) releaseClient(clientID string) {
	c := &g.b.grpcClients
	var jobs []renewEntry
	c.mu.Lock()
	for k, e := range c.renew {
		if e.clientID == clientID {
			jobs = append(jobs, *e)
			delete(c.renew, k)
		}
	}
	c.mu.Unlock()
	for _, e := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, _, _ = g.changeInvisibleOf(ctx, e.group, e.topic, e.lite, e.cur, clearInvisible)
		cancel()
	}
}
