package transaction

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

var testHost = netip.MustParseAddrPort("10.0.0.1:10911")

const (
	testTopic = "TxTopic"
	testGroup = "tx_pg"
)

// fakeTarget records the checks sent to one producer connection.
type fakeTarget struct {
	mu   sync.Mutex
	reqs []*remoting.Command
	err  error
}

func (f *fakeTarget) InvokeOneway(req *remoting.Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.err
}

func (f *fakeTarget) RemoteAddr() string { return "10.0.0.9:50000" }

func (f *fakeTarget) take() []*remoting.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.reqs
	f.reqs = nil
	return out
}

// producers maps groups to targets; a group without one is offline.
type producers struct {
	mu sync.Mutex
	m  map[string]*fakeTarget
}

func (p *producers) CheckTarget(group string) CheckTarget {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.m[group]; t != nil {
		return t
	}
	return nil
}

func (p *producers) set(group string, t *fakeTarget) {
	p.mu.Lock()
	p.m[group] = t
	p.mu.Unlock()
}

// fixture is a send processor and a transaction service on one store.
type fixture struct {
	t      testing.TB
	clk    *testutil.FakeClock
	now    func() time.Time // clk.Now, or time.Now with realClock
	cfg    *config.Holder
	topics *topic.Manager
	store  Store
	send   *send.Processor
	svc    *Service
	prod   *producers
	target *fakeTarget
}

type fixtureOpt func(*fixture)

// withStore runs the fixture on s.
func withStore(s Store) fixtureOpt { return func(f *fixture) { f.store = s } }

// withClock sets the fixture's clock.
func withClock(c *testutil.FakeClock) fixtureOpt {
	return func(f *fixture) { f.clk, f.now = c, c.Now }
}

// realClock is for the real store, which stamps records with time.Now.
func realClock() fixtureOpt { return func(f *fixture) { f.now = time.Now } }

func newFixture(t testing.TB, mutate func(*config.Config), opts ...fixtureOpt) *fixture {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "10.0.0.1", Home: t.TempDir()})
	c.BrokerName = "broker-a"
	c.ListenPort = 10911
	c.TransactionTimeOut = 6 * time.Second
	c.TransactionCheckInterval = time.Second
	c.TransactionCheckMax = 15
	if mutate != nil {
		mutate(c)
	}
	c.Finalize()
	f := &fixture{t: t, clk: testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000)), cfg: config.NewHolder(c, false)}
	f.now = f.clk.Now
	for _, o := range opts {
		o(f)
	}
	if f.store == nil {
		f.store = storetest.New(storetest.WithClock(f.now), storetest.WithStoreHost(testHost))
	}
	var err error
	if f.topics, err = topic.New(topic.Options{Config: f.cfg.Get}); err != nil {
		t.Fatal(err)
	}
	tc := protocol.NewTopicConfig(testTopic)
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	if _, err := f.topics.Update(tc); err != nil {
		t.Fatal(err)
	}
	f.send, err = send.New(send.Deps{Config: f.cfg.Get, Topics: f.topics, Store: f.store.(send.Store),
		StoreHost: func() netip.AddrPort { return testHost }, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	f.target = &fakeTarget{}
	f.prod = &producers{m: map[string]*fakeTarget{testGroup: f.target}}
	f.svc = f.newService()
	return f
}

// newService builds a service on the fixture's store (a broker restart).
func (f *fixture) newService() *Service {
	f.t.Helper()
	svc, err := New(Deps{Config: f.cfg.Get, Store: f.store, Topics: f.topics, Producers: f.prod,
		StoreHost: func() netip.AddrPort { return testHost }, Now: f.now})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

// half is a sent half message as the producer knows it.
type half struct {
	uniq        string
	queueOffset int64 // half queue offset
	phy         int64 // CommitLog offset (from the offset msgId)
}

// sendMixed sends n half messages with bodies prefix0, prefix1, ... and
// ends them in turn: commit, rollback, left pending. It returns the
// pending ones.
func (f *fixture) sendMixed(prefix string, n int) []half {
	f.t.Helper()
	var pending []half
	for i := range n {
		h := f.sendHalf(fmt.Sprint(prefix, i))
		switch i % 3 {
		case 0:
			wantCode(f.t, "commit", f.end(f.svc, h, message.TransactionCommitType, false), code.Success)
		case 1:
			wantCode(f.t, "rollback", f.end(f.svc, h, message.TransactionRollbackType, false), code.Success)
		default:
			pending = append(pending, h)
		}
	}
	return pending
}

// sendHalf sends a transactional message as client-go does (SEND_MESSAGE,
// TRAN_MSG, PGROUP, sysFlag PREPARED).
func (f *fixture) sendHalf(body string, extraProps ...string) half {
	f.t.Helper()
	props := "TRAN_MSG\x01true\x02PGROUP\x01" + testGroup + "\x02KEYS\x01" + body + "\x02"
	for i := 0; i+1 < len(extraProps); i += 2 {
		props += extraProps[i] + "\x01" + extraProps[i+1] + "\x02"
	}
	req := remoting.NewRequest(code.SendMessage, map[string]string{
		"producerGroup": testGroup, "topic": testTopic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "2", "sysFlag": strconv.Itoa(int(message.TransactionPreparedType)),
		"bornTimestamp": strconv.FormatInt(f.now().UnixMilli(), 10), "flag": "0",
		"properties": props, "reconsumeTimes": "0", "unitMode": "false",
	}, []byte(body))
	resp, err := f.send.Handlers()[code.SendMessage](context.Background(), nil, req)
	if err != nil || resp.Code != code.Success {
		f.t.Fatalf("send half: %v %+v", err, resp)
	}
	_, phy, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		f.t.Fatal(err)
	}
	qo, _ := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
	return half{uniq: resp.ExtFields["transactionId"], queueOffset: qo, phy: phy}
}

// end sends END_TRANSACTION as client-go does.
func (f *fixture) end(svc *Service, h half, typ int32, fromCheck bool, kv ...string) *remoting.Command {
	f.t.Helper()
	ext := map[string]string{
		"producerGroup": testGroup, "tranStateTableOffset": strconv.FormatInt(h.queueOffset, 10),
		"commitLogOffset": strconv.FormatInt(h.phy, 10), "commitOrRollback": strconv.Itoa(int(typ)),
		"fromTransactionCheck": strconv.FormatBool(fromCheck), "msgId": h.uniq, "transactionId": h.uniq, "bname": "broker-a",
	}
	req := remoting.NewRequest(code.EndTransaction, remotingtest.SetFields(ext, kv...), nil)
	resp, err := svc.Handlers()[code.EndTransaction](context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	return resp
}

// check runs a check round of svc and returns the check requests it sent
// the producer.
func (f *fixture) check(svc *Service) []*remoting.Command {
	f.t.Helper()
	if err := svc.Check(context.Background()); err != nil {
		f.t.Fatalf("check round: %v", err)
	}
	return f.target.take()
}

// messages decodes every message of a queue.
func (f *fixture) messages(topicName string, qid int32) []*message.Message {
	f.t.Helper()
	var out []*message.Message
	for off := f.store.MinOffset(topicName, qid); off < f.store.MaxOffset(topicName, qid); {
		res, err := f.store.GetMessage(context.Background(), topicName, qid, off, 32, 0, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec, message.DecodeOptions{VerifyCRC: true})
			if err != nil {
				f.t.Fatal(err)
			}
			out = append(out, m)
		}
		next := res.NextBeginOffset
		res.Release()
		if next <= off {
			break
		}
		off = next
	}
	return out
}

// delivered counts messages in the real topic by body.
func (f *fixture) delivered() map[string]int {
	out := map[string]int{}
	for q := int32(0); q < 4; q++ {
		for _, m := range f.messages(testTopic, q) {
			out[string(m.Body)]++
		}
	}
	return out
}

// checkedHalf decodes a CHECK_TRANSACTION_STATE request into what the
// producer answers with.
func checkedHalf(t testing.TB, req *remoting.Command) (half, *message.Message) {
	t.Helper()
	if req.Code != code.CheckTransactionState {
		t.Fatalf("request code %d", req.Code)
	}
	msgs, err := message.DecodeAll(req.Body, message.DecodeOptions{VerifyCRC: true})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("check body: %d messages, %v", len(msgs), err)
	}
	qo, err1 := strconv.ParseInt(req.ExtFields["tranStateTableOffset"], 10, 64)
	phy, err2 := strconv.ParseInt(req.ExtFields["commitLogOffset"], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("check header %v", req.ExtFields)
	}
	return half{uniq: req.ExtFields["transactionId"], queueOffset: qo, phy: phy}, msgs[0]
}

func wantCode(t testing.TB, what string, resp *remoting.Command, want int32) {
	t.Helper()
	if resp.Code != want {
		t.Fatalf("%s: code %d (%q), want %d", what, resp.Code, resp.Remark, want)
	}
	if want != code.Success && resp.Remark == "" {
		t.Fatalf("%s: code %d without a remark", what, resp.Code)
	}
}

var _ Store = store.MessageStore(nil)
