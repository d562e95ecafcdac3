package consumeradmin

import (
	"context"
	"slices"
	"strconv"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ResetOffsetBody is the INVOKE_BROKER_TO_RESET_OFFSET answer and the
// RESET_CONSUMER_CLIENT_OFFSET body: {"offsetTable":{{mq}:offset,...}}.
// client-go slices its text, so it must stay compact (MarshalMQKeyed).
type ResetOffsetBody struct {
	OffsetTable protocol.MQMap[int64] `json:"offsetTable"`
}

// queueForC is one entry of ResetOffsetBodyForC (C++ clients).
type queueForC struct {
	BrokerName string `json:"brokerName"`
	Offset     int64  `json:"offset"`
	QueueID    int    `json:"queueId"`
	Topic      string `json:"topic"`
}

type resetOffsetBodyForC struct {
	OffsetTable []queueForC `json:"offsetTable"`
}

type resetRequest struct {
	topic, group string
	timestamp    int64
	force        bool
	queueID      int32
	offset       int64 // -1: none
}

// resetOffset is INVOKE_BROKER_TO_RESET_OFFSET (222).
//
// With useServerSideResetOffset (the default, as in Java 5) it is Java's
// resetOffsetInner: the offsets of every read queue (or of queueId, to
// offset when given) become the queue offset of timestamp (the max offset
// for a negative timestamp) and are committed, whether or not a consumer is
// online, and recorded in the reset table (Deps.Resets): the next pull of
// each queue answers PULL_OFFSET_MOVED with the reset offset, which moves
// any client there (Java's client after a 10 s pause, client-go likewise),
// and Java pushes nothing. For non-Java clients of the group that are online
// this broker also pushes RESET_CONSUMER_CLIENT_OFFSET at once [our choice:
// client-go and the C++ client apply it immediately]; when every online
// client got the push, the reset table is left alone, since a pending
// entry would stall each of them 10 s more on its next pull.
//
// Without it, it is Java's Broker2Client.resetOffset: only with a consumer
// online (else CONSUMER_NOT_ONLINE, and mqadmin falls back to committing
// offsets itself), write queues only, an offset only moves back unless
// isForce, nothing is committed: the clients are told and commit.
func (p *Processor) resetOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	r := resetRequest{topic: f.Str("topic"), group: f.Str("group"), timestamp: f.Int64("timestamp")}
	r.force = f.OptBool("isForce", false)
	r.queueID = f.OptInt32("queueId", -1)
	r.offset = f.OptInt64("offset", -1)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	cfg := p.d.Config()
	p.log.Info("reset offset", "topic", r.topic, "group", r.group, "timestamp", r.timestamp, "isForce", r.force,
		"queueId", r.queueID, "offset", r.offset, "serverSide", cfg.UseServerSideResetOffset)
	var table protocol.MQMap[int64]
	var err error
	if cfg.UseServerSideResetOffset {
		online := p.onlineChannels(r.group)
		pushed := slices.DeleteFunc(slices.Clone(online), func(c client.ChannelInfo) bool { return c.Language == remoting.LangJava })
		// Java clients (or none online): the next pull moves them.
		table, err = p.resetServerSide(cfg, r, len(online) == 0 || len(pushed) < len(online))
		if err != nil {
			return nil, err
		}
		for _, c := range pushed {
			p.notifyReset(c, r, table)
		}
	} else {
		table, err = p.resetClientSide(cfg, r)
		if err != nil {
			return nil, err
		}
	}
	return bodyResponse(req, ResetOffsetBody{OffsetTable: table})
}

// offsetAt is Java's searchOffsetByTimestamp.
func (p *Processor) offsetAt(topic string, qid int32, ts int64) (int64, error) {
	if ts < 0 {
		return max(p.d.Store.MaxOffset(topic, qid), 0), nil
	}
	off, err := p.d.Store.SearchOffsetByTime(topic, qid, ts, consumequeue.BoundaryLower)
	if err != nil {
		return 0, remoting.Errorf(code.SystemError, "search offset of %s-%d by timestamp %d: %v", topic, qid, ts, err)
	}
	return off, nil
}

// resetServerSide commits the reset offsets and, with onPull, records
// them for the queues' next pulls.
func (p *Processor) resetServerSide(cfg *config.Config, r resetRequest, onPull bool) (protocol.MQMap[int64], error) {
	if cfg.BrokerRole == config.RoleSlave {
		return nil, remoting.Errorf(code.SystemError, "Can not reset offset in slave broker")
	}
	tc, ok := p.d.Topics.Get(r.topic)
	if !ok {
		return nil, remoting.Errorf(code.TopicNotExist, "Topic %s does not exist", r.topic)
	}
	if !p.d.Subscriptions.Contains(r.group) {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "Group %s does not exist", r.group)
	}
	offsets := map[int32]int64{}
	if r.queueID >= 0 {
		off := r.offset
		if off != -1 {
			lo, hi := p.d.Store.MinOffset(r.topic, r.queueID), p.d.Store.MaxOffset(r.topic, r.queueID)
			if lo >= 0 && off < lo || off > hi+1 {
				return nil, remoting.Errorf(code.SystemError, "Target offset %d not in consume queue range [%d-%d]", off, lo, hi)
			}
		} else {
			var err error
			if off, err = p.offsetAt(r.topic, r.queueID, r.timestamp); err != nil {
				return nil, err
			}
		}
		offsets[r.queueID] = off
	} else {
		for i := range tc.ReadQueueNums {
			off, err := p.offsetAt(r.topic, int32(i), r.timestamp)
			if err != nil {
				return nil, err
			}
			offsets[int32(i)] = off
		}
	}
	if len(offsets) == 0 {
		return nil, remoting.Errorf(code.SystemError, "No queues to reset.")
	}
	table := protocol.MQMap[int64]{}
	for qid, off := range offsets {
		if off < 0 {
			continue // Java's assignResetOffset ignores it
		}
		p.d.Store.CommitOffset(r.group, r.topic, qid, off)
		if onPull && p.d.Resets != nil {
			p.d.Resets.Assign(r.group, r.topic, qid, off)
		}
		table[protocol.MessageQueue{BrokerName: cfg.BrokerName, QueueID: int(qid), Topic: r.topic}] = off
	}
	return table, nil
}

func (p *Processor) resetClientSide(cfg *config.Config, r resetRequest) (protocol.MQMap[int64], error) {
	tc, ok := p.d.Topics.Get(r.topic)
	if !ok {
		return nil, remoting.Errorf(code.TopicNotExist, "[reset-offset] reset offset failed, no topic in this broker. topic=%s", r.topic)
	}
	table := protocol.MQMap[int64]{}
	for i := range tc.WriteQueueNums {
		qid := int32(i)
		cur, ok := p.d.Store.QueryOffset(r.group, r.topic, qid)
		if !ok || cur < 0 {
			return nil, remoting.Errorf(code.SystemError, "THe consumer group <%s> not exist", r.group)
		}
		off, err := p.offsetAt(r.topic, qid, r.timestamp)
		if err != nil {
			return nil, err
		}
		off = max(off, 0)
		if !r.force && off >= cur {
			off = cur
		}
		table[protocol.MessageQueue{BrokerName: cfg.BrokerName, QueueID: i, Topic: r.topic}] = off
	}
	chans := p.onlineChannels(r.group)
	if len(chans) == 0 {
		return nil, remoting.Errorf(code.ConsumerNotOnline, "Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d",
			r.group, r.topic, r.timestamp)
	}
	for _, c := range chans {
		if c.Version < versionV3_0_7Snapshot {
			return nil, remoting.Errorf(code.SystemError, "the client does not support this feature. version=%s", remoting.VersionDesc(c.Version))
		}
	}
	for _, c := range chans {
		p.notifyReset(c, r, table)
	}
	return table, nil
}

// notifyReset sends RESET_CONSUMER_CLIENT_OFFSET (one-way) to a client:
// ResetOffsetBodyForC to C++ clients, ResetOffsetBody to the others.
func (p *Processor) notifyReset(c client.ChannelInfo, r resetRequest, table protocol.MQMap[int64]) {
	var body []byte
	var err error
	if c.Language == remoting.LangCPP {
		forC := resetOffsetBodyForC{OffsetTable: []queueForC{}}
		for _, mq := range table.SortedKeys() {
			forC.OffsetTable = append(forC.OffsetTable, queueForC{BrokerName: mq.BrokerName, Offset: table[mq], QueueID: mq.QueueID, Topic: mq.Topic})
		}
		body, err = protocol.Marshal(forC)
	} else {
		body, err = protocol.MarshalMQKeyed(ResetOffsetBody{OffsetTable: table})
	}
	if err != nil {
		p.log.Error("encode reset offset body", "err", err)
		return
	}
	ext := map[string]string{
		"topic":     r.topic,
		"group":     r.group,
		"timestamp": strconv.FormatInt(r.timestamp, 10),
		"isForce":   strconv.FormatBool(r.force),
		"queueId":   strconv.Itoa(int(r.queueID)),
	}
	if r.offset != -1 {
		ext["offset"] = strconv.FormatInt(r.offset, 10)
	}
	if err := c.Channel.InvokeOneway(remoting.NewRequest(code.ResetConsumerClientOffset, ext, body)); err != nil {
		p.log.Warn("reset offset: notify client failed", "group", r.group, "topic", r.topic, "clientId", c.ClientID, "err", err)
		return
	}
	p.log.Info("reset offset: client notified", "group", r.group, "topic", r.topic, "clientId", c.ClientID)
}
