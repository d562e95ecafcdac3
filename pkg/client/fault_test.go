package client

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestNotAvailableFor(t *testing.T) {
	tests := []struct {
		latency time.Duration
		want    time.Duration
	}{
		{0, 0},
		{99 * time.Millisecond, 0},
		{549 * time.Millisecond, 0},
		{550 * time.Millisecond, 2 * time.Second},
		{2 * time.Second, 5 * time.Second},
		{3 * time.Second, 6 * time.Second},
		{faultIsolationLatency, 10 * time.Second},
		{time.Minute, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := notAvailableFor(tt.latency); got != tt.want {
			t.Errorf("notAvailableFor(%v) = %v, want %v", tt.latency, got, tt.want)
		}
	}
}

func TestFaultAvoidancePick(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newFaultAvoidance(func() time.Time { return now })
	qs := []protocol.MessageQueue{{Topic: "T", BrokerName: "a", QueueID: 0}, {Topic: "T", BrokerName: "a", QueueID: 1}, {Topic: "T", BrokerName: "b", QueueID: 0}}
	var pos atomic.Uint32
	f.record("a", 0, true) // a cannot be reached: avoided for 10 s
	for i := range 6 {
		if mq := f.pick(qs, &pos, ""); mq.BrokerName != "b" {
			t.Fatalf("pick %d chose %v while a is isolated", i, mq)
		}
	}
	// With b failed last and a isolated, there is nothing good: a send
	// still goes somewhere.
	if mq := f.pick(qs, &pos, "b"); mq.Topic != "T" {
		t.Fatalf("pick with every broker excluded = %v", mq)
	}
	now = now.Add(10 * time.Second)
	seen := map[string]bool{}
	for range 6 {
		seen[f.pick(qs, &pos, "").BrokerName] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("a not used again after its isolation ended: %v", seen)
	}
	f.record("b", 600*time.Millisecond, false) // slow: avoided 2 s
	if f.available("b") {
		t.Fatal("slow broker still available")
	}
	f.record("b", time.Millisecond, false) // fast again: available at once
	if !f.available("b") {
		t.Fatal("fast answer did not clear the avoidance")
	}
}

func TestIsTransportError(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("dial tcp: connection refused"), true},
		{fmt.Errorf("send: %w", &ResponseError{Code: 14}), false},
		{fmt.Errorf("%w: too big", ErrInvalidMessage), false},
	}
	for _, tt := range tests {
		if got := isTransportError(tt.err); got != tt.want {
			t.Errorf("isTransportError(%v) = %v", tt.err, got)
		}
	}
}

func TestForgetOfflineBrokers(t *testing.T) {
	c := newCore(CommonConfig{NameServers: []string{"127.0.0.1:1"}}.mustNormalize(t), func() *heartbeatData { return nil })
	defer c.close()
	rd := &protocol.TopicRouteData{
		BrokerDatas: []protocol.BrokerData{{BrokerName: "a", BrokerAddrs: map[int64]string{0: "a0", 1: "a1"}}},
		QueueDatas:  []protocol.QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1}},
	}
	c.storeRoute("T", newTopicRoute("T", rd, false))
	c.mu.Lock()
	c.brokers["gone"] = protocol.BrokerData{BrokerName: "gone", BrokerAddrs: map[int64]string{0: "g0"}}
	c.brokers["a"] = protocol.BrokerData{BrokerName: "a", BrokerAddrs: map[int64]string{0: "a0", 1: "a1", 2: "a2"}}
	c.mu.Unlock()
	c.forgetOfflineBrokers()
	if got := c.brokerAddrs(false); fmt.Sprint(got) != "[a0 a1]" {
		t.Fatalf("brokers after cleaning = %v, want [a0 a1]", got)
	}
}

func (c CommonConfig) mustNormalize(t *testing.T) CommonConfig {
	t.Helper()
	n, err := c.normalize()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
