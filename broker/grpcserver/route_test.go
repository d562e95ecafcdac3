package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// routerBackend is fakeBackend with a nameserver route.
type routerBackend struct {
	fakeBackend
	routes   map[string][]RouteBroker
	routeErr error
	peers    map[string]string // remoting addr → "host:port", "" = no gRPC
	types    map[string]string // topic → message.type on the peers

	mu      *sync.Mutex
	lookups map[string]int
	// selfAddr is this broker's remoting address ("": 10.0.0.1:10911);
	// slave makes it a slave of its set.
	selfAddr string
	slave    bool
}

func (r routerBackend) Self() (string, bool) {
	if r.selfAddr == "" {
		return "10.0.0.1:10911", !r.slave
	}
	return r.selfAddr, !r.slave
}

func (r routerBackend) Route(_ context.Context, topic string) ([]RouteBroker, bool, error) {
	if r.routeErr != nil {
		return nil, false, r.routeErr
	}
	rs, ok := r.routes[topic]
	return rs, ok, nil
}

func (r routerBackend) PeerEndpoint(_ context.Context, addr string) (string, int, bool, error) {
	r.mu.Lock()
	r.lookups[addr]++
	r.mu.Unlock()
	ep, known := r.peers[addr]
	if !known {
		return "", 0, false, errors.New("connection refused")
	}
	if ep == "" {
		return "", 0, false, nil
	}
	h, p, err := hostPort(ep)
	return h, p, err == nil, err
}

func (r routerBackend) PeerTopicType(_ context.Context, _, topic string) (string, error) {
	r.mu.Lock()
	r.lookups["type:"+topic]++
	r.mu.Unlock()
	return r.types[topic], nil
}

// routeView renders a route as "broker@host:port id:PERM [types]" items.
func routeView(r *v2pb.QueryRouteResponse) string {
	var out []string
	for _, q := range r.GetMessageQueues() {
		a := q.GetBroker().GetEndpoints().GetAddresses()[0]
		out = append(out, fmt.Sprintf("%s@%s:%d %d:%v %v", q.GetBroker().GetName(), a.GetHost(), a.GetPort(), q.GetId(), q.GetPermission(), q.GetAcceptMessageTypes()))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TestQueryRouteAcrossBrokers: the nameserver's route, each broker with its
// own gRPC endpoint (learnt from the broker, cached); brokers without gRPC
// or unreachable are left out; this broker's part from its own table; a
// topic only on other brokers gets its message.type from them; without
// the nameserver, this broker alone.
func TestQueryRouteAcrossBrokers(t *testing.T) {
	b := routerBackend{
		fakeBackend: fakeBackend{topics: map[string]Topic{
			"Both":  {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "FIFO"},
			"Local": {ReadQueues: 1, WriteQueues: 1, Perm: 6},
		}},
		routes: map[string][]RouteBroker{
			"Both": {
				{Name: "broker-a", Addr: "10.0.0.1:10911", Topic: Topic{ReadQueues: 8, WriteQueues: 8, Perm: 6}}, // stale: ours counts
				{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 1, Perm: 6}},
				{Name: "broker-c", Addr: "10.0.0.3:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6}},
				{Name: "broker-d", Addr: "10.0.0.4:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6}},
			},
			"Remote":     {{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6}}},
			"NoGrpcOnly": {{Name: "broker-c", Addr: "10.0.0.3:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6}}},
		},
		peers:   map[string]string{"10.0.0.2:10911": "10.0.0.2:8081", "10.0.0.3:10911": ""},
		types:   map[string]string{"Remote": "DELAY"},
		mu:      &sync.Mutex{},
		lookups: map[string]int{},
	}
	c, s := messagingClient(t, b)
	_, port, _ := hostPort(s.Addr())
	self := fmt.Sprintf("broker-a@127.0.0.1:%d", port)
	tests := []struct {
		topic string
		code  v2pb.Code
		route string
	}{
		{"Both", v2pb.Code_OK, self + " 0:READ_WRITE [FIFO], broker-b@10.0.0.2:8081 0:READ_WRITE [FIFO], broker-b@10.0.0.2:8081 1:READ [FIFO]"},
		{"Remote", v2pb.Code_OK, "broker-b@10.0.0.2:8081 0:READ_WRITE [DELAY]"},
		{"Local", v2pb.Code_OK, self + " 0:READ_WRITE [NORMAL]"}, // not registered yet
		{"NoGrpcOnly", v2pb.Code_TOPIC_NOT_FOUND, ""},
		{"Nowhere", v2pb.Code_TOPIC_NOT_FOUND, ""},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for round := 0; round < 2; round++ {
		for _, tc := range tests {
			r, err := c.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: tc.topic}})
			if err != nil || r.GetStatus().GetCode() != tc.code {
				t.Fatalf("QueryRoute(%s): %v %v, want %v", tc.topic, r, err, tc.code)
			}
			if got := routeView(r); got != tc.route {
				t.Errorf("QueryRoute(%s):\n got %s\nwant %s", tc.topic, got, tc.route)
			}
		}
	}
	b.mu.Lock()
	if b.lookups["10.0.0.2:10911"] != 1 || b.lookups["10.0.0.3:10911"] != 1 || b.lookups["10.0.0.1:10911"] != 0 ||
		b.lookups["type:Remote"] != 1 || b.lookups["type:Both"] != 0 {
		t.Errorf("look-ups %v, want one endpoint per other broker and one type of the remote topic (cached), none of this broker", b.lookups)
	}
	b.mu.Unlock()

	// A slave of broker-a (a replica, or the old master after a
	// failover): its set's part is the master's endpoint, as the route
	// names it; a topic the route lacks is not answered from its table.
	sb := b
	sb.selfAddr, sb.slave = "10.0.0.9:10911", true
	sb.peers = map[string]string{"10.0.0.1:10911": "10.0.0.1:8081", "10.0.0.2:10911": "10.0.0.2:8081", "10.0.0.3:10911": ""}
	c3, _ := messagingClient(t, sb)
	for topic, want := range map[string]string{
		"Both":  "broker-a@10.0.0.1:8081 0:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 1:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 2:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 3:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 4:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 5:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 6:READ_WRITE [FIFO], broker-a@10.0.0.1:8081 7:READ_WRITE [FIFO], broker-b@10.0.0.2:8081 0:READ_WRITE [FIFO], broker-b@10.0.0.2:8081 1:READ [FIFO]",
		"Local": "",
	} {
		r, err := c3.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
		if err != nil || routeView(r) != want {
			t.Errorf("QueryRoute(%s) on a slave:\n got %s (%v)\nwant %s", topic, routeView(r), err, want)
		}
	}

	// Without the nameserver: this broker's queues alone.
	b.routeErr = errors.New("no nameserver")
	c2, s2 := messagingClient(t, b)
	_, port2, _ := hostPort(s2.Addr())
	r, err := c2.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "Both"}})
	if want := fmt.Sprintf("broker-a@127.0.0.1:%d 0:READ_WRITE [FIFO]", port2); err != nil || routeView(r) != want {
		t.Fatalf("QueryRoute without nameserver: %v %v, want %s", routeView(r), err, want)
	}
	if r, _ := c2.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "Remote"}}); r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("remote topic without nameserver: %v, want TOPIC_NOT_FOUND", r)
	}
}

// routedConsumer is a consumer backend whose topics also live on other
// brokers.
type routedConsumer struct {
	*fakeConsumer
	r routerBackend
}

func (b routedConsumer) Route(ctx context.Context, topic string) ([]RouteBroker, bool, error) {
	return b.r.Route(ctx, topic)
}

func (b routedConsumer) PeerEndpoint(ctx context.Context, addr string) (string, int, bool, error) {
	return b.r.PeerEndpoint(ctx, addr)
}

func (b routedConsumer) PeerTopicType(ctx context.Context, addr, topic string) (string, error) {
	return b.r.PeerTopicType(ctx, addr, topic)
}

func (b routedConsumer) Self() (string, bool) { return b.r.Self() }

// TestQueryAssignmentAcrossBrokers: a group is assigned the topic's
// readable part on every broker of its route that serves gRPC, each with
// that broker's endpoint (its receives go there); a FIFO group one queue
// per read queue; a topic only on another broker is assigned there; a
// route without a readable broker is FORBIDDEN; without the nameserver,
// this broker alone.
func TestQueryAssignmentAcrossBrokers(t *testing.T) {
	f := newFakeConsumer()
	rb := routerBackend{
		routes: map[string][]RouteBroker{
			"T": {
				{Name: "broker-a", Addr: "10.0.0.1:10911", Topic: Topic{ReadQueues: 3, WriteQueues: 3, Perm: 6}},
				{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 4}},
				{Name: "broker-c", Addr: "10.0.0.3:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6}}, // no gRPC
				{Name: "broker-d", Addr: "10.0.0.4:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 2}}, // write only
			},
			"Remote":   {{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 6}}},
			"WORemote": {{Name: "broker-d", Addr: "10.0.0.4:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 2}}},
			// A static topic: receives pop physical queues, so every broker
			// with read queues is assigned, a former leader (broker-d, its
			// older segments) included; a non-target broker (0/0) is not
			// (docs/static-topics.md §6.8).
			"S": {
				{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 6, Static: true, Logic: []int32{0, 1}}},
				{Name: "broker-d", Addr: "10.0.0.4:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, Static: true}},
				{Name: "broker-e", Addr: "10.0.0.5:10911", Topic: Topic{Perm: 6, Static: true}},
			},
		},
		peers:   map[string]string{"10.0.0.2:10911": "10.0.0.2:8081", "10.0.0.3:10911": "", "10.0.0.4:10911": "10.0.0.4:8081", "10.0.0.5:10911": "10.0.0.5:8081"},
		mu:      &sync.Mutex{},
		lookups: map[string]int{},
	}
	c, s := messagingClient(t, routedConsumer{fakeConsumer: f, r: rb})
	_, port, _ := hostPort(s.Addr())
	self := fmt.Sprintf("broker-a@127.0.0.1:%d", port)
	tests := []struct {
		topic, group string
		code         v2pb.Code
		want         string
	}{
		{"T", "G", v2pb.Code_OK, self + " -1:READ_WRITE, broker-b@10.0.0.2:8081 -1:READ"},
		{"T", "FIFO", v2pb.Code_OK, self + " 0:READ_WRITE, " + self + " 1:READ_WRITE, " + self + " 2:READ_WRITE, broker-b@10.0.0.2:8081 0:READ, broker-b@10.0.0.2:8081 1:READ"},
		{"Remote", "G", v2pb.Code_OK, "broker-b@10.0.0.2:8081 -1:READ_WRITE"},
		{"WORemote", "G", v2pb.Code_FORBIDDEN, ""},
		{"Nowhere", "G", v2pb.Code_TOPIC_NOT_FOUND, ""},
		{"S", "G", v2pb.Code_OK, "broker-b@10.0.0.2:8081 -1:READ_WRITE, broker-d@10.0.0.4:8081 -1:READ_WRITE"},
		{"S", "FIFO", v2pb.Code_OK, "broker-b@10.0.0.2:8081 0:READ_WRITE, broker-b@10.0.0.2:8081 1:READ_WRITE, broker-d@10.0.0.4:8081 0:READ_WRITE"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	view := func(r *v2pb.QueryAssignmentResponse) string {
		var out []string
		for _, a := range r.GetAssignments() {
			q := a.GetMessageQueue()
			ad := q.GetBroker().GetEndpoints().GetAddresses()[0]
			out = append(out, fmt.Sprintf("%s@%s:%d %d:%v", q.GetBroker().GetName(), ad.GetHost(), ad.GetPort(), q.GetId(), q.GetPermission()))
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	for _, tc := range tests {
		r, err := c.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: tc.topic}, Group: &v2pb.Resource{Name: tc.group}})
		if err != nil || r.GetStatus().GetCode() != tc.code {
			t.Fatalf("QueryAssignment(%s, %s): %v %v, want %v", tc.topic, tc.group, r, err, tc.code)
		}
		if got := view(r); got != tc.want {
			t.Errorf("QueryAssignment(%s, %s):\n got %s\nwant %s", tc.topic, tc.group, got, tc.want)
		}
	}

	rb.routeErr = errors.New("no nameserver")
	c2, s2 := messagingClient(t, routedConsumer{fakeConsumer: f, r: rb})
	_, port2, _ := hostPort(s2.Addr())
	r, err := c2.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: "T"}, Group: &v2pb.Resource{Name: "G"}})
	if want := fmt.Sprintf("broker-a@127.0.0.1:%d -1:READ_WRITE", port2); err != nil || view(r) != want {
		t.Errorf("without the nameserver: %v %v, want %s", view(r), err, want)
	}
	r, err = c2.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: "Remote"}, Group: &v2pb.Resource{Name: "G"}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Errorf("a remote topic without the nameserver: %v %v, want TOPIC_NOT_FOUND", r, err)
	}
}

// TestQueryRouteStaticTopic: a static topic's route names its logic queues
// (ids 0..N-1), each on the broker leading it as the nameserver tells
// (this broker's own table loses to it), with the broker's permission; a
// broker that leads nothing but still has read queues (older segments)
// gets one READ queue -1 for receiving; one without queues is left out;
// after a remap the route follows the nameserver.
func TestQueryRouteStaticTopic(t *testing.T) {
	routes := map[string][]RouteBroker{}
	b := routerBackend{
		fakeBackend: fakeBackend{topics: map[string]Topic{
			// Stale: this broker still claims logic queue 2.
			"S": {ReadQueues: 2, WriteQueues: 2, Perm: 6, Static: true, Logic: []int32{0, 2}},
		}},
		routes:  routes,
		peers:   map[string]string{"10.0.0.2:10911": "10.0.0.2:8081", "10.0.0.3:10911": "10.0.0.3:8081", "10.0.0.4:10911": "10.0.0.4:8081"},
		mu:      &sync.Mutex{},
		lookups: map[string]int{},
	}
	c, s := messagingClient(t, b)
	_, port, _ := hostPort(s.Addr())
	self := fmt.Sprintf("broker-a@127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tests := []struct {
		name    string
		brokers []RouteBroker
		route   string
	}{
		{"spread", []RouteBroker{
			{Name: "broker-a", Addr: "10.0.0.1:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 6, Static: true, Logic: []int32{0}}},
			{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 4, Static: true, Logic: []int32{1, 2}}},
			{Name: "broker-c", Addr: "10.0.0.3:10911", Topic: Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, Static: true}},
			{Name: "broker-d", Addr: "10.0.0.4:10911", Topic: Topic{Perm: 6, Static: true}}, // non-target: 0/0
		}, self + " 0:READ_WRITE [NORMAL], broker-b@10.0.0.2:8081 1:READ [NORMAL], broker-b@10.0.0.2:8081 2:READ [NORMAL], " +
			"broker-c@10.0.0.3:8081 -1:READ [NORMAL]"},
		{"remapped", []RouteBroker{
			{Name: "broker-a", Addr: "10.0.0.1:10911", Topic: Topic{ReadQueues: 2, WriteQueues: 2, Perm: 6, Static: true}},
			{Name: "broker-b", Addr: "10.0.0.2:10911", Topic: Topic{ReadQueues: 3, WriteQueues: 3, Perm: 6, Static: true, Logic: []int32{0, 1, 2}}},
		}, self + " -1:READ [NORMAL], broker-b@10.0.0.2:8081 0:READ_WRITE [NORMAL], broker-b@10.0.0.2:8081 1:READ_WRITE [NORMAL], " +
			"broker-b@10.0.0.2:8081 2:READ_WRITE [NORMAL]"},
	}
	for _, tc := range tests {
		routes["S"] = tc.brokers
		r, err := c.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "S"}})
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("%s: QueryRoute: %v %v", tc.name, r, err)
		}
		if got := routeView(r); got != tc.route {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.route)
		}
	}
}
