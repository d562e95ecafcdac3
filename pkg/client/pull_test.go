package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

func startConsumer(t *testing.T, c interface{ Addr() string }, mod func(*client.PullConsumerConfig)) *client.PullConsumer {
	t.Helper()
	cfg := client.PullConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{c.Addr()}, HeartbeatInterval: 50 * time.Millisecond},
		Group:        "CG",
	}
	if mod != nil {
		mod(&cfg)
	}
	cons, err := client.NewPullConsumer(cfg)
	return clienttest.Started(t, cons, err)
}

func TestPullDecodesAndFilters(t *testing.T) {
	c := startTopic(t, 1)
	p := startProducer(t, c, nil)
	cons := startConsumer(t, c.Namesrv, nil)
	ctx := context.Background()

	big := bytes.Repeat([]byte("0123456789"), 1000) // compressed by the producer
	bodies := [][]byte{[]byte("small"), big}
	tags := []string{"a", "b"}
	for i, body := range bodies {
		m := &message.Message{Topic: "T", Body: body}
		m.SetTags(tags[i])
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := c.Brokers[0].Messages("T", 0)
	if stored[1].SysFlag&message.FlagCompressed == 0 || len(stored[1].Body) >= len(big) {
		t.Fatal("the large body was not stored compressed")
	}

	queues, err := cons.Queues(ctx, "T")
	if err != nil || len(queues) != 1 {
		t.Fatalf("queues = %v, %v", queues, err)
	}
	mq := queues[0]
	res, err := cons.Pull(ctx, client.PullRequest{Queue: mq, Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != client.PullFound || res.NextBeginOffset != 2 || res.MaxOffset != 2 || len(res.Messages) != 2 {
		t.Fatalf("pull = %+v", res)
	}
	for i, m := range res.Messages {
		if !bytes.Equal(m.Body, bodies[i]) || m.Tags() != tags[i] || m.QueueOffset != int64(i) ||
			m.Property(message.PropertyMaxOffset) != "2" || m.Property(message.PropertyMinOffset) != "0" || m.UniqKey() == "" {
			t.Fatalf("message %d = %+v", i, m)
		}
		if m.BornTimestamp == 0 || m.StoreTimestamp == 0 || m.OffsetMsgID() == "" {
			t.Fatalf("message %d lacks store fields", i)
		}
	}

	tests := []struct {
		name   string
		req    client.PullRequest
		status client.PullStatus
		next   int64
		bodies []string
	}{
		{"tag filter", client.PullRequest{Queue: mq, Offset: 0, Expression: "a"}, client.PullFound, 2, []string{"small"}},
		{"tag filter, two tags", client.PullRequest{Queue: mq, Offset: 0, Expression: "b || a"}, client.PullFound, 2, []string{"small", string(big)}},
		{"no match", client.PullRequest{Queue: mq, Offset: 0, Expression: "zzz"}, client.PullNoMatchedMsg, 2, nil},
		{"max nums", client.PullRequest{Queue: mq, Offset: 0, MaxNums: 1}, client.PullFound, 1, []string{"small"}},
		{"at the end", client.PullRequest{Queue: mq, Offset: 2}, client.PullNoNewMsg, 2, nil},
		{"beyond the end", client.PullRequest{Queue: mq, Offset: 9}, client.PullOffsetIllegal, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cons.Pull(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Messages {
				got = append(got, string(m.Body))
			}
			if res.Status != tt.status || res.NextBeginOffset != tt.next || strings.Join(got, "|") != strings.Join(tt.bodies, "|") {
				t.Fatalf("pull = %v next %d bodies %d, want %v next %d bodies %d", res.Status, res.NextBeginOffset, len(got), tt.status, tt.next, len(tt.bodies))
			}
		})
	}

	if _, err := cons.Pull(ctx, client.PullRequest{Queue: protocol.MessageQueue{Topic: "T", BrokerName: "nope"}}); !errors.Is(err, client.ErrNoRoute) {
		t.Fatalf("pull from unknown broker: %v", err)
	}
	if _, err := cons.Queues(ctx, "Missing"); !errors.Is(err, client.ErrNoRoute) || !client.IsCode(err, code.TopicNotExist) {
		t.Fatalf("queues of a missing topic: %v", err)
	}
}

func TestPullLongPoll(t *testing.T) {
	c := startTopic(t, 1)
	p := startProducer(t, c, nil)
	cons := startConsumer(t, c.Namesrv, func(cfg *client.PullConsumerConfig) { cfg.LongPollingSuspend = 5 * time.Second })
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}

	done := make(chan *client.PullResult, 1)
	go func() {
		res, err := cons.Pull(context.Background(), client.PullRequest{Queue: mq, Offset: 0, LongPoll: true})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(100 * time.Millisecond) // let the pull park
	if _, err := p.SendSync(context.Background(), msg("T", "wake")); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res == nil || res.Status != client.PullFound || string(res.Messages[0].Body) != "wake" {
			t.Fatalf("long poll = %+v", res)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the long poll was not woken by the new message")
	}

	// Shutdown ends a parked long poll at once.
	errc := make(chan error, 1)
	go func() {
		_, err := cons.Pull(context.Background(), client.PullRequest{Queue: mq, Offset: 1, LongPoll: true})
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := cons.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil || time.Since(start) > time.Second {
		t.Fatalf("parked pull after shutdown: %v after %v", err, time.Since(start))
	}
}

func TestOffsets(t *testing.T) {
	c := startTopic(t, 2)
	p := startProducer(t, c, nil)
	cons := startConsumer(t, c.Namesrv, nil)
	ctx := context.Background()
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	before := time.Now().Add(-time.Second)
	for range 3 {
		if _, err := p.SendSync(ctx, msg("T", "x"), client.WithQueue(mq)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cons.QueryOffset(ctx, mq); !errors.Is(err, client.ErrOffsetNotFound) {
		t.Fatalf("query before commit: %v", err)
	}
	if err := cons.UpdateOffset(ctx, mq, 2); err != nil {
		t.Fatal(err)
	}
	if off, err := cons.QueryOffset(ctx, mq); err != nil || off != 2 {
		t.Fatalf("query = %d, %v", off, err)
	}
	if off, err := cons.GetMaxOffset(ctx, mq); err != nil || off != 3 {
		t.Fatalf("max = %d, %v", off, err)
	}
	if off, err := cons.GetMinOffset(ctx, mq); err != nil || off != 0 {
		t.Fatalf("min = %d, %v", off, err)
	}
	if off, err := cons.SearchOffset(ctx, mq, before); err != nil || off != 0 {
		t.Fatalf("search = %d, %v", off, err)
	}
	if off, err := cons.SearchOffset(ctx, mq, time.Now().Add(time.Hour)); err != nil || off != 3 {
		t.Fatalf("search future = %d, %v", off, err)
	}
	if c.Brokers[0].Committed("CG", "T", 1) != 2 {
		t.Fatal("broker has no committed offset")
	}
}

func TestConsumeLoop(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 2)
	p := startProducer(t, c, nil)
	ctx := context.Background()
	const before, after = 20, 20
	sent := map[string]bool{}
	send := func(i int) {
		m := msg("T", fmt.Sprint("m", i))
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
		sent[m.UniqKey()] = true
	}
	for i := range before {
		send(i)
	}
	cons := startConsumer(t, c.Namesrv, func(cfg *client.PullConsumerConfig) { cfg.LongPollingSuspend = time.Second })

	var mu sync.Mutex
	got := map[string]bool{}
	perQueue := map[protocol.MessageQueue][]int64{}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loopErr := make(chan error, 1)
	go func() {
		loopErr <- cons.ConsumeLoop(lctx, client.ConsumeLoopConfig{
			Topic: "T", From: client.FromFirstOffset(), BatchSize: 3, CommitInterval: 50 * time.Millisecond,
		}, func(_ context.Context, mq protocol.MessageQueue, msgs []*message.Message) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.UniqKey()] = true
				perQueue[mq] = append(perQueue[mq], m.QueueOffset)
			}
			return nil
		})
	}()
	for i := range after {
		send(before + i)
	}
	testutil.WaitFor(t, 3*time.Second, "every message pulled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(sent)
	})
	for id := range sent {
		if !got[id] {
			t.Fatalf("message %s not consumed", id)
		}
	}
	mu.Lock()
	for mq, offs := range perQueue {
		if !sort.SliceIsSorted(offs, func(i, j int) bool { return offs[i] < offs[j] }) {
			t.Fatalf("queue %v consumed out of order: %v", mq, offs)
		}
	}
	mu.Unlock()
	// Offsets are committed periodically, and once more at the end.
	cancel()
	if err := <-loopErr; err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, b := range c.Brokers {
		for q := range 2 {
			off := b.Committed("CG", "T", q)
			msgs, _ := b.Messages("T", q)
			if off != int64(len(msgs)) {
				t.Fatalf("%s queue %d committed %d, holds %d", b.Name, q, off, len(msgs))
			}
			total += off
		}
	}
	if total != before+after {
		t.Fatalf("committed %d in all, want %d", total, before+after)
	}
	// The loop announced its subscription in heartbeats.
	testutil.WaitFor(t, 3*time.Second, "a CONSUME_ACTIVELY heartbeat for T", func() bool {
		for _, hb := range c.Brokers[0].Heartbeats() {
			if strings.Contains(hb, `"consumeType":"CONSUME_ACTIVELY"`) && strings.Contains(hb, `"topic":"T"`) {
				return true
			}
		}
		return false
	})

	// A restarted loop resumes from the committed offsets.
	lctx2, cancel2 := context.WithCancel(ctx)
	var again int
	done := make(chan error, 1)
	go func() {
		done <- cons.ConsumeLoop(lctx2, client.ConsumeLoopConfig{Topic: "T"}, func(_ context.Context, _ protocol.MessageQueue, msgs []*message.Message) error {
			mu.Lock()
			again += len(msgs)
			mu.Unlock()
			return nil
		})
	}()
	send(999)
	testutil.WaitFor(t, 3*time.Second, "the second pull", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return again == 1
	})
	cancel2()
	<-done
}
