package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
)

// soakPop is TestHASoak's second checker: our SDK's simple consumer
// (POP_MESSAGE / ACK_MESSAGE) in a group of its own on the soak topic,
// receiving and acking through every fault. It leaves one message in
// fifty unacked on purpose, so that revive (the checkpoint records the
// replicas copy with the CommitLog) must deliver it again, possibly from
// a promoted slave. At the end every acknowledged send must have been
// received and acked by it as well.
type soakPop struct {
	run  string
	sc   *client.SimpleConsumer
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	acked     map[string]int // ids whose ACK_MESSAGE succeeded
	received  int            // deliveries, redeliveries included
	left      int            // left unacked on purpose
	ackFailed int            // acks that failed (a fault in the way): redelivered later
	unknown   int            // bodies the producer never sent
}

// soakPopInvisible is how long a popped message stays invisible: short,
// so that the messages left unacked come back within the drain.
const soakPopInvisible = 5 * time.Second

func startSoakPop(t *testing.T, c *ctrlCluster, run, group string) *soakPop {
	t.Helper()
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: c.nsAddrs, InstanceName: run + "-pop", HeartbeatInterval: time.Second,
			RouteRefreshInterval: time.Second, Logger: slog.New(slog.DiscardHandler)},
		Group: group, AwaitDuration: time.Second, ConsumeFrom: client.ConsumeFromFirstOffset})
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, sc, 5*time.Second, t.Logf)
	if err := sc.Subscribe(c.topic, "*", "TAG"); err != nil {
		t.Fatal(err)
	}
	p := &soakPop{run: run, sc: sc, stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]int{}}
	go p.loop()
	t.Cleanup(p.close)
	return p
}

func (p *soakPop) loop() {
	defer close(p.done)
	for n := 0; ; {
		select {
		case <-p.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		msgs, err := p.sc.Receive(ctx, 16, soakPopInvisible)
		cancel()
		if err != nil && len(msgs) == 0 {
			time.Sleep(100 * time.Millisecond) // no master for a moment
		}
		for _, m := range msgs {
			id := string(m.Body)
			n++
			p.mu.Lock()
			p.received++
			if !strings.HasPrefix(id, p.run+"-") {
				p.unknown++
				p.mu.Unlock()
				continue
			}
			leave := n%50 == 0 && p.acked[id] == 0
			if leave {
				p.left++
			}
			p.mu.Unlock()
			if leave {
				continue
			}
			actx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			aerr := p.sc.Ack(actx, m)
			cancel()
			p.mu.Lock()
			if aerr != nil {
				p.ackFailed++
			} else {
				p.acked[id]++
			}
			p.mu.Unlock()
		}
	}
}

func (p *soakPop) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// missing returns the ids of want that were not acked yet, sorted.
func (p *soakPop) missing(want []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, id := range want {
		if p.acked[id] == 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (p *soakPop) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	again := 0
	for _, n := range p.acked {
		again += n - 1
	}
	return fmt.Sprintf("pop: %d acked, %d deliveries, %d left unacked on purpose, %d acks failed, %d acked more than once, %d unknown",
		len(p.acked), p.received, p.left, p.ackFailed, again, p.unknown)
}

// drain waits until every id in want was acked by the pop consumer, or
// fails t with the ids still missing after timeout.
func (p *soakPop) drain(t *testing.T, want []string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		miss := p.missing(want)
		if len(miss) == 0 {
			t.Logf("%v", p)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pop consumer: %d of %d acknowledged sends never received and acked (first: %v); %v",
				len(miss), len(want), miss[:min(len(miss), 20)], p)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
