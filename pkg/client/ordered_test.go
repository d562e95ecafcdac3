package client_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func TestSendOrderly(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 4)
	p := startProducer(t, c, nil)
	ctx := context.Background()
	queueOfKey := map[string]int{}
	for round := range 3 {
		for k := range 6 {
			key := "order-" + strconv.Itoa(k)
			m := msg("T", key)
			res, err := p.SendOrderly(ctx, m, key)
			if err != nil {
				t.Fatal(err)
			}
			idx := res.Queue.QueueID
			if res.Queue.BrokerName == "broker-b" {
				idx += 4
			}
			if q, ok := queueOfKey[key]; ok && q != idx {
				t.Fatalf("round %d: key %s went to queue %d, before %d", round, key, idx, q)
			}
			queueOfKey[key] = idx
			if m.Property(message.PropertyShardingKey) != key || res.Attempts != 1 {
				t.Fatalf("sharding key property %q, attempts %d", m.Property(message.PropertyShardingKey), res.Attempts)
			}
		}
	}
	if _, err := p.SendOrderly(ctx, msg("T", "x"), ""); !errors.Is(err, client.ErrInvalidMessage) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestDelayProperties(t *testing.T) {
	c := startTopic(t, 1)
	p := startProducer(t, c, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		set  func(*message.Message)
		ok   bool
	}{
		{"level", func(m *message.Message) { m.SetDelayTimeLevel(3) }, true},
		{"deliver at", func(m *message.Message) { m.SetDeliverTime(time.Now().Add(time.Minute)) }, true},
		{"delay ms", func(m *message.Message) { m.SetDelayTime(1500 * time.Millisecond) }, true},
		{"delay sec", func(m *message.Message) { client.SetDelaySeconds(m, 90*time.Second) }, true},
		{"level not a number", func(m *message.Message) { m.SetProperty(message.PropertyDelayTimeLevel, "x") }, false},
		{"negative timer", func(m *message.Message) { m.SetProperty(message.PropertyTimerDelaySec, "-5") }, false},
		{"two timers", func(m *message.Message) {
			m.SetDelayTime(time.Second)
			client.SetDelaySeconds(m, time.Second)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg("T", tt.name)
			tt.set(m)
			_, err := p.SendSync(ctx, m)
			if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, client.ErrInvalidMessage)) {
				t.Fatalf("send: %v", err)
			}
		})
	}
	sends := c.Brokers[0].Sends()
	props := message.DecodeProperties([]byte(sends[len(sends)-1].Ext["i"]))
	if props[message.PropertyTimerDelaySec] != "90" {
		t.Fatalf("TIMER_DELAY_SEC = %q", props[message.PropertyTimerDelaySec])
	}
}
