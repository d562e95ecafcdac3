package statictopicbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// sendRec is one acknowledged send of the load.
type sendRec struct {
	id         string // UNIQ_KEY, which a pulled message carries too
	queue      int
	offset     int64  // logic offset of the send result (-1: the new leader's was undecided)
	broker     string // the broker that stored it (from the offset message id)
	start, end time.Duration
	attempts   int
}

// failRec is one send that failed after its retries.
type failRec struct {
	at  time.Duration
	err string
}

// load is senders goroutines sending with SendSync as fast as they can;
// each keeps its own records, merged when the load stops.
type load struct {
	p     *client.Producer
	topic string
	t0    time.Time
	hosts map[uint16]string // store port → broker name
	recs  [][]sendRec
	fails [][]failRec
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startLoad(p *client.Producer, topic string, senders, bodySize int, hosts map[uint16]string) *load {
	l := &load{p: p, topic: topic, t0: time.Now(), hosts: hosts, recs: make([][]sendRec, senders), fails: make([][]failRec, senders), stop: make(chan struct{})}
	for i := range senders {
		l.wg.Add(1)
		go l.worker(i, body(bodySize, i))
	}
	return l
}

func body(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i+seed)%26)
	}
	return b
}

func (l *load) since() time.Duration { return time.Since(l.t0) }

func (l *load) worker(i int, body []byte) {
	defer l.wg.Done()
	ctx := context.Background()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		start := l.since()
		res, err := l.p.SendSync(ctx, &message.Message{Topic: l.topic, Body: body})
		end := l.since()
		if err != nil {
			l.fails[i] = append(l.fails[i], failRec{at: end, err: err.Error()})
			time.Sleep(5 * time.Millisecond) // no hot loop while nothing can be sent
			continue
		}
		l.recs[i] = append(l.recs[i], sendRec{id: res.MsgID, queue: res.Queue.QueueID, offset: res.QueueOffset,
			broker: l.storedOn(res.OffsetMsgID), start: start, end: end, attempts: res.Attempts})
	}
}

// storedOn names the broker whose address the offset message id holds:
// the one that stored the message, whatever the client's route said.
func (l *load) storedOn(offsetMsgID string) string {
	host, _, err := message.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return "?"
	}
	if b, ok := l.hosts[host.Port()]; ok {
		return b
	}
	return "?" + host.String()
}

// halt stops the load and returns every record, by completion time.
func (l *load) halt() ([]sendRec, []failRec) {
	close(l.stop)
	l.wg.Wait()
	var recs []sendRec
	var fails []failRec
	for i := range l.recs {
		recs = append(recs, l.recs[i]...)
		fails = append(fails, l.fails[i]...)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].end < recs[j].end })
	sort.Slice(fails, func(i, j int) bool { return fails[i].at < fails[j].at })
	return recs, fails
}

// consumed is one pulled message of a logic queue.
type consumed struct {
	queue  int
	offset int64
	id     string
}

// consumeAll reads every queue of topic from offset 0 to its max offset.
func consumeAll(t *testing.T, nameserver, topic string, workers int) []consumed {
	t.Helper()
	ctx := context.Background()
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{nameserver}}, Group: "static_bench_check"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(ctx)
	queues, err := pc.Queues(ctx, topic)
	if err != nil {
		t.Fatalf("queues of %s: %v", topic, err)
	}
	var (
		mu   sync.Mutex
		all  []consumed
		errs []error
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(queues) {
					return
				}
				got, err := consumeQueue(ctx, pc, queues[i])
				mu.Lock()
				all = append(all, got...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	return all
}

func consumeQueue(ctx context.Context, pc *client.PullConsumer, mq protocol.MessageQueue) ([]consumed, error) {
	maxOff, err := pc.GetMaxOffset(ctx, mq)
	if err != nil {
		return nil, fmt.Errorf("max offset of %v: %w", mq, err)
	}
	var out []consumed
	off := int64(0)
	for steps := 0; off < maxOff; steps++ {
		if steps > 1_000_000 {
			return out, fmt.Errorf("%v: no progress at offset %d (max %d)", mq, off, maxOff)
		}
		res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
		if err != nil {
			return out, fmt.Errorf("pull %v at %d: %w", mq, off, err)
		}
		for _, m := range res.Messages {
			out = append(out, consumed{queue: int(m.QueueID), offset: m.QueueOffset, id: m.UniqKey()})
		}
		if res.NextBeginOffset <= off {
			return out, fmt.Errorf("%v: pull at %d (status %v) moves to %d, below the max offset %d", mq, off, res.Status, res.NextBeginOffset, maxOff)
		}
		off = res.NextBeginOffset
	}
	return out, nil
}

// check is what the consumed messages say about the acknowledged sends.
type check struct {
	sent, failed, consumed int
	lost                   int // acknowledged, never consumed
	dupOffsets             int // one (logic queue, logic offset) with two message ids
	dupStores              int // one message id at two positions
	moved                  int // consumed at another position than its send result said
	extra                  int // consumed, not acknowledged (a failed send that was stored)
	firstLost              string
}

func compare(recs []sendRec, fails []failRec, got []consumed) check {
	type pos struct {
		q   int
		off int64
	}
	ck := check{sent: len(recs), failed: len(fails), consumed: len(got)}
	byPos := map[pos]string{}
	byID := map[string]pos{}
	for _, g := range got {
		p := pos{g.queue, g.offset}
		if id, ok := byPos[p]; ok && id != g.id {
			ck.dupOffsets++
		}
		byPos[p] = g.id
		if q, ok := byID[g.id]; ok && q != p {
			ck.dupStores++
		}
		byID[g.id] = p
	}
	acked := map[string]bool{}
	for _, r := range recs {
		acked[r.id] = true
		p, ok := byID[r.id]
		if !ok {
			if ck.lost == 0 {
				ck.firstLost = fmt.Sprintf("%s (logic queue %d, offset %d, on %s, acknowledged at %v)", r.id, r.queue, r.offset, r.broker, r.end.Round(time.Millisecond))
			}
			ck.lost++
			continue
		}
		if p.q != r.queue || (r.offset >= 0 && p.off != r.offset) {
			ck.moved++
		}
	}
	for id := range byID {
		if !acked[id] {
			ck.extra++
		}
	}
	return ck
}

// roundResult is one timed round.
type roundResult struct {
	tps    float64
	n      int64 // messages acknowledged or pulled
	failed int64
}

// round is one timed round of worker goroutines in groups: each group
// counts what it got done and what failed.
type round struct {
	wg              sync.WaitGroup
	start, deadline time.Time
	done, failed    []atomic.Int64
}

func newRound(groups int, d time.Duration) *round {
	start := time.Now()
	return &round{start: start, deadline: start.Add(d), done: make([]atomic.Int64, groups), failed: make([]atomic.Int64, groups)}
}

// work runs f in a worker goroutine of the round.
func (r *round) work(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// results waits for the workers and returns per group the TPS of what it
// got done and its failure count.
func (r *round) results() []roundResult {
	r.wg.Wait()
	el := time.Since(r.start).Seconds()
	out := make([]roundResult, len(r.done))
	for i := range out {
		out[i] = roundResult{tps: float64(r.done[i].Load()) / el, n: r.done[i].Load(), failed: r.failed[i].Load()}
	}
	return out
}

// sendRound sends to each topic from its own senders goroutines, all
// topics at once, for d, and returns per topic the TPS of acknowledged
// sends and the failure count.
func sendRound(p *client.Producer, topics []string, senders, bodySize int, d time.Duration) []roundResult {
	ctx := context.Background()
	r := newRound(len(topics), d)
	for ti, topic := range topics {
		for i := range senders {
			b := body(bodySize, i)
			r.work(func() {
				for time.Now().Before(r.deadline) {
					if _, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: b}); err != nil {
						r.failed[ti].Add(1)
					} else {
						r.done[ti].Add(1)
					}
				}
			})
		}
	}
	return r.results()
}

// pullRound pulls (batches of 32) each queue set from its own pullers
// goroutines, all sets at once, for d; each goroutine cycles over its share
// of queues from offset 0 to the end and again. It returns per set the TPS
// of pulled messages and the failure count.
func pullRound(pc *client.PullConsumer, sets [][]protocol.MessageQueue, pullers int, d time.Duration) []roundResult {
	ctx := context.Background()
	r := newRound(len(sets), d)
	for si, queues := range sets {
		for i := range pullers {
			var mine []protocol.MessageQueue
			for j := i; j < len(queues); j += pullers {
				mine = append(mine, queues[j])
			}
			if len(mine) == 0 {
				continue
			}
			r.work(func() {
				offs := make([]int64, len(mine))
				for k := 0; time.Now().Before(r.deadline); k = (k + 1) % len(mine) {
					res, err := pc.Pull(ctx, client.PullRequest{Queue: mine[k], Offset: offs[k], MaxNums: 32})
					if err != nil {
						r.failed[si].Add(1)
						continue
					}
					r.done[si].Add(int64(len(res.Messages)))
					if res.Status != client.PullNoNewMsg && res.NextBeginOffset > offs[k] {
						offs[k] = res.NextBeginOffset
					} else {
						offs[k] = 0
					}
				}
			})
		}
	}
	return r.results()
}

// cpu is CPU time (user + system) used so far by the brokers and by this
// process (the SDK): per message it says what throughput on a machine
// shared with other work cannot.
type cpu struct{ brokers, client time.Duration }

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

func sampleCPU(pids []int) cpu {
	var c cpu
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// utime and stime are fields 14 and 15; the command name (field 2)
		// may hold spaces, so count from its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		c.brokers += time.Duration(ut+st) * time.Second / userHZ
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}

// perMsg is the CPU time per message between two samples, in µs.
func perMsg(before, after cpu, n int64) (brokers, client float64) {
	if n <= 0 {
		return 0, 0
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	return us(after.brokers - before.brokers), us(after.client - before.client)
}

// brokerHosts maps each broker's port to its name.
func brokerHosts(c *harness.Cluster) map[uint16]string {
	m := map[uint16]string{}
	for _, b := range c.Brokers {
		m[uint16(b.Port)] = b.Name
	}
	return m
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
