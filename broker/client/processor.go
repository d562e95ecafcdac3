package client

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Heartbeat response keys (Java's MixAll).
const (
	ExtSupportHeartbeatV2 = "IS_SUPPORT_HEART_BEAT_V2"
	ExtSubChange          = "IS_SUB_CHANGE"
)

// DefaultScanInterval is how often silent channels are looked for.
const DefaultScanInterval = 10 * time.Second

// topicSysFlagUnitSub is TopicSysFlag.buildSysFlag(false, true).
const topicSysFlagUnitSub = 0x2

// Deps are the processor's collaborators.
type Deps struct {
	Config        func() *config.Config // required
	Subscriptions *subscription.Manager // required
	Topics        *topic.Manager        // required
	// Producers and Consumers are created when nil.
	Producers *ProducerManager
	Consumers *ConsumerManager
	// TriggerRegistration asks for a nameserver registration after the
	// processor created a %RETRY% topic (nil: rely on topic.Manager.OnChange).
	TriggerRegistration func()
	// Now is the clock of heartbeats and expiry (default time.Now).
	Now func() time.Time
	// ScanInterval between expiry scans (default 10 s).
	ScanInterval time.Duration
	// NotifyQueueSize bounds pending NOTIFY_CONSUMER_IDS_CHANGED batches;
	// beyond it notifications are dropped (clients rebalance every 20 s
	// anyway). Default 4096.
	NotifyQueueSize int
	Logger          *slog.Logger
}

type notifyTask struct {
	group string
	chans []*remoting.Channel
}

// Processor answers HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
// GET_CONSUMER_CONNECTION_LIST and GET_PRODUCER_CONNECTION_LIST, expires
// silent channels and pushes NOTIFY_CONSUMER_IDS_CHANGED.
type Processor struct {
	d   Deps
	log *slog.Logger

	fpMu         sync.Mutex
	fingerprints map[string]int64 // consumer group → last heartbeat v2 fingerprint

	notifyQ chan notifyTask
	scanner loop.Runner
}

// NewProcessor validates d and builds the processor; Start runs the
// expiry scan and the notifier.
func NewProcessor(d Deps) (*Processor, error) {
	if d.Config == nil || d.Subscriptions == nil || d.Topics == nil {
		return nil, errors.New("client: Deps.Config, Deps.Subscriptions and Deps.Topics are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	defaults.Positive(&d.ScanInterval, DefaultScanInterval)
	defaults.Positive(&d.NotifyQueueSize, 4096)
	mo := ManagerOptions{
		Now:                        d.Now,
		ChannelExpiredTimeout:      func() time.Duration { return orDefault(d.Config().ChannelExpiredTimeout, DefaultChannelExpiredTimeout) },
		SubscriptionExpiredTimeout: func() time.Duration { return orDefault(d.Config().SubscriptionExpiredTimeout, 10*time.Minute) },
		Logger:                     d.Logger,
	}
	if d.Producers == nil {
		d.Producers = NewProducerManager(mo)
	}
	if d.Consumers == nil {
		d.Consumers = NewConsumerManager(mo)
	}
	return &Processor{
		d:            d,
		log:          d.Logger,
		fingerprints: map[string]int64{},
		notifyQ:      make(chan notifyTask, d.NotifyQueueSize),
	}, nil
}

func orDefault(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// Producers is the producer table.
func (p *Processor) Producers() *ProducerManager { return p.d.Producers }

// Consumers is the consumer table.
func (p *Processor) Consumers() *ConsumerManager { return p.d.Consumers }

// Handlers maps the request codes to handlers; they tolerate a nil channel.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.HeartBeat:                 p.heartbeat,
		code.UnregisterClient:          p.unregisterClient,
		code.GetConsumerListByGroup:    p.consumerListByGroup,
		code.GetConsumerConnectionList: p.consumerConnectionList,
		code.GetProducerConnectionList: p.producerConnectionList,
		code.GetAllProducerInfo:        p.allProducerInfo,
	}
}

// Register installs Handlers on the admin pool.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

// Start runs the expiry scan (every ScanInterval) and the notifier.
func (p *Processor) Start() {
	p.scanner.StartOnce(p.loop)
}

// Close stops the background work; pending notifications are dropped.
func (p *Processor) Close() {
	p.scanner.Stop()
}

func (p *Processor) loop(stop <-chan struct{}) {
	t := time.NewTicker(p.d.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.ScanNotActiveChannels()
		case task := <-p.notifyQ:
			p.sendNotify(task)
		}
	}
}

// ScanNotActiveChannels drops channels without a heartbeat for
// channelExpiredTimeout, closes them (as Java does) and notifies the
// consumer groups they left. Start calls it periodically; tests call it
// with an injected clock.
func (p *Processor) ScanNotActiveChannels() {
	closing := p.d.Producers.ScanNotActive()
	for _, e := range p.d.Consumers.ScanNotActive() {
		closing = append(closing, e.Channel)
		p.groupChanged(e.Change)
	}
	slices.SortFunc(closing, func(a, b *remoting.Channel) int { return compareChannels(a, b) })
	closing = slices.Compact(closing)
	for _, ch := range closing {
		if ch != nil {
			_ = ch.Close()
		}
	}
}

func compareChannels(a, b *remoting.Channel) int {
	switch {
	case a == b:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case a.ID() < b.ID():
		return -1
	case a.ID() > b.ID():
		return 1
	}
	return 0
}

// OnChannelClose forgets a closed connection at once; hook it to
// remoting.Server.OnClose.
func (p *Processor) OnChannelClose(ch *remoting.Channel) {
	p.d.Producers.ChannelClosed(ch)
	for _, c := range p.d.Consumers.ChannelClosed(ch) {
		p.groupChanged(c)
	}
}

// groupChanged reacts to a change of a group's channels or subscriptions:
// forget a removed group's fingerprint, else tell every channel left in
// the group (not for broadcasting groups, which do not rebalance).
func (p *Processor) groupChanged(c Change) {
	if c.GroupRemoved {
		p.fpMu.Lock()
		delete(p.fingerprints, c.Group)
		p.fpMu.Unlock()
		return
	}
	if c.MessageModel == Broadcasting {
		return
	}
	p.notify(c.Group, c.Channels)
}

// notify queues NOTIFY_CONSUMER_IDS_CHANGED for chans.
func (p *Processor) notify(group string, chans []*remoting.Channel) {
	if !p.d.Config().NotifyConsumerIdsChangedEnable {
		return
	}
	targets := make([]*remoting.Channel, 0, len(chans))
	for _, ch := range chans {
		if ch != nil {
			targets = append(targets, ch)
		}
	}
	if len(targets) == 0 {
		return
	}
	task := notifyTask{group: group, chans: targets}
	if !p.scanner.Running() {
		p.sendNotify(task)
		return
	}
	select {
	case p.notifyQ <- task:
	default:
		p.log.Warn("notify queue full, dropping NOTIFY_CONSUMER_IDS_CHANGED", "group", group)
	}
}

func (p *Processor) sendNotify(t notifyTask) {
	for _, ch := range t.chans {
		if !ch.IsActive() {
			continue
		}
		req := remoting.NewRequest(code.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": t.group}, nil)
		if err := ch.InvokeOneway(req); err != nil {
			p.log.Debug("notify consumer ids changed failed", "group", t.group, "remote", ch.RemoteAddr(), "err", err)
		}
	}
}

func (p *Processor) heartbeat(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	hb, err := DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "decode heartbeat body: %v", err)
	}
	if hb.ClientID == "" {
		return nil, remoting.Errorf(code.InvalidParameter, "heartbeat without clientID")
	}
	cfg := p.d.Config()
	info := ChannelInfo{Channel: ch, ClientID: hb.ClientID, Language: req.Language, Version: req.Version}
	v2 := hb.HeartbeatFingerprint != 0
	subChange := false
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		// The proxy registers its 5.x clients with the consumer manager
		// directly, past this check: a gRPC SimpleConsumer (CONSUME_ACTIVELY,
		// on a local channel) is never refused by it.
		if cfg.RejectPullConsumerEnable && cd.ConsumeType == ConsumeActively && !ch.Local() {
			continue
		}
		sg, ok := p.d.Subscriptions.FindOrCreate(cd.GroupName)
		if !ok {
			p.log.Warn("heartbeat for unknown subscription group", "group", cd.GroupName, "clientId", hb.ClientID)
			continue
		}
		p.fpMu.Lock()
		prev, seen := p.fingerprints[cd.GroupName]
		if v2 && seen && prev != hb.HeartbeatFingerprint {
			subChange = true
		}
		p.fingerprints[cd.GroupName] = hb.HeartbeatFingerprint
		p.fpMu.Unlock()
		p.ensureRetryTopic(cd, sg)

		updateSubs := !(v2 && hb.WithoutSub)
		if !updateSubs && p.d.Consumers.SubscriptionCount(cd.GroupName) == 0 {
			// The broker has no subscriptions for the group (restart, or a
			// group first seen without them): ask for a full heartbeat
			// instead of running with none [our choice; Java answers false].
			subChange = true
		}
		added, changed, c := p.d.Consumers.Register(cd.GroupName, info, cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere,
			cd.SubscriptionDataSet, updateSubs)
		if added || changed {
			p.log.Info("consumer registration changed", "group", cd.GroupName, "clientId", hb.ClientID, "newChannel", added, "subChanged", changed)
			if sg.NotifyConsumerIdsChangedEnable {
				// The client whose heartbeat changed the group is told
				// too, as Java tells all channels
				// (org/apache/rocketmq/broker/client/ConsumerManager.java,
				// registerConsumer): after a broker restart, the notice
				// answering its first heartbeat makes a client rebalance
				// at once, not at its next periodic rebalance (client-go
				// holds no queue until then, see docs/interop.md).
				p.groupChanged(c)
			}
		}
	}
	// enableRegisterProducer=false with rejectTransactionMessage=true: no
	// producer is added, the ones known keep being refreshed (nothing
	// would check their transactions; Java's ProducerManager.registerProducer).
	onlyKnown := !cfg.EnableRegisterProducer && cfg.RejectTransactionMessage
	for _, pd := range hb.ProducerDataSet {
		switch {
		case pd.GroupName == "":
		case onlyKnown:
			p.d.Producers.Refresh(pd.GroupName, ch)
		default:
			p.d.Producers.Register(pd.GroupName, info)
		}
	}
	// A heartbeat handled after its connection's close (queued behind
	// other work while the client sent it and exited) would otherwise
	// leave an entry for a dead channel until the expiry scan: the close
	// handler has already run and found nothing to remove.
	if !ch.IsActive() {
		p.OnChannelClose(ch)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt(ExtSupportHeartbeatV2, "true")
	if v2 {
		resp.SetExt(ExtSubChange, boolString(subChange))
	} else {
		resp.SetExt(ExtSubChange, "true") // Java's v1 answer
	}
	return resp, nil
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ensureRetryTopic creates %RETRY%<group> (Java's
// createTopicInSendMessageBackMethod) so that mqadmin and send-back find it.
func (p *Processor) ensureRetryTopic(cd ConsumerData, sg subscription.GroupConfig) {
	hasOrder := false
	for _, s := range cd.SubscriptionDataSet {
		if p.d.Topics.IsOrder(s.Topic) {
			hasOrder = true
			break
		}
	}
	tc := protocol.NewTopicConfig(protocol.RetryTopic(cd.GroupName))
	tc.ReadQueueNums, tc.WriteQueueNums = sg.RetryQueueNums, sg.RetryQueueNums
	tc.Perm = protocol.PermRead | protocol.PermWrite
	tc.Order = hasOrder
	if cd.UnitMode {
		tc.TopicSysFlag = topicSysFlagUnitSub
	}
	_, created, err := p.d.Topics.CreateIfAbsent(tc)
	if err != nil {
		p.log.Error("create retry topic", "topic", tc.TopicName, "err", err)
	}
	if created && p.d.TriggerRegistration != nil {
		p.d.TriggerRegistration()
	}
}

func (p *Processor) unregisterClient(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	clientID := f.Str("clientID")
	producerGroup := f.OptStr("producerGroup", "")
	consumerGroup := f.OptStr("consumerGroup", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	if producerGroup != "" {
		p.d.Producers.Unregister(producerGroup, ch)
	}
	if consumerGroup != "" {
		notifyOn := true
		if sg, ok := p.d.Subscriptions.Find(consumerGroup); ok {
			notifyOn = sg.NotifyConsumerIdsChangedEnable
		}
		if c, ok := p.d.Consumers.Unregister(consumerGroup, ch); ok {
			p.log.Info("client unregistered", "clientId", clientID, "group", consumerGroup)
			if notifyOn || c.GroupRemoved {
				p.groupChanged(c)
			}
		}
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// consumerListBody is GetConsumerListByGroupResponseBody.
type consumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

func (p *Processor) consumerListByGroup(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group, err := processor.StrField(req, "consumerGroup")
	if err != nil {
		return nil, err
	}
	ids := p.d.Consumers.ClientIDs(group)
	if len(ids) == 0 {
		return nil, remoting.Errorf(code.SystemError, "no consumer for this group, %s", group)
	}
	return processor.Reply(req, "consumer list", consumerListBody{ConsumerIDList: ids})
}

// ConsumerConnection is the GET_CONSUMER_CONNECTION_LIST body (docs/protocol.md §4.6).
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere,omitempty"`
	ConsumeType       string                      `json:"consumeType,omitempty"`
	MessageModel      string                      `json:"messageModel,omitempty"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
}

// ProducerConnection is the GET_PRODUCER_CONNECTION_LIST body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

func (p *Processor) consumerConnectionList(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group, err := processor.StrField(req, "consumerGroup")
	if err != nil {
		return nil, err
	}
	g, ok := p.d.Consumers.GroupInfo(group)
	if !ok {
		return nil, remoting.Errorf(code.ConsumerNotOnline, "the consumer group[%s] not online", group)
	}
	cc := ConsumerConnection{
		ConnectionSet:     make([]Connection, 0, len(g.Channels)),
		ConsumeFromWhere:  g.ConsumeFromWhere,
		ConsumeType:       g.ConsumeType,
		MessageModel:      g.MessageModel,
		SubscriptionTable: g.Subscriptions,
	}
	for _, c := range g.Channels {
		cc.ConnectionSet = append(cc.ConnectionSet, c.connection())
	}
	return processor.Reply(req, "consumer connection", cc)
}

func (p *Processor) producerConnectionList(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group, err := processor.StrField(req, "producerGroup")
	if err != nil {
		return nil, err
	}
	infos := p.d.Producers.Channels(group)
	if len(infos) == 0 {
		return nil, remoting.Errorf(code.SystemError, "the producer group[%s] not exist", group)
	}
	pc := ProducerConnection{ConnectionSet: make([]Connection, 0, len(infos))}
	for _, c := range infos {
		pc.ConnectionSet = append(pc.ConnectionSet, c.connection())
	}
	return processor.Reply(req, "producer connection", pc)
}

// ProducerInfo is one producer connection of GET_ALL_PRODUCER_INFO
// (Apache's remoting/protocol/body/ProducerInfo).
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	Language            string `json:"language"`
	RemoteIP            string `json:"remoteIP"`
	Version             int32  `json:"version"`
}

// ProducerTableInfo is the GET_ALL_PRODUCER_INFO (328) body: producer
// group → its connections.
type ProducerTableInfo struct {
	Data map[string][]ProducerInfo `json:"data"`
}

// allProducerInfo answers GET_ALL_PRODUCER_INFO (328) with every producer
// group's connections, as Apache's ProducerManager.getProducerTable: the
// remote address as Netty's InetSocketAddress.toString ("/ip:port").
func (p *Processor) allProducerInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	t := ProducerTableInfo{Data: map[string][]ProducerInfo{}}
	for _, g := range p.d.Producers.Groups() {
		infos := p.d.Producers.Channels(g)
		if len(infos) == 0 {
			continue
		}
		list := make([]ProducerInfo, 0, len(infos))
		for _, c := range infos {
			list = append(list, ProducerInfo{
				ClientID:            c.ClientID,
				RemoteIP:            "/" + c.RemoteAddr(),
				Language:            c.Language.String(),
				Version:             c.Version,
				LastUpdateTimestamp: c.LastUpdate.UnixMilli(),
			})
		}
		t.Data[g] = list
	}
	return processor.Reply(req, "producer table", t)
}
