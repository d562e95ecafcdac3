package send

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// fakeStore is a minimal in-memory MessageStore for the send path: it
// encodes every message exactly as the CommitLog would (so encode errors
// surface), assigns consecutive queue offsets per queue, and keeps the
// records for inspection.
type fakeStore struct {
	mu      sync.Mutex
	next    map[string]int64
	phy     int64
	records [][]byte
	calls   int // PutMessage/PutMessages calls
	rawPuts int // messages put with properties as a string, no map

	// err, when set, is returned by the next puts (with res).
	err error
	res store.PutResult
	// flushTimedOut marks successful puts as timed out.
	flushTimedOut bool
}

func newFakeStore() *fakeStore { return &fakeStore{next: map[string]int64{}} }

func (s *fakeStore) PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error) {
	return s.PutMessages(ctx, []*message.Message{m})
}

func (s *fakeStore) PutMessages(_ context.Context, msgs []*message.Message) (store.PutResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return s.res, s.err
	}
	key := msgs[0].Topic + "/" + strconv.Itoa(int(msgs[0].QueueID))
	res := store.PutResult{QueueID: msgs[0].QueueID, QueueOffset: s.next[key], PhysicalOffset: s.phy,
		StoreTimestamp: time.Now().UnixMilli(), FlushTimedOut: s.flushTimedOut}
	var recs [][]byte
	phy := s.phy
	for i, m := range msgs {
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			return store.PutResult{}, fmt.Errorf("%w: batch spans queues", store.ErrMessageIllegal)
		}
		if m.Properties == nil && m.RawProperties != nil {
			s.rawPuts++
		}
		c := *m
		c.QueueOffset = s.next[key] + int64(i)
		c.CommitLogOffset = phy
		c.StoreTimestamp = res.StoreTimestamp
		rec, err := message.EncodeStored(&c)
		if err != nil {
			return store.PutResult{}, fmt.Errorf("%w: %w", store.ErrMessageIllegal, err)
		}
		recs = append(recs, rec)
		res.MsgIDs = append(res.MsgIDs, message.OffsetMsgID(c.StoreHost, phy))
		phy += int64(len(rec))
	}
	s.records = append(s.records, recs...)
	s.phy = phy
	res.End = phy
	s.next[key] += int64(len(msgs))
	return res, nil
}

// forget drops the records kept so far (a fuzz target's next input starts
// with none: over millions of executions they would fill memory, and
// checks that decode every record would grow slower with each input).
func (s *fakeStore) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.records)
	s.records = s.records[:0]
}

// stored decodes every stored record.
func (s *fakeStore) stored(t *testing.T) []*message.Message {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*message.Message, 0, len(s.records))
	for _, r := range s.records {
		m, _, err := message.DecodeStored(r, message.DecodeOptions{VerifyCRC: true})
		if err != nil {
			t.Fatalf("stored record does not decode: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func (s *fakeStore) last(t *testing.T) *message.Message {
	t.Helper()
	all := s.stored(t)
	if len(all) == 0 {
		t.Fatal("nothing stored")
	}
	return all[len(all)-1]
}

type fakeGroups map[string]int32

func (g fakeGroups) RetryMaxTimes(group string) (int32, bool) {
	n, ok := g[group]
	return n, ok
}

type fakeLocks map[string]bool

func (l fakeLocks) HasLiveLocks(group string) bool { return l[group] }

type recordingSchedule struct {
	mu  sync.Mutex
	got []*message.Message
}

func (r *recordingSchedule) Schedule(m *message.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m)
	return nil
}

type fakePusher struct {
	reqs    []*remoting.Command
	clients []string
	resp    *remoting.Command
	err     error
}

func (f *fakePusher) PushReply(_ context.Context, clientID string, req *remoting.Command) (*remoting.Command, error) {
	f.clients = append(f.clients, clientID)
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	if f.resp != nil {
		return f.resp, nil
	}
	return &remoting.Command{Code: code.Success}, nil
}

type fixture struct {
	p       *Processor
	cfg     *config.Holder
	topics  *topic.Manager
	store   *fakeStore
	groups  fakeGroups
	locks   fakeLocks
	sched   *recordingSchedule
	pusher  *fakePusher
	mu      sync.Mutex // guards created
	created []string
	randN   int // RandIntN returns min(randN, n-1)
}

var testStoreHost = netip.MustParseAddrPort("10.0.0.1:10911")

func newFixture(t testing.TB, mutate ...func(*config.Config)) *fixture {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "10.0.0.1", Home: t.TempDir()})
	c.BrokerClusterName = "C1"
	c.ListenPort = 10911
	for _, m := range mutate {
		m(c)
	}
	c.Finalize()
	f := &fixture{
		cfg:    config.NewHolder(c, false),
		store:  newFakeStore(),
		groups: fakeGroups{"g1": 16},
		locks:  fakeLocks{},
		sched:  &recordingSchedule{},
		pusher: &fakePusher{},
		randN:  2,
	}
	var err error
	f.topics, err = topic.New(topic.Options{Config: f.cfg.Get})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, queues, perm int, edit ...func(*protocol.TopicConfig)) {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
		for _, e := range edit {
			e(&tc)
		}
		if _, err := f.topics.Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	rw := protocol.PermRead | protocol.PermWrite
	mk("TopicTest", 4, rw)
	mk("ReadOnly", 4, protocol.PermRead)
	mk("MultiTag", 2, rw, func(tc *protocol.TopicConfig) { tc.TopicFilterType = protocol.MultiTag })
	mk("Compact", 1, rw, func(tc *protocol.TopicConfig) { tc.Attributes = map[string]string{"+cleanup.policy": "COMPACTION"} })
	mk("Lite", 2, rw, func(tc *protocol.TopicConfig) { tc.Attributes = map[string]string{"+message.type": "LITE"} })
	mk("ReadMore", 2, rw, func(tc *protocol.TopicConfig) { tc.ReadQueueNums = 8 })
	mk("%RETRY%g1", 1, rw)
	mk("%RETRY%unknown", 1, rw)

	f.p, err = New(Deps{
		Config:    f.cfg.Get,
		Topics:    f.topics,
		Store:     f.store,
		StoreHost: func() netip.AddrPort { return testStoreHost },
		Groups:    f.groups,
		Locks:     f.locks,
		Schedule:  f.sched,
		Replies:   f.pusher,
		TopicCreated: func(tp string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.created = append(f.created, tp)
		},
		RandIntN: func(n int) int { return min(f.randN, n-1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// call runs a handler as the remoting server would.
func (f *fixture) call(t testing.TB, req *remoting.Command) *remoting.Command {
	t.Helper()
	h, ok := f.p.Handlers()[req.Code]
	if !ok {
		t.Fatalf("no handler for %d", req.Code)
	}
	resp, err := h(context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	if resp == nil {
		t.Fatalf("handler %d returned nil, nil", req.Code)
	}
	return resp
}

// props encodes a properties string in the given key order.
func props(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i])
		b.WriteByte(1)
		b.WriteString(kv[i+1])
		b.WriteByte(2)
	}
	return b.String()
}

// v1Ext is a client-go style SEND_MESSAGE header (long names).
func v1Ext(topicName string, queueID int, properties string) map[string]string {
	return map[string]string{
		"producerGroup": "pg", "topic": topicName, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0",
		"properties": properties, "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"batch": "false", "bname": "broker-a",
	}
}

// toV2 renames long header names to the short ones.
func toV2(ext map[string]string) map[string]string {
	short := map[string]string{
		"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
		"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
		"unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
	}
	out := map[string]string{}
	for k, v := range ext {
		if s, ok := short[k]; ok {
			out[s] = v
		} else {
			out[k] = v
		}
	}
	return out
}

func v2Ext(topicName string, queueID int, properties string) map[string]string {
	return toV2(v1Ext(topicName, queueID, properties))
}

func request(c int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(c, maps.Clone(ext), body)
	req.Opaque = 7
	req.Version = 513
	return req
}

func sendV1(topicName string, queueID int, properties string, body string) *remoting.Command {
	return request(code.SendMessage, v1Ext(topicName, queueID, properties), []byte(body))
}

func sendV2(topicName string, queueID int, properties string, body string) *remoting.Command {
	return request(code.SendMessageV2, v2Ext(topicName, queueID, properties), []byte(body))
}

// with returns req with extFields changed (remotingtest.SetFields).
func with(req *remoting.Command, kv ...string) *remoting.Command {
	remotingtest.SetFields(req.ExtFields, kv...)
	return req
}

func wantCode(t testing.TB, resp *remoting.Command, want int32) {
	t.Helper()
	if resp.Code != want {
		t.Fatalf("response code %d (remark %q), want %d", resp.Code, resp.Remark, want)
	}
}

// The real collaborators satisfy the seams.
var (
	_ Store  = store.MessageStore(nil)
	_ Topics = (*topic.Manager)(nil)
)
