package registry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

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
	n1, n2 := fakens.Start(t), fakens.Start(t)
	n2.SetRegisterKV(map[string]string{"OrderTopic": "broker-a:4"})
	src := &testSource{addrs: []string{n1.Addr(), n2.Addr()}, topics: map[string]protocol.TopicConfig{"T": protocol.NewTopicConfig("T")}, dv: protocol.DataVersion{Counter: 1, Timestamp: 1}, force: true}
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
	for _, n := range []*fakens.Server{n1, n2} {
		regs := n.Registrations()
		if len(regs) != 1 {
			t.Fatalf("registrations %d, want 1", len(regs))
		}
		ext, body := regs[0].Ext, regs[0].Body
		want := map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C1",
			"haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "false", "enableActingMaster": "false"}
		for k, v := range want {
			if ext[k] != v {
				t.Errorf("ext %s = %q, want %q", k, ext[k], v)
			}
		}
		if ext["bodyCrc32"] == "" || ext["bodyCrc32"] == "0" {
			t.Errorf("bodyCrc32 %q", ext["bodyCrc32"])
		}
		if _, ok := body.TopicConfigSerializeWrapper.TopicConfigTable["T"]; !ok || body.TopicConfigSerializeWrapper.DataVersion.Counter != 1 {
			t.Errorf("body %+v", body.TopicConfigSerializeWrapper)
		}
		if body.FilterServerList == nil || body.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap == nil {
			t.Error("empty lists/maps must be sent as [] and {}")
		}
		n.WaitRegister(t, time.Second)
	}

	// Topic changes: several triggers within the debounce window make one round.
	src.addTopic("T2")
	r.Trigger()
	r.Trigger()
	r.Trigger()
	n1.WaitRegister(t, 2*time.Second)
	n2.WaitRegister(t, 2*time.Second)
	time.Sleep(100 * time.Millisecond)
	if c := len(n1.Registrations()); c != 2 {
		t.Errorf("registrations after 3 triggers: %d, want 2", c)
	}
	if last, _ := n1.LastRegistration(); last.Body.TopicConfigSerializeWrapper.DataVersion.Counter != 2 || len(last.Body.TopicConfigSerializeWrapper.TopicConfigTable) != 2 {
		t.Errorf("re-registration body %+v", last.Body.TopicConfigSerializeWrapper)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*fakens.Server{n1, n2} {
		if un := n.Unregistrations(); len(un) != 1 || un[0]["brokerAddr"] != "127.0.0.1:10911" || un[0]["clusterName"] != "C1" {
			t.Errorf("unregisters %v", un)
		}
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
	n := fakens.Start(t)
	src := &testSource{addrs: []string{n.Addr()}, topics: map[string]protocol.TopicConfig{}, dv: protocol.DataVersion{Counter: 1}, force: true}
	r := New(newClient(t), src, Options{InitialDelay: 30 * time.Millisecond, Period: func() time.Duration { return 30 * time.Millisecond }})
	r.Start()
	n.WaitRegister(t, time.Second)
	n.WaitRegister(t, 2*time.Second) // first periodic round
	n.WaitRegister(t, 2*time.Second) // and the next

	// forceRegister=false: rounds only ask QUERY_DATA_VERSION while the
	// nameserver is current, and register again once the data changed.
	src.mu.Lock()
	src.force = false
	src.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	n.SkipRegistrations()
	before := len(n.Registrations())
	time.Sleep(200 * time.Millisecond)
	queries := n.Calls(code.QueryDataVersion)
	if c := len(n.Registrations()); c != before || queries == 0 {
		t.Errorf("registrations %d → %d with an unchanged version; queries %d", before, c, queries)
	}
	src.addTopic("X")
	n.WaitRegister(t, 2*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Shutdown(ctx)
}

func TestUnreachableNameserver(t *testing.T) {
	n := fakens.Start(t)
	src := &testSource{addrs: []string{"127.0.0.1:1", n.Addr()}, topics: map[string]protocol.TopicConfig{}, force: true}
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

func TestSplitBody(t *testing.T) {
	topics := func(names ...string) map[string]protocol.TopicConfig {
		m := map[string]protocol.TopicConfig{}
		for _, n := range names {
			m[n] = protocol.NewTopicConfig(n)
		}
		return m
	}
	body := func(names ...string) protocol.RegisterBrokerBody {
		return protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{
			DataVersion: protocol.DataVersion{Counter: 9}, TopicConfigTable: topics(names...),
			TopicQueueMappingInfoMap: map[string]protocol.TopicQueueMappingInfo{"S": {Topic: "S", Bname: "broker-a", Epoch: 3}},
		}}
	}
	for _, tc := range []struct {
		name  string
		in    protocol.RegisterBrokerBody
		enc   Encoding
		parts []string // sorted topic names of each body, "|" between bodies
	}{
		{"off", body("a", "b", "c", "S"), Encoding{SplitSize: 1}, []string{"S a b c"}},
		{"fewer than the size", body("a", "b", "S"), Encoding{Split: true, SplitSize: 4}, []string{"S a b"}},
		{"chunks, static last", body("a", "b", "c", "d", "e", "S"), Encoding{Split: true, SplitSize: 2}, []string{"a b", "c d", "S e"}},
		{"exact multiple: last holds the static topic only", body("a", "b", "c", "d", "S"), Encoding{Split: true, SplitSize: 2}, []string{"a b", "c d", "S"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := splitBody(tc.in, tc.enc)
			var got []string
			for i, p := range parts {
				w := p.TopicConfigSerializeWrapper
				got = append(got, strings.Join(slices.Sorted(maps.Keys(w.TopicConfigTable)), " "))
				if w.DataVersion.Counter != 9 {
					t.Errorf("body %d: data version %+v", i, w.DataVersion)
				}
				_, hasMapping := w.TopicQueueMappingInfoMap["S"]
				if last := i == len(parts)-1; hasMapping != last || w.TopicQueueMappingInfoMap == nil {
					t.Errorf("body %d of %d: mappings %v", i, len(parts), w.TopicQueueMappingInfoMap)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.parts, "|") {
				t.Fatalf("bodies %q, want %q", got, tc.parts)
			}
		})
	}
}

// TestSplitRegistration: with enableSplitRegistration a round sends one
// REGISTER_BROKER per chunk to each nameserver, periodic rounds included
// (Apache does not ask QUERY_DATA_VERSION first when splitting).
func TestSplitRegistration(t *testing.T) {
	ns := fakens.Start(t)
	src := &testSource{addrs: []string{ns.Addr()}, topics: map[string]protocol.TopicConfig{}, dv: protocol.DataVersion{Counter: 1, Timestamp: 1}}
	for i := range 5 {
		src.addTopic(fmt.Sprintf("T%d", i))
	}
	r := New(newClient(t), src, Options{InitialDelay: time.Hour, Encoding: func() Encoding { return Encoding{Split: true, SplitSize: 2} }})
	if res := r.RegisterAll(context.Background(), false); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("results %+v", res)
	}
	regs := ns.Registrations()
	if len(regs) != 3 {
		t.Fatalf("%d registrations, want 3 (2+2+1 topics)", len(regs))
	}
	seen := map[string]bool{}
	for _, reg := range regs {
		for name := range reg.Body.TopicConfigSerializeWrapper.TopicConfigTable {
			seen[name] = true
		}
		if reg.Ext["compressed"] != "false" {
			t.Errorf("compressed %q", reg.Ext["compressed"])
		}
	}
	if len(seen) != 5 {
		t.Fatalf("topics registered %v", seen)
	}
}

// TestRegisterTopics: an incremental registration carries only the named
// topics still in the table, with the table's data version; TriggerTopics
// coalesces names into one such registration, and Trigger makes the next
// round a full one.
func TestRegisterTopics(t *testing.T) {
	ns := fakens.Start(t)
	src := &testSource{addrs: []string{ns.Addr()}, topics: map[string]protocol.TopicConfig{}, dv: protocol.DataVersion{Counter: 1, Timestamp: 1}}
	for _, n := range []string{"A", "B", "C", "D"} {
		src.addTopic(n)
	}
	r := New(newClient(t), src, Options{InitialDelay: time.Hour, Debounce: 50 * time.Millisecond})
	if res := r.RegisterTopics(context.Background(), []string{"B", "Gone"}); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("results %+v", res)
	}
	reg := ns.WaitRegister(t, 3*time.Second).Body.TopicConfigSerializeWrapper
	if got := slices.Sorted(maps.Keys(reg.TopicConfigTable)); fmt.Sprint(got) != "[B]" || reg.DataVersion != src.dv {
		t.Fatalf("incremental registration: topics %v, version %+v (want [B], %+v)", got, reg.DataVersion, src.dv)
	}
	if res := r.RegisterTopics(context.Background(), []string{"Gone"}); res != nil {
		t.Fatalf("registration without any known topic: %+v", res)
	}

	r.Start()
	defer func() { _ = r.Shutdown(context.Background()) }()
	ns.WaitRegister(t, 3*time.Second) // Start's full round
	r.TriggerTopics([]string{"C"})
	r.TriggerTopics([]string{"D"})
	reg = ns.WaitRegister(t, 3*time.Second).Body.TopicConfigSerializeWrapper
	if got := slices.Sorted(maps.Keys(reg.TopicConfigTable)); fmt.Sprint(got) != "[C D]" {
		t.Fatalf("triggered incremental registration: topics %v, want [C D]", got)
	}
	r.TriggerTopics([]string{"A"})
	r.Trigger()
	reg = ns.WaitRegister(t, 3*time.Second).Body.TopicConfigSerializeWrapper
	if len(reg.TopicConfigTable) != 4 {
		t.Fatalf("a full round pending with topics registered %d topics, want all 4", len(reg.TopicConfigTable))
	}
}

// A nameserver that failed a registration gets a full one again after a
// short backoff, doubling while it keeps failing; the others are not sent
// it again.
func TestRetriesFailedNameservers(t *testing.T) {
	n1, n2 := fakens.Start(t), fakens.Start(t)
	src := &testSource{addrs: []string{n1.Addr(), n2.Addr()}, topics: map[string]protocol.TopicConfig{"T": protocol.NewTopicConfig("T")}, dv: protocol.DataVersion{Counter: 1}, force: true}
	r := New(newClient(t), src, Options{InitialDelay: time.Hour, Period: func() time.Duration { return time.Hour }, RetryMin: 50 * time.Millisecond})
	res := r.Start()
	if len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("first round %+v", res)
	}
	n1.WaitRegister(t, time.Second) // Start's
	n1.FailRegistrations(3)
	start := time.Now()
	src.addTopic("T2")
	r.Trigger()
	reg := n1.WaitRegister(t, 5*time.Second)
	took := time.Since(start)
	if _, ok := reg.Body.TopicConfigSerializeWrapper.TopicConfigTable["T2"]; !ok {
		t.Fatalf("the retried registration lacks T2: %+v", reg.Body.TopicConfigSerializeWrapper)
	}
	// The trigger's round and two retries failed (50 + 100 ms), the third
	// (200 ms later) went through.
	if got := n1.Calls(code.RegisterBroker); got != 1+4 {
		t.Errorf("registrations sent to the failing nameserver: %d, want 5", got)
	}
	if took < 300*time.Millisecond {
		t.Errorf("registered again after %v: the retries did not back off", took)
	}
	time.Sleep(300 * time.Millisecond)
	if got := n2.Calls(code.RegisterBroker); got != 2 {
		t.Errorf("registrations sent to the healthy nameserver: %d, want 2 (start and trigger)", got)
	}
	if got := n1.Calls(code.RegisterBroker); got != 5 {
		t.Errorf("registrations after the nameserver took one: %d, want no more retries", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Shutdown(ctx)
}
