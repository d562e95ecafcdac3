package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestClientGoPullConsumer: client-go's pull consumer in subscribe mode
// polls every message once (rebalanced queues) and its ACKs commit the
// offsets the broker then holds (QUERY_CONSUMER_OFFSET); PullFrom reads a
// queue from a given offset, OffsetForTimestamp finds where the messages
// sent after a moment begin.
func TestClientGoPullConsumer(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error")
	c := startCluster(t, framework.Options{Brokers: 1})
	const topic, group, n = "GoPullTopic", "go_pull_cg", 40
	addr := c.Brokers()[0].Addr()
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	createTopic(t, rc, addr, topic)
	testutil.Eventually(t, 10*time.Second, func() error {
		if out, err := c.MQAdmin(t, "topicRoute", "-t", topic); err != nil {
			return fmt.Errorf("route of %s: %v: %s", topic, err, out)
		}
		return nil
	})
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})
	p := goProducer(t, c.NamesrvAddr(), "go_pull_pg", false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids := map[string]string{}
	var mid int64
	for i := range n {
		if i == n/2 {
			time.Sleep(300 * time.Millisecond)
			mid = time.Now().UnixMilli()
			time.Sleep(300 * time.Millisecond)
		}
		body := fmt.Sprintf("gp-%d", i)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
		ids[body] = res.MsgID
	}

	pc, err := rocketmq.NewPullConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	got := map[string]int{}
	for deadline := time.Now().Add(30 * time.Second); len(got) < n && time.Now().Before(deadline); {
		cr, err := pc.Poll(ctx, time.Second)
		if consumer.IsNoNewMsgError(err) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		for _, m := range cr.GetMsgList() {
			got[string(m.Body)]++
			if ids[string(m.Body)] != m.MsgId {
				t.Errorf("%s polled with id %s, sent as %s", m.Body, m.MsgId, ids[string(m.Body)])
			}
		}
		pc.ACK(ctx, cr, consumer.ConsumeSuccess)
	}
	if len(got) != n {
		t.Fatalf("polled %d distinct of %d", len(got), n)
	}
	for b, k := range got {
		if k != 1 {
			t.Errorf("%s polled %d times", b, k)
		}
	}
	if err := pc.PersistOffset(ctx, topic); err != nil {
		t.Fatal(err)
	}
	// The acknowledged offsets are the broker's: they add up to n.
	// client-go sends UPDATE_CONSUMER_OFFSET one-way, so PersistOffset
	// returns before the broker has them (a query right after it found
	// queue 0 without an offset in a CI run): wait for them.
	testutil.Eventually(t, 10*time.Second, func() error {
		var committed int64
		for q := range 4 {
			resp := roundTrip(t, addr, remoting.NewRequest(code.QueryConsumerOffset, map[string]string{
				"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q), "setZeroIfNotFound": "false",
			}, nil))
			if resp.Code != code.Success {
				return fmt.Errorf("offset of queue %d: %d %s", q, resp.Code, resp.Remark)
			}
			off, _ := strconv.ParseInt(resp.Ext("offset"), 10, 64)
			committed += off
		}
		if committed != n {
			return fmt.Errorf("committed offsets add up to %d, want %d", committed, n)
		}
		return nil
	})

	// PullFrom and OffsetForTimestamp on each queue: from the offset of
	// the moment to the queue's end come exactly the second half.
	mqs, err := pc.(interface {
		GetTopicRouteInfo(string) ([]*primitive.MessageQueue, error)
	}).GetTopicRouteInfo(topic)
	if err != nil || len(mqs) != 4 {
		t.Fatalf("queues of %s: %v %v", topic, mqs, err)
	}
	later := map[string]bool{}
	for _, mq := range mqs {
		from, err := pc.OffsetForTimestamp(mq, mid)
		if err != nil {
			t.Fatalf("offset for timestamp on %v: %v", mq, err)
		}
		res, err := pc.PullFrom(ctx, mq, from, 32)
		if err != nil {
			t.Fatalf("pull %v from %d: %v", mq, from, err)
		}
		for _, m := range res.GetMessageExts() {
			later[string(m.Body)] = true
		}
	}
	for i := range n {
		if want := i >= n/2; later[fmt.Sprintf("gp-%d", i)] != want {
			t.Fatalf("pulled from the offsets for the middle timestamp: %v; gp-%d there: %v, want %v", later, i, !want, want)
		}
	}
}
