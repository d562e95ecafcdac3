package clienttest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Lite topics (docs/lite-topics.md) on the fake broker: LITE parents whose
// messages carrying __LITE_TOPIC are also stored in the LMQ
// "%LMQ%$<parent>$<lite>" (queue 0, INNER_MULTI_DISPATCH and
// INNER_MULTI_QUEUE_OFFSET set in the stored record), lite groups bound to
// a parent, LITE_SUBSCRIPTION_CTL (200071), POP_LITE_MESSAGE (200070) with
// long polling and FIFO blocking per (group, LMQ) as the real broker's
// order info, the liteTopic branch of ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME, and NOTIFY_UNSUBSCRIBE_LITE (200073) on
// demand. Every lite field is guarded by Broker.mu. Pops scan the client's
// subscriptions (no event sets).

// LiteCtl is one entry of a LITE_SUBSCRIPTION_CTL request a broker received.
type LiteCtl = protocol.LiteSubscriptionDTO

type liteKey struct{ group, client string }

// liteOrder is the FIFO state of one (group, LMQ): the last pop.
type liteOrder struct {
	popTime   int64
	offsets   []int64
	acked     map[int64]bool
	visibleAt map[int64]int64
	counts    map[int64]int32 // deliveries before the last pop
}

func (o *liteOrder) blocked(now int64) bool {
	for _, off := range o.offsets {
		if !o.acked[off] && now < o.visibleAt[off] {
			return true
		}
	}
	return false
}

type liteBroker struct {
	parents   map[string]bool
	groups    map[string]liteGroupConf
	subs      map[liteKey]map[string]bool // client → lite names
	chans     map[liteKey]*remoting.Channel
	ctls      []LiteCtl
	ctlCodes  []int32
	orders    map[string]*liteOrder // group \x00 lmq
	committed map[string]int64      // group \x00 lmq
	acks      []map[string]string
	changes   []map[string]string
	pops      int
}

type liteGroupConf struct {
	parent string
	quota  int
}

func newLiteBroker() *liteBroker {
	return &liteBroker{
		parents:   map[string]bool{},
		groups:    map[string]liteGroupConf{},
		subs:      map[liteKey]map[string]bool{},
		chans:     map[liteKey]*remoting.Channel{},
		orders:    map[string]*liteOrder{},
		committed: map[string]int64{},
	}
}

// LiteLMQ is the LMQ name of (parent, lite).
func LiteLMQ(parent, lite string) string { return protocol.LMQPrefix + "$" + parent + "$" + lite }

// registerLite serves the lite codes; ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME without liteTopic go to the handlers
// registered before.
func (b *Broker) registerLite(srv *remoting.Server) {
	for _, c := range []int32{code.AckMessage, code.ChangeMessageInvisible} {
		prev, _, _ := srv.Handler(c)
		lite := b.liteAck
		if c == code.ChangeMessageInvisible {
			lite = b.liteChangeInvisible
		}
		srv.Register(c, func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			if req.Ext("liteTopic") == "" && prev != nil {
				return prev(ctx, ch, req)
			}
			return lite(ctx, ch, req)
		}, nil)
	}
	srv.Register(code.LiteSubscriptionCtl, b.liteSubscriptionCtl, nil)
	srv.Register(code.PopLiteMessage, b.popLite, nil)
}

// CreateLiteTopic creates a LITE parent topic with n queues.
func (b *Broker) CreateLiteTopic(parent string, n int) {
	b.CreateTopic(parent, n)
	b.mu.Lock()
	b.lite.parents[parent] = true
	b.mu.Unlock()
}

// CreateLiteGroup creates a lite group bound to parent; quota > 0 caps the
// lite topics one client may subscribe to (lite.sub.client.quota).
func (b *Broker) CreateLiteGroup(group, parent string, quota int) {
	b.mu.Lock()
	b.lite.groups[group] = liteGroupConf{parent: parent, quota: quota}
	b.mu.Unlock()
}

// FailLiteSubscriptions makes the next len(codes) LITE_SUBSCRIPTION_CTL
// requests answer these codes.
func (b *Broker) FailLiteSubscriptions(codes ...int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lite.ctlCodes = append(b.lite.ctlCodes, codes...)
}

// LiteCtls returns the LITE_SUBSCRIPTION_CTL entries received.
func (b *Broker) LiteCtls() []LiteCtl {
	return recorded(&b.mu, &b.lite.ctls)
}

// LiteSubscription lists the lite topics a client of group subscribes to
// here, sorted.
func (b *Broker) LiteSubscription(group, clientID string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.lite.subs[liteKey{group, clientID}]))
}

// LiteAcks returns the lite ACK_MESSAGE headers received (with liteTopic).
func (b *Broker) LiteAcks() []map[string]string {
	return recorded(&b.mu, &b.lite.acks)
}

// LiteInvisibleChanges returns the lite CHANGE_MESSAGE_INVISIBLETIME
// headers received.
func (b *Broker) LiteInvisibleChanges() []map[string]string {
	return recorded(&b.mu, &b.lite.changes)
}

// LitePops is the number of POP_LITE_MESSAGE requests received.
func (b *Broker) LitePops() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lite.pops
}

// LiteCommitted is the group's committed offset of a lite topic (-1: none).
func (b *Broker) LiteCommitted(group, parent, lite string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off, ok := b.lite.committed[group+"\x00"+LiteLMQ(parent, lite)]; ok {
		return off
	}
	return -1
}

// NotifyUnsubscribeLite removes lite from a client's subscription and
// tells the client (one-way NOTIFY_UNSUBSCRIBE_LITE over the connection of
// its last subscription request), as an exclusive group's eviction does.
func (b *Broker) NotifyUnsubscribeLite(group, clientID, lite string) error {
	k := liteKey{group, clientID}
	b.mu.Lock()
	delete(b.lite.subs[k], lite)
	ch := b.lite.chans[k]
	b.mu.Unlock()
	if ch == nil {
		return nil
	}
	req := remoting.NewRequest(code.NotifyUnsubscribeLite, map[string]string{"liteTopic": lite, "consumerGroup": group, "clientId": clientID}, nil)
	req.MarkOneway()
	return ch.InvokeOneway(req)
}

// liteDispatchLocked gives a message sent to a LITE parent with
// __LITE_TOPIC its LMQ and LMQ offset (in the properties that are stored)
// and returns the LMQ ("" for none). props is the producer's properties
// string, or nil when m.Properties is used.
func (b *Broker) liteDispatchLocked(m *message.Message, props *[]byte) string {
	if !b.lite.parents[m.Topic] {
		return ""
	}
	pm := m.Properties
	if *props != nil {
		pm = message.DecodeProperties(*props)
	}
	lite := pm[message.PropertyLiteTopic]
	if lite == "" {
		return ""
	}
	lmq := LiteLMQ(m.Topic, lite)
	pm = maps.Clone(pm)
	pm[message.PropertyInnerMultiDispatch] = lmq
	pm[message.PropertyInnerMultiQueueOffset] = strconv.Itoa(len(b.queues[lmq][0]))
	if *props != nil {
		enc, err := message.EncodeProperties(pm)
		if err != nil {
			return ""
		}
		*props = enc
	} else {
		m.Properties = pm
	}
	return lmq
}

func (b *Broker) liteSubscriptionCtl(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var body protocol.LiteSubscriptionCtlBody
	if err := json.Unmarshal(req.Body, &body); err != nil || len(body.SubscriptionSet) == 0 {
		return nil, remoting.Errorf(code.IllegalOperation, "bad or empty LiteSubscriptionCtlRequestBody")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[req.Code]++
	b.lite.ctls = append(b.lite.ctls, body.SubscriptionSet...)
	if len(b.lite.ctlCodes) > 0 {
		c := b.lite.ctlCodes[0]
		b.lite.ctlCodes = b.lite.ctlCodes[1:]
		if c != code.Success {
			return nil, remoting.Errorf(c, "injected code %d", c)
		}
	}
	for _, dto := range body.SubscriptionSet {
		k := liteKey{dto.Group, dto.ClientID}
		if dto.Action == "COMPLETE_REMOVE" {
			delete(b.lite.subs, k)
			delete(b.lite.chans, k)
			continue
		}
		g, ok := b.lite.groups[dto.Group]
		if !ok || g.parent != dto.Topic {
			return nil, remoting.Errorf(code.IllegalOperation, "group [%s] is not bound to lite topic [%s]", dto.Group, dto.Topic)
		}
		for _, l := range dto.LiteTopicSet {
			if err := protocol.ValidateLiteTopic(l, 0); err != nil {
				return nil, remoting.Errorf(code.InvalidParameter, "illegal lite topic %q: %v", l, err)
			}
		}
		set := b.lite.subs[k]
		next := maps.Clone(set)
		if next == nil || dto.Action == "COMPLETE_ADD" {
			next = map[string]bool{}
		}
		switch dto.Action {
		case "PARTIAL_ADD", "COMPLETE_ADD":
			for _, l := range dto.LiteTopicSet {
				next[l] = true
			}
			if g.quota > 0 && len(next) > g.quota {
				return nil, remoting.Errorf(code.LiteSubscriptionQuotaExceeded, "client %s of group %s would hold %d lite topics (quota %d)", dto.ClientID, dto.Group, len(next), g.quota)
			}
			b.lite.chans[k] = ch
			if o := dto.OffsetOption; o != nil && dto.Action == "PARTIAL_ADD" {
				for _, l := range dto.LiteTopicSet {
					b.resetLiteLocked(dto.Group, LiteLMQ(dto.Topic, l), o.Type, o.Value)
				}
			}
		case "PARTIAL_REMOVE":
			for _, l := range dto.LiteTopicSet {
				delete(next, l)
			}
		default:
			return nil, remoting.Errorf(code.IllegalOperation, "unknown lite subscription action %q", dto.Action)
		}
		b.lite.subs[k] = next
	}
	b.signalLocked()
	return remoting.NewResponse(req, code.Success, ""), nil
}

// resetLiteLocked applies an offset option (docs/lite-topics.md §5.3).
func (b *Broker) resetLiteLocked(group, lmq, typ string, v int64) {
	key := group + "\x00" + lmq
	cur, has := b.lite.committed[key]
	if !has {
		cur = -1
	}
	target := int64(-1)
	switch {
	case typ == "POLICY" && v == 1:
		target = 0
	case typ == "POLICY" && v == 2:
		target = int64(len(b.queues[lmq][0]))
	case typ == "OFFSET":
		target = v
	case typ == "TAIL_N" && cur >= 0:
		target = max(0, cur-v)
	}
	if target >= 0 && target != cur {
		b.lite.committed[key] = target
		delete(b.lite.orders, key)
	}
}

// signalLocked wakes parked pulls and pops.
func (b *Broker) signalLocked() {
	close(b.notify)
	b.notify = make(chan struct{})
}

// popLite answers POP_LITE_MESSAGE: the client's subscribed lite topics in
// name order, each not blocked one read FIFO from the group's offset, up to
// maxMsgNum messages; nothing parks the request until pollTime ends.
func (b *Broker) popLite(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	k := liteKey{f.Str("consumerGroup"), f.Str("clientId")}
	topic := f.Str("topic")
	maxNum := int(f.Int32("maxMsgNum"))
	invisible := f.Int64("invisibleTime")
	poll := f.Int64("pollTime")
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "POP_LITE_MESSAGE: %v", err)
	}
	b.mu.Lock()
	b.calls[req.Code]++
	b.lite.pops++
	g, bound := b.lite.groups[k.group]
	isParent := b.lite.parents[topic]
	b.mu.Unlock()
	switch {
	case !isParent:
		return nil, remoting.Errorf(code.InvalidParameter, "topic[%s] is not a LITE topic", topic)
	case !bound || g.parent != topic:
		return nil, remoting.Errorf(code.InvalidParameter, "group [%s] is not bound to lite topic [%s]", k.group, topic)
	case maxNum <= 0 || maxNum > 32 || invisible <= 0:
		return nil, remoting.Errorf(code.InvalidParameter, "maxMsgNum %d or invisibleTime %d out of range", maxNum, invisible)
	}
	deadline := time.Now().Add(time.Duration(poll) * time.Millisecond)
	b.mu.Lock()
	resp, wait := b.popLiteLocked(req, k, topic, maxNum, invisible)
	b.mu.Unlock()
	if resp != nil || poll <= 0 {
		if resp == nil {
			return nil, remoting.Errorf(code.PollingTimeout, "no new message, polling timeout")
		}
		return resp, nil
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		// Invisibility ends without a store: look again now and then.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-ch.Done():
				return
			case <-wait:
			case <-tick.C:
			}
			b.mu.Lock()
			resp, wait = b.popLiteLocked(req, k, topic, maxNum, invisible)
			b.mu.Unlock()
			if resp == nil && time.Now().Before(deadline) {
				continue
			}
			if resp == nil {
				resp = remoting.NewResponse(req, code.PollingTimeout, "no new message, polling timeout")
			}
			_ = ch.WriteResponse(resp)
			return
		}
	}()
	return nil, nil
}

// popLiteLocked pops what is there (nil when nothing); wait is closed on
// the next store or subscription change.
func (b *Broker) popLiteLocked(req *remoting.Command, k liteKey, parent string, maxNum int, invisible int64) (*remoting.Command, <-chan struct{}) {
	now := time.Now().UnixMilli()
	var body []byte
	var counts []string
	n := 0
	for _, lite := range slices.Sorted(maps.Keys(b.lite.subs[k])) {
		if n >= maxNum {
			break
		}
		lmq := LiteLMQ(parent, lite)
		key := k.group + "\x00" + lmq
		old := b.lite.orders[key]
		if old != nil && old.blocked(now) {
			continue
		}
		recs := b.queues[lmq][0]
		off := b.lite.committed[key] // a new group starts at 0
		if off >= int64(len(recs)) {
			continue
		}
		o := &liteOrder{popTime: now, acked: map[int64]bool{}, visibleAt: map[int64]int64{}, counts: map[int64]int32{}}
		for ; off < int64(len(recs)) && n < maxNum; off++ {
			c := int32(0)
			if old != nil && slices.Contains(old.offsets, off) {
				c = old.counts[off] + 1
			}
			o.offsets = append(o.offsets, off)
			o.visibleAt[off] = now + invisible
			o.counts[off] = c
			body = append(body, recs[off]...)
			counts = append(counts, strconv.Itoa(int(c)))
			n++
		}
		b.lite.orders[key] = o
	}
	if n == 0 {
		return nil, b.notify
	}
	return popAnswer(req, body, now, invisible, "999", map[string]string{"orderCountInfo": strings.Join(counts, ";")}), b.notify
}

type liteHandle struct {
	key     string
	offset  int64
	popTime int64
}

func (b *Broker) liteHandleOf(req *remoting.Command) (liteHandle, error) {
	f := protocol.FieldsOf(req.ExtFields)
	h := liteHandle{offset: f.Int64("offset")}
	group, topic, lite := f.Str("consumerGroup"), f.Str("topic"), f.Str("liteTopic")
	extra := strings.Fields(f.Str("extraInfo"))
	if err := f.Err(); err != nil {
		return h, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	if len(extra) < 4 || extra[3] != "999" || req.Ext("queueId") != "0" {
		return h, remoting.Errorf(code.InvalidParameter, "lite ack: bad extraInfo %q or queueId %s", req.Ext("extraInfo"), req.Ext("queueId"))
	}
	pt, err := strconv.ParseInt(extra[1], 10, 64)
	if err != nil {
		return h, remoting.Errorf(code.InvalidParameter, "lite ack: bad popTime %q", extra[1])
	}
	h.key, h.popTime = group+"\x00"+LiteLMQ(topic, lite), pt
	return h, nil
}

// liteAck acks one popped offset of the last pop (others are ignored, as
// the real broker's stale acks) and commits the lowest un-acked offset.
func (b *Broker) liteAck(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[req.Code]++
	b.lite.acks = append(b.lite.acks, req.ExtFields)
	b.ext.mu.Lock()
	var injected int32
	if len(b.ext.ackCodes) > 0 {
		injected = b.ext.ackCodes[0]
		b.ext.ackCodes = b.ext.ackCodes[1:]
	}
	b.ext.mu.Unlock()
	if injected != code.Success {
		return nil, remoting.Errorf(injected, "injected code %d", injected)
	}
	h, err := b.liteHandleOf(req)
	if err != nil {
		return nil, err
	}
	o := b.lite.orders[h.key]
	if o == nil || o.popTime != h.popTime || !slices.Contains(o.offsets, h.offset) {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	o.acked[h.offset] = true
	next := o.offsets[len(o.offsets)-1] + 1
	for _, off := range o.offsets {
		if !o.acked[off] {
			next = off
			break
		}
	}
	b.lite.committed[h.key] = next
	if next > o.offsets[len(o.offsets)-1] {
		delete(b.lite.orders, h.key)
	}
	b.signalLocked()
	return remoting.NewResponse(req, code.Success, ""), nil
}

// liteChangeInvisible sets when a popped offset becomes visible again.
func (b *Broker) liteChangeInvisible(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[req.Code]++
	b.lite.changes = append(b.lite.changes, req.ExtFields)
	h, err := b.liteHandleOf(req)
	if err != nil {
		return nil, err
	}
	d, err := strconv.ParseInt(req.Ext("invisibleTime"), 10, 64)
	if err != nil || d < 0 {
		return nil, remoting.Errorf(code.InvalidParameter, "invisibleTime %q", req.Ext("invisibleTime"))
	}
	resp := remoting.NewResponse(req, code.Success, "")
	o := b.lite.orders[h.key]
	if o == nil || o.popTime != h.popTime || !slices.Contains(o.offsets, h.offset) || o.acked[h.offset] {
		return resp, nil
	}
	at := time.Now().UnixMilli() + d
	o.visibleAt[h.offset] = at
	resp.ExtFields = map[string]string{
		"popTime":       strconv.FormatInt(h.popTime, 10),
		"invisibleTime": strconv.FormatInt(at-h.popTime, 10),
		"reviveQid":     "999",
	}
	return resp, nil
}
