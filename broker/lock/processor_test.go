package lock

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type topics map[string]protocol.TopicConfig

func (t topics) Get(name string) (protocol.TopicConfig, bool) {
	tc, ok := t[name]
	return tc, ok
}

func newTestProcessor(t *testing.T) (*Processor, *Manager) {
	t.Helper()
	m := NewManager(Options{})
	tc := protocol.NewTopicConfig("T")
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	p, err := NewProcessor(Deps{Manager: m, Topics: topics{"T": tc}, BrokerName: func() string { return "broker-a" }})
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func call(t *testing.T, p *Processor, c int32, body string) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(c, nil, []byte(body))
	resp, err := p.Handlers()[c](context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	return resp
}

func lockOK(t *testing.T, resp *remoting.Command) []protocol.MessageQueue {
	t.Helper()
	if resp.Code != code.Success {
		t.Fatalf("lock: code %d %q", resp.Code, resp.Remark)
	}
	var b lockResponseBody
	if err := protocol.Unmarshal(resp.Body, &b); err != nil {
		t.Fatalf("lock response %s: %v", resp.Body, err)
	}
	if b.LockOKMQSet == nil {
		t.Fatalf("lockOKMQSet is null: %s", resp.Body)
	}
	return b.LockOKMQSet
}

func TestLockHandlers(t *testing.T) {
	p, m := newTestProcessor(t)
	// client-go's body: no onlyThisBroker.
	body := `{"consumerGroup":"g","clientId":"c1","mqSet":[` +
		`{"topic":"T","brokerName":"broker-a","queueId":1},` +
		`{"topic":"T","brokerName":"broker-a","queueId":0},` +
		`{"topic":"T","brokerName":"broker-a","queueId":4},` + // beyond the topic's 4 queues
		`{"topic":"T","brokerName":"broker-a","queueId":-1},` +
		`{"topic":"NoSuchTopic","brokerName":"broker-a","queueId":0},` +
		`{"topic":"T","brokerName":"__syslo__global__","queueId":9}]}` // static topic: no bound check
	got := lockOK(t, call(t, p, code.LockBatchMQ, body))
	want := []protocol.MessageQueue{
		{Topic: "T", BrokerName: "__syslo__global__", QueueID: 9},
		{Topic: "T", BrokerName: "broker-a", QueueID: 0},
		{Topic: "T", BrokerName: "broker-a", QueueID: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("granted %v, want %v", got, want)
	}
	// Java's body with onlyThisBroker, another client: nothing granted, an
	// empty set (not null).
	resp := call(t, p, code.LockBatchMQ, `{"clientId":"c2","consumerGroup":"g","mqSet":[{"brokerName":"broker-a","queueId":0,"topic":"T"}],"onlyThisBroker":true}`)
	if got := lockOK(t, resp); len(got) != 0 || !strings.Contains(string(resp.Body), `"lockOKMQSet":[]`) {
		t.Fatalf("c2 granted %v (%s)", got, resp.Body)
	}
	// Unlock by the holder frees the queue for c2.
	if resp := call(t, p, code.UnlockBatchMQ, `{"consumerGroup":"g","clientId":"c1","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`); resp.Code != code.Success {
		t.Fatalf("unlock: %d %q", resp.Code, resp.Remark)
	}
	if got := lockOK(t, call(t, p, code.LockBatchMQ, `{"consumerGroup":"g","clientId":"c2","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`)); len(got) != 1 {
		t.Fatalf("after unlock c2 got %v", got)
	}
	if !m.HasLiveLocks("g") {
		t.Fatal("no live locks")
	}
}

func TestLockBadInput(t *testing.T) {
	p, m := newTestProcessor(t)
	for _, c := range []int32{code.LockBatchMQ, code.UnlockBatchMQ} {
		for name, body := range map[string]string{
			"empty body":    ``,
			"not JSON":      `{"consumerGroup":`,
			"wrong types":   `{"consumerGroup":"g","clientId":"c","mqSet":"x"}`,
			"no group":      `{"clientId":"c","mqSet":[]}`,
			"no client id":  `{"consumerGroup":"g","mqSet":[]}`,
			"array at root": `[]`,
		} {
			resp := call(t, p, c, body)
			if resp.Code != code.InvalidParameter || resp.Remark == "" {
				t.Errorf("code %d, %s: got %d %q, want %d with a remark", c, name, resp.Code, resp.Remark, code.InvalidParameter)
			}
		}
	}
	if m.Len() != 0 {
		t.Fatalf("bad requests locked %d queues", m.Len())
	}
	// No queues at all: success, nothing granted.
	if got := lockOK(t, call(t, p, code.LockBatchMQ, `{"consumerGroup":"g","clientId":"c"}`)); len(got) != 0 {
		t.Fatalf("granted %v", got)
	}
}

func TestSweeperStartClose(t *testing.T) {
	m := NewManager(Options{MaxLiveTime: 1})
	p, err := NewProcessor(Deps{Manager: m, SweepInterval: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	p.Start() // idempotent
	m.TryLockBatch("g", "c", []protocol.MessageQueue{mq("T", 0)})
	deadline := 200
	for m.Len() != 0 && deadline > 0 {
		deadline--
		waitABit()
	}
	p.Close()
	p.Close()
	if m.Len() != 0 {
		t.Fatal("sweeper did not drop the expired lock")
	}
	if _, err := NewProcessor(Deps{}); err == nil {
		t.Fatal("NewProcessor without a manager")
	}
}

func waitABit() { <-time.After(5 * time.Millisecond) }
