package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

const (
	slaveSyncTopic = "SlaveSyncTopic"
	slaveSyncGroup = "slave_sync_cg"
)

// A classic SLAVE copies its master's topics, subscription groups,
// consumer offsets, delay offsets and timer metrics within seconds (the copy period is shortened here),
// answers offset queries and pulls from that copy, and keeps it across a
// restart while the master is down (docs/operations.md, "Master and
// slave"). Reading messages from the slave needs CommitLog replication,
// which this test does not rely on.
func TestSlaveCopiesMasterMetadata(t *testing.T) {
	// Mostly waiting for metadata copies and broker restarts: runs beside
	// the other slow tests.
	t.Parallel()
	g := admin.NewSubscriptionGroupConfig(slaveSyncGroup)
	g.RetryMaxTimes, g.WhichBrokerWhenConsumeSlowly = 3, 1
	_, master, slave, ac, ctx := startMasterSlave(t, slaveSyncTopic, 4, g)
	for q := range 4 {
		if err := ac.UpdateConsumerOffset(ctx, master.Addr(), slaveSyncGroup, slaveSyncTopic, q, int64(10+q)); err != nil {
			t.Fatal(err)
		}
	}

	// Users and ACLs (the admin codes are served with auth off too).
	for _, req := range []struct {
		c    int32
		ext  map[string]string
		body string
	}{
		{code.AuthCreateUser, map[string]string{"username": "slavesync_u"}, `{"password":"pw"}`},
		{code.AuthCreateACL, map[string]string{"subject": "User:slavesync_u"}, `{"policies":[{"entries":[{"actions":["Pub"],"decision":"Allow","resource":"Topic:T*"}]}],"subject":"User:slavesync_u"}`},
	} {
		resp, err := ac.Invoke(ctx, master.Addr(), req.c, req.ext, []byte(req.body))
		if err != nil || resp.Code != code.Success {
			t.Fatalf("%s on the master: %v %+v", code.RequestName(req.c), err, resp)
		}
	}

	// The delay offsets and timer metrics: the slave answers with the
	// master's (their data versions are the master's).
	masterDelay, err := ac.GetAllDelayOffset(ctx, master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	masterTimer, err := ac.GetTimerMetrics(ctx, master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	copied := func() error {
		if d, err := ac.GetAllDelayOffset(ctx, slave.Addr()); err != nil || d.DataVersion != masterDelay.DataVersion {
			return fmt.Errorf("delay offsets on the slave: %+v %v, want the master's %+v", d, err, masterDelay)
		}
		if m, err := ac.GetTimerMetrics(ctx, slave.Addr()); err != nil || m.DataVersion != masterTimer.DataVersion {
			return fmt.Errorf("timer metrics on the slave: %+v %v, want the master's %+v", m, err, masterTimer)
		}
		for c, ext := range map[int32]map[string]string{code.AuthGetUser: {"username": "slavesync_u"}, code.AuthGetACL: {"subject": "User:slavesync_u"}} {
			resp, err := ac.Invoke(ctx, slave.Addr(), c, ext, nil)
			if err != nil {
				return err
			}
			if resp.Code != code.Success || !strings.Contains(string(resp.Body), "slavesync_u") {
				return fmt.Errorf("%s on the slave: %d %q %s", code.RequestName(c), resp.Code, resp.Remark, resp.Body)
			}
		}
		got, err := ac.GetTopicConfig(ctx, slave.Addr(), slaveSyncTopic)
		if err != nil {
			return fmt.Errorf("topic on the slave: %w", err)
		}
		if got.ReadQueueNums != 4 {
			return fmt.Errorf("topic on the slave: %+v", *got)
		}
		sg, err := ac.GetSubscriptionGroup(ctx, slave.Addr(), slaveSyncGroup)
		if err != nil {
			return fmt.Errorf("group on the slave: %w", err)
		}
		if sg.RetryMaxTimes != 3 {
			return fmt.Errorf("group on the slave: %+v", sg)
		}
		for q := range 4 {
			resp, err := ac.Invoke(ctx, slave.Addr(), code.QueryConsumerOffset, map[string]string{
				"consumerGroup": slaveSyncGroup, "topic": slaveSyncTopic, "queueId": strconv.Itoa(q)}, nil)
			if err != nil {
				return err
			}
			if resp.Code != code.Success || resp.ExtFields["offset"] != strconv.Itoa(10+q) {
				return fmt.Errorf("offset of queue %d on the slave: code %d %q offset %q", q, resp.Code, resp.Remark, resp.ExtFields["offset"])
			}
		}
		return nil
	}
	testutil.Eventually(t, 10*time.Second, copied)

	// The slave serves pulls (slaveReadEnable) of the copied topic; with
	// nothing to read and its master online it sends the consumer back to
	// the master.
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	resp, err := rc.Invoke(ctx, slave.Addr(), remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": slaveSyncGroup, "topic": slaveSyncTopic, "queueId": "0", "queueOffset": "10",
		"maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
		"subscription": "*", "expressionType": "TAG"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != code.PullRetryImmediately || resp.ExtFields["suggestWhichBrokerId"] != "0" {
		t.Fatalf("pull from the slave: code %d (%s) suggest %q", resp.Code, resp.Remark, resp.ExtFields["suggestWhichBrokerId"])
	}

	// With the master down, a restarted slave still has the copy.
	if err := master.Stop(); err != nil {
		t.Fatal(err)
	}
	slave.Restart(t)
	if err := copied(); err != nil {
		t.Fatalf("after the slave's restart: %v", err)
	}
}

// With slaveReadEnable=true and the master stopped, a consumer continues
// from the slave where the group's committed offset (copied from the
// master) says: the slave serves the replicated messages from there, and
// takes the group's next commit (Apache issue #1094: the master's copy
// overwrites it when the master is back). Needs CommitLog replication
// (broker/ha). The offset is read from the slave as Java clients do when
// the master is gone (findBrokerAddressInSubscribe falls back to any
// replica); client-go and our SDK read offsets from masters only.
func TestSlaveServesReadsFromCommittedOffset(t *testing.T) {
	// Mostly waiting for metadata copies and broker restarts: runs beside
	// the other slow tests.
	t.Parallel()
	const topic, group = "SlaveReadTopic", "slave_read_cg"
	c, master, slave, ac, ctx := startMasterSlave(t, topic, 1, admin.NewSubscriptionGroupConfig(group))
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}},
		Group: "slave_read_pg"})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	for i := range 10 {
		if _, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: fmt.Appendf(nil, "m-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ac.UpdateConsumerOffset(ctx, master.Addr(), group, topic, 0, 4); err != nil {
		t.Fatal(err)
	}
	queryOffset := func(addr string) (int64, error) {
		resp, err := ac.Invoke(ctx, addr, code.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": "0"}, nil)
		if err != nil {
			return -1, err
		}
		if resp.Code != code.Success {
			return -1, fmt.Errorf("QUERY_CONSUMER_OFFSET on %s: code %d %s", addr, resp.Code, resp.Remark)
		}
		return strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	}
	// The slave must also hold the topic's config before the master goes:
	// its max offset comes from the replicated CommitLog and its committed
	// offset from the offset copy, neither of which needs the topic table
	// (a copy made before CreateTopic reached the master, or a topic copy
	// that timed out while the offset copy succeeded, leaves it out), and
	// a slave without the topic answers pulls TOPIC_NOT_EXIST, as Apache's
	// PullMessageProcessor does; with the master stopped nothing copies it
	// later.
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := ac.GetTopicConfig(ctx, slave.Addr(), topic); err != nil {
			return fmt.Errorf("topic on the slave: %w", err)
		}
		if max, err := ac.GetMaxOffsetOf(ctx, slave.Addr(), topic, 0); err != nil || max != 10 {
			return fmt.Errorf("slave max offset %d, %v", max, err)
		}
		if off, err := queryOffset(slave.Addr()); err != nil || off != 4 {
			return fmt.Errorf("slave committed offset %d, %v", off, err)
		}
		return nil
	})

	if err := master.Stop(); err != nil {
		t.Fatal(err)
	}
	off, err := queryOffset(slave.Addr())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}},
		Group: group})
	started(t, pc, err)
	defer pc.Shutdown(context.Background())
	var got []string
	mq := protocol.MessageQueue{Topic: topic, BrokerName: framework.BrokerName(0), QueueID: 0}
	for off < 10 {
		res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off})
		if err != nil {
			t.Fatalf("pull from the slave at %d: %v", off, err)
		}
		if res.Status != client.PullFound {
			t.Fatalf("pull from the slave at %d: %v", off, res.Status)
		}
		for _, m := range res.Messages {
			got = append(got, string(m.Body))
		}
		off = res.NextBeginOffset
	}
	if want := "[m-4 m-5 m-6 m-7 m-8 m-9]"; fmt.Sprint(got) != want {
		t.Fatalf("read from the slave %v, want %s", got, want)
	}
	// The group's commit reaches the slave and is kept there.
	if resp, err := ac.Invoke(ctx, slave.Addr(), code.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "10"}, nil); err != nil || resp.Code != code.Success {
		t.Fatalf("commit to the slave: %v %+v", err, resp)
	}
	if off, err := queryOffset(slave.Addr()); err != nil || off != 10 {
		t.Fatalf("offset committed to the slave: %d, %v", off, err)
	}
}

// startMasterSlave starts one master and one slave (slaveReadEnable=true,
// metadata copied every second), creates topic (queues read and write
// queues) and group g on the master, and returns an admin client and a
// context of 20 s, both released at cleanup.
func startMasterSlave(t *testing.T, topic string, queues int, g admin.SubscriptionGroupConfig) (
	framework.Cluster, framework.Broker, framework.Broker, *admin.Client, context.Context) {
	t.Helper()
	c := startCluster(t, framework.Options{
		Brokers:  1,
		Replicas: 2,
		BrokerConf: map[string]string{
			"slaveSyncCheckInterval": "200",
			"slaveSyncFullInterval":  "1000",
		},
		PerBroker: func(_ string, id int) map[string]string {
			if id > 0 {
				return map[string]string{"slaveReadEnable": "true"}
			}
			return nil
		},
	})
	set := c.Set(framework.BrokerName(0))
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ac.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, protocol.PermRead|protocol.PermWrite
	if err := ac.CreateTopic(ctx, set[0].Addr(), tc, ""); err != nil {
		t.Fatal(err)
	}
	if err := ac.CreateSubscriptionGroup(ctx, set[0].Addr(), g); err != nil {
		t.Fatal(err)
	}
	return c, set[0], set[1], ac, ctx
}
