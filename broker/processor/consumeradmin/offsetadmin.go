package consumeradmin

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// maxInt64 is Java's Long.MAX_VALUE.
const maxInt64 = int64(^uint64(0) >> 1)

func (p *Processor) offsetAdminHandlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.QueryConsumeTimeSpan:        p.queryConsumeTimeSpan,
		code.QueryCorrectionOffset:       p.queryCorrectionOffset,
		code.CloneGroupOffset:            p.cloneGroupOffset,
		code.QuerySubscriptionByConsumer: p.querySubscriptionByConsumer,
	}
}

// groupOffsets is the group's committed offsets of a topic by queue id.
func (p *Processor) groupOffsets(group, topic string) map[int32]int64 {
	ids := slices.Clone(p.d.Store.Queues(topic))
	if tc, ok := p.d.Topics.Get(topic); ok {
		for q := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
			ids = append(ids, q)
		}
	}
	out := map[int32]int64{}
	for _, q := range ids {
		if off, ok := p.d.Store.QueryOffset(group, topic, q); ok {
			out[q] = off
		}
	}
	return out
}

// cloneGroupOffset is CLONE_GROUP_OFFSET (314): the source group's offsets
// of the topic copied to the destination group. Unless offline, a topic the
// source group's live consumers do not subscribe is skipped. As in Apache,
// a blank topic clones nothing (it walks the group's topics but copies the
// blank one).
func (p *Processor) cloneGroupOffset(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	src, dest := f.Str("srcGroup"), f.Str("destGroup")
	topic := strings.TrimSpace(f.OptStr("topic", ""))
	offline := f.OptBool("offline", false)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	if topic == "" {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	if _, ok := p.d.Topics.Get(topic); !ok {
		p.log.Warn("cloneGroupOffset: topic config not exist", "topic", topic)
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	if !offline {
		if _, subscribed := p.d.Consumers.FindSubscription(src, topic); !subscribed && p.d.Consumers.SubscriptionCount(src) > 0 {
			p.log.Warn("cloneGroupOffset: topic does not exist in consumer group's subscription", "topic", topic, "group", src)
			return remoting.NewResponse(req, code.Success, ""), nil
		}
	}
	offs := p.groupOffsets(src, topic)
	for q, off := range offs {
		p.d.Store.CommitOffset(dest, topic, q, off)
	}
	p.log.Info("cloneGroupOffset", "src", src, "dest", dest, "topic", topic, "queues", len(offs), "remote", processor.RemoteAddr(ch))
	return remoting.NewResponse(req, code.Success, ""), nil
}

// querySubscriptionResponse is Apache's QuerySubscriptionResponseBody.
type querySubscriptionResponse struct {
	Group            string                   `json:"group"`
	SubscriptionData *client.SubscriptionData `json:"subscriptionData,omitempty"`
	Topic            string                   `json:"topic"`
}

// querySubscriptionByConsumer is QUERY_SUBSCRIPTION_BY_CONSUMER (345): the
// group's live subscription of the topic (absent when none).
func (p *Processor) querySubscriptionByConsumer(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, topic := f.Str("group"), f.Str("topic")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	body := querySubscriptionResponse{Group: group, Topic: topic}
	if sd, ok := p.d.Consumers.FindSubscription(group, topic); ok {
		body.SubscriptionData = &sd
	}
	return processor.Reply(req, "subscription", body)
}

// queryCorrectionOffset is QUERY_CORRECTION_OFFSET (308): per queue, the
// smallest offset any group other than filterGroups committed (offsets
// below the queue's min left out), or Long.MAX_VALUE where compareGroup is
// behind it.
func (p *Processor) queryCorrectionOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic, compare := f.Str("topic"), f.Str("compareGroup")
	filter := f.OptStr("filterGroups", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	skip := map[string]bool{}
	for _, g := range strings.Split(filter, ",") {
		skip[g] = true
	}
	correction := map[int32]int64{}
	for _, g := range p.d.Offsets.TopicGroups(topic) {
		if strings.TrimSpace(filter) != "" && skip[g] {
			continue
		}
		for q, off := range p.groupOffsets(g, topic) {
			if off < p.d.Store.MinOffset(topic, q) {
				continue
			}
			if cur, ok := correction[q]; !ok || off < cur {
				correction[q] = off
			}
		}
	}
	for q, off := range p.groupOffsets(compare, topic) {
		if cur, ok := correction[q]; ok && cur > off {
			correction[q] = maxInt64
		}
	}
	return processor.Reply(req, "correction offsets", struct {
		CorrectionOffsets map[int32]int64 `json:"correctionOffsets"`
	}{correction})
}

// queueTimeSpan is Apache's QueueTimeSpan.
type queueTimeSpan struct {
	ConsumeTimeStamp int64                 `json:"consumeTimeStamp"`
	DelayTime        int64                 `json:"delayTime"`
	MaxTimeStamp     int64                 `json:"maxTimeStamp"`
	MessageQueue     protocol.MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64                 `json:"minTimeStamp"`
}

// queryConsumeTimeSpan is QUERY_CONSUME_TIME_SPAN (303): per write queue,
// the store times of its first and last message, of the group's last
// consumed one, and how long its next one has waited.
func (p *Processor) queryConsumeTimeSpan(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic, group := f.Str("topic"), f.Str("group")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		return remoting.NewResponse(req, code.TopicNotExist, "topic["+topic+"] not exist"), nil
	}
	st := p.d.Store
	spans := []queueTimeSpan{}
	for q := range int32(tc.WriteQueueNums) {
		s := queueTimeSpan{MessageQueue: protocol.MessageQueue{Topic: topic, BrokerName: p.d.Config().BrokerName, QueueID: int(q)}}
		s.MinTimeStamp = st.EarliestMessageTime(topic, q)
		maxOff := st.MaxOffset(topic, q)
		s.MaxTimeStamp = st.MessageStoreTime(topic, q, maxOff-1)
		consumed, found := st.QueryOffset(group, topic, q)
		if !found {
			consumed = -1
		}
		if consumed > 0 {
			s.ConsumeTimeStamp = st.MessageStoreTime(topic, q, consumed-1)
		} else {
			s.ConsumeTimeStamp = s.MinTimeStamp
		}
		if consumed < maxOff {
			s.DelayTime = time.Now().UnixMilli() - st.MessageStoreTime(topic, q, consumed)
		}
		spans = append(spans, s)
	}
	return processor.Reply(req, "consume time span", struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}{spans})
}
