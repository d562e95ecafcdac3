package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The gRPC consumer rpcs (broker/grpcserver.Consumer) call the pop, ack,
// change-invisible-time and send-back handlers as registered on the
// remoting server, so 5.x consumers share the pop machinery (revive,
// retry topics, DLQ, orderly pops) with remoting pop consumers.

// popAnswerSlack is how long past its poll time a suspended pop's answer
// is awaited.
const popAnswerSlack = 2 * time.Second

// initModeMax is Java's ConsumeInitMode.MAX: a new group starts at the
// queue's end, as the proxy pops.
const initModeMax = "1"

// handle runs the remoting handler of reqCode on req (ch may be nil). A
// handler error becomes its response, as the remoting server writes it.
func (g grpcBackend) handle(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, _, ok := g.b.server.Handler(req.Code)
	if !ok {
		return nil, fmt.Errorf("no handler registered for request code %d", req.Code)
	}
	resp, err := h(ctx, ch, req)
	if err != nil {
		return remoting.ResponseFromError(req, err), nil
	}
	return resp, nil
}

// Pop pops through POP_MESSAGE. A long-polling pop the handler suspends is
// answered on a local channel (remoting.NewLocalChannel) when it resumes;
// the channel closes when the pop is answered or ctx ends, and the pop
// machinery then drops the suspended request.
func (g grpcBackend) Pop(ctx context.Context, in grpcserver.PopRequest) (grpcserver.PopResult, error) {
	req := remoting.NewRequest(code.PopMessage, map[string]string{
		"consumerGroup": in.Group,
		"topic":         in.Topic,
		"queueId":       "-1",
		"maxMsgNums":    strconv.Itoa(int(in.MaxNum)),
		"invisibleTime": strconv.FormatInt(in.Invisible.Milliseconds(), 10),
		"pollTime":      strconv.FormatInt(in.PollTime.Milliseconds(), 10),
		"bornTime":      strconv.FormatInt(time.Now().UnixMilli(), 10),
		"initMode":      initModeMax,
		"expType":       in.ExpType,
		"exp":           in.Exp,
		"order":         strconv.FormatBool(in.Order),
	}, nil)
	if in.AttemptID != "" {
		req.SetExt("attemptId", in.AttemptID)
	}
	resp, err := g.suspended(ctx, req, in)
	if err != nil {
		return grpcserver.PopResult{}, err
	}
	res := grpcserver.PopResult{Code: resp.Code, Remark: resp.Remark}
	if resp.Code != code.Success {
		return res, nil
	}
	if res.Messages, err = g.popped(resp, in); err != nil {
		return grpcserver.PopResult{}, err
	}
	if in.AutoRenew {
		handles := make([]string, 0, len(res.Messages))
		for _, m := range res.Messages {
			handles = append(handles, m.Property(message.PropertyPopCK))
		}
		g.renewLater(in.Group, in.Topic, "", in.ClientID, handles)
	}
	return res, nil
}

// popped decodes a POP_MESSAGE answer and gives each message its receipt
// handle in POP_CK (grpcserver.Receipt: the extraInfo a remoting client
// builds from the offset-info headers, as Java's processPopResponse, and
// the commit log offset), its consumer topic and, for an orderly pop, its
// consume count as reconsume times.
func (g grpcBackend) popped(resp *remoting.Command, in grpcserver.PopRequest) ([]*message.Message, error) {
	f := protocol.FieldsOf(resp.ExtFields)
	popTime, invisible := f.Int64("popTime"), f.Int64("invisibleTime")
	reviveQid := f.Int32("reviveQid")
	startInfo, msgInfo, countInfo := f.OptStr("startOffsetInfo", ""), f.OptStr("msgOffsetInfo", ""), f.OptStr("orderCountInfo", "")
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("pop response: %w", err)
	}
	starts, err := popcodec.ParseStartOffsetInfo(startInfo)
	if err != nil {
		return nil, fmt.Errorf("pop response: %w", err)
	}
	counts, err := popcodec.ParseOrderCountInfo(countInfo)
	if err != nil {
		return nil, fmt.Errorf("pop response: %w", err)
	}
	if _, err := popcodec.ParseMsgOffsetInfo(msgInfo); err != nil {
		return nil, fmt.Errorf("pop response: %w", err)
	}
	// The bodies alias the answer's: a pop answer's body is a buffer of
	// its own (the records appended to it), nobody else's once answered.
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
	if err != nil {
		return nil, fmt.Errorf("pop response body: %w", err)
	}
	cfg := g.b.cfg.Get()
	for i, m := range msgs {
		// A retry message carries its extraInfo in POP_CK; an empty one is
		// not parsed (it fails, at the cost of an error per message).
		ck := m.Property(message.PropertyPopCK)
		ei, err := popcodec.ExtraInfo{}, errNoPopCK
		if ck != "" {
			ei, err = popcodec.ParseExtraInfo(ck)
		}
		if err != nil { // not a retry message: its receipt comes from the headers
			retry := popcodec.RetryFlag(m.Topic)
			key := retry + "@" + strconv.Itoa(int(m.QueueID))
			start, ok := starts[key]
			if !ok {
				return nil, fmt.Errorf("pop response: no startOffsetInfo for %s", key)
			}
			ei = popcodec.ExtraInfo{
				CkQueueOffset: start, PopTime: popTime, InvisibleTime: invisible, ReviveQid: reviveQid,
				Retry: retry, BrokerName: cfg.BrokerName, QueueID: m.QueueID,
				QueueOffset: m.QueueOffset, HasQueueOffset: true,
			}
		}
		m.SetProperty(message.PropertyPopCK, grpcserver.ReceiptHandle(ei.String(), m.CommitLogOffset))
		if in.Order {
			qid := strconv.Itoa(int(ei.QueueID))
			n, ok := counts[ei.Retry+"@qo"+qid+"%"+strconv.FormatInt(ei.QueueOffset, 10)]
			if !ok {
				n = counts[ei.Retry+"@"+qid]
			}
			m.ReconsumeTimes = int32(n)
		}
		if m.SysFlag&message.FlagCompressed != 0 {
			body, err := message.Decompress(m.Body, m.SysFlag, cfg.MaxMessageSize)
			if err != nil {
				// As the proxy's MessageDecoder.decodesBatch: the messages
				// before it are answered, it and the rest stay invisible
				// until revived (and reach the DLQ after the group's
				// retries), instead of failing every receive of the queue.
				g.b.log.Warn("grpc: receive stops at a message whose body does not decompress",
					"topic", m.Topic, "queueId", m.QueueID, "queueOffset", m.QueueOffset, "err", err)
				return msgs[:i], nil
			}
			m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
		}
		m.Topic = in.Topic
	}
	return msgs, nil
}

// errNoPopCK: a popped message without POP_CK.
var errNoPopCK = errors.New("no POP_CK")

// receiptExt is the header ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
// share: the message by its receipt, in the topic it was popped from.
func receiptExt(group, topic string, r grpcserver.Receipt) (map[string]string, error) {
	real, err := popcodec.RealTopic(topic, group, r.Retry)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"consumerGroup": group,
		"topic":         real,
		"queueId":       strconv.Itoa(int(r.QueueID)),
		"extraInfo":     r.ExtraInfo,
		"offset":        strconv.FormatInt(r.Offset, 10),
	}, nil
}

// Ack acks through ACK_MESSAGE.
func (g grpcBackend) Ack(ctx context.Context, group, topic string, r grpcserver.Receipt) (grpcserver.Result, error) {
	return g.ack(ctx, group, topic, r)
}

func (g grpcBackend) ack(ctx context.Context, group, topic string, r grpcserver.Receipt) (grpcserver.Result, error) {
	ext, err := receiptExt(group, topic, r)
	if err != nil {
		return grpcserver.Result{Code: code.MessageIllegal, Remark: err.Error()}, nil
	}
	resp, err := g.handle(ctx, nil, remoting.NewRequest(code.AckMessage, ext, nil))
	if err != nil {
		return grpcserver.Result{}, err
	}
	return grpcserver.Result{Code: resp.Code, Remark: resp.Remark}, nil
}

// ChangeInvisible goes through CHANGE_MESSAGE_INVISIBLETIME; the new
// receipt is the one a remoting client builds from the answer: the message
// has a checkpoint of its own, starting at its offset.
func (g grpcBackend) ChangeInvisible(ctx context.Context, group, topic string, r grpcserver.Receipt, d time.Duration) (string, grpcserver.Result, error) {
	return g.changeInvisibleOf(ctx, group, topic, "", r, d)
}

// changeInvisibleOf changes the invisible time of a message of the lite
// topic lite ("" for a message of topic's own queues).
func (g grpcBackend) changeInvisibleOf(ctx context.Context, group, topic, lite string, r grpcserver.Receipt, d time.Duration) (string, grpcserver.Result, error) {
	ext, err := receiptExt(group, topic, r)
	if err != nil {
		return "", grpcserver.Result{Code: code.MessageIllegal, Remark: err.Error()}, nil
	}
	ext["invisibleTime"] = strconv.FormatInt(d.Milliseconds(), 10)
	if lite != "" {
		ext["liteTopic"] = lite
	}
	resp, err := g.handle(ctx, nil, remoting.NewRequest(code.ChangeMessageInvisible, ext, nil))
	if err != nil {
		return "", grpcserver.Result{}, err
	}
	res := grpcserver.Result{Code: resp.Code, Remark: resp.Remark}
	if resp.Code != code.Success {
		return "", res, nil
	}
	f := protocol.FieldsOf(resp.ExtFields)
	next := popcodec.ExtraInfo{
		CkQueueOffset: r.Offset, PopTime: f.Int64("popTime"), InvisibleTime: f.Int64("invisibleTime"),
		ReviveQid: f.Int32("reviveQid"), Retry: r.Retry, BrokerName: r.BrokerName, QueueID: r.QueueID,
		QueueOffset: r.Offset, HasQueueOffset: true,
	}
	if err := f.Err(); err != nil {
		return "", grpcserver.Result{}, fmt.Errorf("change invisible time response: %w", err)
	}
	return grpcserver.ReceiptHandle(next.String(), r.CommitLogOffset), res, nil
}

// DeadLetter sends the message back with delay level -1 (to %DLQ%group,
// CONSUMER_SEND_MSG_BACK, by its commit log offset) and acks it, as the
// proxy's forwardMessageToDeadLetterQueue.
func (g grpcBackend) DeadLetter(ctx context.Context, group, topic, msgID string, r grpcserver.Receipt) (grpcserver.Result, error) {
	if res, err := g.sendToDLQ(ctx, group, topic, msgID, r); err != nil || res.Code != code.Success {
		return res, err
	}
	return g.ack(ctx, group, topic, r)
}

// sendToDLQ is CONSUMER_SEND_MSG_BACK with delay level -1: the message at
// r's commit log offset goes to %DLQ%group.
func (g grpcBackend) sendToDLQ(ctx context.Context, group, topic, msgID string, r grpcserver.Receipt) (grpcserver.Result, error) {
	ext := map[string]string{
		"group":       group,
		"offset":      strconv.FormatInt(r.CommitLogOffset, 10),
		"delayLevel":  "-1",
		"originMsgId": msgID,
		"originTopic": topic,
	}
	if sg, ok := g.Group(group); ok {
		ext["maxReconsumeTimes"] = strconv.Itoa(sg.RetryMaxTimes)
	}
	resp, err := g.handle(ctx, nil, remoting.NewRequest(code.ConsumerSendMsgBack, ext, nil))
	if err != nil {
		return grpcserver.Result{}, err
	}
	return grpcserver.Result{Code: resp.Code, Remark: resp.Remark}, nil
}

// Group reads (or auto-creates) the subscription group.
func (g grpcBackend) Group(name string) (grpcserver.Group, bool) {
	if g.b.msg == nil || g.b.msg.subs == nil {
		return grpcserver.Group{}, false
	}
	sg, ok := g.b.msg.subs.FindOrCreate(name)
	if !ok {
		return grpcserver.Group{}, false
	}
	out := grpcserver.Group{RetryMaxTimes: sg.RetryMaxTimes, Orderly: sg.ConsumeMessageOrderly}
	out.Exponential, out.Customized = retryPolicy(sg.GroupRetryPolicy)
	return out, true
}

// Apache's retry policy defaults (common/subscription/
// ExponentialRetryPolicy.java, CustomizedRetryPolicy.java).
var (
	defaultExponential = grpcserver.ExponentialBackoff{Initial: 5 * time.Second, Max: 2 * time.Hour, Multiplier: 2}
	defaultCustomized  = []time.Duration{
		time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute,
		7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour,
	}
)

// retryPolicy reads a group's retry policy: exponential, else customized
// (the default type); a policy body that is absent or unreadable takes
// Apache's defaults.
func retryPolicy(p subscription.RetryPolicy) (*grpcserver.ExponentialBackoff, []time.Duration) {
	if p.Type == "EXPONENTIAL" {
		e := defaultExponential
		var raw struct {
			Initial, Max *int64
			Multiplier   *float32
		}
		if len(p.ExponentialRetryPolicy) > 0 && json.Unmarshal(p.ExponentialRetryPolicy, &raw) == nil {
			if raw.Initial != nil {
				e.Initial = time.Duration(*raw.Initial) * time.Millisecond
			}
			if raw.Max != nil {
				e.Max = time.Duration(*raw.Max) * time.Millisecond
			}
			if raw.Multiplier != nil {
				e.Multiplier = *raw.Multiplier
			}
		}
		return &e, nil
	}
	var raw struct{ Next []int64 }
	if len(p.CustomizedRetryPolicy) > 0 && json.Unmarshal(p.CustomizedRetryPolicy, &raw) == nil && len(raw.Next) > 0 {
		out := make([]time.Duration, len(raw.Next))
		for i, ms := range raw.Next {
			out[i] = time.Duration(ms) * time.Millisecond
		}
		return nil, out
	}
	return nil, defaultCustomized
}

// ConsumeLimits are the broker's grpcClientConsumer* and invisible-time
// keys.
func (g grpcBackend) ConsumeLimits() grpcserver.ConsumeLimits {
	cfg := g.b.cfg.Get()
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	lim := grpcserver.DefaultConsumeLimits()
	lim.MinLongPolling = ms(cfg.GrpcClientConsumerMinLongPollingTimeoutMillis)
	lim.MaxLongPolling = ms(cfg.GrpcClientConsumerMaxLongPollingTimeoutMillis)
	lim.BatchSize = int32(cfg.GrpcClientConsumerLongPollingBatchSize)
	lim.MinInvisible = ms(cfg.MinInvisibleTimeMillsForRecv)
	lim.MaxInvisible = ms(cfg.MaxInvisibleTimeMills)
	lim.RenewSlice = ms(cfg.RenewSliceTimeMillis)
	return lim
}

// grpcBackend serves the consumer rpcs.
var _ grpcserver.Consumer = grpcBackend{}

// grpcClients holds a local channel (remoting.NewLocalChannel) per 5.x
// consumer client, under which its heartbeats register it in the client
// registry as a remoting consumer's connection does. A channel the
// registry closed (no heartbeat for channelExpiredTimeout) is replaced on
// the next heartbeat. The zero value is ready.
type grpcClients struct {
	mu    sync.Mutex
	chans map[string]*remoting.Channel // by client id
	stop  chan struct{}                // closed when the broker stops
	// renew are the receipt handles of auto_renew receives
	// (wire_grpc_renew.go), renewed by one goroutine while there are any.
	renew    map[renewKey]*renewEntry
	renewing bool
	wg       sync.WaitGroup
}

// stopped reports a stop (c.mu held).
func (c *grpcClients) stopped() bool {
	if c.stop == nil {
		return false
	}
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// stopping is closed once the broker stops (stopAll).
func (c *grpcClients) stopping() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		c.stop = make(chan struct{})
	}
	return c.stop
}

// stopAll ends the receives waiting for a suspended pop.
// It also stops the renewal and waits for it.
func (c *grpcClients) stopAll() {
	c.mu.Lock()
	if c.stop == nil {
		c.stop = make(chan struct{})
	}
	if !c.stopped() {
		close(c.stop)
	}
	c.renew = nil
	c.mu.Unlock()
	c.wg.Wait()
}

// channel is the client's channel, made when it has none or its old one
// was closed; requests the broker pushes on it go to push with the
// channel (which answers them with Deliver).
func (c *grpcClients) channel(id, remote string, push func(*remoting.Channel, *remoting.Command)) *remoting.Channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.chans[id]; ch != nil && ch.IsActive() {
		return ch
	}
	if c.chans == nil {
		c.chans = map[string]*remoting.Channel{}
	}
	// Forget the channels the registry closed (clients that stopped
	// heartbeating): a new client is when the table may have grown.
	for id, ch := range c.chans {
		if !ch.IsActive() {
			delete(c.chans, id)
		}
	}
	var ch *remoting.Channel
	ch = remoting.NewLocalPeerChannel("grpc", remote, func(*remoting.Command) {}, func(req *remoting.Command) { push(ch, req) })
	c.chans[id] = ch
	return ch
}

// drop forgets the client's channel and returns it (nil when none).
func (c *grpcClients) drop(id string) *remoting.Channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.chans[id]
	delete(c.chans, id)
	return ch
}

// clientVersion is the remoting version ordinal of a 5.x client version
// ("5.2.0" → V5_2_0), as the proxy's parseClientVersion; 0 when unknown.
func clientVersion(v string) int32 {
	want := "V" + strings.ReplaceAll(v, ".", "_")
	for i := int32(0); i < 1000; i++ {
		switch remoting.VersionDesc(i) {
		case want:
			return i
		case "HIGHER_VERSION":
			return 0
		}
	}
	return 0
}

// ConsumerHeartbeat registers the client as the proxy does for 5.x
// consumers: a HEART_BEAT of a consumer of c's ConsumeType and MessageModel
// (CONSUME_PASSIVELY and CLUSTERING when unset) with the subscriptions of
// its settings, on the client's local channel.
func (g grpcBackend) ConsumerHeartbeat(ctx context.Context, c grpcserver.ClientInfo) error {
	consumeType, model := c.ConsumeType, c.MessageModel
	if consumeType == "" {
		consumeType = client.ConsumePassively
	}
	if model == "" {
		model = client.Clustering
	}
	if err := g.checkLiteMode(c, model); err != nil {
		return err
	}
	cd := client.ConsumerData{
		GroupName: c.Group, ConsumeType: consumeType, MessageModel: model,
		ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", SubscriptionDataSet: []client.SubscriptionData{},
	}
	for _, s := range c.Subscriptions {
		sd, err := client.BuildSubscription(s.Topic, s.Exp, s.ExpType)
		if err != nil {
			continue // the pops of a bad expression are refused on their own
		}
		sd.SubVersion = time.Now().UnixMilli()
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, sd)
	}
	return g.heartbeat(ctx, c, client.HeartbeatData{ClientID: c.ID, ConsumerDataSet: []client.ConsumerData{cd}, ProducerDataSet: []client.ProducerData{}})
}

// heartbeat sends hb as the client's HEART_BEAT on its local channel, as
// the proxy registers its gRPC clients with the broker.
func (g grpcBackend) heartbeat(ctx context.Context, c grpcserver.ClientInfo, hb client.HeartbeatData) error {
	body, err := json.Marshal(hb)
	if err != nil {
		return fmt.Errorf("heartbeat body: %w", err)
	}
	req := remoting.NewRequest(code.HeartBeat, nil, body)
	req.Language, req.Version = remoting.ParseLanguage(c.Language), clientVersion(c.Version)
	resp, err := g.handle(ctx, g.clientChannel(c.ID, c.Remote), req)
	if err != nil {
		return err
	}
	if resp.Code != code.Success {
		return fmt.Errorf("heartbeat: code %d: %s", resp.Code, resp.Remark)
	}
	return nil
}

// ConsumerGone unregisters the client (UNREGISTER_CLIENT), closes its
// channel and makes its renewed messages visible again soon.
func (g grpcBackend) ConsumerGone(c grpcserver.ClientInfo) {
	g.releaseClient(c.ID)
	ch := g.b.grpcClients.drop(c.ID)
	if ch == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := remoting.NewRequest(code.UnregisterClient, map[string]string{"clientID": c.ID, "consumerGroup": c.Group}, nil)
	if _, err := g.handle(ctx, ch, req); err != nil {
		g.b.log.Debug("grpc: unregister consumer", "group", c.Group, "clientId", c.ID, "err", err)
	}
	_ = ch.Close()
}

// checkLiteMode refuses a registration as the proxy's ClientProcessor does
// (validateLiteMode, validateLiteSubTopic): a lite group (lite.bind.topic)
// only takes lite consumers (model LITE_SELECTIVE) and a lite consumer only
// a lite group, subscribed to the group's bind topic. A group that does not
// exist and may not be created is "group not found", as the proxy's
// getGroupOrException.
func (g grpcBackend) checkLiteMode(c grpcserver.ClientInfo, model string) error {
	if g.b.msg == nil || g.b.msg.subs == nil {
		return nil
	}
	sg, ok := g.b.msg.subs.FindOrCreate(c.Group)
	if !ok {
		return &grpcserver.RefusedError{Code: v2pb.Code_ILLEGAL_CONSUMER_GROUP, Message: "group not found: " + c.Group}
	}
	bind := meta.GroupOf(sg).BindTopic
	lite := model == client.LiteSelective
	switch {
	case lite && bind == "":
		return &grpcserver.RefusedError{Code: v2pb.Code_ILLEGAL_CONSUMER_GROUP, Message: "regular group cannot use LITE mode: " + c.Group}
	case !lite && bind != "":
		return &grpcserver.RefusedError{Code: v2pb.Code_ILLEGAL_CONSUMER_GROUP, Message: "lite group must use LITE mode: " + c.Group}
	case lite && len(c.Subscriptions) > 0 && c.Subscriptions[0].Topic != bind:
		return &grpcserver.RefusedError{Code: v2pb.Code_ILLEGAL_TOPIC,
			Message: fmt.Sprintf("lite group %s is expected to bind topic %s, but actual is %s", c.Group, bind, c.Subscriptions[0].Topic)}
	}
	return nil
}
