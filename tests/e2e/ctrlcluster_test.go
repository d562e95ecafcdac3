package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/netfault"
)

// ctrlBroker is one controller-mode broker process.
type ctrlBroker struct {
	addr, conf string
	proc       *harness.Proc
	// direct is where the process listens; addr, what it advertises,
	// differs only behind links.
	direct string
	links  *brokerLinks // nil unless ctrlClusterOptions.Links
}

// brokerLinks put a broker behind netfault proxies, so that a test can
// partition it as a network would: front at its advertised address
// (brokerIP1, a loopback address of its own, with its listenPort), which
// clients, controllers and the other replicas reach; ha at its advertised
// HA address (brokerIP2:haListenPort), where slaves replicate from when it
// is master; out for its own connections to each nameserver
// (namesrvAddr). Its connections to the controllers pass the controllers'
// own proxies (ctrlCluster.ctrlProxies): a broker asks the controllers of
// controllerAddr who leads and then talks to the leader at the address
// the leader advertises.
type brokerLinks struct {
	front, ha *netfault.Proxy
	out       []*netfault.Proxy
}

// partition cuts (netfault.Blackhole) or heals (netfault.Pass) every link
// of broker b: nobody reaches it through its advertised addresses, and it
// reaches no controller and no nameserver. Clients on its side of the
// partition reach it at b.direct.
func (c *ctrlCluster) partition(b *ctrlBroker, m netfault.Mode) {
	for _, p := range append([]*netfault.Proxy{b.links.front, b.links.ha}, b.links.out...) {
		p.SetMode(m)
	}
	for _, p := range c.ctrlProxies {
		if m == netfault.Pass {
			p.SetModeFor(nil, netfault.Pass)
		} else {
			p.SetModeFor(netfault.FromProcess(b.proc.Pid()), m)
		}
	}
}

// ctrlCluster is the controller-mode topology of the failover tests
// (docs/replication.md, controller mode): three nameservers with embedded
// controllers and one broker set of three replicas with
// allAckInSyncStateSet=true, the topic created on every replica.
type ctrlCluster struct {
	cluster     string
	name, topic string
	master      string // the first master
	bin         string
	ctrlAddrs   []string // as the controllers advertise them
	nsAddrs     []string
	// ctrlProxies (Links only) stand at the controllers' advertised
	// addresses, in front of where they listen.
	ctrlProxies []*netfault.Proxy
	namesrvs    []*harness.Proc
	// nsStart starts nameserver i (again) on its config, port and data
	// directory; nsDirs[i] holds its controller's store.
	nsStart []func(t *testing.T) *harness.Proc
	nsDirs  []string
	brokers []*ctrlBroker
	rc      *remoting.Client
	ac      *admin.Client
}

// ctrlClusterOptions vary the topology per test.
type ctrlClusterOptions struct {
	Cluster, Topic string
	// Broker overrides the brokers' default properties; PerBroker (if
	// set) then those of replica i.
	Broker    map[string]string
	PerBroker func(i int) map[string]string
	// Links puts each broker behind netfault proxies (brokerLinks).
	Links bool
}

// startCtrlCluster starts the topology and waits until a master serves
// with both slaves in its SyncStateSet. Processes stop at cleanup.
func startCtrlCluster(t *testing.T, o ctrlClusterOptions) *ctrlCluster {
	t.Helper()
	rlog.SetLogLevel("error")
	c := &ctrlCluster{cluster: o.Cluster, name: "broker-a", topic: o.Topic, bin: harness.BuildBinaries(t, harness.Namesrv, harness.Broker)}

	// Nameservers, each with a controller on its own peer address.
	var peers, ctrlListen []string
	// LatePorts: these ports are bound only as the nameservers start,
	// while the ones started first already dial (and proxies listen);
	// an ephemeral port could be taken meanwhile.
	for i := range 3 {
		addr := harness.LateAddr(t)
		ctrlListen = append(ctrlListen, addr)
		if o.Links {
			// Advertised on a loopback address of its own, listening on
			// 127.0.0.1 (the nameserver's bindAddress) behind a proxy.
			_, port, _ := strings.Cut(addr, ":")
			p := listenProxy(t, fmt.Sprintf("127.0.0.%d:%s", 21+i, port), addr)
			c.ctrlProxies = append(c.ctrlProxies, p)
			addr = p.Addr()
		}
		c.ctrlAddrs = append(c.ctrlAddrs, addr)
		peers = append(peers, fmt.Sprintf("n%d-%s", i, c.ctrlAddrs[i]))
	}
	for i := range 3 {
		dir := t.TempDir()
		conf := filepath.Join(dir, "namesrv.conf")
		props := strings.Join([]string{
			"bindAddress=127.0.0.1", "enableControllerInNamesrv=true", "controllerDLegerGroup=" + o.Cluster,
			"controllerDLegerPeers=" + strings.Join(peers, ";"), fmt.Sprintf("controllerDLegerSelfId=n%d", i),
			"controllerStorePath=" + filepath.Join(dir, "controller"),
			"scanNotActiveBrokerInterval=500", "scanInactiveMasterInterval=500", "notifyBrokerRoleChanged=true",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		port := harness.LatePort(t)
		c.nsAddrs = append(c.nsAddrs, fmt.Sprintf("127.0.0.1:%d", port))
		start := func(t *testing.T) *harness.Proc {
			p := harness.StartProcessWith(t, harness.ProcOptions{Name: fmt.Sprintf("namesrv-n%d", i)}, filepath.Join(c.bin, harness.Namesrv),
				"-c", conf, "--listen-port", strconv.Itoa(port), "--data-dir", dir)
			p.WaitTCP(t, ctrlListen[i], 15*time.Second)
			return p
		}
		c.nsStart = append(c.nsStart, start)
		c.nsDirs = append(c.nsDirs, dir)
		c.namesrvs = append(c.namesrvs, start(t))
	}

	c.rc = remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { c.rc.Close() })
	ac, err := admin.New(admin.Config{NameServers: c.nsAddrs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Close() })
	c.ac = ac
	// Brokers that find no controller leader retry only after 5 s.
	testutil.WaitFor(t, 15*time.Second, "a controller leader", func() bool { return c.leader() >= 0 })

	c.brokers = make([]*ctrlBroker, 3)
	for i := range c.brokers {
		dir := t.TempDir()
		// The broker binds port after its proxies listen on port 0.
		port, haPort := harness.LatePort(t), harness.LatePort(t)
		b := &ctrlBroker{addr: fmt.Sprintf("127.0.0.1:%d", port), direct: fmt.Sprintf("127.0.0.1:%d", port), conf: filepath.Join(dir, "broker.conf")}
		nss, ip := c.nsAddrs, "127.0.0.1"
		if o.Links {
			ip = fmt.Sprintf("127.0.0.%d", 11+i)
			b.addr = fmt.Sprintf("%s:%d", ip, port)
			b.links = &brokerLinks{front: listenProxy(t, b.addr, b.direct), ha: listenProxy(t, fmt.Sprintf("%s:%d", ip, haPort), fmt.Sprintf("127.0.0.1:%d", haPort))}
			nss = nil
			for _, a := range c.nsAddrs {
				p := listenProxy(t, "127.0.0.1:0", a)
				b.links.out = append(b.links.out, p)
				nss = append(nss, p.Addr())
			}
		}
		props := framework.BrokerProps(o.Cluster, c.name, 0, port, strings.Join(nss, ";"), dir, map[string]string{
			"brokerId": "-1", "brokerRole": "SLAVE", "brokerIP1": ip, "brokerIP2": ip,
			"enableControllerMode": "true", "controllerAddr": strings.Join(c.ctrlAddrs, ";"),
			"allAckInSyncStateSet": "true", "haListenPort": strconv.Itoa(haPort),
			"brokerHeartbeatInterval": "300", "controllerHeartBeatTimeoutMills": "3000", "masterLeaseMillis": "2000",
			"syncBrokerMetadataPeriod": "1000", "syncControllerMetadataPeriod": "2000", "checkSyncStateSetPeriod": "1000",
			"haMaxTimeSlaveNotCatchup": "3000", "haSendHeartbeatInterval": "300", "registerNameServerPeriod": "10000",
			// client-go refreshes routes every 30 s: until then a
			// checker may pull from an old master's address, which is a
			// slave after a failover; without slave reads it would answer
			// SYSTEM_BUSY for the rest of the test.
			"slaveReadEnable": "true",
		}, o.Broker)
		if o.PerBroker != nil {
			framework.MergeProps(props, o.PerBroker(i))
		}
		if err := framework.WriteProps(b.conf, props); err != nil {
			t.Fatal(err)
		}
		b.start(t, c.bin, i)
		c.brokers[i] = b
	}

	testutil.WaitFor(t, 20*time.Second, "a master registered", func() bool { c.master = c.masterAddr(); return c.master != "" })
	// Generous: on a loaded machine the controllers may lose their leader
	// (raft heartbeats late) and the master's set changes are refused
	// until one is elected again.
	testutil.WaitFor(t, 30*time.Second, "both slaves in the SyncStateSet", func() bool {
		ri, ok := c.syncState()
		return ok && len(ri.InSyncReplicas) == 3 && harness.HAStatus(t, c.rc, c.master).InSyncSlaveNums == 2
	})
	for _, b := range c.brokers {
		createTopic(t, c.rc, b.addr, c.topic)
	}
	return c
}

// listenProxy starts a netfault proxy on addr to target, closed at cleanup.
func listenProxy(t *testing.T, addr, target string) *netfault.Proxy {
	t.Helper()
	p, err := netfault.ListenOn(addr, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// leader is the index of the controller that reports itself leader, or -1.
// Controllers whose process exited are not asked.
func (c *ctrlCluster) leader() int {
	for i, a := range c.ctrlAddrs {
		if c.namesrvs[i].Exited() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.rc.Invoke(ctx, a, remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		cancel()
		if err != nil {
			continue
		}
		if l := resp.Ext(protocol.HdrControllerLeaderAddress); l != "" {
			for j, b := range c.ctrlAddrs {
				if b == l && !c.namesrvs[j].Exited() {
					return j
				}
			}
		}
	}
	return -1
}

// syncState is the broker set's replica info at the controller leader
// (what `mqadmin getSyncStateSet` prints); ok is false while no live
// controller answers.
func (c *ctrlCluster) syncState() (protocol.ReplicasInfo, bool) {
	ri, err := c.syncStateWhy()
	return ri, err == nil
}

// syncStateWhy is syncState with the reason when no answer is had: each
// controller's error, or the set missing from the first answer (a wait's
// failure message then says what the test saw).
func (c *ctrlCluster) syncStateWhy() (protocol.ReplicasInfo, error) {
	var errs []error
	for i, a := range c.ctrlAddrs {
		if c.namesrvs[i].Exited() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		info, err := c.ac.GetSyncStateData(ctx, a, []string{c.name})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("controller %s after %v: %w", a, time.Since(start).Round(time.Millisecond), err))
			continue
		}
		ri, ok := info.ReplicasInfoTable[c.name]
		if !ok {
			return ri, fmt.Errorf("controller %s knows no set %s", a, c.name)
		}
		return ri, nil
	}
	if len(errs) == 0 {
		return protocol.ReplicasInfo{}, errors.New("no controller is running")
	}
	return protocol.ReplicasInfo{}, errors.Join(errs...)
}

// waitElected waits until a controller answers with a master other than
// before's at a later epoch, and returns that set; a failure says what the
// controllers answered last.
func (c *ctrlCluster) waitElected(t *testing.T, timeout time.Duration, before protocol.ReplicasInfo) protocol.ReplicasInfo {
	t.Helper()
	var next protocol.ReplicasInfo
	testutil.Eventually(t, timeout, func() error {
		var err error
		next, err = c.syncStateWhy()
		switch {
		case err != nil:
			return fmt.Errorf("waiting for a slave elected: %w", err)
		case next.MasterEpoch > before.MasterEpoch && next.MasterBrokerID > 0 && next.MasterBrokerID != before.MasterBrokerID:
			return nil
		}
		return fmt.Errorf("waiting for a slave elected: master %d at epoch %d (before: %d at %d)", next.MasterBrokerID, next.MasterEpoch, before.MasterBrokerID, before.MasterEpoch)
	})
	return next
}

// masterAddr is the address the nameservers route id 0 of the set to
// ("" while none).
func (c *ctrlCluster) masterAddr() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ci, err := c.ac.GetBrokerClusterInfo(ctx)
	if err != nil {
		return ""
	}
	return ci.BrokerAddrTable[c.name].BrokerAddrs[0]
}

// masterAddrs is brokerId 0 of the set on each nameserver, in c.nsAddrs
// order ("" where a nameserver has none or does not answer).
func (c *ctrlCluster) masterAddrs() []string {
	out, _ := c.masterAddrsWhy()
	return out
}

// masterAddrsWhy is masterAddrs with what each nameserver answered, for a
// failed wait's message: its route, its error, or that its process exited.
func (c *ctrlCluster) masterAddrsWhy() ([]string, []string) {
	out, why := make([]string, len(c.nsAddrs)), make([]string, len(c.nsAddrs))
	for i, ns := range c.nsAddrs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		resp, err := c.rc.Invoke(ctx, ns, remoting.NewRequest(code.GetBrokerClusterInfo, nil, nil))
		cancel()
		switch {
		case err != nil:
			why[i] = fmt.Sprintf("%s: %v after %v", ns, err, time.Since(start).Round(time.Millisecond))
			if c.namesrvs[i].Exited() {
				why[i] += " (its process exited)"
			}
			continue
		case resp.Code != code.Success:
			why[i] = fmt.Sprintf("%s: code %d %s", ns, resp.Code, resp.Remark)
			continue
		}
		var ci protocol.ClusterInfo
		if err := protocol.Unmarshal(resp.Body, &ci); err != nil {
			why[i] = fmt.Sprintf("%s: %v", ns, err)
			continue
		}
		out[i] = ci.BrokerAddrTable[c.name].BrokerAddrs[0]
		why[i] = fmt.Sprintf("%s: %v", ns, ci.BrokerAddrTable[c.name].BrokerAddrs)
	}
	// With Links, each broker reaches nameserver i through its own proxy:
	// one that could not reach the nameserver dropped registrations.
	for _, b := range c.brokers {
		if b == nil || b.links == nil {
			continue
		}
		for i, p := range b.links.out {
			if n, err := p.DialFailures(); n > 0 {
				why[i] += fmt.Sprintf(" [%s's link failed %d dials, last: %v]", b.addr, n, err)
			}
		}
	}
	return out, why
}

// waitRouted waits until every nameserver names master as the set's
// brokerId 0. Nameservers are independent and a client takes a route
// from one of them (client-go: the next in turn) and keeps it for 30 s,
// so one nameserver answering is not enough before a fresh producer
// sends. A failure says what each nameserver routes.
func (c *ctrlCluster) waitRouted(t *testing.T, master string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		addrs, why := c.masterAddrsWhy()
		for _, a := range addrs {
			if a != master {
				return fmt.Errorf("waiting for every nameserver routing to %s; they route %s", master, strings.Join(why, "; "))
			}
		}
		return nil
	})
}

// broker returns the replica listening at addr.
func (c *ctrlCluster) broker(t *testing.T, addr string) *ctrlBroker {
	t.Helper()
	for _, b := range c.brokers {
		if b.addr == addr {
			return b
		}
	}
	t.Fatalf("no replica at %s", addr)
	return nil
}

// sendFresh sends n messages through a new producer (fresh routes) and
// waits for SEND_OK on each, retrying a send for up to 10 s.
func (c *ctrlCluster) sendFresh(t *testing.T, group string, n int) {
	t.Helper()
	c.sendFreshTo(t, c.topic, group, n)
}

// sendFreshTo is sendFresh to topic.
func (c *ctrlCluster) sendFreshTo(t *testing.T, topic, group string, n int) {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.nsAddrs)),
		producer.WithGroupName(group), producer.WithInstanceName(group), producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	for i := range n {
		testutil.Eventually(t, 10*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, fmt.Appendf(nil, "%s-%d", group, i)))
			if err != nil {
				return err
			}
			if res.Status != primitive.SendOK {
				return fmt.Errorf("status %v", res.Status)
			}
			return nil
		})
	}
}

// waitFollows waits until the replica at addr is a slave holding exactly
// the master's log: same end, same epochs (it truncated to the common
// point and copied the new epoch).
func (c *ctrlCluster) waitFollows(t *testing.T, addr, master string, timeout time.Duration) {
	t.Helper()
	testutil.WaitFor(t, timeout, addr+" following the master "+master, func() bool {
		e, n := epochCache(t, c.rc, addr), epochCache(t, c.rc, master)
		return e.BrokerID != 0 && n.BrokerID == 0 && e.MaxOffset == n.MaxOffset && slices.Equal(trimEnds(e.EpochList), trimEnds(n.EpochList))
	})
}

// commitOffset commits a consumer offset to the broker at addr
// (UPDATE_CONSUMER_OFFSET), as a consumer's offset store does.
func (c *ctrlCluster) commitOffset(t *testing.T, addr, group, topic string, queue int, offset int64) {
	t.Helper()
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue), "commitOffset": strconv.FormatInt(offset, 10)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code.UpdateConsumerOffset, ext, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("commit offset %s %s %d at %s: %v %v", group, topic, queue, addr, err, resp)
	}
}

// consumerOffset is the broker's offset of a group's queue
// (QUERY_CONSUMER_OFFSET); -1 when it has none.
func (c *ctrlCluster) consumerOffset(t *testing.T, addr, group, topic string, queue int) int64 {
	t.Helper()
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code.QueryConsumerOffset, ext, nil))
	if err != nil {
		t.Fatalf("query offset %s %s %d at %s: %v", group, topic, queue, addr, err)
	}
	if resp.Code != code.Success {
		return -1
	}
	n, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		t.Fatalf("query offset at %s: %v (%v)", addr, err, resp.ExtFields)
	}
	return n
}

// logOffsets logs where the checker group stands on each replica, for a
// failure report.
func (c *ctrlCluster) logOffsets(t *testing.T, group string) {
	t.Helper()
	for _, b := range c.brokers {
		for q := range 4 {
			ext := map[string]string{"topic": c.topic, "queueId": strconv.Itoa(q), "consumerGroup": group}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			mo, err1 := c.rc.Invoke(ctx, b.addr, remoting.NewRequest(code.GetMaxOffset, ext, nil))
			co, err2 := c.rc.Invoke(ctx, b.addr, remoting.NewRequest(code.QueryConsumerOffset, ext, nil))
			cancel()
			if err1 != nil || err2 != nil {
				t.Logf("%s queue %d: %v %v", b.addr, q, err1, err2)
				continue
			}
			t.Logf("%s queue %d: max %v, consumer offset %v", b.addr, q, mo.ExtFields, co.ExtFields)
		}
	}
}

func (b *ctrlBroker) start(t *testing.T, bin string, i int) {
	t.Helper()
	name := "broker-a-" + strconv.Itoa(i)
	if i < 0 {
		name = "broker-a-restarted"
	}
	b.proc = harness.StartProcessWith(t, harness.ProcOptions{Name: name}, filepath.Join(bin, harness.Broker), "-c", b.conf)
	b.proc.WaitTCP(t, b.direct, 30*time.Second)
}

func trimEnds(l []protocol.EpochEntry) []protocol.EpochEntry {
	out := make([]protocol.EpochEntry, len(l))
	for i, e := range l {
		out[i] = protocol.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
}

func epochCache(t *testing.T, rc *remoting.Client, addr string) protocol.EpochEntryCache {
	t.Helper()
	return harness.Query[protocol.EpochEntryCache](t, rc, addr, code.GetBrokerEpochCache)
}

func createTopic(t *testing.T, rc *remoting.Client, addr, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("create topic on %s: %v %v", addr, err, resp)
	}
}

// topicKnown reports whether the broker at addr has topic in its table.
func topicKnown(t *testing.T, rc *remoting.Client, addr, topic string) bool {
	t.Helper()
	w := harness.Query[protocol.TopicConfigAndMappingSerializeWrapper](t, rc, addr, code.GetAllTopicConfig)
	_, ok := w.TopicConfigTable[topic]
	return ok
}
