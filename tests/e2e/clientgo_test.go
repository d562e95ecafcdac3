package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestClientGoAdminAndProducer: rocketmq-client-go's admin creates a topic
// on our broker, and a client-go producer resolves the topic's route from
// our nameserver and sends to it; the admin's other calls answer, and its
// DeleteTopic removes the topic from the nameserver.
func TestClientGoAdminAndProducer(t *testing.T) {
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	c := startCluster(t, framework.Options{Brokers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate("GoAdminTopic"), admin.WithBrokerAddrCreate(c.Brokers()[0].Addr()),
		admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4)); err != nil {
		t.Fatal(err)
	}
	topics, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tp := range topics.TopicList {
		found = found || tp == "GoAdminTopic"
	}
	if !found {
		t.Fatalf("GoAdminTopic not in the nameserver's topic list: %v", topics.TopicList)
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("go_admin_producer"), producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	seen := map[int]bool{}
	for i := 0; i < 8; i++ {
		res, err := p.SendSync(ctx, primitive.NewMessage("GoAdminTopic", []byte("hello")))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK || res.MessageQueue.BrokerName != "broker-a" {
			t.Fatalf("send %d: %v", i, res)
		}
		seen[res.MessageQueue.QueueId] = true
	}
	// The route said 4 write queues; round-robin visits all of them.
	if len(seen) != 4 {
		t.Fatalf("producer used queues %v, want 4 of them", seen)
	}

	// The rest of client-go's admin: publish queues and clusters of a
	// topic, every subscription group of a broker (201), and a deletion
	// the nameserver's topic list then lacks.
	mqs, err := adm.FetchPublishMessageQueues(ctx, "GoAdminTopic")
	if err != nil || len(mqs) != 4 {
		t.Fatalf("FetchPublishMessageQueues: %v %v", mqs, err)
	}
	clusters, err := adm.FetchClusterList("GoAdminTopic")
	if err != nil || len(clusters) != 1 || clusters[0] != "DefaultCluster" {
		t.Fatalf("FetchClusterList: %v %v", clusters, err)
	}
	groups, err := adm.GetAllSubscriptionGroup(ctx, c.Brokers()[0].Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := groups.SubscriptionGroupTable["TOOLS_CONSUMER"]; !ok || g.GroupName != "TOOLS_CONSUMER" || !g.ConsumeEnable || groups.DataVersion.Timestamp == 0 {
		t.Fatalf("GetAllSubscriptionGroup: TOOLS_CONSUMER %+v (present %v), data version %+v, %d groups", g, ok, groups.DataVersion, len(groups.SubscriptionGroupTable))
	}
	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete("GoAdminTopic"), admin.WithBrokerAddrDelete(c.Brokers()[0].Addr())); err != nil {
		t.Fatal(err)
	}
	topics, err = adm.FetchAllTopicList(ctx)
	if err != nil || slices.Contains(topics.TopicList, "GoAdminTopic") {
		t.Fatalf("topic list after DeleteTopic: %v %v", topics, err)
	}
}
