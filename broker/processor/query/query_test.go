package query

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeStore holds encoded records by commit-log offset and an index of
// keys (KEYS and UNIQ_KEY) per topic.
type fakeStore struct {
	records map[int64][]byte
	keys    map[string][]int64 // "topic\x00key" → offsets
	uniq    map[string][]int64
	phy     int64

	gotMaxNum int
	gotUniq   bool
	err       error
}

func newFakeStore(t *testing.T, msgs ...*message.Message) *fakeStore {
	t.Helper()
	s := &fakeStore{records: map[int64][]byte{}, keys: map[string][]int64{}, uniq: map[string][]int64{}}
	for _, m := range msgs {
		m.CommitLogOffset = s.phy
		m.StoreHost = netip.MustParseAddrPort("10.0.0.1:10911")
		m.StoreTimestamp = 1700000000000 + s.phy
		rec, err := message.EncodeStored(m)
		if err != nil {
			t.Fatal(err)
		}
		s.records[s.phy] = rec
		for _, k := range m.Keys() {
			s.keys[m.Topic+"\x00"+k] = append(s.keys[m.Topic+"\x00"+k], s.phy)
		}
		if u := m.UniqKey(); u != "" {
			s.uniq[m.Topic+"\x00"+u] = append(s.uniq[m.Topic+"\x00"+u], s.phy)
		}
		s.phy += int64(len(rec))
	}
	return s
}

func (s *fakeStore) QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*store.QueryResult, error) {
	s.gotMaxNum, s.gotUniq = maxNum, uniq
	if s.err != nil {
		return nil, s.err
	}
	idx := s.keys
	if uniq {
		idx = s.uniq
	}
	res := &store.QueryResult{IndexLastUpdateTimestamp: 1700000000999, IndexLastUpdatePhyOffset: s.phy}
	for _, off := range idx[topic+"\x00"+key] {
		rec := s.records[off]
		ts := 1700000000000 + off
		if ts < begin || ts > end || len(res.Records) >= maxNum {
			continue
		}
		res.Records = append(res.Records, rec)
	}
	return res, nil
}

func (s *fakeStore) ReadRecord(off int64) ([]byte, error) {
	if r, ok := s.records[off]; ok {
		return r, nil
	}
	return nil, errors.New("no record at offset")
}

func msg(topic, keys, uniq, body string) *message.Message {
	m := &message.Message{Topic: topic, Body: []byte(body), BornHost: netip.MustParseAddrPort("10.0.0.2:5000")}
	m.SetProperty("KEYS", keys)
	if uniq != "" {
		m.SetProperty("UNIQ_KEY", uniq)
	}
	return m
}

func newProcessor(t *testing.T, s Store) *Processor {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "10.0.0.1", Home: t.TempDir()})
	c.Finalize()
	p, err := New(Deps{Config: config.NewHolder(c, false).Get, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func call(t *testing.T, p *Processor, c int32, ext map[string]string) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(c, ext, nil)
	req.Opaque = 9
	resp, err := p.Handlers()[c](context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	if resp == nil {
		t.Fatal("nil response")
	}
	if resp.Opaque != 9 {
		t.Errorf("opaque %d", resp.Opaque)
	}
	return resp
}

func queryExt(topic, key string, maxNum int) map[string]string {
	return map[string]string{"topic": topic, "key": key, "maxNum": fmt.Sprint(maxNum),
		"beginTimestamp": "0", "endTimestamp": fmt.Sprint(int64(1) << 62)}
}

func TestQueryMessage(t *testing.T) {
	s := newFakeStore(t,
		msg("T", "k1", "U1", "one"),
		msg("T", "k2 k1", "U2", "two"),
		msg("Other", "k1", "U3", "three"),
		msg("T", "k3", "U1", "four"), // a re-sent copy with the same UNIQ_KEY
	)
	p := newProcessor(t, s)

	resp := call(t, p, 12, queryExt("T", "k1", 10))
	if resp.Code != code.Success {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || string(msgs[0].Body) != "one" || string(msgs[1].Body) != "two" {
		t.Fatalf("got %d messages", len(msgs))
	}
	if resp.Ext("indexLastUpdateTimestamp") != "1700000000999" || resp.Ext("indexLastUpdatePhyoffset") != fmt.Sprint(s.phy) {
		t.Errorf("ext %v", resp.ExtFields)
	}
	if s.gotUniq || s.gotMaxNum != 10 {
		t.Errorf("store asked uniq=%v maxNum=%d", s.gotUniq, s.gotMaxNum)
	}

	// maxNum is bounded by maxMsgsNumBatch (64).
	call(t, p, 12, queryExt("T", "k1", 1000))
	if s.gotMaxNum != 64 {
		t.Errorf("maxNum %d, want 64", s.gotMaxNum)
	}

	// By UNIQ_KEY: the broker's defaultQueryMaxNum (32) replaces maxNum.
	ext := queryExt("T", "U1", 1)
	ext[UniqueKeyQueryFlag] = "true"
	resp = call(t, p, 12, ext)
	msgs, _ = message.DecodeAll(resp.Body, message.DecodeOptions{})
	if resp.Code != code.Success || len(msgs) != 2 || !s.gotUniq || s.gotMaxNum != 32 {
		t.Errorf("uniq query: code %d, %d messages, uniq %v maxNum %d", resp.Code, len(msgs), s.gotUniq, s.gotMaxNum)
	}
}

func TestQueryNotFound(t *testing.T) {
	s := newFakeStore(t, msg("T", "k1", "U1", "one"))
	p := newProcessor(t, s)
	for name, ext := range map[string]map[string]string{
		"unknown key":   queryExt("T", "nope", 10),
		"other topic":   queryExt("X", "k1", 10),
		"time range":    func() map[string]string { e := queryExt("T", "k1", 10); e["endTimestamp"] = "1"; return e }(),
		"maxNum of 0":   queryExt("T", "k1", 0),
		"uniq as a key": func() map[string]string { e := queryExt("T", "U1", 10); e[UniqueKeyQueryFlag] = "false"; return e }(),
	} {
		t.Run(name, func(t *testing.T) {
			resp := call(t, p, 12, ext)
			if resp.Code != code.QueryNotFound || len(resp.Body) != 0 || resp.Remark == "" {
				t.Fatalf("code %d remark %q body %d", resp.Code, resp.Remark, len(resp.Body))
			}
			if resp.Ext("indexLastUpdateTimestamp") == "" || resp.Ext("indexLastUpdatePhyoffset") == "" {
				t.Errorf("index fields missing: %v", resp.ExtFields)
			}
		})
	}
}

func TestQueryBadRequests(t *testing.T) {
	p := newProcessor(t, newFakeStore(t))
	for _, field := range []string{"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"} {
		ext := queryExt("T", "k", 1)
		delete(ext, field)
		resp := call(t, p, 12, ext)
		if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "<"+field+">") {
			t.Errorf("without %s: code %d remark %q", field, resp.Code, resp.Remark)
		}
	}
	ext := queryExt("T", "k", 1)
	ext["maxNum"] = "many"
	if resp := call(t, p, 12, ext); resp.Code != code.InvalidParameter {
		t.Errorf("bad maxNum: code %d", resp.Code)
	}
	s := newFakeStore(t)
	s.err = errors.New("index broken")
	resp := call(t, newProcessor(t, s), 12, queryExt("T", "k", 1))
	if resp.Code != code.SystemError || !strings.Contains(resp.Remark, "index broken") {
		t.Errorf("store error: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestViewMessageByID(t *testing.T) {
	s := newFakeStore(t, msg("T", "k1", "U1", "one"), msg("T", "k2", "U2", "two"))
	p := newProcessor(t, s)
	var second int64
	for off := range s.records {
		second = max(second, off)
	}
	// Clients send the commit-log offset decoded from the offset message id.
	id := message.OffsetMsgID(netip.MustParseAddrPort("10.0.0.1:10911"), second)
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		t.Fatal(err)
	}
	resp := call(t, p, 33, map[string]string{"topic": "T", "offset": fmt.Sprint(off)})
	if resp.Code != code.Success {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
	m, n, err := message.DecodeStored(resp.Body, message.DecodeOptions{VerifyCRC: true})
	if err != nil || n != len(resp.Body) || string(m.Body) != "two" || m.OffsetMsgID() != id {
		t.Fatalf("decoded %v (%d of %d bytes), err %v", m, n, len(resp.Body), err)
	}

	resp = call(t, p, 33, map[string]string{"offset": "12345"})
	if resp.Code != code.SystemError || !strings.Contains(resp.Remark, "12345") {
		t.Errorf("missing: code %d remark %q", resp.Code, resp.Remark)
	}
	resp = call(t, p, 33, map[string]string{"topic": "T"})
	if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "<offset>") {
		t.Errorf("no offset: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestRegister(t *testing.T) {
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New without deps succeeded")
	}
	p := newProcessor(t, newFakeStore(t))
	got := map[int32]processor.Pool{}
	p.Register(processor.RegistrarFunc(func(c int32, _ remoting.Handler, pool processor.Pool) { got[c] = pool }))
	if len(got) != 2 || got[code.QueryMessage] != processor.PoolAdmin || got[code.ViewMessageByID] != processor.PoolAdmin {
		t.Errorf("registered %v", got)
	}
}

var _ Store = store.MessageStore(nil)
