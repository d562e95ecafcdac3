package clienttest

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"sync/atomic"
)

// Broker is a fake broker storing messages in memory.
type Broker struct {
	Name string

	srv   *remoting.Server
	ns    *fakens.Server
	store netip.AddrPort

	mu         sync.Mutex
	topics     map[string]int              // topic → queue count
	queues     map[string]map[int][][]byte // topic → queue id → stored records
	offsets    map[string]int64            // group@topic@queue → committed offset
	committed  map[string]uint64           // group@topic@queue → arrival of the commit applied
	commitLog  int64                       // next commit-log offset
	notify     chan struct{}               // closed and replaced on every store
	sendCodes  []int32                     // injected answers to the next sends
	silent     bool                        // never answer sends
	calls      map[int32]int               // request code → count
	sends      []Send                      // every send received
	heartbeats []string                    // HEART_BEAT bodies
	unregister []map[string]string         // UNREGISTER_CLIENT headers
	ext        *brokerExt                  // consumers, locks, transactions, pop (consumer.go)
	lite       *liteBroker                 // lite topics (lite.go)
	clock      atomic.Pointer[func() time.Time]

	stop chan struct{}
	wg   sync.WaitGroup // parked long polls
}

// SetClock sets the clock of orderly pops' invisible times (default
// time.Now), so that tests let them pass without sleeping.
func (b *Broker) SetClock(now func() time.Time) { b.clock.Store(&now) }

func (b *Broker) now() time.Time {
	if now := b.clock.Load(); now != nil {
		return (*now)()
	}
	return time.Now()
}

// Send is one send request a broker received.
type Send struct {
	Code int32
	Ext  map[string]string
	Body []byte
}

// StartBroker listens on 127.0.0.1:0 and registers with ns (if not nil).
// TBW102 (8 queues, perm 7) exists so that sends may auto-create topics.
func StartBroker(name string, ns *fakens.Server) (*Broker, error) {
	b := &Broker{
		Name:      name,
		ns:        ns,
		topics:    map[string]int{protocol.AutoCreateTopicKey: 8},
		queues:    make(map[string]map[int][][]byte),
		offsets:   make(map[string]int64),
		committed: make(map[string]uint64),
		notify:    make(chan struct{}),
		calls:     make(map[int32]int),
		stop:      make(chan struct{}),
		ext:       newBrokerExt(),
		lite:      newLiteBroker(),
	}
	srv, err := newServer()
	if err != nil {
		return nil, err
	}
	b.srv = srv
	for c, h := range map[int32]remoting.Handler{
		code.SendMessage:             b.send,
		code.SendMessageV2:           b.send,
		code.SendBatchMessage:        b.send,
		code.PullMessage:             b.pull,
		code.QueryConsumerOffset:     b.queryOffset,
		code.UpdateConsumerOffset:    b.updateOffset,
		code.GetMaxOffset:            b.maxOffset,
		code.GetMinOffset:            b.minOffset,
		code.SearchOffsetByTimestamp: b.searchOffset,
		code.HeartBeat:               b.heartbeat,
		code.UnregisterClient:        b.unregisterClient,
	} {
		srv.Register(c, h, nil)
	}
	b.registerExt(srv)
	b.registerLite(srv)
	if err := srv.Start(); err != nil {
		return nil, err
	}
	b.store, err = netip.ParseAddrPort(srv.Addr())
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return nil, err
	}
	if ns != nil {
		ns.AddBroker(name, srv.Addr())
		ns.SetTopic(protocol.AutoCreateTopicKey, name, 8, protocol.PermRead|protocol.PermWrite|protocol.PermInherit)
	}
	return b, nil
}

// Addr is the listening address.
func (b *Broker) Addr() string { return b.srv.Addr() }

// Close ends parked pulls and stops the server.
func (b *Broker) Close() error {
	// Stop the server first: once no handler runs, none can park another
	// pull (wg.Add) while we Wait.
	err := b.srv.Shutdown(context.Background())
	close(b.stop)
	b.wg.Wait()
	return err
}

// CreateTopic creates topic with n queues here and on the nameserver.
func (b *Broker) CreateTopic(topic string, n int) {
	b.mu.Lock()
	b.topics[topic] = n
	b.mu.Unlock()
	if b.ns != nil {
		b.ns.SetTopic(topic, b.Name, n, 0)
	}
}

// FailSends makes the next len(codes) sends answer these codes (0 stores
// normally) instead of storing.
func (b *Broker) FailSends(codes ...int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sendCodes = append(b.sendCodes, codes...)
}

// ClearFailures drops the injected answers not used yet.
func (b *Broker) ClearFailures() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sendCodes = nil
}

// Silence makes the broker never answer sends (timeouts).
func (b *Broker) Silence(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.silent = on
}

// Calls returns how many requests with code arrived.
func (b *Broker) Calls(c int32) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[c]
}

// Sends returns the send requests received so far.
func (b *Broker) Sends() []Send {
	return recorded(&b.mu, &b.sends)
}

// Heartbeats returns the HEART_BEAT bodies received so far.
func (b *Broker) Heartbeats() []string {
	return recorded(&b.mu, &b.heartbeats)
}

// Unregisters returns the UNREGISTER_CLIENT headers received so far.
func (b *Broker) Unregisters() []map[string]string {
	return recorded(&b.mu, &b.unregister)
}

// Messages decodes what is stored in a queue.
func (b *Broker) Messages(topic string, queueID int) ([]*message.Message, error) {
	b.mu.Lock()
	recs := b.queues[topic][queueID]
	b.mu.Unlock()
	var out []*message.Message
	for _, r := range recs {
		m, _, err := message.DecodeStored(r, message.DecodeOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// commitLocked applies an UPDATE_CONSUMER_OFFSET unless one read after it
// was applied already: the server runs requests concurrently, and our
// broker applies a queue's commits in the order it read them
// (docs/protocol.md §6.3).
func (b *Broker) commitLocked(key string, off int64, arrival uint64) {
	if arrival < b.committed[key] {
		return
	}
	b.committed[key] = arrival
	b.offsets[key] = off
}

// Committed returns the committed offset of a queue (-1 if none).
func (b *Broker) Committed(group, topic string, queueID int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off, ok := b.offsets[offsetKey(group, topic, queueID)]; ok {
		return off
	}
	return -1
}

// Store appends a message to a queue directly (no request), e.g. a
// compressed or filtered one for pull tests.
func (b *Broker) Store(m *message.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, err := b.storeLocked(m, nil)
	return err
}

func offsetKey(group, topic string, q int) string {
	return group + "@" + topic + "@" + strconv.Itoa(q)
}

// storeLocked stamps the store fields and appends m; props, when not nil,
// is the producer's properties string.
func (b *Broker) storeLocked(m *message.Message, props []byte) (int64, error) {
	q := int(m.QueueID)
	if b.queues[m.Topic] == nil {
		b.queues[m.Topic] = make(map[int][][]byte)
	}
	m.QueueOffset = int64(len(b.queues[m.Topic][q]))
	m.CommitLogOffset = b.commitLog
	m.StoreTimestamp = time.Now().UnixMilli()
	m.StoreHost = b.store
	lmq := b.liteDispatchLocked(m, &props)
	var rec []byte
	var err error
	if props != nil {
		rec, err = message.AppendStoredRaw(nil, m, props)
	} else {
		rec, err = message.AppendStored(nil, m)
	}
	if err != nil {
		return 0, err
	}
	b.queues[m.Topic][q] = append(b.queues[m.Topic][q], rec)
	if lmq != "" {
		if b.queues[lmq] == nil {
			b.queues[lmq] = make(map[int][][]byte)
		}
		b.queues[lmq][0] = append(b.queues[lmq][0], rec)
	}
	b.commitLog += int64(len(rec))
	close(b.notify)
	b.notify = make(chan struct{})
	return m.QueueOffset, nil
}

// send stores a 10/310/320 request (long or short header names).
func (b *Broker) send(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	short := req.Code != code.SendMessage
	name := func(long, s string) string {
		if short {
			return s
		}
		return long
	}
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str(name("topic", "b"))
	queueID := int(f.Int32(name("queueId", "e")))
	sysFlag := f.Int32(name("sysFlag", "f"))
	born := f.Int64(name("bornTimestamp", "g"))
	flag := f.Int32(name("flag", "h"))
	props := f.OptStr(name("properties", "i"), "")
	defTopic := f.OptStr(name("defaultTopic", "c"), "")
	defQueues := int(f.OptInt32(name("defaultTopicQueueNums", "d"), 4))
	reconsume := f.OptInt32(name("reconsumeTimes", "j"), 0)
	maxReconsume := f.OptInt32(name("maxReconsumeTimes", "l"), 16)
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.SystemError, "%v", err)
	}
	if group, ok := strings.CutPrefix(topic, protocol.RetryGroupTopicPrefix); ok && reconsume >= maxReconsume {
		// A retry that used up its attempts goes to the DLQ, as brokers do.
		topic, queueID = protocol.DLQTopic(group), 0
		b.ensureTopic(topic, 1)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[req.Code]++
	b.sends = append(b.sends, Send{Code: req.Code, Ext: req.ExtFields, Body: req.Body})
	if b.silent {
		return nil, nil // never answered: the client times out
	}
	if len(b.sendCodes) > 0 {
		c := b.sendCodes[0]
		b.sendCodes = b.sendCodes[1:]
		if c != code.Success {
			return nil, remoting.Errorf(c, "injected code %d", c)
		}
	}
	n, ok := b.topics[topic]
	if !ok {
		if _, def := b.topics[defTopic]; !def || defTopic == "" {
			return nil, remoting.Errorf(code.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
		}
		n = min(defQueues, b.topics[defTopic])
		b.topics[topic] = n
		if b.ns != nil {
			b.ns.SetTopic(topic, b.Name, n, 0)
		}
	}
	if queueID < 0 || queueID >= n {
		return nil, remoting.Errorf(code.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.writeQueueNums:[%d]", queueID, topic, n)
	}
	bornHost, _ := netip.ParseAddrPort(ch.RemoteAddr())
	base := message.Message{Topic: topic, QueueID: int32(queueID), SysFlag: sysFlag, BornTimestamp: born, BornHost: bornHost, Flag: flag, ReconsumeTimes: reconsume}

	var ids []string
	var first int64 = -1
	if req.Code == code.SendBatchMessage {
		inner, err := message.DecodeBatch(req.Body)
		if err != nil {
			return nil, remoting.Errorf(code.MessageIllegal, "%v", err)
		}
		for _, im := range inner {
			m := base
			m.Flag, m.Body, m.Properties = im.Flag, im.Body, im.Properties
			off, err := b.storeLocked(&m, nil)
			if err != nil {
				return nil, remoting.Errorf(code.MessageIllegal, "%v", err)
			}
			if first < 0 {
				first = off
			}
			ids = append(ids, m.OffsetMsgID())
		}
	} else {
		m := base
		m.Body = req.Body
		off, err := b.storeLocked(&m, []byte(props))
		if err != nil {
			return nil, remoting.Errorf(code.MessageIllegal, "%v", err)
		}
		first = off
		ids = append(ids, m.OffsetMsgID())
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = map[string]string{
		"msgId":       strings.Join(ids, ","),
		"queueId":     strconv.Itoa(queueID),
		"queueOffset": strconv.FormatInt(first, 10),
		"MSG_REGION":  "DefaultRegion",
		"TRACE_ON":    "true",
	}
	return resp, nil
}

// pull answers PULL_MESSAGE with the result table of docs/protocol.md §6.2,
// parking the request when nothing is there and long polling is asked for.
func (b *Broker) pull(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group := f.Str("consumerGroup")
	topic := f.Str("topic")
	queueID := int(f.Int32("queueId"))
	offset := f.Int64("queueOffset")
	maxNums := int(f.Int32("maxMsgNums"))
	sysFlag := f.Int32("sysFlag")
	commit := f.OptInt64("commitOffset", 0)
	suspend := f.OptInt64("suspendTimeoutMillis", 0)
	sub := f.OptStr("subscription", "*")
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.SystemError, "%v", err)
	}
	b.mu.Lock()
	b.calls[req.Code]++
	if key := offsetKey(group, topic, queueID); sysFlag&1 != 0 && commit > 0 {
		// Only forward, as our broker: a pull sent just before a consumer's
		// last commit must not move the offset back (docs/protocol.md §6.3).
		if cur, ok := b.offsets[key]; !ok || commit > cur {
			b.offsets[key] = commit
		}
	}
	resp, wait := b.pullLocked(req, topic, queueID, offset, maxNums, sub)
	b.mu.Unlock()
	if resp.Code != code.PullNotFound || sysFlag&2 == 0 || suspend <= 0 {
		return resp, nil
	}
	// Park: answer when a message arrives or the suspension ends.
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTimer(time.Duration(suspend) * time.Millisecond)
		defer t.Stop()
		for {
			expired := false
			select {
			case <-b.stop:
				return
			case <-ch.Done(): // the client went away
				return
			case <-t.C:
				expired = true
			case <-wait:
			}
			b.mu.Lock()
			resp, wait = b.pullLocked(req, topic, queueID, offset, maxNums, sub)
			b.mu.Unlock()
			if resp.Code == code.PullNotFound && !expired {
				continue // woken by another queue's message
			}
			_ = ch.WriteResponse(resp)
			return
		}
	}()
	return nil, nil
}

// pullLocked builds a pull answer; wait is closed on the next store.
func (b *Broker) pullLocked(req *remoting.Command, topic string, queueID int, offset int64, maxNums int, sub string) (*remoting.Command, <-chan struct{}) {
	recs := b.queues[topic][queueID]
	maxOff := int64(len(recs))
	resp := remoting.NewResponse(req, code.Success, "")
	next := offset
	switch {
	case maxOff == 0 && offset != 0, offset > maxOff, offset < 0:
		resp.Code, next = code.PullOffsetMoved, min(max(offset, 0), maxOff)
	case offset == maxOff:
		resp.Code = code.PullNotFound
	default:
		var tags map[int32]bool
		if sub != "" && sub != "*" {
			tags = map[int32]bool{}
			for _, t := range strings.Split(sub, "||") {
				tags[message.TagHashCode(strings.TrimSpace(t))] = true
			}
		}
		var body []byte
		n := 0
		for next < maxOff && n < maxNums {
			rec := recs[next]
			next++
			if tags != nil {
				v, err := message.ParseView(rec, message.ParseOptions{})
				if err != nil {
					continue
				}
				tag, _ := v.Property(message.PropertyTags)
				if !tags[message.TagHashCode(tag)] {
					continue
				}
			}
			body = append(body, rec...)
			n++
		}
		if n == 0 {
			resp.Code = code.PullRetryImmediately
		}
		resp.Body = body
	}
	resp.ExtFields = map[string]string{
		"nextBeginOffset":      strconv.FormatInt(next, 10),
		"minOffset":            "0",
		"maxOffset":            strconv.FormatInt(maxOff, 10),
		"suggestWhichBrokerId": "0",
	}
	return resp, b.notify
}

func (b *Broker) queueArgs(req *remoting.Command) (string, int, error) {
	topic, q, _, err := b.queueArgsInt64(req, "")
	return topic, q, err
}

// queueArgsInt64 is queueArgs that also reads the int64 field name (none
// when name is "").
func (b *Broker) queueArgsInt64(req *remoting.Command, name string) (string, int, int64, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	q := int(f.Int32("queueId"))
	var v int64
	if name != "" {
		v = f.Int64(name)
	}
	if err := f.Err(); err != nil {
		return "", 0, 0, remoting.Errorf(code.SystemError, "%v", err)
	}
	b.mu.Lock()
	b.calls[req.Code]++
	b.mu.Unlock()
	return topic, q, v, nil
}

func offsetResponse(req *remoting.Command, off int64) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = map[string]string{"offset": strconv.FormatInt(off, 10)}
	return resp
}

func (b *Broker) queryOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, q, err := b.queueArgs(req)
	if err != nil {
		return nil, err
	}
	off := b.Committed(req.Ext("consumerGroup"), topic, q)
	if off < 0 {
		return nil, remoting.Errorf(code.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
	}
	return offsetResponse(req, off), nil
}

func (b *Broker) updateOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, q, off, err := b.queueArgsInt64(req, "commitOffset")
	if err != nil {
		return nil, err
	}
	b.ext.mu.Lock()
	delayed := b.ext.commitDelay
	if delayed != nil && delayed.topic == topic {
		b.ext.commitDelay = nil
	} else {
		delayed = nil
	}
	b.ext.mu.Unlock()
	if delayed != nil {
		delayed.arrived <- off
		time.Sleep(delayed.d)
	}
	b.mu.Lock()
	b.commitLocked(offsetKey(req.Ext("consumerGroup"), topic, q), off, req.Arrival)
	b.mu.Unlock()
	if delayed != nil {
		close(delayed.stored)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

func (b *Broker) maxOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, q, err := b.queueArgs(req)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	n := len(b.queues[topic][q])
	b.mu.Unlock()
	return offsetResponse(req, int64(n)), nil
}

func (b *Broker) minOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if _, _, err := b.queueArgs(req); err != nil {
		return nil, err
	}
	return offsetResponse(req, 0), nil
}

// searchOffset returns the first offset whose store time is ≥ timestamp.
func (b *Broker) searchOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, q, ts, err := b.queueArgsInt64(req, "timestamp")
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	recs := b.queues[topic][q]
	for i, r := range recs {
		v, err := message.ParseView(r, message.ParseOptions{})
		if err == nil && v.StoreTimestamp() >= ts {
			return offsetResponse(req, int64(i)), nil
		}
	}
	return offsetResponse(req, int64(len(recs))), nil
}

func (b *Broker) heartbeat(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.mu.Lock()
	b.calls[req.Code]++
	b.heartbeats = append(b.heartbeats, string(req.Body))
	b.mu.Unlock()
	resp := remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = map[string]string{"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "false"}
	return resp, nil
}

func (b *Broker) unregisterClient(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b.mu.Lock()
	b.calls[req.Code]++
	b.unregister = append(b.unregister, req.ExtFields)
	b.mu.Unlock()
	return remoting.NewResponse(req, code.Success, ""), nil
}

func newServer() (*remoting.Server, error) {
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Workers = 4
	return remoting.NewServer(cfg, nil)
}

// Cluster is a nameserver with brokers.
type Cluster struct {
	Namesrv *fakens.Server
	Brokers []*Broker
}

// StartCluster starts a nameserver and one broker per name.
func StartCluster(brokerNames ...string) (*Cluster, error) {
	ns, err := fakens.New()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Namesrv: ns}
	for _, name := range brokerNames {
		b, err := StartBroker(name, ns)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("start broker %s: %w", name, err)
		}
		c.Brokers = append(c.Brokers, b)
	}
	return c, nil
}

// CreateTopic creates topic with n queues on every broker.
func (c *Cluster) CreateTopic(topic string, n int) {
	for _, b := range c.Brokers {
		b.CreateTopic(topic, n)
	}
}

// Close stops everything.
func (c *Cluster) Close() error {
	var first error
	for _, b := range c.Brokers {
		if err := b.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := c.Namesrv.Close(); err != nil && first == nil {
		first = err
	}
	return first
}
