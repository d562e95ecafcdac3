package controller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rmqgo/rmq/remoting"
)

// notifyTimeout bounds one NOTIFY_BROKER_ROLE_CHANGED send.
const notifyTimeout = 3 * time.Second

// notifier sends role-change notifications, keeping per broker address
// only the newest epoch's: an older one still waiting is dropped, so a
// broker never hears of an epoch after a newer one from us.
type notifier struct {
	client *remoting.Client
	log    *slog.Logger
	mu     sync.Mutex
	latest map[string]int32
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newNotifier(client *remoting.Client, log *slog.Logger) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &notifier{client: client, log: log, latest: map[string]int32{}, ctx: ctx, cancel: cancel}
}

func (n *notifier) send(addr string, epoch int32, req *remoting.Command) {
	n.mu.Lock()
	if cur, ok := n.latest[addr]; ok && cur > epoch {
		n.mu.Unlock()
		return
	}
	n.latest[addr] = epoch
	n.wg.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		n.mu.Lock()
		stale := n.latest[addr] != epoch
		n.mu.Unlock()
		if stale {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, notifyTimeout)
		defer cancel()
		if err := n.client.InvokeOneway(ctx, addr, req); err != nil {
			n.log.Warn("controller: role change notification failed", "broker", addr, "masterEpoch", epoch, "err", err)
		}
	}()
}

func (n *notifier) close() {
	n.cancel()
	n.wg.Wait()
}
