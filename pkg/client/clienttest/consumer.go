package clienttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// brokerExt is the consumer and transaction side of a fake broker: group
// members (from heartbeats), queue locks, send-backs, END_TRANSACTION, pop
// and the requests the broker sends to clients.
type brokerExt struct {
	mu          sync.Mutex
	consumers   map[string]map[string]*remoting.Channel // group → client id → channel
	producers   map[string]map[string]*remoting.Channel // group → client id → channel
	locks       map[string]string                       // group@queue → client id
	lockDelay   time.Duration                           // LOCK_BATCH_MQ waits this long before it locks
	commitDelay *DelayedCommit                          // the next UPDATE_CONSUMER_OFFSET waits
	sendBacks   []map[string]string
	backCodes   []int32 // injected answers to the next send-backs
	endTx       []EndTx
	pops        map[string]int64     // group@topic@queue → next offset to pop
	orders      map[string]*popOrder // group@topic@queue → orderly pop state (poporder.go)
	acks        []map[string]string
	ackCodes    []int32
	changes     []map[string]string
	notifies    int // NOTIFY_CONSUMER_IDS_CHANGED sent
}

// EndTx is one END_TRANSACTION a broker received.
type EndTx struct {
	Ext    map[string]string
	Remark string
	Oneway bool
}

func newBrokerExt() *brokerExt {
	return &brokerExt{
		consumers: make(map[string]map[string]*remoting.Channel),
		producers: make(map[string]map[string]*remoting.Channel),
		locks:     make(map[string]string),
		pops:      make(map[string]int64),
	}
}

// registerExt serves the consumer-side codes (38, 41, 42, 36, 37, pop) and
// wraps HEART_BEAT and UNREGISTER_CLIENT to track group members.
func (b *Broker) registerExt(srv *remoting.Server) {
	for c, h := range map[int32]remoting.Handler{
		code.HeartBeat:              b.heartbeatExt,
		code.UnregisterClient:       b.unregisterExt,
		code.GetConsumerListByGroup: b.consumerList,
		code.LockBatchMQ:            b.lockBatch,
		code.UnlockBatchMQ:          b.unlockBatch,
		code.ConsumerSendMsgBack:    b.sendBack,
		code.EndTransaction:         b.endTransaction,
		code.PopMessage:             b.popMessage,
		code.AckMessage:             b.ackMessage,
		code.ChangeMessageInvisible: b.changeInvisible,
	} {
		srv.Register(c, h, nil)
	}
}

type fakeHeartbeat struct {
	ClientID        string `json:"clientID"`
	ConsumerDataSet []struct {
		GroupName    string `json:"groupName"`
		MessageModel string `json:"messageModel"`
	} `json:"consumerDataSet"`
	ProducerDataSet []struct {
		GroupName string `json:"groupName"`
	} `json:"producerDataSet"`
}

// heartbeatExt records the client in its groups, creates the retry topic
// of clustering groups (as real brokers do) and tells a group's other
// members when it changed.
func (b *Broker) heartbeatExt(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hb fakeHeartbeat
	if err := json.Unmarshal(req.Body, &hb); err != nil {
		return nil, remoting.Errorf(code.SystemError, "bad heartbeat: %v", err)
	}
	var changed []string
	b.ext.mu.Lock()
	for _, cd := range hb.ConsumerDataSet {
		m := b.ext.consumers[cd.GroupName]
		if m == nil {
			m = make(map[string]*remoting.Channel)
			b.ext.consumers[cd.GroupName] = m
		}
		if m[hb.ClientID] != ch {
			m[hb.ClientID] = ch
			changed = append(changed, cd.GroupName)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		m := b.ext.producers[pd.GroupName]
		if m == nil {
			m = make(map[string]*remoting.Channel)
			b.ext.producers[pd.GroupName] = m
		}
		m[hb.ClientID] = ch
	}
	b.ext.mu.Unlock()
	for _, cd := range hb.ConsumerDataSet {
		if cd.MessageModel == "CLUSTERING" {
			b.ensureTopic(protocol.RetryTopic(cd.GroupName), 1)
		}
	}
	for _, g := range changed {
		b.NotifyConsumersChanged(g)
	}
	return b.heartbeat(ctx, ch, req)
}

func (b *Broker) unregisterExt(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	id, group := req.Ext("clientID"), req.Ext("consumerGroup")
	b.ext.mu.Lock()
	_, member := b.ext.consumers[group][id]
	delete(b.ext.consumers[group], id)
	delete(b.ext.producers[req.Ext("producerGroup")], id)
	b.ext.mu.Unlock()
	if member {
		b.NotifyConsumersChanged(group)
	}
	return b.unregisterClient(ctx, ch, req)
}

// ensureTopic creates topic with n queues unless it exists.
func (b *Broker) ensureTopic(topic string, n int) {
	b.mu.Lock()
	_, ok := b.topics[topic]
	b.mu.Unlock()
	if !ok {
		b.CreateTopic(topic, n)
	}
}

// Consumers lists the client ids of group, sorted.
func (b *Broker) Consumers(group string) []string {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	return slices.Sorted(maps.Keys(b.ext.consumers[group]))
}

// RemoveConsumer forgets a member of group as if its connection had
// expired (no UNREGISTER_CLIENT) and notifies the others.
func (b *Broker) RemoveConsumer(group, clientID string) {
	b.ext.mu.Lock()
	delete(b.ext.consumers[group], clientID)
	b.ext.mu.Unlock()
	b.NotifyConsumersChanged(group)
}

// NotifyConsumersChanged sends NOTIFY_CONSUMER_IDS_CHANGED to every member
// of group.
func (b *Broker) NotifyConsumersChanged(group string) {
	b.ext.mu.Lock()
	chans := slices.Collect(maps.Values(b.ext.consumers[group]))
	b.ext.notifies++
	b.ext.mu.Unlock()
	for _, ch := range chans {
		_ = ch.InvokeOneway(remoting.NewRequest(code.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil))
	}
}

func (b *Broker) consumerList(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	ids := b.Consumers(req.Ext("consumerGroup"))
	if len(ids) == 0 {
		return nil, remoting.Errorf(code.SystemError, "no consumer for this group, %s", req.Ext("consumerGroup"))
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = protocol.MustMarshal(map[string][]string{"consumerIdList": ids})
	return resp, nil
}

func (b *Broker) countCall(c int32) {
	b.mu.Lock()
	b.calls[c]++
	b.mu.Unlock()
}

type lockBody struct {
	ClientID      string                  `json:"clientId"`
	ConsumerGroup string                  `json:"consumerGroup"`
	MQSet         []protocol.MessageQueue `json:"mqSet"`
}

// lockRequest counts a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ request (what) and
// decodes its body.
func (b *Broker) lockRequest(req *remoting.Command, what string) (lockBody, error) {
	b.countCall(req.Code)
	var body lockBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return body, remoting.Errorf(code.SystemError, "bad %s body: %v", what, err)
	}
	return body, nil
}

func lockKey(group string, mq protocol.MessageQueue) string { return group + "@" + mq.String() }

// lockBatch grants queues that are free or already held by the caller.
func (b *Broker) lockBatch(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := b.lockRequest(req, "lock")
	if err != nil {
		return nil, err
	}
	b.ext.mu.Lock()
	delay := b.ext.lockDelay
	b.ext.mu.Unlock()
	time.Sleep(delay)
	ok := []protocol.MessageQueue{}
	b.ext.mu.Lock()
	for _, mq := range body.MQSet {
		k := lockKey(body.ConsumerGroup, mq)
		if holder := b.ext.locks[k]; holder == "" || holder == body.ClientID {
			b.ext.locks[k] = body.ClientID
			ok = append(ok, mq)
		}
	}
	b.ext.mu.Unlock()
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = protocol.MustMarshal(map[string][]protocol.MessageQueue{"lockOKMQSet": ok})
	return resp, nil
}

func (b *Broker) unlockBatch(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := b.lockRequest(req, "unlock")
	if err != nil {
		return nil, err
	}
	b.ext.mu.Lock()
	for _, mq := range body.MQSet {
		if k := lockKey(body.ConsumerGroup, mq); b.ext.locks[k] == body.ClientID {
			delete(b.ext.locks, k)
		}
	}
	b.ext.mu.Unlock()
	return remoting.NewResponse(req, code.Success, ""), nil
}

// LockHolder returns the client holding group's lock on mq ("" if none).
func (b *Broker) LockHolder(group string, mq protocol.MessageQueue) string {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	return b.ext.locks[lockKey(group, mq)]
}

// SetLock makes clientID hold group's lock on mq ("" releases it).
func (b *Broker) SetLock(group string, mq protocol.MessageQueue, clientID string) {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	if clientID == "" {
		delete(b.ext.locks, lockKey(group, mq))
		return
	}
	b.ext.locks[lockKey(group, mq)] = clientID
}

// SetLockDelay makes LOCK_BATCH_MQ wait d before it locks (an unlock sent
// meanwhile runs first, as on a busy broker).
func (b *Broker) SetLockDelay(d time.Duration) {
	b.ext.mu.Lock()
	b.ext.lockDelay = d
	b.ext.mu.Unlock()
}

// DelayedCommit follows the UPDATE_CONSUMER_OFFSET that DelayNextCommit
// holds back.
type DelayedCommit struct {
	topic   string
	d       time.Duration
	arrived chan int64    // the held commit's offset, when it arrives
	stored  chan struct{} // closed once it is stored, after the delay
}

// Arrived receives the held commit's offset when the broker gets it.
func (d *DelayedCommit) Arrived() <-chan int64 { return d.arrived }

// Stored is closed once the held commit has been stored.
func (d *DelayedCommit) Stored() <-chan struct{} { return d.stored }

// DelayNextCommit makes the next UPDATE_CONSUMER_OFFSET of topic wait d
// before it is stored, as on a busy broker whose pool runs a later commit
// first.
func (b *Broker) DelayNextCommit(topic string, d time.Duration) *DelayedCommit {
	dc := &DelayedCommit{topic: topic, d: d, arrived: make(chan int64, 1), stored: make(chan struct{})}
	b.ext.mu.Lock()
	b.ext.commitDelay = dc
	b.ext.mu.Unlock()
	return dc
}

// FailSendBacks makes the next len(codes) CONSUMER_SEND_MSG_BACK answer
// these codes.
func (b *Broker) FailSendBacks(codes ...int32) {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	b.ext.backCodes = append(b.ext.backCodes, codes...)
}

// recorded returns a copy of l, one of the lists of requests the broker
// records, under mu, the lock that guards it.
func recorded[T any](mu *sync.Mutex, l *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*l)
}

// SendBacks returns the CONSUMER_SEND_MSG_BACK headers received.
func (b *Broker) SendBacks() []map[string]string {
	return recorded(&b.ext.mu, &b.ext.sendBacks)
}

// sendBack stores the message at commit-log offset "offset" again in the
// group's retry topic (queue 0) with reconsume times + 1, or in its DLQ
// when it reached maxReconsumeTimes or delayLevel < 0. Delays are not
// applied; the level is kept in the DELAY property.
func (b *Broker) sendBack(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	f := protocol.FieldsOf(req.ExtFields)
	off := f.Int64("offset")
	group := f.Str("group")
	level := f.Int32("delayLevel")
	maxTimes := f.OptInt32("maxReconsumeTimes", 16)
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.SystemError, "%v", err)
	}
	b.ext.mu.Lock()
	b.ext.sendBacks = append(b.ext.sendBacks, req.ExtFields)
	if len(b.ext.backCodes) > 0 {
		c := b.ext.backCodes[0]
		b.ext.backCodes = b.ext.backCodes[1:]
		if c != code.Success {
			b.ext.mu.Unlock()
			return nil, remoting.Errorf(c, "injected code %d", c)
		}
	}
	b.ext.mu.Unlock()
	orig := b.findByCommitLogOffset(off)
	if orig == nil {
		return nil, remoting.Errorf(code.SystemError, "look message by offset failed, %d", off)
	}
	m := *orig
	m.Properties = maps.Clone(orig.Properties)
	if m.Property(message.PropertyRetryTopic) == "" {
		m.SetProperty(message.PropertyRetryTopic, orig.Topic)
	}
	if m.Property(message.PropertyOriginMessageID) == "" {
		m.SetProperty(message.PropertyOriginMessageID, req.Ext("originMsgId"))
	}
	m.ReconsumeTimes = orig.ReconsumeTimes + 1
	topic := protocol.RetryTopic(group)
	if orig.ReconsumeTimes >= maxTimes || level < 0 {
		topic = protocol.DLQTopic(group)
		m.ReconsumeTimes = orig.ReconsumeTimes
	} else {
		if level == 0 {
			level = 3 + orig.ReconsumeTimes
		}
		m.SetProperty(message.PropertyDelayTimeLevel, strconv.Itoa(int(level)))
	}
	b.ensureTopic(topic, 1)
	m.Topic, m.QueueID = topic, 0
	b.mu.Lock()
	_, err := b.storeLocked(&m, nil)
	b.mu.Unlock()
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "%v", err)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// findByCommitLogOffset returns the stored message at a commit-log offset.
func (b *Broker) findByCommitLogOffset(off int64) *message.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, qs := range b.queues {
		for _, recs := range qs {
			for _, r := range recs {
				v, err := message.ParseView(r, message.ParseOptions{})
				if err != nil || v.PhysicalOffset() != off {
					continue
				}
				m, _, err := message.DecodeStored(r, message.DecodeOptions{})
				if err != nil {
					return nil
				}
				return m
			}
		}
	}
	return nil
}

func (b *Broker) endTransaction(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	b.ext.mu.Lock()
	b.ext.endTx = append(b.ext.endTx, EndTx{Ext: req.ExtFields, Remark: req.Remark, Oneway: req.IsOneway()})
	b.ext.mu.Unlock()
	return remoting.NewResponse(req, code.Success, ""), nil
}

// EndTransactions returns the END_TRANSACTION requests received.
func (b *Broker) EndTransactions() []EndTx {
	return recorded(&b.ext.mu, &b.ext.endTx)
}

// producerChannel returns a channel of a producer of group.
func (b *Broker) producerChannel(group string) *remoting.Channel {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(b.ext.producers[group])) {
		return b.ext.producers[group][id]
	}
	return nil
}

// consumerChannel returns the channel of a member of group.
func (b *Broker) consumerChannel(group, clientID string) *remoting.Channel {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	return b.ext.consumers[group][clientID]
}

// CheckTransaction sends CHECK_TRANSACTION_STATE about the stored half
// message m (topic and queue as stored) to a producer of group, with the
// header fields brokers send.
func (b *Broker) CheckTransaction(group string, m *message.Message) error {
	ch := b.producerChannel(group)
	if ch == nil {
		return fmt.Errorf("no producer of group %s", group)
	}
	rec, err := message.EncodeStored(m)
	if err != nil {
		return err
	}
	ext := map[string]string{
		"topic":                protocol.TransHalfTopic,
		"tranStateTableOffset": strconv.FormatInt(m.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(m.CommitLogOffset, 10),
		"msgId":                m.UniqKey(),
		"transactionId":        m.UniqKey(),
		"offsetMsgId":          m.OffsetMsgID(),
		"bname":                b.Name,
	}
	return ch.InvokeOneway(remoting.NewRequest(code.CheckTransactionState, ext, rec))
}

// ResetConsumerOffset sends RESET_CONSUMER_CLIENT_OFFSET for topic to
// every member of group.
func (b *Broker) ResetConsumerOffset(group, topic string, offsets map[protocol.MessageQueue]int64) error {
	body, err := protocol.MarshalMQMap(offsets)
	if err != nil {
		return err
	}
	body = []byte(`{"offsetTable":` + string(body) + `}`)
	b.ext.mu.Lock()
	chans := slices.Collect(maps.Values(b.ext.consumers[group]))
	b.ext.mu.Unlock()
	ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "isForce": "true", "queueId": "-1"}
	for _, ch := range chans {
		if err := ch.InvokeOneway(remoting.NewRequest(code.ResetConsumerClientOffset, ext, body)); err != nil {
			return err
		}
	}
	return nil
}

// AskClient sends a request to a member of group (GET_CONSUMER_RUNNING_INFO,
// GET_CONSUMER_STATUS_FROM_CLIENT, CONSUME_MESSAGE_DIRECTLY...) and returns
// its answer.
func (b *Broker) AskClient(ctx context.Context, group, clientID string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	ch := b.consumerChannel(group, clientID)
	if ch == nil {
		return nil, fmt.Errorf("client %s of %s not connected", clientID, group)
	}
	return ch.Invoke(ctx, remoting.NewRequest(reqCode, ext, body))
}

// popMessage pops messages of every queue of the topic (queueId -1) or of
// one queue, from the group's pop offset (initMode 0: the start, 1: the
// end), and answers them with the pop headers (startOffsetInfo,
// msgOffsetInfo). Popped messages never come back (no revive). order=true
// pops are orderly (poporder.go).
func (b *Broker) popMessage(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	f := protocol.FieldsOf(req.ExtFields)
	group := f.Str("consumerGroup")
	topic := f.Str("topic")
	qid := int(f.Int32("queueId"))
	maxNums := int(f.Int32("maxMsgNums"))
	invisible := f.Int64("invisibleTime")
	initMode := f.OptInt32("initMode", 0)
	order := f.OptBool("order", false)
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.topics[topic]
	if !ok {
		return nil, remoting.Errorf(code.TopicNotExist, "topic[%s] not exist", topic)
	}
	if order {
		return b.popOrderlyLocked(req, group, topic, qid, maxNums, invisible, initMode)
	}
	var body []byte
	var starts, offs []string
	popTime := time.Now().UnixMilli()
	for q := range n {
		if qid >= 0 && q != qid {
			continue
		}
		recs := b.queues[topic][q]
		k := group + "@" + topic + "@" + strconv.Itoa(q)
		b.ext.mu.Lock()
		next, seen := b.ext.pops[k]
		if !seen && initMode == 1 {
			next = int64(len(recs))
		}
		start := next
		var list []string
		for next < int64(len(recs)) && maxNums > 0 {
			body = append(body, recs[next]...)
			list = append(list, strconv.FormatInt(next, 10))
			next++
			maxNums--
		}
		b.ext.pops[k] = next
		b.ext.mu.Unlock()
		if len(list) > 0 {
			starts = append(starts, "0 "+strconv.Itoa(q)+" "+strconv.FormatInt(start, 10))
			offs = append(offs, "0 "+strconv.Itoa(q)+" "+strings.Join(list, ","))
		}
	}
	if len(body) == 0 {
		return nil, remoting.Errorf(code.PollingTimeout, "no message")
	}
	return popAnswer(req, body, popTime, invisible, "3", map[string]string{
		"restNum": "0", "startOffsetInfo": strings.Join(starts, ";"), "msgOffsetInfo": strings.Join(offs, ";"),
	}), nil
}

// popAnswer is a successful pop of body: the receipt fields every pop
// answer carries, and extra.
func popAnswer(req *remoting.Command, body []byte, popTime, invisible int64, reviveQid string, extra map[string]string) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	resp.ExtFields = map[string]string{
		"popTime":       strconv.FormatInt(popTime, 10),
		"invisibleTime": strconv.FormatInt(invisible, 10),
		"reviveQid":     reviveQid,
	}
	maps.Copy(resp.ExtFields, extra)
	return resp
}

// FailAcks makes the next len(codes) ACK_MESSAGE answer these codes.
func (b *Broker) FailAcks(codes ...int32) {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	b.ext.ackCodes = append(b.ext.ackCodes, codes...)
}

func (b *Broker) ackMessage(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	b.ext.acks = append(b.ext.acks, req.ExtFields)
	if len(b.ext.ackCodes) > 0 {
		c := b.ext.ackCodes[0]
		b.ext.ackCodes = b.ext.ackCodes[1:]
		if c != code.Success {
			return nil, remoting.Errorf(c, "injected code %d", c)
		}
	}
	if _, err := b.ackOrderlyLocked(req.ExtFields); err != nil {
		return nil, err
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// Acks returns the ACK_MESSAGE headers received.
func (b *Broker) Acks() []map[string]string {
	return recorded(&b.ext.mu, &b.ext.acks)
}

func (b *Broker) changeInvisible(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.countCall(req.Code)
	b.ext.mu.Lock()
	b.ext.changes = append(b.ext.changes, req.ExtFields)
	resp, orderly, err := b.changeOrderlyLocked(req)
	b.ext.mu.Unlock()
	if orderly {
		return resp, err
	}
	resp = remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = map[string]string{
		"popTime":       strconv.FormatInt(time.Now().UnixMilli(), 10),
		"invisibleTime": req.Ext("invisibleTime"),
		"reviveQid":     "5",
	}
	return resp, nil
}

// InvisibleChanges returns the CHANGE_MESSAGE_INVISIBLETIME headers
// received.
func (b *Broker) InvisibleChanges() []map[string]string {
	return recorded(&b.ext.mu, &b.ext.changes)
}
