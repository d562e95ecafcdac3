package e2e

import (
	"context"
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
// our nameserver and sends to it.
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
}
