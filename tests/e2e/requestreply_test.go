package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestRequestReplyClientGo: a client-go requester (Producer.Request and
// RequestAsync) and a client-go responder (push consumer + producer
// replying with SEND_REPLY_MESSAGE): the broker pushes each reply to the
// requester (PUSH_REPLY_MESSAGE_TO_CLIENT) and stores it in
// <cluster>_REPLY_TOPIC.
func TestRequestReplyClientGo(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error")
	c := startCluster(t, framework.Options{Brokers: 1})
	const topic = "RequestTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})

	replier, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("reply_pg"),
		producer.WithInstanceName("responder"), producer.WithRetry(1))
	started(t, replier, err)
	defer replier.Shutdown()
	responder, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("request_cg"),
		consumer.WithInstance("responder"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	var replyErrs sync.Map
	goSubscribed(t, responder, err, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				reply, err := consumer.CreateReplyMessage(m, nil)
				if err != nil {
					replyErrs.Store(string(m.Body), err)
					continue
				}
				// client-go's CreateReplyMessage drops the body it is given.
				reply.Body = []byte("reply to " + string(m.Body))
				if _, err := replier.SendSync(ctx, reply); err != nil {
					replyErrs.Store(string(m.Body), err)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	defer responder.Shutdown()

	requester, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("request_pg"),
		producer.WithInstanceName("requester"), producer.WithRetry(1))
	started(t, requester, err)
	defer requester.Shutdown()

	// The responder needs a rebalance before it consumes: retry the first
	// request until a reply comes.
	var first *primitive.Message
	testutil.Eventually(t, 60*time.Second, func() error {
		var err error
		first, err = requester.Request(ctx, 3*time.Second, primitive.NewMessage(topic, []byte("ping-0")))
		return err
	})
	if string(first.Body) != "reply to ping-0" {
		t.Fatalf("reply %q", first.Body)
	}
	for i := 1; i <= 5; i++ {
		body := fmt.Sprintf("ping-%d", i)
		reply, err := requester.Request(ctx, 5*time.Second, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("request %s: %v", body, err)
		}
		if string(reply.Body) != "reply to "+body || reply.GetProperty(primitive.PropertyCorrelationID) == "" {
			t.Fatalf("reply to %s: %q %v", body, reply.Body, reply.GetProperties())
		}
	}
	// RequestAsync. client-go runs a callback twice (on the reply, and
	// again when it drops the finished request from its cache): count
	// distinct replies.
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 16)
	for i := range 3 {
		body := fmt.Sprintf("async-%d", i)
		err := requester.RequestAsync(ctx, 5*time.Second, func(_ context.Context, m *primitive.Message, err error) {
			if err != nil {
				done <- result{err: err}
				return
			}
			done <- result{body: string(m.Body)}
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 3 {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("async request: %v", r.err)
			}
			if r.body != "reply to async-0" && r.body != "reply to async-1" && r.body != "reply to async-2" {
				t.Fatalf("async reply %q", r.body)
			}
			got[r.body] = true
		case <-time.After(15 * time.Second):
			t.Fatalf("async replies: got %v", got)
		}
	}
	// The first request may precede the requester's first heartbeat: the
	// broker then has no channel to push its reply to (Java's broker
	// neither) and the responder gets SYSTEM_ERROR. Every later reply must
	// go through.
	replyErrs.Range(func(k, v any) bool {
		if k != "ping-0" {
			t.Errorf("responder could not reply to %v: %v", k, v)
		}
		return true
	})
	// The replies are stored in DefaultCluster_REPLY_TOPIC too.
	r := newTopicReader(t, c.NamesrvAddr(), "reply_reader")
	testutil.Eventually(t, 10*time.Second, func() error {
		bodies, err := r.bodies(ctx, "DefaultCluster_REPLY_TOPIC")
		if err != nil {
			return err
		}
		for i := 1; i <= 5; i++ {
			if bodies[fmt.Sprintf("reply to ping-%d", i)] != 1 {
				return fmt.Errorf("reply topic holds %v", bodies)
			}
		}
		return nil
	})
}
