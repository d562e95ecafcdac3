package consumeradmin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// MQVersion ordinals below which Java refuses to talk to a client.
const (
	versionV3_0_7Snapshot = 28 // RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT
	versionV3_1_8Snapshot = 62 // GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY
)

// consumerRunningInfo is GET_CONSUMER_RUNNING_INFO (307): forwarded to the
// client, whose answer (ConsumerRunningInfo JSON) is returned as is.
func (p *Processor) consumerRunningInfo(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, clientID := f.Str("consumerGroup"), f.Str("clientId")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	return p.callConsumer(ctx, req, group, clientID, cloneExt(req.ExtFields), req.Body)
}

// consumeMessageDirectly is CONSUME_MESSAGE_DIRECTLY (309): the stored
// message named by the offset message id msgId is attached as the body,
// with this broker's name and the topic's and group's sysFlags, and the
// request is forwarded to the client.
func (p *Processor) consumeMessageDirectly(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group := f.Str("consumerGroup")
	clientID := f.OptStr("clientId", "")
	msgID := f.OptStr("msgId", "")
	tp := f.OptStr("topic", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	ext := cloneExt(req.ExtFields)
	ext["brokerName"] = p.d.Config().BrokerName
	if tp != "" {
		if tc, ok := p.d.Topics.Get(tp); ok {
			ext["topicSysFlag"] = strconv.Itoa(tc.TopicSysFlag)
		}
	}
	if sg, ok := p.d.Subscriptions.Find(group); ok {
		ext["groupSysFlag"] = strconv.Itoa(sg.GroupSysFlag)
	}
	_, phy, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "consume message directly: bad msgId %q: %v", msgID, err)
	}
	rec, err := p.d.Store.ReadRecord(phy)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "consume message directly: no message at commit log offset %d (msgId %s): %v", phy, msgID, err)
	}
	return p.callConsumer(ctx, req, group, clientID, ext, rec)
}

func cloneExt(ext map[string]string) map[string]string {
	out := make(map[string]string, len(ext)+3)
	maps.Copy(out, ext)
	return out
}

// callConsumer is Java's callConsumer: find the channel of (group,
// clientId), send it a request with the same code, ext and body, and answer
// with the client's response. No channel: SYSTEM_ERROR "The Consumer <g>
// <id> not online"; no answer in time: CONSUME_MSG_TIMEOUT.
func (p *Processor) callConsumer(ctx context.Context, req *remoting.Command, group, clientID string, ext map[string]string, body []byte) (*remoting.Command, error) {
	info, ok := p.d.Consumers.FindChannel(group, clientID)
	if !ok || info.Channel == nil || !info.Channel.IsActive() {
		return nil, remoting.Errorf(code.SystemError, "The Consumer <%s> <%s> not online", group, clientID)
	}
	if info.Version < versionV3_1_8Snapshot {
		return nil, remoting.Errorf(code.SystemError, "The Consumer <%s> Version <%s> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
			clientID, remoting.VersionDesc(info.Version))
	}
	cctx, cancel := context.WithTimeout(ctx, p.d.CallTimeout)
	defer cancel()
	out := remoting.NewRequest(req.Code, ext, body)
	cresp, err := info.Channel.Invoke(cctx, out)
	switch {
	case errors.Is(err, remoting.ErrTimeout):
		return nil, remoting.Errorf(code.ConsumeMsgTimeout, "consumer <%s> <%s> Timeout: %v", group, clientID, err)
	case err != nil:
		return nil, remoting.Errorf(code.SystemError, "invoke consumer <%s> <%s> Exception: %v", group, clientID, err)
	}
	resp := remoting.NewResponse(req, cresp.Code, cresp.Remark)
	resp.ExtFields = cresp.ExtFields
	resp.Body = cresp.Body
	return resp, nil
}

// consumerStatusBody is Java's GetConsumerStatusBody.
type consumerStatusBody struct {
	ConsumerTable     map[string]protocol.MQMap[int64] `json:"consumerTable"`
	MessageQueueTable protocol.MQMap[int64]            `json:"messageQueueTable"`
}

// consumerStatus is INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), Java's
// Broker2Client.getConsumeStatus: GET_CONSUMER_STATUS_FROM_CLIENT (221) to
// every client of the group (or only the one whose client id is
// clientAddr), their offset tables collected by client id. Clients that
// fail or do not answer in time are left out.
func (p *Processor) consumerStatus(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	tp, group := f.Str("topic"), f.Str("group")
	origin := f.OptStr("clientAddr", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	g, ok := p.d.Consumers.GroupInfo(group)
	if !ok || len(g.Channels) == 0 {
		return nil, remoting.Errorf(code.SystemError, "No Any Consumer online in the consumer group: [%s]", group)
	}
	var targets []client.ChannelInfo
	for _, c := range g.Channels {
		if c.Version < versionV3_0_7Snapshot {
			return nil, remoting.Errorf(code.SystemError, "the client does not support this feature. version=%s", remoting.VersionDesc(c.Version))
		}
		if origin == "" || origin == c.ClientID {
			targets = append(targets, c)
		}
	}
	body := consumerStatusBody{ConsumerTable: map[string]protocol.MQMap[int64]{}, MessageQueueTable: protocol.MQMap[int64]{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range targets {
		wg.Go(func() {
			table, err := p.askStatus(ctx, c, tp, group)
			if err != nil {
				p.log.Warn("get consumer status from client failed", "group", group, "topic", tp, "clientId", c.ClientID, "err", err)
				return
			}
			if table == nil {
				return
			}
			mu.Lock()
			body.ConsumerTable[c.ClientID] = table
			mu.Unlock()
		})
	}
	wg.Wait()
	return bodyResponse(req, body)
}

// askStatus sends GET_CONSUMER_STATUS_FROM_CLIENT to one client; a nil
// table means the client answered without one.
func (p *Processor) askStatus(ctx context.Context, c client.ChannelInfo, tp, group string) (protocol.MQMap[int64], error) {
	if c.Channel == nil {
		return nil, errors.New("no channel")
	}
	cctx, cancel := context.WithTimeout(ctx, p.d.StatusTimeout)
	defer cancel()
	resp, err := c.Channel.Invoke(cctx, remoting.NewRequest(code.GetConsumerStatusFromClient, map[string]string{"topic": tp, "group": group}, nil))
	if err != nil {
		return nil, err
	}
	if resp.Code != code.Success || len(resp.Body) == 0 {
		return nil, nil
	}
	var st struct {
		MessageQueueTable protocol.MQMap[int64] `json:"messageQueueTable"`
	}
	if err := protocol.UnmarshalMQKeyed(resp.Body, &st); err != nil {
		return nil, fmt.Errorf("decode consumer status: %w", err)
	}
	if st.MessageQueueTable == nil {
		st.MessageQueueTable = protocol.MQMap[int64]{}
	}
	return st.MessageQueueTable, nil
}

// onlineChannels returns the group's live channels, by client id.
func (p *Processor) onlineChannels(group string) []client.ChannelInfo {
	g, ok := p.d.Consumers.GroupInfo(group)
	if !ok {
		return nil
	}
	return slices.DeleteFunc(g.Channels, func(c client.ChannelInfo) bool { return c.Channel == nil || !c.Channel.IsActive() })
}
