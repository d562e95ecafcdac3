package client

import (
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func queuesOf(spec ...any) []protocol.MessageQueue {
	var out []protocol.MessageQueue
	for i := 0; i < len(spec); i += 2 {
		for q := range spec[i+1].(int) {
			out = append(out, protocol.MessageQueue{Topic: "T", BrokerName: spec[i].(string), QueueID: q})
		}
	}
	return out
}

func TestSelectQueue(t *testing.T) {
	two := queuesOf("a", 2, "b", 2) // a0 a1 b0 b1
	tests := []struct {
		name       string
		queues     []protocol.MessageQueue
		start      uint32
		lastBroker string
		want       []string // broker/queue of consecutive picks
	}{
		{"round robin from position+1", two, 0, "", []string{"a1", "b0", "b1", "a0", "a1"}},
		{"wraps the counter", two, ^uint32(0), "", []string{"a0", "a1"}},
		{"skips the failed broker", two, 0, "a", []string{"b0", "b1", "b0"}},
		{"skip starting on the failed broker", two, 3, "b", []string{"a0", "a1", "a0"}},
		{"only the failed broker left", queuesOf("a", 3), 0, "a", []string{"a1", "a2", "a0"}},
		{"unknown last broker", two, 1, "zzz", []string{"b0", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pos atomic.Uint32
			pos.Store(tt.start)
			for i, want := range tt.want {
				mq := selectQueue(tt.queues, &pos, tt.lastBroker)
				if got := mq.BrokerName + string(rune('0'+mq.QueueID)); got != want {
					t.Fatalf("pick %d = %s, want %s", i, got, want)
				}
			}
		})
	}
}

func TestSelectByHashMatchesJava(t *testing.T) {
	queues := queuesOf("a", 3)
	// Java: Math.abs("key".hashCode() % 3).
	tests := map[string]int{"hello": 1, "order-42": 0, "ZZZZZZZZ": 2, "polygenelubricants": 2}
	for key, want := range tests {
		if got := SelectByHash(key)(queues, nil).QueueID; got != want {
			t.Errorf("SelectByHash(%q) = queue %d, want %d", key, got, want)
		}
	}
}

func TestSendOptions(t *testing.T) {
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 1}
	if o := buildSendOptions(nil); o.explicit() {
		t.Fatal("no options must not be explicit")
	}
	o := buildSendOptions([]SendOption{WithSelector(SelectByHash("k")), WithQueue(mq)})
	if o.queue == nil || *o.queue != mq || o.selector != nil || !o.explicit() {
		t.Fatalf("last option must win: %+v", o)
	}
}
