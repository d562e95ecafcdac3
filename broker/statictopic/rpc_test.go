package statictopic

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type fakeInvoker struct {
	mu      sync.Mutex
	sent    []string // addr:code
	cluster protocol.ClusterInfo
	failNS  map[string]bool
}

func (f *fakeInvoker) Invoke(_ context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, addr+":"+itoa(req.Code))
	if f.failNS[addr] {
		return nil, errors.New("connection refused")
	}
	resp := remoting.NewResponse(req, code.Success, "")
	switch req.Code {
	case code.GetBrokerClusterInfo:
		resp.Body = protocol.MustMarshal(f.cluster)
	case code.GetRouteInfoByTopic:
		resp.Body = protocol.MustMarshal(protocol.TopicRouteData{QueueDatas: []protocol.QueueData{{BrokerName: "a"}}})
	default:
		resp.SetExt("to", addr)
	}
	return resp, nil
}

func itoa(c int32) string { return strconv.Itoa(int(c)) }

func TestBrokerRPC(t *testing.T) {
	inv := &fakeInvoker{failNS: map[string]bool{"ns1": true}, cluster: protocol.ClusterInfo{BrokerAddrTable: map[string]protocol.BrokerData{
		"a": {BrokerName: "a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}},
		"s": {BrokerName: "s", BrokerAddrs: map[int64]string{1: "10.0.0.3:10911"}}, // no master
	}}}
	now := time.UnixMilli(0)
	r, err := NewBrokerRPC(RPCOptions{Invoker: inv, NamesrvAddrs: func() []string { return []string{"ns1", "ns2"} },
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp, err := r.Invoke(ctx, "a", remoting.NewRequest(code.GetMaxOffset, map[string]string{}, nil))
	if err != nil || resp.Ext("to") != "10.0.0.1:10911" {
		t.Fatalf("invoke a: %v %v", resp, err)
	}
	// Cached: a second call asks no nameserver.
	inv.sent = nil
	if _, err := r.Invoke(ctx, "a", remoting.NewRequest(code.PullMessage, map[string]string{}, nil)); err != nil || len(inv.sent) != 1 {
		t.Fatalf("cache not used: %v %v", inv.sent, err)
	}
	// A master-less or unknown broker is an error naming it.
	for _, b := range []string{"s", "nope"} {
		if _, err := r.Invoke(ctx, b, remoting.NewRequest(code.GetMaxOffset, nil, nil)); err == nil || !strings.Contains(err.Error(), b) {
			t.Errorf("broker %s: %v", b, err)
		}
	}
	// Codes outside Java's forward list are refused.
	_, err = r.Invoke(ctx, "a", remoting.NewRequest(code.SendMessage, nil, nil))
	var ce *remoting.CodeError
	if !errors.As(err, &ce) || ce.Code != code.RequestCodeNotSupported {
		t.Errorf("send forwarded: %v", err)
	}
	// Expired cache with every nameserver down: the cached address serves.
	now = now.Add(time.Minute)
	inv.failNS["ns2"] = true
	if resp, err := r.Invoke(ctx, "a", remoting.NewRequest(code.GetMaxOffset, nil, nil)); err != nil || resp.Ext("to") != "10.0.0.1:10911" {
		t.Errorf("stale cache not used: %v", err)
	}
	inv.failNS["ns2"] = false
	if rd, err := r.Route(ctx, tpc); err != nil || len(rd.QueueDatas) != 1 {
		t.Errorf("route: %+v %v", rd, err)
	}
}
