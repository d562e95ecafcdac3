package crash

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

const (
	topic  = "CrashTopic"
	queues = 4
	tag    = "C"
	// maxBody keeps bodies under the 4 KiB compression threshold, so the
	// pulled body is the stored one and its CRC can be checked.
	maxBody = 2048
	// maxErrors bounds the error lines of one round.
	maxErrors = 20
)

type params struct {
	rounds    int
	seed      uint64
	producers int
	maxDelay  time.Duration
}

// envPositive returns the positive whole number in the environment
// variable name, or def when name is unset.
func envPositive(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envParams(t *testing.T) params {
	t.Helper()
	p := params{rounds: 3, seed: uint64(time.Now().UnixNano()), producers: 4, maxDelay: 1500 * time.Millisecond}
	p.rounds = envPositive(t, "CRASH_ROUNDS", p.rounds)
	if v := os.Getenv("CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CRASH_SEED=%q: %v", v, err)
		}
		p.seed = n
	}
	p.producers = envPositive(t, "CRASH_PRODUCERS", p.producers)
	if v := os.Getenv("CRASH_MAX_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			t.Fatalf("CRASH_MAX_DELAY=%q: want a duration of at least 100ms", v)
		}
		p.maxDelay = d
	}
	return p
}

// messageID names a message: round, producer, sequence.
func messageID(round, producer, seq int) string {
	return fmt.Sprintf("r%03d-p%d-%06d", round, producer, seq)
}

// body derives a message's body from its id alone (so nothing but ids needs
// remembering): "crash|<id>|" and id-seeded noise, 40..2047 bytes in all.
func body(id string) []byte {
	h := fnv.New64a()
	h.Write([]byte(id))
	x := h.Sum64() | 1
	size := 40 + int(x%uint64(maxBody-40))
	b := make([]byte, 0, size)
	b = append(b, "crash|"+id+"|"...)
	for len(b) < size {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, byte(x))
	}
	return b[:size]
}

// idOf extracts the id from a body, or "".
func idOf(b []byte) string {
	rest, ok := strings.CutPrefix(string(b[:min(len(b), 40)]), "crash|")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, "|")
	if !ok {
		return ""
	}
	return id
}

// ledger is what the producers did, over all rounds.
type ledger struct {
	mu        sync.Mutex
	attempted map[string]int // id → round; recorded before the send
	acked     map[string]int // SEND_OK: durable under SYNC_FLUSH
	notOK     int            // sends answered with another status (FLUSH_DISK_TIMEOUT)
	failed    map[string]int // error kind → count, this round
}

func (l *ledger) attempt(id string, round int) {
	l.mu.Lock()
	l.attempted[id] = round
	l.mu.Unlock()
}

func (l *ledger) result(id string, round int, res *client.SendResult, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil && res.Status == client.SendOK:
		l.acked[id] = round
	case err == nil:
		l.notOK++
	default:
		// The innermost cause is the interesting part (connection
		// closed, context canceled...).
		for errors.Unwrap(err) != nil {
			err = errors.Unwrap(err)
		}
		l.failed[err.Error()]++
	}
}

// produce sends messages until ctx ends, one at a time, without retries:
// each id is sent at most once, so a second copy in the store is a bug.
func produce(ctx context.Context, p *client.Producer, l *ledger, round, producer int) {
	for seq := 0; ctx.Err() == nil; seq++ {
		id := messageID(round, producer, seq)
		m := &message.Message{Topic: topic, Body: body(id)}
		m.SetTags(tag)
		m.SetKeys(id)
		l.attempt(id, round)
		res, err := p.SendSync(ctx, m)
		l.result(id, round, res, err)
		if err != nil && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// warnings collects the SDK's warnings (a pull body that does not fully
// decode is logged, not returned, when some records before it decoded).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	w.msgs = append(w.msgs, b.String())
	w.mu.Unlock()
	return nil
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// roundStats is one round's outcome.
type roundStats struct {
	run, restart, verify time.Duration
	recoveryKill         time.Duration // > 0: the first restart was killed after this long
	redispatched         string        // what the broker's recovery re-dispatched (from its log)
	acked                int           // acknowledged sends of this round
	attempted            int
	found                int // messages of this round in the store
	unackedPresent       int // found but not acknowledged (in flight at the kill)
	total                int // messages in the store, all rounds
	failed               map[string]int
}

// TestCrashRounds kills the broker with SIGKILL at random moments under a
// SYNC_FLUSH load, round after round, and after each restart checks every
// queue from offset 0: all acknowledged messages present and intact, no
// corrupt record, contiguous queue offsets, nothing that was never sent,
// nothing twice.
func TestCrashRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: kills and restarts a real broker")
	}
	p := envParams(t)
	rng := rand.New(rand.NewPCG(p.seed, p.seed>>7))
	t.Logf("crash harness: %d rounds, %d producers, kill within %v, seed %d (CRASH_SEED=%d reproduces the schedule)",
		p.rounds, p.producers, p.maxDelay, p.seed, p.seed)
	// Small CommitLog segments: rounds cross segment boundaries, so kills
	// also land around rolls.
	c := harness.StartCluster(t, harness.ClusterOptions{Brokers: 1, BrokerConf: map[string]string{
		"flushDiskType":           "SYNC_FLUSH",
		"mappedFileSizeCommitLog": strconv.Itoa(1 << 20),
	}})
	b := c.Brokers[0]
	if _, err := c.MQAdmin(t, "updateTopic", "-b", b.Addr, "-t", topic, "-r", strconv.Itoa(queues), "-w", strconv.Itoa(queues)); err != nil {
		t.Fatal(err)
	}
	l := &ledger{attempted: map[string]int{}, acked: map[string]int{}}
	var totals roundStats
	start := time.Now()
	for round := 0; round < p.rounds; round++ {
		// Kill delay: mostly within maxDelay, sometimes almost at once
		// (right after the restart, while producers connect).
		delay := 100*time.Millisecond + time.Duration(rng.Int64N(int64(p.maxDelay-100*time.Millisecond)))
		if rng.IntN(5) == 0 {
			delay = time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
		}
		// Sometimes crash the restart too: kill the broker again while it
		// recovers (re-dispatching the CommitLog tail), before it listens.
		var recoveryKill time.Duration
		if rng.IntN(4) == 0 {
			recoveryKill = time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
		}
		st := runRound(t, c, b, l, p, round, delay, recoveryKill)
		st.verify, st.total = verifyStore(t, c.NamesrvAddr, l, round, &st)
		again := ""
		if st.recoveryKill > 0 {
			again = fmt.Sprintf(", killed again %v into the restart", st.recoveryKill.Round(time.Millisecond))
		}
		t.Logf("round %2d: killed after %v%s; acked %d of %d sent, found %d (%d unacknowledged but stored), %d in store; restart %v (re-dispatched %s), verify %v; send errors %v",
			round, st.run.Round(time.Millisecond), again, st.acked, st.attempted, st.found, st.unackedPresent, st.total,
			st.restart.Round(time.Millisecond), st.redispatched, st.verify.Round(time.Millisecond), st.failed)
		if t.Failed() {
			t.Fatalf("round %d failed (CRASH_SEED=%d reproduces the schedule)", round, p.seed)
		}
		totals.acked += st.acked
		totals.attempted += st.attempted
		totals.found += st.found
		totals.unackedPresent += st.unackedPresent
	}
	t.Logf("crash harness: %d rounds in %v: %d acknowledged of %d sent, all found; %d unacknowledged but stored",
		p.rounds, time.Since(start).Round(time.Millisecond), totals.acked, totals.attempted, totals.unackedPresent)
}

// runRound produces for delay, kills the broker, stops the producers and
// restarts the broker; with recoveryKill > 0 it first starts the broker and
// kills it again after recoveryKill, in the middle of its recovery.
func runRound(t *testing.T, c *harness.Cluster, b *harness.BrokerProc, l *ledger, p params, round int, delay, recoveryKill time.Duration) roundStats {
	t.Helper()
	l.mu.Lock()
	l.failed = map[string]int{}
	l.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var producers []*client.Producer
	for i := range p.producers {
		pr, err := client.NewProducer(client.ProducerConfig{
			CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr},
				InstanceName: fmt.Sprintf("crash-r%d-p%d", round, i)},
			Group:                    fmt.Sprintf("crash_producer_%d", i),
			SendTimeout:              5 * time.Second,
			RetryTimesWhenSendFailed: -1,
			CompressOver:             -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := pr.Start(); err != nil {
			t.Fatal(err)
		}
		producers = append(producers, pr)
		wg.Go(func() { produce(ctx, pr, l, round, i) })
	}
	began := time.Now()
	time.Sleep(delay)
	b.Proc.Kill()
	run := time.Since(began)
	cancel()
	wg.Wait()
	for _, pr := range producers {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		pr.Shutdown(sctx) // the broker is gone: unregistering fails
		scancel()
	}
	st := roundStats{run: run, recoveryKill: recoveryKill}
	if recoveryKill > 0 {
		pr := harness.StartProcessWith(t, harness.ProcOptions{Name: b.Name + "-recovering"}, filepath.Join(c.BinDir, harness.Broker), "-c", b.ConfPath)
		time.Sleep(recoveryKill)
		pr.Kill()
	}
	restartAt := time.Now()
	c.Restart(t, b)
	st.restart = time.Since(restartAt)
	st.redispatched = redispatched(b.Proc.Logs())
	l.mu.Lock()
	st.failed = l.failed
	for _, r := range l.attempted {
		if r == round {
			st.attempted++
		}
	}
	for _, r := range l.acked {
		if r == round {
			st.acked++
		}
	}
	l.mu.Unlock()
	return st
}

// redispatched finds, in a broker log, how much CommitLog its recovery
// re-indexed ("re-dispatched CommitLog tail" bytes=N took=D).
func redispatched(log string) string {
	_, line, ok := strings.Cut(log, `msg="re-dispatched CommitLog tail"`)
	if !ok {
		return "nothing"
	}
	line, _, _ = strings.Cut(line, "\n")
	var bytes, took string
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "bytes="); ok {
			bytes = v
		}
		if v, ok := strings.CutPrefix(f, "took="); ok {
			took = v
		}
	}
	if n, err := strconv.ParseInt(bytes, 10, 64); err == nil {
		bytes = fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	if d, err := time.ParseDuration(took); err == nil {
		took = d.Round(time.Millisecond).String()
	}
	return bytes + " in " + took
}

// verifyStore reads every queue from offset 0 and checks it against the
// ledger; it fills st's per-round counts and returns the time it took and
// the number of messages stored.
func verifyStore(t *testing.T, namesrv string, l *ledger, round int, st *roundStats) (time.Duration, int) {
	t.Helper()
	began := time.Now()
	warn := &warnings{}
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{namesrv}, InstanceName: fmt.Sprintf("crash-verify-%d", round),
			Logger: slog.New(warn)},
		Group: "crash_verify",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	errs := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if errs++; errs <= maxErrors {
			t.Errorf("round %d: "+format, append([]any{round}, args...)...)
		}
	}
	var mqs []protocol.MessageQueue
	testutil.Eventually(t, 15*time.Second, func() error {
		mqs, err = pc.Queues(ctx, topic)
		return err
	})
	if len(mqs) != queues {
		t.Fatalf("round %d: %d queues: %v", round, len(mqs), mqs)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make(map[string]bool, len(l.attempted))
	total := 0
	for _, mq := range mqs {
		var maxOff, minOff int64
		testutil.Eventually(t, 15*time.Second, func() error {
			if maxOff, err = pc.GetMaxOffset(ctx, mq); err != nil {
				return err
			}
			minOff, err = pc.GetMinOffset(ctx, mq)
			return err
		})
		if minOff != 0 {
			fail("queue %d: min offset %d, want 0", mq.QueueID, minOff)
		}
		for off := int64(0); off < maxOff; {
			var res *client.PullResult
			testutil.Eventually(t, 15*time.Second, func() error {
				res, err = pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
				return err
			})
			if res.Status != client.PullFound || len(res.Messages) == 0 {
				fail("queue %d: pull at %d (max %d): %v, %d messages, next %d", mq.QueueID, off, maxOff, res.Status, len(res.Messages), res.NextBeginOffset)
				break
			}
			for _, m := range res.Messages {
				if m.QueueOffset != off {
					fail("queue %d: message at queue offset %d where %d was expected (offsets not contiguous)", mq.QueueID, m.QueueOffset, off)
				}
				off = m.QueueOffset + 1
				total++
				if m.Topic != topic || m.QueueID != int32(mq.QueueID) {
					fail("queue %d offset %d: message of %s-%d", mq.QueueID, m.QueueOffset, m.Topic, m.QueueID)
				}
				if m.SysFlag&message.FlagCompressed != 0 || m.BodyCRC != message.BodyCRC(m.Body) {
					fail("queue %d offset %d: corrupt record: body CRC %d, stored %d, sysFlag %#x",
						mq.QueueID, m.QueueOffset, message.BodyCRC(m.Body), m.BodyCRC, m.SysFlag)
					continue
				}
				id := idOf(m.Body)
				r, sent := l.attempted[id]
				switch {
				case !sent:
					fail("queue %d offset %d: message never sent: body %.40q", mq.QueueID, m.QueueOffset, m.Body)
					continue
				case seen[id]:
					fail("queue %d offset %d: %s stored twice", mq.QueueID, m.QueueOffset, id)
				case !slices.Equal(m.Body, body(id)):
					fail("queue %d offset %d: %s has a wrong body", mq.QueueID, m.QueueOffset, id)
				case m.Tags() != tag || !slices.Equal(m.Keys(), []string{id}):
					fail("queue %d offset %d: %s has tags %q keys %q", mq.QueueID, m.QueueOffset, id, m.Tags(), m.Keys())
				}
				seen[id] = true
				if r == round {
					st.found++
					if _, ok := l.acked[id]; !ok {
						st.unackedPresent++
					}
				}
			}
			if res.NextBeginOffset != off {
				fail("queue %d: nextBeginOffset %d after the message at %d", mq.QueueID, res.NextBeginOffset, off-1)
				off = max(off, res.NextBeginOffset)
			}
		}
	}
	for _, w := range warn.take() {
		fail("client warning while reading: %s", w)
	}
	lost := 0
	for id, r := range l.acked {
		if !seen[id] {
			if lost++; lost <= 5 {
				fail("acknowledged message %s (round %d) is missing", id, r)
			}
		}
	}
	if lost > 0 {
		fail("%d acknowledged messages missing in all", lost)
	}
	if errs > maxErrors {
		t.Logf("round %d: %d more errors not shown", round, errs-maxErrors)
	}
	return time.Since(began), total
}
