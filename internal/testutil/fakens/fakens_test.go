package fakens

import (
	"context"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

func TestFakeNamesrv(t *testing.T) {
	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = c.Close() })
	call := func(addr string, req *remoting.Command) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, addr, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	dv := protocol.DataVersion{Counter: 3, Timestamp: 7}
	body := protocol.MustMarshal(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{DataVersion: dv}})
	register := func(crc uint32) *remoting.Command {
		return remoting.NewRequest(code.RegisterBroker, map[string]string{"brokerName": "broker-a",
			"bodyCrc32": strconv.Itoa(int(int32(crc & 0x7FFFFFFF)))}, body)
	}

	// Two at once, each with its own registrations and answers.
	n1, n2 := Start(t), Start(t)
	n2.SetRegisterKV(map[string]string{"T": "broker-a:4"})
	if resp := call(n1.Addr(), register(crc32.ChecksumIEEE(body)+1)); resp.Code != code.SystemError {
		t.Fatalf("bad crc answered %d", resp.Code)
	}
	for _, n := range []*Server{n1, n2} {
		resp := call(n.Addr(), register(crc32.ChecksumIEEE(body)))
		if resp.Code != code.Success || (n == n2) != (len(resp.Body) > 0) {
			t.Fatalf("register: %d %s", resp.Code, resp.Body)
		}
		if r := n.WaitRegister(t, time.Second); r.Ext["brokerName"] != "broker-a" || !r.Body.TopicConfigSerializeWrapper.DataVersion.Equal(dv) {
			t.Fatalf("registration %+v", r)
		}
	}
	if len(n1.Registrations()) != 1 || n1.Calls(code.RegisterBroker) != 2 {
		t.Fatalf("n1: %d registrations of %d requests", len(n1.Registrations()), n1.Calls(code.RegisterBroker))
	}

	// QUERY_DATA_VERSION compares with the last registration.
	for _, tc := range []struct {
		dv      protocol.DataVersion
		changed string
	}{{dv, "false"}, {protocol.DataVersion{Counter: 4, Timestamp: 7}, "true"}} {
		if got := call(n1.Addr(), remoting.NewRequest(code.QueryDataVersion, nil, protocol.MustMarshal(tc.dv))).Ext("changed"); got != tc.changed {
			t.Errorf("changed for %+v = %s", tc.dv, got)
		}
	}

	// Routes: built from SetTopic and AddBroker, or set whole.
	route := func(topic string) (int32, protocol.TopicRouteData) {
		resp := call(n1.Addr(), remoting.NewRequest(code.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		var rd protocol.TopicRouteData
		if resp.Code == code.Success {
			if err := protocol.Unmarshal(resp.Body, &rd); err != nil {
				t.Fatal(err)
			}
		}
		return resp.Code, rd
	}
	if c, _ := route("T"); c != code.TopicNotExist {
		t.Fatalf("unknown topic: %d", c)
	}
	n1.AddBroker("broker-a", "127.0.0.1:10911")
	n1.SetTopic("T", "broker-b", 2, 0)
	n1.SetTopic("T", "broker-a", 4, protocol.PermRead)
	if c, rd := route("T"); c != code.Success || len(rd.QueueDatas) != 2 || rd.QueueDatas[0].BrokerName != "broker-a" ||
		rd.QueueDatas[0].Perm != protocol.PermRead || rd.QueueDatas[1].Perm != protocol.PermRead|protocol.PermWrite ||
		rd.BrokerDatas[0].BrokerAddrs[protocol.MasterID] != "127.0.0.1:10911" || len(rd.BrokerDatas[1].BrokerAddrs) != 0 {
		t.Fatalf("route %d %+v", c, rd)
	}
	n1.SetRoute("T", protocol.TopicRouteData{OrderTopicConf: "broker-a:4"})
	if _, rd := route("T"); rd.OrderTopicConf != "broker-a:4" || len(rd.QueueDatas) != 0 {
		t.Fatalf("set route %+v", rd)
	}
	n1.DeleteTopic("T")
	if c, _ := route("T"); c != code.TopicNotExist || n1.Calls(code.GetRouteInfoByTopic) != 4 {
		t.Fatalf("deleted topic: %d after %d lookups", c, n1.Calls(code.GetRouteInfoByTopic))
	}

	call(n2.Addr(), remoting.NewRequest(code.UnregisterBroker, map[string]string{"brokerName": "broker-a"}, nil))
	if un := n2.Unregistrations(); len(un) != 1 || un[0]["brokerName"] != "broker-a" || len(n1.Unregistrations()) != 0 {
		t.Fatalf("unregistrations %v %v", un, n1.Unregistrations())
	}
}
