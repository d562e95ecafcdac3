// Package fakens is a fake nameserver for tests of brokers and clients. It
// is apart from package testutil because it runs on package remoting, whose
// own tests use testutil.
package fakens

import (
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Registration is one REGISTER_BROKER a Server received.
type Registration struct {
	Ext  map[string]string
	Body protocol.RegisterBrokerBody
}

// Server is a nameserver on 127.0.0.1 (a free port): it
// records REGISTER_BROKER (checking bodyCrc32 as the real one does),
// UNREGISTER_BROKER and QUERY_DATA_VERSION, and answers
// GET_ROUTEINFO_BY_TOPIC from the routes a test gives it. Several may run at
// once: a broker registers with every nameserver in its list.
type Server struct {
	srv *remoting.Server
	got chan struct{} // one token a registration, for WaitRegister

	mu          sync.Mutex
	registers   []Registration
	unregisters []map[string]string
	lastVersion protocol.DataVersion
	calls       map[int32]int
	kv          map[string]string                        // REGISTER_BROKER answer body
	brokers     map[string]string                        // broker name → master address
	topics      map[string]map[string]protocol.QueueData // topic → broker name → queues
	routes      map[string]protocol.TopicRouteData       // whole routes, before topics
	failRegs    int                                      // registrations still to refuse (FailRegistrations)
}

// registeredBuffer bounds the registrations WaitRegister can still see;
// beyond it tokens are dropped rather than stalling the broker.
const registeredBuffer = 1024

// New starts a Server; Close stops it. Tests use Start, which stops it at
// cleanup; New is for fixtures without a testing.TB.
func New() (*Server, error) {
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Workers = 4
	srv, err := remoting.NewServer(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("fake nameserver: %w", err)
	}
	n := &Server{
		srv:     srv,
		got:     make(chan struct{}, registeredBuffer),
		calls:   make(map[int32]int),
		brokers: make(map[string]string),
		topics:  make(map[string]map[string]protocol.QueueData),
		routes:  make(map[string]protocol.TopicRouteData),
	}
	srv.Register(code.RegisterBroker, n.register, nil)
	srv.Register(code.UnregisterBroker, n.unregister, nil)
	srv.Register(code.QueryDataVersion, n.queryDataVersion, nil)
	srv.Register(code.GetRouteInfoByTopic, n.route, nil)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("fake nameserver: %w", err)
	}
	return n, nil
}

// Start starts a Server stopped at t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("fake nameserver: %v", err)
		}
	})
	return n
}

// Addr is the listening address.
func (n *Server) Addr() string { return n.srv.Addr() }

// Close stops the server.
func (n *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.srv.Shutdown(ctx)
}

// Calls is how many requests with code c arrived.
func (n *Server) Calls(c int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[c]
}

// Registrations are the REGISTER_BROKER requests so far, oldest first.
func (n *Server) Registrations() []Registration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Registration(nil), n.registers...)
}

// LastRegistration is the newest REGISTER_BROKER; ok is false before any.
func (n *Server) LastRegistration() (r Registration, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.registers) == 0 {
		return Registration{}, false
	}
	return n.registers[len(n.registers)-1], true
}

// Unregistrations are the UNREGISTER_BROKER headers so far.
func (n *Server) Unregistrations() []map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]map[string]string(nil), n.unregisters...)
}

// WaitRegister takes the next registration not yet waited for and returns
// the newest one; it fails the test when none comes within d.
func (n *Server) WaitRegister(t testing.TB, d time.Duration) Registration {
	t.Helper()
	select {
	case <-n.got:
	case <-time.After(d):
		t.Fatalf("no registration at %s within %v", n.Addr(), d)
	}
	r, _ := n.LastRegistration()
	return r
}

// SkipRegistrations forgets the registrations not yet waited for, so the
// next WaitRegister sees only later ones.
func (n *Server) SkipRegistrations() {
	for {
		select {
		case <-n.got:
		default:
			return
		}
	}
}

// FailRegistrations makes the next k REGISTER_BROKER answer SYSTEM_ERROR
// without recording them (a nameserver that cannot take them now).
func (n *Server) FailRegistrations(k int) {
	n.mu.Lock()
	n.failRegs = k
	n.mu.Unlock()
}

// SetRegisterKV sets the KV table answered to REGISTER_BROKER (the
// ORDER_TOPIC_CONFIG namespace); nil answers no body.
func (n *Server) SetRegisterKV(kv map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kv = maps.Clone(kv)
}

// AddBroker makes a broker's master address known to the routes SetTopic
// builds.
func (n *Server) AddBroker(name, addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.brokers[name] = addr
}

// SetTopic sets topic's queues on broker; perm 0 is read+write.
func (n *Server) SetTopic(topic, broker string, queues, perm int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if perm == 0 {
		perm = protocol.PermRead | protocol.PermWrite
	}
	if n.topics[topic] == nil {
		n.topics[topic] = make(map[string]protocol.QueueData)
	}
	n.topics[topic][broker] = protocol.QueueData{BrokerName: broker, Perm: perm, ReadQueueNums: queues, WriteQueueNums: queues}
}

// SetRoute answers rd, as it is, for topic.
func (n *Server) SetRoute(topic string, rd protocol.TopicRouteData) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[topic] = rd
}

// DeleteTopic forgets topic's route.
func (n *Server) DeleteTopic(topic string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.topics, topic)
	delete(n.routes, topic)
}

func (n *Server) count(c int32) {
	n.mu.Lock()
	n.calls[c]++
	n.mu.Unlock()
}

func (n *Server) register(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	n.count(req.Code)
	n.mu.Lock()
	fail := n.failRegs > 0
	if fail {
		n.failRegs--
	}
	n.mu.Unlock()
	if fail {
		return nil, remoting.Errorf(code.SystemError, "fake nameserver: registration refused")
	}
	if want := strconv.Itoa(int(int32(crc32.ChecksumIEEE(req.Body) & 0x7FFFFFFF))); req.Ext("bodyCrc32") != want {
		return nil, remoting.Errorf(code.SystemError, "crc32 not match")
	}
	var body protocol.RegisterBrokerBody
	if err := protocol.Unmarshal(req.Body, &body); err != nil {
		return nil, remoting.Errorf(code.SystemError, "bad body: %v", err)
	}
	n.mu.Lock()
	n.registers = append(n.registers, Registration{Ext: maps.Clone(req.ExtFields), Body: body})
	n.lastVersion = body.TopicConfigSerializeWrapper.DataVersion
	kv := n.kv
	n.mu.Unlock()
	select {
	case n.got <- struct{}{}:
	default:
	}
	resp := remoting.NewResponse(req, code.Success, "")
	if kv != nil {
		resp.Body = protocol.MustMarshal(protocol.KVTable{Table: kv})
	}
	return resp, nil
}

func (n *Server) unregister(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	n.mu.Lock()
	n.calls[req.Code]++
	n.unregisters = append(n.unregisters, maps.Clone(req.ExtFields))
	n.mu.Unlock()
	return remoting.NewResponse(req, code.Success, ""), nil
}

// queryDataVersion says changed=true unless the broker's version is the
// one it last registered with.
func (n *Server) queryDataVersion(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var dv protocol.DataVersion
	if err := protocol.Unmarshal(req.Body, &dv); err != nil {
		return nil, remoting.Errorf(code.SystemError, "bad data version: %v", err)
	}
	n.mu.Lock()
	n.calls[req.Code]++
	changed := !dv.Equal(n.lastVersion)
	n.mu.Unlock()
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("changed", strconv.FormatBool(changed))
	return resp, nil
}

func (n *Server) route(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Ext("topic")
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls[req.Code]++
	rd, ok := n.routes[topic]
	if !ok {
		qds := n.topics[topic]
		if len(qds) == 0 {
			return remoting.NewResponse(req, code.TopicNotExist, "No topic route info in name server for the topic: "+topic), nil
		}
		rd = n.buildRoute(qds)
	}
	body, err := protocol.Marshal(rd)
	if err != nil {
		return nil, fmt.Errorf("encode route: %w", err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	return resp, nil
}

// buildRoute is the route of one topic's queues, brokers sorted by name.
func (n *Server) buildRoute(qds map[string]protocol.QueueData) protocol.TopicRouteData {
	rd := protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	names := make([]string, 0, len(qds))
	for name := range qds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rd.QueueDatas = append(rd.QueueDatas, qds[name])
		bd := protocol.BrokerData{BrokerName: name, Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{}}
		if a := n.brokers[name]; a != "" {
			bd.BrokerAddrs[protocol.MasterID] = a
		}
		rd.BrokerDatas = append(rd.BrokerDatas, bd)
	}
	return rd
}
