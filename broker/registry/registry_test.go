package registry

import (
	"context"
	"hash/crc32"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeNamesrv is a nameserver that records what brokers send it.
type fakeNamesrv struct {
	srv *remoting.Server

	mu          sync.Mutex
	registers   []*remoting.Command
	unregisters []*remoting.Command
	queries     int
	lastVersion protocol.DataVersion
	kv          map[string]string
	got         chan struct{}
}

func startNamesrv(t *testing.T) *fakeNamesrv {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNamesrv{srv: srv, got: make(chan struct{}, 100)}
	srv.Register(code.RegisterBroker, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		var body protocol.RegisterBrokerBody
		if err := protocol.Unmarshal(req.Body, &body); err != nil {
			return nil, remoting.Errorf(code.SystemError, "bad body: %v", err)
		}
		if want := req.Ext("bodyCrc32"); want != strconv.Itoa(int(int32(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF))) {
			return nil, remoting.Errorf(code.SystemError, "crc32 not match")
		}
		n.mu.Lock()
		cp := *req
		cp.Body = append([]byte(nil), req.Body...)
		n.registers = append(n.registers, &cp)
		n.lastVersion = body.TopicConfigSerializeWrapper.DataVersion
		kv := n.kv
		n.mu.Unlock()
		n.got <- struct{}{}
		resp := remoting.NewResponse(req, code.Success, "")
		if kv != nil {
			resp.Body = protocol.MustMarshal(protocol.KVTable{Table: kv})
		}
		return resp, nil
	}, nil)
	srv.Register(code.UnregisterBroker, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		n.mu.Lock()
		n.unregisters = append(n.unregisters, req)
		n.mu.Unlock()
		return remoting.NewResponse(req, code.Success, ""), nil
	}, nil)
	srv.Register(code.QueryDataVersion, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		var dv protocol.DataVersion
		if err := protocol.Unmarshal(req.Body, &dv); err != nil {
			return nil, err
		}
		n.mu.Lock()
		n.queries++
		changed := !dv.Equal(n.lastVersion)
		n.mu.Unlock()
		resp := remoting.NewResponse(req, code.Success, "")
		resp.SetExt("changed", strconv.FormatBool(changed))
		return resp, nil
	}, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return n
}

func (n *fakeNamesrv) registerCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.registers)
}

func (n *fakeNamesrv) last() (*remoting.Command, protocol.RegisterBrokerBody) {
	n.mu.Lock()
	defer n.mu.Unlock()
	req := n.registers[len(n.registers)-1]
	var body protocol.RegisterBrokerBody
	_ = protocol.Unmarshal(req.Body, &body)
	return req, body
}

// waitRegister waits for the next registration (or fails after d).
func (n *fakeNamesrv) waitRegister(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-n.got:
	case <-time.After(d):
		t.Fatalf("no registration within %v", d)
	}
}

type testSource struct {
	mu     sync.Mutex
	addrs  []string
	topics map[string]protocol.TopicConfig
	dv     protocol.DataVersion
	force  bool
}

func (s *testSource) Identity() Identity {
	return Identity{ClusterName: "C1", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912"}
}
func (s *testSource) NamesrvAddrs() []string { s.mu.Lock(); defer s.mu.Unlock(); return s.addrs }
func (s *testSource) ForceRegister() bool    { s.mu.Lock(); defer s.mu.Unlock(); return s.force }
func (s *testSource) Timeout() time.Duration { return 3 * time.Second }
func (s *testSource) Body() protocol.RegisterBrokerBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	table := map[string]protocol.TopicConfig{}
	for k, v := range s.topics {
		table[k] = v
	}
	return protocol.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{
		DataVersion: s.dv, TopicConfigTable: table,
		TopicQueueMappingDetailMap: map[string]protocol.TopicQueueMappingDetail{},
		TopicQueueMappingInfoMap:   map[string]protocol.TopicQueueMappingInfo{},
	}}
}

func (s *testSource) addTopic(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topics[name] = protocol.NewTopicConfig(name)
	s.dv.Counter++
	s.dv.Timestamp++
}

func newClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRegistersWithEveryNameserver(t *testing.T) {
	n1, n2 := startNamesrv(t), startNamesrv(t)
	n2.kv = map[string]string{"OrderTopic": "broker-a:4"}
	src := &testSource{addrs: []string{n1.srv.Addr(), n2.srv.Addr()}, topics: map[string]protocol.TopicConfig{"T": protocol.NewTopicConfig("T")}, dv: protocol.DataVersion{Counter: 1, Timestamp: 1}, force: true}
	var resMu sync.Mutex
	var rounds [][]Result
	r := New(newClient(t), src, Options{
		InitialDelay: time.Hour, Period: func() time.Duration { return time.Hour }, Debounce: 20 * time.Millisecond,
		OnResults: func(rs []Result) { resMu.Lock(); rounds = append(rounds, rs); resMu.Unlock() },
	})

	first := r.Start()
	if len(first) != 2 || first[0].Err != nil || first[1].Err != nil {
		t.Fatalf("first round %+v", first)
	}
	if first[1].KVTable["OrderTopic"] != "broker-a:4" {
		t.Errorf("KV table not returned: %+v", first[1])
	}
	for _, n := range []*fakeNamesrv{n1, n2} {
		if n.registerCount() != 1 {
			t.Fatalf("registrations %d, want 1", n.registerCount())
		}
		req, body := n.last()
		want := map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C1",
			"haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "false", "enableActingMaster": "false"}
		for k, v := range want {
			if req.Ext(k) != v {
				t.Errorf("ext %s = %q, want %q", k, req.Ext(k), v)
			}
		}
		if req.Ext("bodyCrc32") == "" || req.Ext("bodyCrc32") == "0" {
			t.Errorf("bodyCrc32 %q", req.Ext("bodyCrc32"))
		}
		if _, ok := body.TopicConfigSerializeWrapper.TopicConfigTable["T"]; !ok || body.TopicConfigSerializeWrapper.DataVersion.Counter != 1 {
			t.Errorf("body %+v", body.TopicConfigSerializeWrapper)
		}
		if body.FilterServerList == nil || body.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap == nil {
			t.Error("empty lists/maps must be sent as [] and {}")
		}
		<-n.got
	}

	// Topic changes: several triggers within the debounce window make one round.
	src.addTopic("T2")
	r.Trigger()
	r.Trigger()
	r.Trigger()
	n1.waitRegister(t, 2*time.Second)
	n2.waitRegister(t, 2*time.Second)
	time.Sleep(100 * time.Millisecond)
	if c := n1.registerCount(); c != 2 {
		t.Errorf("registrations after 3 triggers: %d, want 2", c)
	}
	if _, body := n1.last(); body.TopicConfigSerializeWrapper.DataVersion.Counter != 2 || len(body.TopicConfigSerializeWrapper.TopicConfigTable) != 2 {
		t.Errorf("re-registration body %+v", body.TopicConfigSerializeWrapper)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*fakeNamesrv{n1, n2} {
		n.mu.Lock()
		if len(n.unregisters) != 1 || n.unregisters[0].Ext("brokerAddr") != "127.0.0.1:10911" || n.unregisters[0].Ext("clusterName") != "C1" {
			t.Errorf("unregisters %v", n.unregisters)
		}
		n.mu.Unlock()
	}
	// After shutdown nothing is sent any more.
	if res := r.RegisterAll(context.Background(), true); res != nil {
		t.Errorf("registered after shutdown: %v", res)
	}
	resMu.Lock()
	if len(rounds) != 2 {
		t.Errorf("OnResults called %d times", len(rounds))
	}
	resMu.Unlock()
}

func TestPeriodicAndQueryDataVersion(t *testing.T) {
	n := startNamesrv(t)
	src := &testSource{addrs: []string{n.srv.Addr()}, topics: map[string]protocol.TopicConfig{}, dv: protocol.DataVersion{Counter: 1}, force: true}
	r := New(newClient(t), src, Options{InitialDelay: 30 * time.Millisecond, Period: func() time.Duration { return 30 * time.Millisecond }})
	r.Start()
	<-n.got
	n.waitRegister(t, 2*time.Second) // first periodic round
	n.waitRegister(t, 2*time.Second) // and the next

	// forceRegister=false: rounds only ask QUERY_DATA_VERSION while the
	// nameserver is current, and register again once the data changed.
	src.mu.Lock()
	src.force = false
	src.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	for len(n.got) > 0 {
		<-n.got
	}
	before := n.registerCount()
	time.Sleep(200 * time.Millisecond)
	n.mu.Lock()
	queries := n.queries
	n.mu.Unlock()
	if c := n.registerCount(); c != before || queries == 0 {
		t.Errorf("registrations %d → %d with an unchanged version; queries %d", before, c, queries)
	}
	src.addTopic("X")
	n.waitRegister(t, 2*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Shutdown(ctx)
}

func TestUnreachableNameserver(t *testing.T) {
	n := startNamesrv(t)
	src := &testSource{addrs: []string{"127.0.0.1:1", n.srv.Addr()}, topics: map[string]protocol.TopicConfig{}, force: true}
	r := New(newClient(t), src, Options{InitialDelay: time.Hour})
	res := r.Start()
	if len(res) != 2 || res[0].Err == nil || res[1].Err != nil {
		t.Errorf("results %+v: the dead nameserver must not block the live one", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err == nil {
		t.Error("unregistering from a dead nameserver should report an error")
	}
}

func TestClampPeriodAndCRC(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{time.Second: 10 * time.Second, 30 * time.Second: 30 * time.Second, 5 * time.Minute: time.Minute} {
		if got := ClampPeriod(in); got != want {
			t.Errorf("ClampPeriod(%v) = %v", in, got)
		}
	}
	// Java: new CRC32().update("hello") = 0x3610A686, masked to 31 bits.
	if got := BodyCRC32([]byte("hello")); got != 0x3610A686&0x7FFFFFFF {
		t.Errorf("crc %x", got)
	}
}
