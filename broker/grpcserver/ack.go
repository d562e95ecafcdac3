package grpcserver

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting/code"
)

// receipt decodes a receipt handle, takes its current one (a renewed
// message's) and checks it as the proxy's validateReceiptHandle:
// unreadable or expired handles are INVALID_RECEIPT_HANDLE.
func receipt(c Consumer, group, h string) (Receipt, *v2pb.Status) {
	r, err := ParseReceipt(h)
	if err != nil {
		return r, newStatus(v2pb.Code_INVALID_RECEIPT_HANDLE, err.Error())
	}
	r = c.Current(group, r)
	if r.Expired(time.Now()) {
		return r, newStatus(v2pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired")
	}
	return r, nil
}

// resultStatus is the status of an ack, change or dead-lettering.
func resultStatus(res Result, err error) *v2pb.Status {
	if err != nil {
		return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, err.Error())
	}
	if res.Code != code.Success {
		return newStatus(consumeCode(res.Code), res.Remark)
	}
	return ok()
}

// AckMessage acks each entry on its own (Apache proxy/.../grpc/v2/consumer/
// AckMessageActivity.java): every entry gets its status; the response's is
// the entries' common code, MULTIPLE_RESULTS when they differ.
func (m *messaging) AckMessage(ctx context.Context, req *v2pb.AckMessageRequest) (*v2pb.AckMessageResponse, error) {
	c, st := m.consumerFor(req.GetTopic(), req.GetGroup())
	if st != nil {
		return &v2pb.AckMessageResponse{Status: st}, nil
	}
	if len(req.GetEntries()) == 0 {
		// The proxy's answer to an ack without entries (its
		// setAckResponseStatus with no result).
		return &v2pb.AckMessageResponse{Status: newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "ack message result is empty")}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	ackOne := func(e *v2pb.AckMessageEntry) *v2pb.Status {
		l, st := m.liteOf(e.LiteTopic)
		if st != nil {
			return st
		}
		r, st := receipt(c, group, e.GetReceiptHandle())
		if st != nil {
			return st
		}
		if l != nil {
			return resultStatus(l.AckLite(ctx, group, topic, e.GetLiteTopic(), r))
		}
		return resultStatus(c.Ack(ctx, group, topic, r))
	}
	entries := req.GetEntries()
	sts := make([]*v2pb.Status, len(entries))
	if len(entries) == 1 {
		sts[0] = ackOne(entries[0])
	} else {
		// The entries are acked concurrently, so that the broker records
		// those of one revive queue together (broker/pop ackAll); the
		// proxy too issues every entry's ack before awaiting any
		// (AckMessageActivity.ackMessageOneByOne).
		var wg sync.WaitGroup
		for i, e := range entries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sts[i] = ackOne(e)
			}()
		}
		wg.Wait()
	}
	resp := &v2pb.AckMessageResponse{Entries: make([]*v2pb.AckMessageResultEntry, 0, len(entries))}
	// The entries' common code, or MULTIPLE_RESULTS once two differ.
	common, mixed := v2pb.Code_CODE_UNSPECIFIED, false
	for i, e := range entries {
		st := sts[i]
		if i == 0 {
			common = st.GetCode()
		} else if st.GetCode() != common {
			mixed = true
		}
		resp.Entries = append(resp.Entries, &v2pb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: st})
	}
	if mixed {
		resp.Status = newStatus(v2pb.Code_MULTIPLE_RESULTS, v2pb.Code_MULTIPLE_RESULTS.String())
	} else {
		resp.Status = newStatus(common, common.String())
	}
	return resp, nil
}

// ChangeInvisibleDuration makes a received message invisible for the given
// duration from now and answers its new receipt handle (Apache
// proxy/.../grpc/v2/consumer/ChangeInvisibleDurationActivity.java).
func (m *messaging) ChangeInvisibleDuration(ctx context.Context, req *v2pb.ChangeInvisibleDurationRequest) (*v2pb.ChangeInvisibleDurationResponse, error) {
	c, st := m.consumerFor(req.GetTopic(), req.GetGroup())
	if st != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	l, st := m.liteOf(req.LiteTopic)
	if st != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	d := req.GetInvisibleDuration().AsDuration()
	if req.InvisibleDuration == nil || d < 0 || d > c.ConsumeLimits().MaxInvisible {
		return &v2pb.ChangeInvisibleDurationResponse{Status: newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration out of range [0, "+c.ConsumeLimits().MaxInvisible.String()+"]")}, nil
	}
	r, st := receipt(c, req.GetGroup().GetName(), req.GetReceiptHandle())
	if st != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	var (
		h   string
		res Result
		err error
	)
	if l != nil {
		h, res, err = l.ChangeInvisibleLite(ctx, req.GetGroup().GetName(), req.GetTopic().GetName(), req.GetLiteTopic(), r, d)
	} else {
		h, res, err = c.ChangeInvisible(ctx, req.GetGroup().GetName(), req.GetTopic().GetName(), r, d)
	}
	if st := resultStatus(res, err); st.GetCode() != v2pb.Code_OK {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	return &v2pb.ChangeInvisibleDurationResponse{Status: ok(), ReceiptHandle: h}, nil
}

// ForwardMessageToDeadLetterQueue moves a received message to the group's
// DLQ and acks it (Apache proxy/.../grpc/v2/producer/
// ForwardMessageToDLQActivity.java): the push consumer's answer to a
// message it failed max_delivery_attempts times.
func (m *messaging) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2pb.ForwardMessageToDeadLetterQueueRequest) (*v2pb.ForwardMessageToDeadLetterQueueResponse, error) {
	c, st := m.consumerFor(req.GetTopic(), req.GetGroup())
	if st != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	l, st := m.liteOf(req.LiteTopic)
	if st != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	r, st := receipt(c, req.GetGroup().GetName(), req.GetReceiptHandle())
	if st != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	if l != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{
			Status: resultStatus(l.DeadLetterLite(ctx, req.GetGroup().GetName(), req.GetTopic().GetName(), req.GetLiteTopic(), req.GetMessageId(), r)),
		}, nil
	}
	return &v2pb.ForwardMessageToDeadLetterQueueResponse{
		Status: resultStatus(c.DeadLetter(ctx, req.GetGroup().GetName(), req.GetTopic().GetName(), req.GetMessageId(), r)),
	}, nil
}

// NotifyClientTermination is a client's goodbye (Apache proxy/.../grpc/v2/
// client/ClientActivity.java): a consumer leaves its group's registration
// (its un-acked messages come back when their invisible time ends, as with
// the proxy); a producer's sessions (by x-mq-client-id) stop being
// check-back targets at once, not when their streams end.
func (m *messaging) NotifyClientTermination(ctx context.Context, req *v2pb.NotifyClientTerminationRequest) (*v2pb.NotifyClientTerminationResponse, error) {
	m.consumerGone(ctx, req)
	m.producerGone(ctx)
	m.producers.forgetClient(clientID(ctx))
	return &v2pb.NotifyClientTerminationResponse{Status: ok()}, nil
}

// subscriptionSettings completes a consumer's settings with its group's
// (the proxy's GrpcClientSettingsManager.mergeSubscriptionData): FIFO from
// consumeMessageOrderly, max attempts retryMaxTimes+1 and the group's
// retry policy, the receive batch size and the long polling timeout.
func (m *messaging) subscriptionSettings(out *v2pb.Settings, client *v2pb.Subscription) {
	sub := &v2pb.Subscription{
		Group: client.GetGroup(), Subscriptions: client.GetSubscriptions(),
		Fifo: client.Fifo, ReceiveBatchSize: client.ReceiveBatchSize, LongPollingTimeout: client.LongPollingTimeout,
	}
	out.PubSub = &v2pb.Settings_Subscription{Subscription: sub}
	c := m.consumer()
	if c == nil {
		return
	}
	lim := c.ConsumeLimits()
	batch := lim.BatchSize
	sub.ReceiveBatchSize = &batch
	sub.LongPollingTimeout = durationpb.New(lim.MaxLongPolling)
	g, found := c.Group(client.GetGroup().GetName())
	if !found {
		return
	}
	fifo := g.Orderly
	sub.Fifo = &fifo
	policy := &v2pb.RetryPolicy{MaxAttempts: int32(g.RetryMaxTimes) + 1}
	if e := g.Exponential; e != nil {
		policy.Strategy = &v2pb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2pb.ExponentialBackoff{
			Initial: durationpb.New(e.Initial), Max: durationpb.New(e.Max), Multiplier: e.Multiplier,
		}}
	} else {
		cb := &v2pb.CustomizedBackoff{}
		for _, d := range g.Customized {
			cb.Next = append(cb.Next, durationpb.New(d))
		}
		policy.Strategy = &v2pb.RetryPolicy_CustomizedBackoff{CustomizedBackoff: cb}
	}
	out.BackoffPolicy = policy
}
