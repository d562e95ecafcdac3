package msgtype

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func props(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		props          map[string]string
		sysFlag, recon int32
		want           string
	}{
		{props(), 0, 0, Normal},
		{props("TAGS", "a", "KEYS", "k"), 0, 0, Normal},
		{props("TRAN_MSG", "true"), 0, 0, Transaction},
		{props("TRAN_MSG", "TRUE"), 0, 0, Transaction},
		{props("TRAN_MSG", "false"), 0, 0, Normal},
		{props(), message.TransactionPreparedType, 0, Transaction},
		{props("TRAN_MSG", "true", "DELAY", "3"), 0, 0, Transaction},
		{props("TRAN_MSG", "true", "DELAY", "3"), 0, 1, Delay}, // a consumed half message re-sent for retry
		{props("DELAY", "3"), 0, 0, Delay},
		{props("DELAY", "0"), 0, 0, Normal},
		{props("DELAY", "-1"), 0, 0, Normal},
		{props("DELAY", "x"), 0, 0, Normal},
		{props("TIMER_DELIVER_MS", "1"), 0, 0, Delay},
		{props("TIMER_DELAY_SEC", "1"), 0, 0, Delay},
		{props("TIMER_DELAY_MS", "1"), 0, 0, Delay},
		{props("DELAY", "2", "__SHARDINGKEY", "k"), 0, 0, Delay},
		{props("__SHARDINGKEY", "k"), 0, 0, FIFO},
		{props("SHARDING_KEY", "k"), 0, 0, FIFO},
		{props("__SHARDINGKEY", ""), 0, 0, Normal},
		{props("__SHARDINGKEY", "k", "_SYS_MSG_PRIORITY_", "1"), 0, 0, FIFO},
		{props("_SYS_MSG_PRIORITY_", "1"), 0, 0, Priority},
		{props("__LITE_TOPIC", "l1"), 0, 0, Lite},
	} {
		if got := Of(tc.props, tc.sysFlag, tc.recon); got != tc.want {
			t.Errorf("Of(%v, %#x, %d) = %s, want %s", tc.props, tc.sysFlag, tc.recon, got, tc.want)
		}
	}
}

func TestAccepts(t *testing.T) {
	all := []string{Normal, FIFO, Delay, Transaction, Priority, Lite}
	accepts := map[string][]string{
		"":          all,
		Unspecified: all,
		Mixed:       all,
		Normal:      {Normal, FIFO},
		FIFO:        {Normal, FIFO},
		Delay:       {Delay},
		Transaction: {Transaction},
		Priority:    {Priority},
		Lite:        {Lite},
	}
	for topicType, ok := range accepts {
		for _, m := range all {
			want := false
			for _, o := range ok {
				want = want || o == m
			}
			if got := Accepts(topicType, m); got != want {
				t.Errorf("Accepts(%q, %s) = %v, want %v", topicType, m, got, want)
			}
		}
	}
}

// memStore records what the send path stores.
type memStore struct {
	mu   sync.Mutex
	msgs []*message.Message
}

func (s *memStore) PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error) {
	return s.PutMessages(ctx, []*message.Message{m})
}

func (s *memStore) PutMessages(_ context.Context, msgs []*message.Message) (store.PutResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
	return store.PutResult{QueueID: msgs[0].QueueID, MsgIDs: []string{"id"}}, nil
}

type rig struct {
	cfg   *config.Holder
	p     *send.Processor
	store *memStore
}

func newRig(t *testing.T, check bool) *rig {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "10.0.0.1", Home: t.TempDir()})
	c.EnableTopicMessageTypeCheck = check
	c.MaxMessageSize = 1 << 20
	c.Finalize()
	r := &rig{cfg: config.NewHolder(c, false), store: &memStore{}}
	topics, err := topic.New(topic.Options{Config: r.cfg.Get})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]string{
		"Plain": "", "Normal": Normal, "Fifo": FIFO, "Delay": Delay, "Tx": Transaction, "Mixed": Mixed,
		"Unspec": Unspecified, "Lite": Lite, "%RETRY%g": "", "%DLQ%g": "",
	} {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, 6
		if typ != "" {
			tc.Attributes = map[string]string{"+message.type": typ}
		}
		if _, err := topics.Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	r.p, err = send.New(send.Deps{Config: r.cfg.Get, Topics: topics, Store: r.store, MessageTypeCheck: Checker{Config: r.cfg.Get}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func encode(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + "\x01" + kv[i+1] + "\x02")
	}
	return b.String()
}

func (r *rig) send(t *testing.T, topicName string, body []byte, sysFlag int32, kv ...string) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(code.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topicName, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": strconv.Itoa(int(sysFlag)), "bornTimestamp": "1700000000000", "flag": "0",
		"properties": encode(kv...), "reconsumeTimes": "0", "unitMode": "false", "batch": "false", "maxReconsumeTimes": "16",
	}, body)
	req.Version = 513
	resp, err := r.p.Handlers()[code.SendMessage](context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	return resp
}

func (r *rig) batch(t *testing.T, topicName string, items ...map[string]string) *remoting.Command {
	t.Helper()
	var body []byte
	for i, p := range items {
		var err error
		if body, err = message.AppendBatchItem(body, int32(i), []byte("b"), p); err != nil {
			t.Fatal(err)
		}
	}
	req := remoting.NewRequest(code.SendBatchMessage, map[string]string{
		"a": "pg", "b": topicName, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000", "h": "0",
		"i": "", "j": "0", "k": "false", "l": "16", "m": "true",
	}, body)
	resp, err := r.p.Handlers()[code.SendBatchMessage](context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	return resp
}

// TestCheckerInSendPath runs the checker through the send processor's
// hook: wrong types and oversize delay/transaction bodies are
// MESSAGE_ILLEGAL with a clear remark, nothing is stored for them.
func TestCheckerInSendPath(t *testing.T) {
	r := newRig(t, true)
	big := make([]byte, 64<<10+1)
	for _, tc := range []struct {
		name    string
		topic   string
		body    []byte
		sysFlag int32
		props   []string
		code    int32
		remark  string
	}{
		{"normal to plain", "Plain", nil, 0, nil, code.Success, ""},
		{"delay to plain", "Plain", nil, 0, []string{"DELAY", "3"}, code.Success, ""},
		{"normal to normal", "Normal", nil, 0, nil, code.Success, ""},
		{"fifo to normal", "Normal", nil, 0, []string{"__SHARDINGKEY", "k"}, code.Success, ""},
		{"normal to fifo", "Fifo", nil, 0, nil, code.Success, ""},
		{"fifo to fifo", "Fifo", nil, 0, []string{"SHARDING_KEY", "k"}, code.Success, ""},
		{"delay to fifo", "Fifo", nil, 0, []string{"DELAY", "3"}, code.MessageIllegal, "the message type [DELAY] does not match the message.type [FIFO] of topic [Fifo]"},
		{"timer to normal", "Normal", nil, 0, []string{"TIMER_DELIVER_MS", "1"}, code.MessageIllegal, "[DELAY]"},
		{"transaction to fifo", "Fifo", nil, 0, []string{"TRAN_MSG", "true", "PGROUP", "pg"}, code.MessageIllegal, "[TRANSACTION]"},
		{"prepared flag to normal", "Normal", nil, message.TransactionPreparedType, []string{"PGROUP", "pg"}, code.MessageIllegal, "[TRANSACTION]"},
		{"delay to delay", "Delay", nil, 0, []string{"DELAY", "3"}, code.Success, ""},
		{"normal to delay", "Delay", nil, 0, nil, code.MessageIllegal, "[NORMAL] does not match the message.type [DELAY]"},
		{"transaction to tx", "Tx", nil, 0, []string{"TRAN_MSG", "true", "PGROUP", "pg"}, code.Success, ""},
		{"normal to tx", "Tx", nil, 0, nil, code.MessageIllegal, "[TRANSACTION]"},
		{"anything to mixed", "Mixed", nil, 0, []string{"DELAY", "3"}, code.Success, ""},
		{"anything to unspecified", "Unspec", nil, 0, []string{"TRAN_MSG", "true"}, code.Success, ""},
		{"lite to lite", "Lite", nil, 0, []string{"__LITE_TOPIC", "l1"}, code.Success, ""},
		{"normal to lite", "Lite", nil, 0, nil, code.MessageIllegal, "[LITE]"},
		{"lite to normal", "Normal", nil, 0, []string{"__LITE_TOPIC", "l1"}, code.MessageIllegal, "[LITE]"},
		// Size limits by type.
		{"delay at limit", "Plain", make([]byte, 64<<10), 0, []string{"DELAY", "3"}, code.Success, ""},
		{"delay over limit", "Plain", big, 0, []string{"DELAY", "3"}, code.MessageIllegal, "delay message body size 65537 exceeds maxDelayMessageSize 65536"},
		{"timer over limit", "Delay", big, 0, []string{"TIMER_DELAY_SEC", "5"}, code.MessageIllegal, "maxDelayMessageSize"},
		{"transaction over limit", "Plain", big, 0, []string{"TRAN_MSG", "true", "PGROUP", "pg"}, code.MessageIllegal, "transaction message body size 65537 exceeds maxTransactionMessageSize 65536"},
		{"normal over delay limit", "Plain", big, 0, nil, code.Success, ""},
		{"fifo over delay limit", "Fifo", big, 0, []string{"__SHARDINGKEY", "k"}, code.Success, ""},
		{"normal over maxMessageSize", "Plain", make([]byte, 1<<20+1), 0, nil, code.MessageIllegal, "maxMessageSize"},
		// Re-sends to retry and DLQ topics are exempt.
		{"retry resend with delay", "%RETRY%g", big, 0, []string{"DELAY", "4"}, code.Success, ""},
	} {
		body := tc.body
		if body == nil {
			body = []byte("x")
		}
		before := len(r.store.msgs)
		resp := r.send(t, tc.topic, body, tc.sysFlag, tc.props...)
		if resp.Code != tc.code || !strings.Contains(resp.Remark, tc.remark) {
			t.Errorf("%s: code %d remark %q; want %d with %q", tc.name, resp.Code, resp.Remark, tc.code, tc.remark)
		}
		if stored := len(r.store.msgs) > before; stored != (tc.code == code.Success) {
			t.Errorf("%s: stored=%v with code %d", tc.name, stored, resp.Code)
		}
	}

	// Batches: every item is checked.
	if resp := r.batch(t, "Fifo", props("a", "1"), props("__SHARDINGKEY", "k")); resp.Code != code.Success {
		t.Errorf("batch to fifo: %d %s", resp.Code, resp.Remark)
	}
	if resp := r.batch(t, "Delay", props("a", "1")); resp.Code != code.MessageIllegal || !strings.Contains(resp.Remark, "batch item 0") {
		t.Errorf("normal batch to delay topic: %d %s", resp.Code, resp.Remark)
	}
	if resp := r.batch(t, "Normal", props("a", "1"), props("__LITE_TOPIC", "l")); resp.Code != code.MessageIllegal || !strings.Contains(resp.Remark, "batch item 1") {
		t.Errorf("lite item in a normal batch: %d %s", resp.Code, resp.Remark)
	}
}

func TestCheckerSwitches(t *testing.T) {
	// Type check off (the default): any type anywhere; size limits stay.
	r := newRig(t, false)
	if resp := r.send(t, "Fifo", []byte("x"), 0, "DELAY", "3"); resp.Code != code.Success {
		t.Fatalf("unchecked delay to fifo: %d %s", resp.Code, resp.Remark)
	}
	if resp := r.send(t, "Plain", make([]byte, 70000), 0, "DELAY", "3"); resp.Code != code.MessageIllegal {
		t.Fatalf("oversize delay without type check: %d", resp.Code)
	}
	// Limits ≤ 0 disable the per-type limit (maxMessageSize remains).
	if _, err := r.cfg.Update(map[string]string{"maxDelayMessageSize": "0", "maxTransactionMessageSize": "-1"}); err != nil {
		t.Fatal(err)
	}
	if resp := r.send(t, "Plain", make([]byte, 70000), 0, "DELAY", "3"); resp.Code != code.Success {
		t.Fatalf("delay limit off: %d %s", resp.Code, resp.Remark)
	}
	if resp := r.send(t, "Plain", make([]byte, 70000), 0, "TRAN_MSG", "true", "PGROUP", "pg"); resp.Code != code.Success {
		t.Fatalf("transaction limit off: %d %s", resp.Code, resp.Remark)
	}
	// The keys are loaded from broker.conf like Java's.
	c := config.Default(config.Host{Hostname: "h", IP: "10.0.0.1", Home: t.TempDir()})
	if c.EnableTopicMessageTypeCheck || c.MaxDelayMessageSize != 64<<10 || c.MaxTransactionMessageSize != 64<<10 {
		t.Fatalf("defaults: %v %d %d", c.EnableTopicMessageTypeCheck, c.MaxDelayMessageSize, c.MaxTransactionMessageSize)
	}
	m := c.Map()
	for _, k := range []string{"enableTopicMessageTypeCheck", "maxDelayMessageSize", "maxTransactionMessageSize"} {
		if _, ok := m[k]; !ok {
			t.Errorf("config key %s missing", k)
		}
	}
}

func TestCheckerErrorsWrapMessageIllegal(t *testing.T) {
	c := config.Default(config.Host{Hostname: "h", IP: "10.0.0.1", Home: t.TempDir()})
	c.EnableTopicMessageTypeCheck = true
	ch := Checker{Config: func() *config.Config { return c }}
	tc := protocol.NewTopicConfig("F")
	tc.Attributes = map[string]string{"message.type": FIFO}
	err := ch.CheckMessage(&tc, &message.Message{Topic: "F", Properties: props("DELAY", "1")}, 0)
	if !errors.Is(err, send.ErrMessageIllegal) {
		t.Fatalf("error %v does not wrap send.ErrMessageIllegal", err)
	}
}
