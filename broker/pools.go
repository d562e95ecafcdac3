package broker

import (
	"context"
	"time"

	"github.com/rmqgo/rmq/broker/admin"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// poolSpec is one request executor: Apache's thread pool of that name, its
// size and queue keys, and the queue wait after which brokerFastFailureEnable
// answers a request SYSTEM_BUSY (0: never).
type poolSpec struct {
	name    string // as admin.Pool* (runtime info)
	workers int
	queue   int
	maxWait func(*config.Config) time.Duration
}

func poolSpecs(cfg *config.Config) map[processor.Pool]poolSpec {
	return map[processor.Pool]poolSpec{
		processor.PoolSend:           {admin.PoolSend, sendWorkers(cfg), cfg.SendThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInSendQueue }},
		processor.PoolPull:           {admin.PoolPull, cfg.PullMessageThreadPoolNums, cfg.PullThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInPullQueue }},
		processor.PoolLitePull:       {admin.PoolLitePull, cfg.LitePullMessageThreadPoolNums, cfg.LitePullThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInLitePullQueue }},
		processor.PoolAck:            {admin.PoolAck, cfg.AckMessageThreadPoolNums, cfg.AckThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInAckQueue }},
		processor.PoolHeartbeat:      {"heartbeat", cfg.HeartbeatThreadPoolNums, cfg.HeartbeatThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInHeartbeatQueue }},
		processor.PoolEndTransaction: {admin.PoolEndTransaction, cfg.EndTransactionThreadPoolNums, cfg.EndTransactionPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInTransactionQueue }},
		processor.PoolAdmin:          {admin.PoolAdmin, cfg.AdminBrokerThreadPoolNums, cfg.AdminBrokerThreadPoolQueueCapacity, func(c *config.Config) time.Duration { return c.WaitTimeMillsInAdminBrokerQueue }},
		processor.PoolReply:          {"reply", cfg.ProcessReplyMessageThreadPoolNums, cfg.ReplyThreadPoolQueueCapacity, nil},
		processor.PoolQuery:          {admin.PoolQuery, cfg.QueryMessageThreadPoolNums, cfg.QueryThreadPoolQueueCapacity, nil},
		processor.PoolClientManage:   {"clientManage", cfg.ClientManageThreadPoolNums, cfg.ClientManagerThreadPoolQueueCapacity, nil},
		processor.PoolConsumerManage: {"consumerManage", cfg.ConsumerManageThreadPoolNums, cfg.ConsumerManagerThreadPoolQueueCapacity, nil},
		processor.PoolLoadBalance:    {"loadBalance", cfg.LoadBalanceProcessorThreadPoolNums, cfg.LoadBalanceThreadPoolQueueCapacity, nil},
	}
}

// poolFor is the executor a request code runs on: the one Apache's broker
// runs it on (BrokerController.registerProcessor); codes Apache does not
// list run where their package asks (Apache's default is the admin executor).
func poolFor(c int32, asked processor.Pool) processor.Pool {
	switch c {
	case code.SendMessage, code.SendMessageV2, code.SendBatchMessage, code.ConsumerSendMsgBack, code.RecallMessage:
		return processor.PoolSend
	case code.PullMessage, code.PeekMessage, code.PopMessage, code.Notification, code.PollingInfo:
		return processor.PoolPull
	case code.LitePullMessage:
		return processor.PoolLitePull
	case code.AckMessage, code.BatchAckMessage, code.ChangeMessageInvisible:
		return processor.PoolAck
	case code.SendReplyMessage, code.SendReplyMessageV2:
		return processor.PoolReply
	case code.QueryMessage, code.ViewMessageByID:
		return processor.PoolQuery
	case code.HeartBeat:
		return processor.PoolHeartbeat
	case code.UnregisterClient, code.CheckClientConfig:
		return processor.PoolClientManage
	case code.GetConsumerListByGroup, code.UpdateConsumerOffset, code.QueryConsumerOffset:
		return processor.PoolConsumerManage
	case code.QueryAssignment, code.SetMessageRequestMode:
		return processor.PoolLoadBalance
	case code.EndTransaction:
		return processor.PoolEndTransaction
	}
	return asked
}

func newPools(cfg *config.Config) map[processor.Pool]*remoting.Executor {
	pools := make(map[processor.Pool]*remoting.Executor)
	for p, s := range poolSpecs(cfg) {
		pools[p] = remoting.NewExecutor(s.name, s.workers, s.queue)
	}
	return pools
}

// fastFailureInterval is how often queues are scanned while a request
// waits in one (Apache: 10 ms, always). With every queue empty the scan
// runs every fastFailureIdleInterval (at most half the shortest wait it
// enforces): a request that queues meanwhile is first looked at within
// that, long before it may be shed, and the scans go back to every 10 ms.
// An idle broker then does not wake up 100 times a second (0.8% of a core
// on the 2-core test machine, most of an idle broker's CPU).
const (
	fastFailureInterval     = 10 * time.Millisecond
	fastFailureIdleInterval = 100 * time.Millisecond
)

// fastFailure answers SYSTEM_BUSY to requests that waited in their queue
// longer than the pool's waitTimeMillsIn*Queue while brokerFastFailureEnable
// is on (Apache's BrokerFastFailure), so clients turn to another broker
// instead of timing out on this one. It runs until stop is closed.
func (b *Broker) fastFailure(stop <-chan struct{}) {
	period := fastFailureInterval
	t := time.NewTicker(period)
	defer t.Stop()
	specs := poolSpecs(b.cfg.Get())
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		next := fastFailureIdleInterval
		cfg := b.cfg.Get()
		if cfg.BrokerFastFailureEnable {
			next = b.fastFailureScan(cfg, specs)
		}
		if next != period {
			period = next
			t.Reset(period)
		}
	}
}

// fastFailureScan is one scan of fastFailure; it returns when the next is
// due.
func (b *Broker) fastFailureScan(cfg *config.Config, specs map[processor.Pool]poolSpec) time.Duration {
	if b.pageCacheBusy() {
		if n := b.pools[processor.PoolSend].DropQueued(); n > 0 {
			b.log.Warn("fast failure: a CommitLog write is stalled; answered SYSTEM_BUSY to the queued sends", "requests", n,
				"stalledFor", b.store.CommitLog().WriteStalledFor(), "osPageCacheBusyTimeOutMills", cfg.OsPageCacheBusyTimeOutMills)
		}
	}
	next := fastFailureIdleInterval
	for p, s := range specs {
		if s.maxWait == nil {
			continue
		}
		maxWait := s.maxWait(cfg)
		pool := b.pools[p]
		if n := pool.DropExpired(maxWait); n > 0 {
			b.log.Warn("fast failure: answered SYSTEM_BUSY to requests that waited too long in their queue", "pool", s.name, "requests", n, "maxWait", maxWait)
		}
		if pool.QueueLen() > 0 {
			next = fastFailureInterval
		}
		next = min(next, max(maxWait/2, fastFailureInterval))
	}
	return next
}

// pageCacheBusy is Apache's isOSPageCacheBusy: a CommitLog write has been
// running for longer than osPageCacheBusyTimeOutMills (the disk cannot keep
// up with the page cache).
func (b *Broker) pageCacheBusy() bool {
	if b.store == nil {
		return false
	}
	return b.store.CommitLog().WriteStalledFor() > b.cfg.Get().OsPageCacheBusyTimeOutMills
}

// rejectWhileBusy answers the send codes SYSTEM_BUSY while the page cache
// is busy, before they reach the store (Apache's
// SendMessageProcessor.rejectRequest): producers retry on another broker.
func (b *Broker) rejectWhileBusy(h remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if b.pageCacheBusy() {
			return remoting.NewResponse(req, code.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while"), nil
		}
		return h(ctx, ch, req)
	}
}
