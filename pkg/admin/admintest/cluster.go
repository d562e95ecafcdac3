// Package admintest is an in-memory fake of RocketMQ nameservers and
// brokers that answers the admin requests of package admin. It implements
// admin.Invoker directly (no network), and Handler serves it through a real
// remoting.Server for end-to-end tests.
//
// The nameserver side is derived from the brokers: the cluster table and
// routes are computed from the registered brokers and their topics, as a
// nameserver would see them after registration.
package admintest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Broker is one fake broker.
type Broker struct {
	Cluster string
	Name    string
	ID      int64
	Addr    string

	Topics  map[string]protocol.TopicConfig
	Stats   map[string]protocol.TopicStatsTable          // topic → stats (202); generated from Topics when absent
	Mapping map[string]*protocol.TopicQueueMappingDetail // static topics (351 mappingDetail)
	Groups  map[string][]string                          // topic → consumer groups (300)
	Runtime map[string]string                            // 28
	Config  map[string]string                            // 26 / 25
}

// Call is one request the fake received.
type Call struct {
	Addr string
	Code int32
	Ext  map[string]string
	Body string
}

// Cluster is the fake. Fields may be set before use; use the methods (or
// Lock) once requests are flowing.
type Cluster struct {
	mu sync.Mutex

	NameServers []string
	Brokers     []*Broker

	// KV is the nameservers' KV store (shared by all of them).
	KV map[string]map[string]string
	// NamesrvConfig is each nameserver's configuration.
	NamesrvConfig map[string]map[string]string
	// Down lists addresses that refuse connections.
	Down map[string]bool
	// Override, when set, may answer a request instead of the fake.
	Override func(addr string, req *remoting.Command) (*remoting.Command, bool)

	wiped map[string]bool // broker names whose write perm was wiped
	calls []Call
}

// addOverride puts h in front of the current Override, which still
// answers what h does not.
func (c *Cluster) addOverride(h func(addr string, req *remoting.Command) (*remoting.Command, bool)) {
	prev := c.Override
	c.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if resp, ok := h(addr, req); ok {
			return resp, true
		}
		if prev != nil {
			return prev(addr, req)
		}
		return nil, false
	}
}

// New returns a fake with the given nameserver addresses.
func New(nameServers ...string) *Cluster {
	c := &Cluster{
		NameServers:   nameServers,
		KV:            map[string]map[string]string{},
		NamesrvConfig: map[string]map[string]string{},
		Down:          map[string]bool{},
		wiped:         map[string]bool{},
	}
	for _, ns := range nameServers {
		c.NamesrvConfig[ns] = map[string]string{"listenPort": "9876", "orderMessageEnable": "false"}
	}
	return c
}

// AddBroker registers a broker with empty tables and default runtime info.
func (c *Cluster) AddBroker(cluster, name string, id int64, addr string) *Broker {
	b := &Broker{
		Cluster: cluster, Name: name, ID: id, Addr: addr,
		Topics:  map[string]protocol.TopicConfig{},
		Stats:   map[string]protocol.TopicStatsTable{},
		Mapping: map[string]*protocol.TopicQueueMappingDetail{},
		Groups:  map[string][]string{},
		Runtime: map[string]string{"brokerVersionDesc": "V5_5_0", "brokerActive": "true"},
		Config:  map[string]string{"brokerClusterName": cluster, "brokerName": name, "brokerId": strconv.FormatInt(id, 10), "brokerPermission": "6"},
	}
	c.mu.Lock()
	c.Brokers = append(c.Brokers, b)
	c.mu.Unlock()
	return b
}

// Lock runs f with the fake locked (to read or change state safely).
func (c *Cluster) Lock(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// Calls returns the requests received so far.
func (c *Cluster) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// CallCodes returns "addr:code" for every request received so far.
func (c *Cluster) CallCodes() []string {
	var out []string
	for _, cl := range c.Calls() {
		out = append(out, cl.Addr+":"+strconv.Itoa(int(cl.Code)))
	}
	return out
}

// Invoke implements admin.Invoker.
func (c *Cluster) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Down[addr] {
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused", addr)
	}
	return c.handle(addr, req), nil
}

// Handler serves the fake as the server at addr (register it with
// remoting.Server.RegisterDefault).
func (c *Cluster) Handler(addr string) remoting.Handler {
	return func(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.handle(addr, req), nil
	}
}

func (c *Cluster) handle(addr string, req *remoting.Command) *remoting.Command {
	ext := map[string]string{}
	for k, v := range req.ExtFields {
		ext[k] = v
	}
	c.calls = append(c.calls, Call{Addr: addr, Code: req.Code, Ext: ext, Body: string(req.Body)})
	if c.Override != nil {
		if resp, ok := c.Override(addr, req); ok {
			resp.Opaque, resp.Flag = req.Opaque, remoting.FlagResponse
			return resp
		}
	}
	if c.isNamesrv(addr) {
		return c.namesrv(addr, req)
	}
	if b := c.broker(addr); b != nil {
		return c.brokerHandle(b, req)
	}
	return remoting.NewResponse(req, code.SystemError, "no such server "+addr)
}

func (c *Cluster) isNamesrv(addr string) bool {
	for _, ns := range c.NameServers {
		if ns == addr {
			return true
		}
	}
	return false
}

func (c *Cluster) broker(addr string) *Broker {
	for _, b := range c.Brokers {
		if b.Addr == addr {
			return b
		}
	}
	return nil
}

func ok(req *remoting.Command, body []byte) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	return resp
}

func fail(req *remoting.Command, c int32, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, c, fmt.Sprintf(format, args...))
}

// ClusterInfo computes the nameserver's cluster table.
func (c *Cluster) ClusterInfo() protocol.ClusterInfo {
	ci := protocol.ClusterInfo{BrokerAddrTable: map[string]protocol.BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for _, b := range c.Brokers {
		bd, ok := ci.BrokerAddrTable[b.Name]
		if !ok {
			bd = protocol.BrokerData{BrokerAddrs: map[int64]string{}, BrokerName: b.Name, Cluster: b.Cluster}
			names := ci.ClusterAddrTable[b.Cluster]
			ci.ClusterAddrTable[b.Cluster] = append(names, b.Name)
		}
		bd.BrokerAddrs[b.ID] = b.Addr
		ci.BrokerAddrTable[b.Name] = bd
	}
	return ci
}

// route computes a topic's route from the masters' topic tables.
func (c *Cluster) route(topic string) (protocol.TopicRouteData, bool) {
	r := protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	ci := c.ClusterInfo()
	seen := map[string]bool{}
	for _, b := range c.Brokers {
		if b.ID != protocol.MasterID {
			continue
		}
		tc, ok := b.Topics[topic]
		if !ok {
			continue
		}
		perm := tc.Perm
		if c.wiped[b.Name] {
			perm &^= protocol.PermWrite
		}
		r.QueueDatas = append(r.QueueDatas, protocol.QueueData{BrokerName: b.Name, Perm: perm, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums, TopicSysFlag: tc.TopicSysFlag})
		if !seen[b.Name] {
			seen[b.Name] = true
			r.BrokerDatas = append(r.BrokerDatas, ci.BrokerAddrTable[b.Name])
		}
	}
	// Cluster-name and broker-name topics, as Java brokers register them.
	for _, b := range c.Brokers {
		if b.ID == protocol.MasterID && (topic == b.Cluster || topic == b.Name) && !seen[b.Name] {
			seen[b.Name] = true
			r.QueueDatas = append(r.QueueDatas, protocol.QueueData{BrokerName: b.Name, Perm: protocol.PermInherit, ReadQueueNums: 16, WriteQueueNums: 16})
			r.BrokerDatas = append(r.BrokerDatas, ci.BrokerAddrTable[b.Name])
		}
	}
	if len(r.QueueDatas) == 0 {
		return r, false
	}
	c.addMappingInfo(topic, &r)
	return r, true
}

func (c *Cluster) allTopics(cluster string) []string {
	set := map[string]bool{}
	for _, b := range c.Brokers {
		if cluster != "" && b.Cluster != cluster {
			continue
		}
		for t := range b.Topics {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (c *Cluster) namesrv(addr string, req *remoting.Command) *remoting.Command {
	switch req.Code {
	case code.GetBrokerClusterInfo:
		return ok(req, protocol.MustMarshal(c.ClusterInfo()))
	case code.GetRouteInfoByTopic:
		t := req.Ext("topic")
		r, found := c.route(t)
		if !found {
			return fail(req, code.TopicNotExist, "No topic route info in name server for the topic: %s", t)
		}
		return ok(req, protocol.MustMarshal(r))
	case code.GetAllTopicListFromNameserver:
		return ok(req, protocol.MustMarshal(protocol.TopicList{TopicList: c.allTopics("")}))
	case code.GetTopicsByCluster:
		return ok(req, protocol.MustMarshal(protocol.TopicList{TopicList: c.allTopics(req.Ext("cluster"))}))
	case code.DeleteTopicInNamesrv:
		return ok(req, nil)
	case code.PutKVConfig:
		ns := req.Ext("namespace")
		if c.KV[ns] == nil {
			c.KV[ns] = map[string]string{}
		}
		c.KV[ns][req.Ext("key")] = req.Ext("value")
		return ok(req, nil)
	case code.GetKVConfig:
		v, found := c.KV[req.Ext("namespace")][req.Ext("key")]
		if !found {
			return fail(req, code.QueryNotFound, "No config item, Namespace: %s Key: %s", req.Ext("namespace"), req.Ext("key"))
		}
		resp := ok(req, nil)
		resp.SetExt("value", v)
		return resp
	case code.DeleteKVConfig:
		delete(c.KV[req.Ext("namespace")], req.Ext("key"))
		return ok(req, nil)
	case code.GetNamesrvConfig:
		return ok(req, []byte(props(c.NamesrvConfig[addr])))
	case code.UpdateNamesrvConfig:
		m := parseProps(string(req.Body))
		if c.NamesrvConfig[addr] == nil {
			c.NamesrvConfig[addr] = map[string]string{}
		}
		for k, v := range m {
			if k == "configStorePath" {
				return fail(req, code.NoPermission, "Can not update config in black list.")
			}
			c.NamesrvConfig[addr][k] = v
		}
		return ok(req, nil)
	case code.WipeWritePermOfBroker, code.AddWritePermOfBroker:
		name := req.Ext("brokerName")
		n := 0
		for _, b := range c.Brokers {
			if b.Name == name && b.ID == protocol.MasterID {
				n = len(b.Topics)
			}
		}
		c.wiped[name] = req.Code == code.WipeWritePermOfBroker
		resp := ok(req, nil)
		if req.Code == code.WipeWritePermOfBroker {
			resp.SetExt("wipeTopicCount", strconv.Itoa(n))
		} else {
			resp.SetExt("addTopicCount", strconv.Itoa(n))
		}
		return resp
	}
	return fail(req, code.RequestCodeNotSupported, " request type %d not supported", req.Code)
}

func (c *Cluster) brokerHandle(b *Broker, req *remoting.Command) *remoting.Command {
	switch req.Code {
	case code.UpdateAndCreateTopic:
		f := protocol.FieldsOf(req.ExtFields)
		tc := topicConfigOf(f)
		tc.Order = f.OptBool("order", false)
		if err := f.Err(); err != nil {
			return fail(req, code.InvalidParameter, "%v", err)
		}
		if err := protocol.ValidateTopic(tc.TopicName); err != nil {
			return fail(req, code.InvalidParameter, "%v", err)
		}
		add, del, good := protocol.ParseAttributes(req.Ext("attributes"))
		if !good {
			return fail(req, code.InvalidParameter, "bad attributes %q", req.Ext("attributes"))
		}
		if old, found := b.Topics[tc.TopicName]; found {
			for k, v := range old.Attributes {
				tc.Attributes[k] = v
			}
		}
		for k, v := range add {
			tc.Attributes["+"+k] = v
		}
		for _, k := range del {
			delete(tc.Attributes, "+"+k)
		}
		b.Topics[tc.TopicName] = tc
		return ok(req, nil)
	case code.UpdateAndCreateTopicList:
		var body struct {
			TopicConfigList []protocol.TopicConfig `json:"topicConfigList"`
		}
		if err := protocol.Unmarshal(req.Body, &body); err != nil || len(body.TopicConfigList) == 0 {
			return fail(req, code.InvalidParameter, "bad topic config list: %v", err)
		}
		for _, tc := range body.TopicConfigList {
			if err := protocol.ValidateTopic(tc.TopicName); err != nil {
				return fail(req, code.InvalidParameter, "%v", err)
			}
		}
		for _, tc := range body.TopicConfigList {
			if tc.Attributes == nil {
				tc.Attributes = map[string]string{}
			}
			b.Topics[tc.TopicName] = tc
		}
		return ok(req, nil)
	case code.UpdateAndCreateStaticTopic:
		return c.createStaticTopic(b, req)
	case code.DeleteTopicInBroker:
		delete(b.Topics, req.Ext("topic"))
		delete(b.Stats, req.Ext("topic"))
		delete(b.Mapping, req.Ext("topic"))
		return ok(req, nil)
	case code.GetTopicConfig:
		t := req.Ext("topic")
		tc, found := b.Topics[t]
		if !found {
			return fail(req, code.TopicNotExist, "No topic in this broker. topic: %s", t)
		}
		body := protocol.TopicConfigAndQueueMapping{
			Attributes: tc.Attributes, Order: tc.Order, Perm: tc.Perm, ReadQueueNums: tc.ReadQueueNums,
			TopicFilterType: tc.TopicFilterType, TopicName: tc.TopicName, TopicSysFlag: tc.TopicSysFlag,
			WriteQueueNums: tc.WriteQueueNums, MappingDetail: b.Mapping[t],
		}
		return ok(req, protocol.MustMarshal(body))
	case code.GetSystemTopicListFromBroker:
		// The reserved names and the topics a broker makes at boot.
		names := append(protocol.SystemTopicNames(), b.Cluster, b.Name, b.Cluster+"_REPLY_TOPIC")
		return ok(req, protocol.MustMarshal(protocol.TopicList{TopicList: names}))
	case code.GetAllTopicConfig:
		return ok(req, protocol.MustMarshal(protocol.TopicConfigSerializeWrapper{DataVersion: protocol.DataVersion{Counter: 1, Timestamp: 1700000000000}, TopicConfigTable: b.Topics}))
	case code.GetTopicStatsInfo:
		t := req.Ext("topic")
		tc, found := b.Topics[t]
		if !found {
			return fail(req, code.TopicNotExist, "topic[%s] not exist", t)
		}
		st, found := b.Stats[t]
		if !found {
			st = protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{}}
			for q := 0; q < max(tc.ReadQueueNums, tc.WriteQueueNums); q++ {
				st.OffsetTable[protocol.MessageQueue{Topic: t, BrokerName: b.Name, QueueID: q}] = protocol.TopicOffset{}
			}
		}
		body, err := protocol.MarshalMQKeyed(st)
		if err != nil {
			return fail(req, code.SystemError, "%v", err)
		}
		return ok(req, body)
	case code.QueryTopicConsumeByWho:
		return ok(req, protocol.MustMarshal(struct {
			GroupList []string `json:"groupList"`
		}{GroupList: append([]string{}, b.Groups[req.Ext("topic")]...)}))
	case code.GetBrokerRuntimeInfo:
		return ok(req, protocol.MustMarshal(protocol.KVTable{Table: b.Runtime}))
	case code.GetBrokerConfig:
		resp := ok(req, []byte(props(b.Config)))
		resp.SetExt("version", `{"counter":1,"stateVersion":0,"timestamp":1700000000000}`)
		return resp
	case code.UpdateBrokerConfig:
		for k, v := range parseProps(string(req.Body)) {
			b.Config[k] = v
		}
		return ok(req, nil)
	}
	return fail(req, code.RequestCodeNotSupported, " request type %d not supported", req.Code)
}

func props(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + "\n")
	}
	return b.String()
}

// parseProps is a minimal key=value parser (the fake's clients escape
// nothing unusual).
func parseProps(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// Sample addresses used by NewSample.
const (
	SampleNamesrv1 = "127.0.0.1:19876"
	SampleNamesrv2 = "127.0.0.1:19877"
	SampleBrokerA0 = "127.0.0.1:20911" // broker-a master
	SampleBrokerA1 = "127.0.0.1:20921" // broker-a slave
	SampleBrokerB0 = "127.0.0.1:20931" // broker-b master
	SampleBrokerC0 = "127.0.0.1:20941" // broker-c master, OtherCluster, down
)

// NewSample returns a fixed, populated fake: two nameservers; cluster
// DefaultCluster with broker-a (master and slave) and broker-b; cluster
// OtherCluster with broker-c, which is down. TopicTest lives on broker-a
// and broker-b; broker-a also has %RETRY%g1 and 40 topics Topic_<13i>. The
// runtime info, configs and stats are fixed values. mqadmin's golden files
// were captured from the Java tool run against this fake.
func NewSample() *Cluster {
	fc := New(SampleNamesrv1, SampleNamesrv2)
	a := fc.AddBroker("DefaultCluster", "broker-a", 0, SampleBrokerA0)
	s := fc.AddBroker("DefaultCluster", "broker-a", 1, SampleBrokerA1)
	b := fc.AddBroker("DefaultCluster", "broker-b", 0, SampleBrokerB0)
	fc.AddBroker("OtherCluster", "broker-c", 0, SampleBrokerC0)
	fc.Down[SampleBrokerC0] = true
	for _, br := range []*Broker{a, b} {
		br.Topics["TopicTest"] = protocol.TopicConfig{TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
		br.Groups["TopicTest"] = []string{"g1", "g2"}
	}
	a.Topics["%RETRY%g1"] = protocol.TopicConfig{TopicName: "%RETRY%g1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	a.Stats["TopicTest"] = protocol.TopicStatsTable{TopicPutTps: 3.5, OffsetTable: protocol.MQMap[protocol.TopicOffset]{
		{BrokerName: "broker-a", QueueID: 0, Topic: "TopicTest"}: {MinOffset: 0, MaxOffset: 120, LastUpdateTimestamp: 1700000000123},
		{BrokerName: "broker-a", QueueID: 1, Topic: "TopicTest"}: {MinOffset: 3, MaxOffset: 7},
	}}
	a.Runtime = map[string]string{
		"brokerVersionDesc": "V5_5_0", "brokerActive": "true", "putTps": "12.125 11.0 10.0", "getTransferredTps": "0.125 0 0",
		"sendThreadPoolQueueSize": "0", "sendThreadPoolQueueHeadWaitTimeMills": "0", "pullThreadPoolQueueSize": "1",
		"pullThreadPoolQueueHeadWaitTimeMills": "2", "pageCacheLockTimeMills": "0", "earliestMessageTimeStamp": "1700000000000",
		"commitLogDiskRatio": "0.123456", "timerReadBehind": "5", "timerOffsetBehind": "6", "timerCongestNum": "12345",
		"timerEnqueueTps": "1.25", "timerDequeueTps": "0.05", "msgPutTotalYesterdayMorning": "10", "msgPutTotalTodayMorning": "25",
		"msgPutTotalTodayNow": "40", "msgGetTotalYesterdayMorning": "3", "msgGetTotalTodayMorning": "9", "msgGetTotalTodayNow": "30",
	}
	s.Runtime = map[string]string{"brokerVersionDesc": "V5_5_0", "brokerActive": "false"}
	b.Config["msgHint"] = "hello world"
	for i := 0; i < 40; i++ {
		b.Config[fmt.Sprintf("someConfigKey%dx", i*7)] = strconv.Itoa(i)
		a.Topics[fmt.Sprintf("Topic_%d", i*13)] = protocol.NewTopicConfig(fmt.Sprintf("Topic_%d", i*13))
		a.Groups["TopicTest"] = append(a.Groups["TopicTest"], fmt.Sprintf("group-%d", i))
	}
	for i := 0; i < 20; i++ {
		fc.NamesrvConfig[SampleNamesrv1][fmt.Sprintf("nsKey%d", i)] = "v"
		fc.NamesrvConfig[SampleNamesrv2][fmt.Sprintf("nsKey%d", i)] = "w"
	}
	return fc
}
