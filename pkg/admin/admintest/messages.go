package admintest

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Messages is a message store for the brokers of a Cluster, for tests of
// the message commands (send, pull, query, view) with any client, Java's
// included. It answers, for the fake's broker addresses: SEND_MESSAGE (10)
// and SEND_MESSAGE_V2 (310), PULL_MESSAGE (11), SEARCH_OFFSET_BY_TIMESTAMP
// (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), QUERY_MESSAGE (12, by KEYS
// or UNIQ_KEY), VIEW_MESSAGE_BY_ID (33), HEART_BEAT (34),
// UNREGISTER_CLIENT (35), GET_CONSUMER_CONNECTION_LIST (203, from
// Connections) and GET_CONSUME_STATS (208, from ConsumeStats). Install it
// with Attach; other requests go to the fake as before.
//
// Records are encoded as our broker stores them (properties sorted by key,
// CLUSTER added). A message stored without a StoreHost gets the broker's
// address; without a StoreTimestamp, Now().
type Messages struct {
	fc *Cluster

	mu  sync.Mutex
	log map[string]*brokerLog // broker address → its messages

	// Connections maps a consumer group to the ConsumerConnection JSON
	// body of 203; a group without one is not online (206).
	Connections map[string]string
	// ConsumeStats maps a consumer group to the ConsumeStats body of 208
	// (default: an empty offset table).
	ConsumeStats map[string]string
	// Now is the store clock (ms) of sends; default 1700000000000 plus one
	// millisecond per message.
	Now func() int64
	// IgnoreTime makes QUERY_MESSAGE ignore beginTimestamp and
	// endTimestamp (for fixed timestamps queried with windows around now).
	IgnoreTime bool
	// BornHost is the born host of sent messages (the fake does not see
	// connections); default 127.0.0.1:50000.
	BornHost netip.AddrPort

	clock int64
}

type brokerLog struct {
	records map[int64][]byte           // commit-log offset → record
	queues  map[string]map[int][]int64 // topic → queue id → commit-log offsets
	next    int64
}

// AttachMessages installs a message store on fc (it sets fc.Override,
// keeping a previous Override as a fallback) and returns it.
func AttachMessages(fc *Cluster) *Messages {
	ms := &Messages{
		fc:           fc,
		log:          map[string]*brokerLog{},
		Connections:  map[string]string{},
		ConsumeStats: map[string]string{},
		BornHost:     netip.MustParseAddrPort("127.0.0.1:50000"),
		clock:        1700000000000,
	}
	fc.addOverride(ms.handle)
	return ms
}

func (ms *Messages) brokerLog(addr string) *brokerLog {
	l := ms.log[addr]
	if l == nil {
		l = &brokerLog{records: map[int64][]byte{}, queues: map[string]map[int][]int64{}}
		ms.log[addr] = l
	}
	return l
}

// Put stores m on the broker at addr (queue m.QueueID of m.Topic) and sets
// its QueueOffset, CommitLogOffset and, when unset, StoreHost and
// StoreTimestamp.
func (ms *Messages) Put(addr string, m *message.Message) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	_, err := ms.putLocked(addr, m)
	return err
}

func (ms *Messages) putLocked(addr string, m *message.Message) ([]byte, error) {
	l := ms.brokerLog(addr)
	if !m.StoreHost.IsValid() {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, err
		}
		m.StoreHost = ap
	}
	if !m.BornHost.IsValid() {
		m.BornHost = ms.BornHost
	}
	if m.StoreTimestamp == 0 {
		if ms.Now != nil {
			m.StoreTimestamp = ms.Now()
		} else {
			ms.clock++
			m.StoreTimestamp = ms.clock
		}
	}
	if m.BornTimestamp == 0 {
		m.BornTimestamp = m.StoreTimestamp
	}
	if l.queues[m.Topic] == nil {
		l.queues[m.Topic] = map[int][]int64{}
	}
	q := l.queues[m.Topic][int(m.QueueID)]
	m.QueueOffset = int64(len(q))
	m.CommitLogOffset = l.next
	rec, err := message.EncodeStored(m)
	if err != nil {
		return nil, err
	}
	l.records[l.next] = rec
	l.queues[m.Topic][int(m.QueueID)] = append(q, l.next)
	l.next += int64(len(rec))
	return rec, nil
}

// Records returns the records of one queue.
func (ms *Messages) Records(addr, topic string, queueID int) [][]byte {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	l := ms.brokerLog(addr)
	var out [][]byte
	for _, phy := range l.queues[topic][queueID] {
		out = append(out, l.records[phy])
	}
	return out
}

func okResp(req *remoting.Command, ext map[string]string, body []byte) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	for k, v := range ext {
		resp.SetExt(k, v)
	}
	resp.Body = body
	return resp
}

func (ms *Messages) handle(addr string, req *remoting.Command) (*remoting.Command, bool) {
	b := ms.fc.broker(addr)
	if b == nil {
		return nil, false
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch req.Code {
	case code.SendMessage, code.SendMessageV2:
		return ms.send(addr, b, req), true
	case code.PullMessage:
		return ms.pull(addr, req), true
	case code.GetMaxOffset, code.GetMinOffset, code.SearchOffsetByTimestamp:
		return ms.offset(addr, req), true
	case code.QueryMessage:
		return ms.query(addr, req), true
	case code.ViewMessageByID:
		off, err := strconv.ParseInt(req.Ext("offset"), 10, 64)
		rec, ok := ms.brokerLog(addr).records[off]
		if err != nil || !ok {
			return fail(req, code.SystemError, "can not find message by the offset, %s", req.Ext("offset")), true
		}
		return okResp(req, nil, rec), true
	case code.HeartBeat, code.UnregisterClient:
		return okResp(req, nil, nil), true
	case code.GetConsumerConnectionList:
		g := req.Ext("consumerGroup")
		body, ok := ms.Connections[g]
		if !ok {
			return fail(req, code.ConsumerNotOnline, "the consumer group[%s] not online", g), true
		}
		return okResp(req, nil, []byte(body)), true
	case code.GetConsumeStats:
		body, ok := ms.ConsumeStats[req.Ext("consumerGroup")]
		if !ok {
			body = `{"consumeTps":0.0,"offsetTable":{}}`
		}
		return okResp(req, nil, []byte(body)), true
	}
	return nil, false
}

// sendField reads a send header field by its V2 short or V1 long name.
func sendField(req *remoting.Command, short, long string) string {
	if req.Code == code.SendMessageV2 {
		return req.Ext(short)
	}
	return req.Ext(long)
}

func (ms *Messages) send(addr string, b *Broker, req *remoting.Command) *remoting.Command {
	topic := sendField(req, "b", "topic")
	tc, ok := b.Topics[topic]
	if !ok {
		return fail(req, code.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	qid, err := strconv.Atoi(sendField(req, "e", "queueId"))
	if err != nil || qid < 0 || qid >= tc.WriteQueueNums {
		qid = 0
	}
	sysFlag, _ := strconv.ParseInt(sendField(req, "f", "sysFlag"), 10, 32)
	born, _ := strconv.ParseInt(sendField(req, "g", "bornTimestamp"), 10, 64)
	flag, _ := strconv.ParseInt(sendField(req, "h", "flag"), 10, 32)
	props := message.DecodeProperties([]byte(sendField(req, "i", "properties")))
	if props == nil {
		props = map[string]string{}
	}
	props[message.PropertyCluster] = b.Cluster
	m := &message.Message{
		Topic: topic, Flag: int32(flag), Body: append([]byte(nil), req.Body...), Properties: props,
		SysFlag: int32(sysFlag), BornTimestamp: born, QueueID: int32(qid),
	}
	if _, err := ms.putLocked(addr, m); err != nil {
		return fail(req, code.SystemError, "%v", err)
	}
	return okResp(req, map[string]string{
		"msgId":       m.OffsetMsgID(),
		"queueId":     strconv.Itoa(qid),
		"queueOffset": strconv.FormatInt(m.QueueOffset, 10),
		"MSG_REGION":  "DefaultRegion",
		"TRACE_ON":    "true",
	}, nil)
}

func (ms *Messages) queue(addr string, req *remoting.Command) []int64 {
	qid, _ := strconv.Atoi(req.Ext("queueId"))
	return ms.brokerLog(addr).queues[req.Ext("topic")][qid]
}

func (ms *Messages) pull(addr string, req *remoting.Command) *remoting.Command {
	q := ms.queue(addr, req)
	l := ms.brokerLog(addr)
	off, _ := strconv.ParseInt(req.Ext("queueOffset"), 10, 64)
	maxNums, _ := strconv.Atoi(req.Ext("maxMsgNums"))
	maxNums = min(max(maxNums, 1), 32)
	ext := map[string]string{
		"suggestWhichBrokerId": "0",
		"minOffset":            "0",
		"maxOffset":            strconv.Itoa(len(q)),
	}
	switch {
	case off < 0:
		ext["nextBeginOffset"] = "0"
		resp := remoting.NewResponse(req, code.PullOffsetMoved, "")
		for k, v := range ext {
			resp.SetExt(k, v)
		}
		return resp
	case off >= int64(len(q)):
		ext["nextBeginOffset"] = strconv.Itoa(len(q))
		if off > int64(len(q)) {
			resp := remoting.NewResponse(req, code.PullOffsetMoved, "")
			for k, v := range ext {
				resp.SetExt(k, v)
			}
			return resp
		}
		resp := remoting.NewResponse(req, code.PullNotFound, "")
		for k, v := range ext {
			resp.SetExt(k, v)
		}
		return resp
	}
	var body []byte
	end := min(int(off)+maxNums, len(q))
	for _, phy := range q[off:end] {
		body = append(body, l.records[phy]...)
	}
	ext["nextBeginOffset"] = strconv.Itoa(end)
	return okResp(req, ext, body)
}

func (ms *Messages) offset(addr string, req *remoting.Command) *remoting.Command {
	q := ms.queue(addr, req)
	var off int
	switch req.Code {
	case code.GetMaxOffset:
		off = len(q)
	case code.GetMinOffset:
		off = 0
	case code.SearchOffsetByTimestamp:
		ts, _ := strconv.ParseInt(req.Ext("timestamp"), 10, 64)
		l := ms.brokerLog(addr)
		off = len(q)
		for i, phy := range q {
			m, _, err := message.DecodeStored(l.records[phy], message.DecodeOptions{})
			if err == nil && m.StoreTimestamp >= ts {
				off = i
				break
			}
		}
	}
	return okResp(req, map[string]string{"offset": strconv.Itoa(off)}, nil)
}

func (ms *Messages) query(addr string, req *remoting.Command) *remoting.Command {
	l := ms.brokerLog(addr)
	topic, key := req.Ext("topic"), req.Ext("key")
	uniq := req.Ext("_UNIQUE_KEY_QUERY") == "true"
	maxNum, _ := strconv.Atoi(req.Ext("maxNum"))
	if uniq || maxNum <= 0 {
		maxNum = 32
	}
	begin, _ := strconv.ParseInt(req.Ext("beginTimestamp"), 10, 64)
	end, _ := strconv.ParseInt(req.Ext("endTimestamp"), 10, 64)
	phys := make([]int64, 0, len(l.records))
	for phy := range l.records {
		phys = append(phys, phy)
	}
	slices.Sort(phys)
	var body []byte
	var lastTS int64
	n := 0
	for i := len(phys) - 1; i >= 0 && n < maxNum; i-- { // newest first
		rec := l.records[phys[i]]
		m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
		if err != nil || m.Topic != topic || (!ms.IgnoreTime && (m.StoreTimestamp < begin || m.StoreTimestamp > end)) {
			continue
		}
		match := false
		if uniq {
			match = m.UniqKey() == key
		} else {
			match = slices.Contains(strings.Split(m.Property(message.PropertyKeys), message.KeySeparator), key)
		}
		if match {
			body = append(body, rec...)
			lastTS = max(lastTS, m.StoreTimestamp)
			n++
		}
	}
	ext := map[string]string{"indexLastUpdateTimestamp": strconv.FormatInt(lastTS, 10), "indexLastUpdatePhyoffset": strconv.FormatInt(l.next, 10)}
	if n == 0 {
		resp := remoting.NewResponse(req, code.QueryNotFound, "can not find message, maybe time range not correct")
		for k, v := range ext {
			resp.SetExt(k, v)
		}
		return resp
	}
	return okResp(req, ext, body)
}

// String summarises the store (for test failures).
func (ms *Messages) String() string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var b strings.Builder
	for addr, l := range ms.log {
		fmt.Fprintf(&b, "%s: %d records\n", addr, len(l.records))
	}
	return b.String()
}
