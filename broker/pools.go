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

// fastFailureInterval is how often queues are scanned (Apache: 10 ms).
const fastFailureInterval = 10 * time.Millisecond

// fastFailure answers SYSTEM_BUSY to requests that waited in their queue
// longer than the pool's waitTimeMillsIn*Queue while brokerFastFailureEnable
// is on (Apache's BrokerFastFailure), so clients turn to another broker
// instead of timing out on this one. It runs until stop is closed.
func (b *Broker) fastFailure(stop <-chan struct{}) {
	t := time.NewTicker(fastFailureInterval)
	defer t.Stop()
	specs := poolSpecs(b.cfg.Get())
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		cfg := b.cfg.Get()
		if !cfg.BrokerFastFailureEnable {
			continue
		}
		if b.pageCacheBusy() {
			if n := b.pools[processor.PoolSend].DropQueued(); n > 0 {
				b.log.Warn("fast failure: a CommitLog write is stalled; answered SYSTEM_BUSY to the queued sends", "requests", n,
					"stalledFor", b.store.CommitLog().WriteStalledFor(), "osPageCacheBusyTimeOutMills", cfg.OsPageCacheBusyTimeOutMills)
			}
		}
		for p, s := range specs {
			if s.maxWait == nil {
				continue
			}
			if n := b.pools[p].DropExpired(s.maxWait(cfg)); n > 0 {
				b.log.Warn("fast failure: answered SYSTEM_BUSY to requests that waited too long in their queue", "pool", s.name, "requests", n, "maxWait", s.maxWait(cfg))
			}
		}
	}
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
