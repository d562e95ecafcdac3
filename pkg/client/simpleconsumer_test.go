package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

func startSimple(t *testing.T, c *clienttest.Cluster, topic, expr string) *client.SimpleConsumer {
	t.Helper()
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: common(c), Group: "SG", AwaitDuration: 100 * time.Millisecond, ConsumeFrom: client.ConsumeFromFirstOffset,
	})
	return clienttest.Subscribed(t, sc, err, topic, expr)
}

func TestSimpleConsumerReceiveAck(t *testing.T) {
	c := startTopic(t, 2)
	br := c.Brokers[0]
	sc := startSimple(t, c, "T", "*")
	ctx := context.Background()
	msgs, err := sc.Receive(ctx, 4, 30*time.Second)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("receive on an empty topic: %v, %v", msgs, err)
	}
	p := startProducer(t, c, nil)
	for i := range 4 {
		m := msg("T", "p"+strconv.Itoa(i))
		if _, err := p.SendSync(ctx, m, client.WithQueue(queueOf("T", "broker-a", i%2))); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err = sc.Receive(ctx, 8, 30*time.Second)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("receive: %d messages, %v", len(msgs), err)
	}
	pop := br.Calls(code.PopMessage)
	for _, m := range msgs {
		h := client.ReceiptHandle(m)
		f := strings.Fields(h)
		// ckQueueOffset popTime invisibleTime reviveQid retry broker queueId offset
		if len(f) != 8 || f[0] != "0" || f[2] != "30000" || f[3] != "3" || f[4] != "0" || f[5] != "broker-a" ||
			f[6] != strconv.Itoa(int(m.QueueID)) || f[7] != strconv.FormatInt(m.QueueOffset, 10) {
			t.Fatalf("handle %q of queue %d offset %d", h, m.QueueID, m.QueueOffset)
		}
		if m.Topic != "T" || m.Property(message.PropertyFirstPopTime) != f[1] {
			t.Fatalf("message %+v", m)
		}
	}
	for _, m := range msgs {
		if err := sc.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	acks := br.Acks()
	if len(acks) != 4 {
		t.Fatalf("acks %v", acks)
	}
	a := acks[0]
	if a["consumerGroup"] != "SG" || a["topic"] != "T" || a["extraInfo"] != client.ReceiptHandle(msgs[0]) ||
		a["offset"] != strconv.FormatInt(msgs[0].QueueOffset, 10) || a["queueId"] != strconv.Itoa(int(msgs[0].QueueID)) || a["bname"] != "broker-a" {
		t.Fatalf("ack header %v", a)
	}
	if pop != 2 {
		t.Fatalf("%d pops, want 2", pop)
	}

	// An expired handle: the broker's code comes back as a ResponseError.
	br.FailAcks(code.NoMessage)
	if err := sc.Ack(ctx, msgs[0]); !client.IsCode(err, code.NoMessage) {
		t.Fatalf("ack of an expired handle: %v", err)
	}
	bad := msg("T", "x")
	if err := sc.Ack(ctx, bad); err == nil {
		t.Fatal("ack without a handle accepted")
	}
	bad.SetProperty(message.PropertyPopCK, "1 2 3")
	if err := sc.Ack(ctx, bad); err == nil {
		t.Fatal("ack with a malformed handle accepted")
	}
}

func TestSimpleConsumerChangeInvisibleTime(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	sc := startSimple(t, c, "T", "*")
	ctx := context.Background()
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "a")
	msgs, err := sc.Receive(ctx, 1, 10*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive %v %v", msgs, err)
	}
	m := msgs[0]
	old := client.ReceiptHandle(m)
	if err := sc.ChangeInvisibleTime(ctx, m, 45*time.Second); err != nil {
		t.Fatal(err)
	}
	ch := br.InvisibleChanges()[0]
	if ch["extraInfo"] != old || ch["invisibleTime"] != "45000" || ch["offset"] != "0" || ch["topic"] != "T" {
		t.Fatalf("change header %v", ch)
	}
	f := strings.Fields(client.ReceiptHandle(m))
	// Java's new handle: the message's offset as checkpoint offset, the
	// answer's popTime/invisibleTime/reviveQid.
	if len(f) != 8 || f[0] != "0" || f[2] != "45000" || f[3] != "5" || f[5] != "broker-a" || f[7] != "0" {
		t.Fatalf("new handle %q", client.ReceiptHandle(m))
	}
	for _, d := range []time.Duration{0, time.Millisecond, 13 * time.Hour} {
		if err := sc.ChangeInvisibleTime(ctx, m, d); err == nil {
			t.Fatalf("invisible time %v accepted", d)
		}
	}
}

// Brokers filter pops by tag hash only: the consumer drops (and acks) the
// messages whose tag it did not ask for.
func TestSimpleConsumerFiltersTags(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	sc := startSimple(t, c, "T", "keep")
	ctx := context.Background()
	p := startProducer(t, c, nil)
	for _, tag := range []string{"keep", "drop", "keep"} {
		m := msg("T", tag)
		m.SetTags(tag)
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := sc.Receive(ctx, 8, 10*time.Second)
	if err != nil || len(msgs) != 2 || msgs[0].Tags() != "keep" || msgs[1].Tags() != "keep" {
		t.Fatalf("receive: %v %v", msgs, err)
	}
	if acks := br.Acks(); len(acks) != 1 || acks[0]["offset"] != "1" {
		t.Fatalf("acks of filtered messages: %v", acks)
	}
}

func TestSimpleConsumerErrors(t *testing.T) {
	c := startCluster(t, "broker-a")
	ctx := context.Background()
	if _, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{CommonConfig: common(c), ConsumeFrom: client.ConsumeFromTimestamp}); err == nil {
		t.Fatal("ConsumeFromTimestamp accepted")
	}
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{CommonConfig: common(c), Group: "SG"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Receive(ctx, 1, time.Minute); !errors.Is(err, client.ErrNotStarted) {
		t.Fatalf("receive before Start: %v", err)
	}
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	defer sc.Shutdown(ctx)
	if _, err := sc.Receive(ctx, 1, time.Minute); err == nil {
		t.Fatal("receive without a subscription succeeded")
	}
	if err := sc.Subscribe("Missing", "*", ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n int
		d time.Duration
	}{{0, time.Minute}, {33, time.Minute}, {1, 0}, {1, 24 * time.Hour}} {
		if _, err := sc.Receive(ctx, tc.n, tc.d); err == nil {
			t.Fatalf("receive(%d, %v) accepted", tc.n, tc.d)
		}
	}
	if _, err := sc.Receive(ctx, 1, time.Minute); !errors.Is(err, client.ErrNoRoute) {
		t.Fatalf("receive of a topic without route: %v", err)
	}
	if err := sc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Receive(ctx, 1, time.Minute); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("receive after Shutdown: %v", fmt.Sprint(err))
	}
}

func queueOf(topic, broker string, id int) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: broker, QueueID: id}
}

// Orderly pops: a queue's messages come in order; while one of its last
// pop is neither acked nor past its invisible time the queue gives
// nothing; what comes again carries its pop count (orderCountInfo) as
// ReconsumeTimes, and acks and invisible-time changes use the orderly
// handles (reviveQid 999, the pop's time).
func TestSimpleConsumerOrderly(t *testing.T) {
	c := startTopic(t, 1)
	clk := testutil.NewFakeClock(time.Now())
	c.Brokers[0].SetClock(clk.Now)
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: common(c), Group: "SG", AwaitDuration: 100 * time.Millisecond,
		ConsumeFrom: client.ConsumeFromFirstOffset, Orderly: true,
	})
	sc = clienttest.Subscribed(t, sc, err, "T", "*")
	ctx := context.Background()
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "m0", "m1", "m2", "m3")
	receive := func(want ...string) []*message.Message {
		t.Helper()
		msgs, err := sc.Receive(ctx, 8, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, fmt.Sprintf("%s/%d", m.Body, m.ReconsumeTimes))
			if f := strings.Fields(client.ReceiptHandle(m)); len(f) != 8 || f[3] != "999" {
				t.Fatalf("orderly handle %q", client.ReceiptHandle(m))
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("received %v, want %v", got, want)
		}
		return msgs
	}
	first := receive("m0/0", "m1/0", "m2/0", "m3/0")
	for _, m := range first[:2] {
		if err := sc.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	receive() // m2 and m3 still invisible: the queue is blocked
	clk.Advance(1100 * time.Millisecond)
	again := receive("m2/1", "m3/1")
	if err := sc.Ack(ctx, again[0]); err != nil {
		t.Fatal(err)
	}
	// A longer invisible time keeps the queue blocked past the pop's own;
	// the new handle still acks.
	if err := sc.ChangeInvisibleTime(ctx, again[1], 3*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1100 * time.Millisecond)
	receive()
	if err := sc.Ack(ctx, again[1]); err != nil {
		t.Fatalf("ack with the changed handle: %v", err)
	}
	// A handle of an earlier pop of the queue is refused.
	if err := sc.Ack(ctx, first[2]); !client.IsCode(err, code.NoMessage) {
		t.Fatalf("ack of a stale orderly handle: %v", err)
	}
	receive()
	sendBodies(t, p, "T", "m4")
	receive("m4/0")
}
