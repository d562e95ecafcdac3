package broker

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

func TestPoolForFollowsApache(t *testing.T) {
	for _, tc := range []struct {
		code  int32
		asked processor.Pool
		want  processor.Pool
	}{
		{code.SendMessageV2, processor.PoolAdmin, processor.PoolSend},
		{code.ConsumerSendMsgBack, processor.PoolAdmin, processor.PoolSend},
		{code.LitePullMessage, processor.PoolPull, processor.PoolLitePull},
		{code.AckMessage, processor.PoolSend, processor.PoolAck},
		{code.HeartBeat, processor.PoolAdmin, processor.PoolHeartbeat},
		{code.UpdateConsumerOffset, processor.PoolAdmin, processor.PoolConsumerManage},
		{code.QueryAssignment, processor.PoolAdmin, processor.PoolLoadBalance},
		{code.EndTransaction, processor.PoolSend, processor.PoolEndTransaction},
		{code.QueryMessage, processor.PoolAdmin, processor.PoolQuery},
		{code.UpdateAndCreateTopic, processor.PoolAdmin, processor.PoolAdmin},
		{code.PopLiteMessage, processor.PoolPull, processor.PoolPull}, // not Apache's list: as asked
	} {
		if got := poolFor(tc.code, tc.asked); got != tc.want {
			t.Errorf("poolFor(%d, %d) = %d, want %d", tc.code, tc.asked, got, tc.want)
		}
	}
}

// TestFastFailureAnswersQueuedSends: with every send worker stuck, sends
// past the queue's capacity are refused at once ([OVERLOAD]) and the queued
// ones are answered SYSTEM_BUSY ([TIMEOUT_CLEAN_QUEUE]) after
// waitTimeMillsInSendQueue instead of timing out at the client; once the
// workers are free, sends succeed again. With brokerFastFailureEnable off
// a queued send waits for a worker.
func TestFastFailureAnswersQueuedSends(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.SendThreadPoolQueueCapacity = 2
	cfg.WaitTimeMillsInSendQueue = 100 * time.Millisecond
	b := startBroker(t, cfg, nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	invoke := invoker(t, b)
	createTopic(t, invoke, "FF")

	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release := holdSendWorkers(t, ctx, b, client, sendWorkers(cfg))
	send := asyncSender(t, ctx, b, client, "FF")
	queued := []chan *remoting.Command{send(), send()}
	deadline := time.Now().Add(5 * time.Second)
	for b.pools[processor.PoolSend].QueueLen() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two sends never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	over := <-send()
	if over.Code != code.SystemBusy || over.Remark != "[OVERLOAD]system busy, start flow control for a while" {
		t.Fatalf("send past the queue: %d %q", over.Code, over.Remark)
	}
	sentAt := time.Now()
	for _, q := range queued {
		r := <-q
		if r.Code != code.SystemBusy || !strings.HasPrefix(r.Remark, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
			t.Fatalf("queued send: %d %q", r.Code, r.Remark)
		}
	}
	if waited := time.Since(sentAt); waited > 2*time.Second {
		t.Fatalf("queued sends answered after %v, want about waitTimeMillsInSendQueue (100ms)", waited)
	}

	// Fast failure off: a queued send waits for a worker and is stored.
	if r := invoke(code.UpdateBrokerConfig, nil, []byte("brokerFastFailureEnable=false\n")); r.Code != code.Success {
		t.Fatalf("update config: %d %s", r.Code, r.Remark)
	}
	waiting := send()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-waiting:
		t.Fatalf("send answered while every worker was stuck and fast failure off: %d %q", r.Code, r.Remark)
	default:
	}
	release()
	if r := <-waiting; r.Code != code.Success {
		t.Fatalf("send after the workers were freed: %d %q", r.Code, r.Remark)
	}
	if r := <-send(); r.Code != code.Success {
		t.Fatalf("send: %d %q", r.Code, r.Remark)
	}
}

// TestPageCacheBusySheds: while a CommitLog write has been stuck for longer
// than osPageCacheBusyTimeOutMills (Apache's "OS page cache busy"), new
// sends are refused with [REJECTREQUEST] and queued ones answered
// [PCBUSY_CLEAN_QUEUE], instead of waiting for the disk; once the write
// completes, sends are stored again.
func TestPageCacheBusySheds(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.OsPageCacheBusyTimeOutMills = 100 * time.Millisecond
	cfg.SendThreadPoolQueueCapacity = 4
	ffs := vfs.NewFaultFS(vfs.OS())
	b := startBroker(t, cfg, nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond), WithCommitLogFS(ffs))
	invoke := invoker(t, b)
	createTopic(t, invoke, "PC")
	if r := invoke(code.SendMessage, remotingtest.SendExt(t, "pg", "PC", 0), []byte("before")); r.Code != code.Success {
		t.Fatalf("send: %d %s", r.Code, r.Remark)
	}

	// The next write into the active segment hangs until released (the
	// next segment, made ahead in the background, is left alone).
	stuck, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ffs.SetHook(func(op vfs.Op) error {
		if op.Kind == vfs.OpWrite && filepath.Base(op.Path) == "00000000000000000000" {
			once.Do(func() { close(stuck); <-release })
		}
		return nil
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send := asyncSender(t, ctx, b, client, "PC")
	stalled := send()
	<-stuck
	for b.store.CommitLog().WriteStalledFor() <= cfg.OsPageCacheBusyTimeOutMills {
		time.Sleep(10 * time.Millisecond)
	}
	// Refused when it runs, or shed by the fast-failure scan if the scan
	// finds it still queued: both are Apache's answers to a busy page cache.
	if r := <-send(); r.Code != code.SystemBusy || (r.Remark != "[REJECTREQUEST]system busy, start flow control for a while" &&
		!strings.HasPrefix(r.Remark, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ")) {
		t.Fatalf("send while the page cache is busy: %d %q", r.Code, r.Remark)
	}

	// Queued sends are shed: hold every other send worker, then queue two.
	defer holdSendWorkers(t, ctx, b, client, sendWorkers(cfg)-1)()
	for _, r := range []*remoting.Command{<-send(), <-send()} {
		if r.Code != code.SystemBusy || !strings.HasPrefix(r.Remark, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
			t.Fatalf("queued send while the page cache is busy: %d %q", r.Code, r.Remark)
		}
	}

	released = true
	close(release)
	if r := <-stalled; r.Code != code.Success {
		t.Fatalf("the stalled send: %d %q", r.Code, r.Remark)
	}
	ffs.SetHook(nil)
	if r := invoke(code.SendMessage, remotingtest.SendExt(t, "pg", "PC", 0), []byte("after")); r.Code != code.Success {
		t.Fatalf("send after the write completed: %d %q", r.Code, r.Remark)
	}
}

// createTopic creates topic (one queue, read-write) through invoke.
func createTopic(t *testing.T, invoke func(int32, map[string]string, []byte) *remoting.Command, topic string) {
	t.Helper()
	if r := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil); r.Code != code.Success {
		t.Fatalf("create topic %s: %d %s", topic, r.Code, r.Remark)
	}
}

// holdSendWorkers registers, on b's send pool, a request code of no one's
// whose handler holds its worker until release is called, sends it n times
// and returns once n workers are held. Cleanup releases them too.
func holdSendWorkers(t *testing.T, ctx context.Context, b *Broker, client *remoting.Client, n int) (release func()) {
	t.Helper()
	const blockCode = 31999
	started, hold := make(chan struct{}, 1024), make(chan struct{})
	release = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	b.RegisterProcessor(blockCode, func(context.Context, *remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		started <- struct{}{}
		<-hold
		return &remoting.Command{Code: code.Success}, nil
	}, processor.PoolSend)
	// One at a time, and again when answered before it started: the client
	// sends requests issued together in one write, a burst larger than a
	// small test queue (the page-cache test's capacity is 4) is refused
	// before idle workers take it, and while the page cache is busy a
	// request caught in the queue by the fast-failure scan is shed.
	for i := 0; i < n; {
		answered := make(chan struct{})
		go func() {
			_, _ = client.Invoke(ctx, b.Addr(), remoting.NewRequest(blockCode, nil, nil))
			close(answered)
		}()
		select {
		case <-started:
			i++
		case <-answered:
		case <-ctx.Done():
			t.Fatalf("%d of %d blocking requests started", i, n)
		}
	}
	return release
}

// asyncSender returns a function that sends one message to topic on b and
// hands back the channel its answer comes on (code -1: the invoke failed,
// its error in the remark).
func asyncSender(t *testing.T, ctx context.Context, b *Broker, client *remoting.Client, topic string) func() chan *remoting.Command {
	return func() chan *remoting.Command {
		out := make(chan *remoting.Command, 1)
		go func() {
			resp, err := client.Invoke(ctx, b.Addr(), remoting.NewRequest(code.SendMessage, remotingtest.SendExt(t, "pg", topic, 0), []byte("m")))
			if err != nil {
				resp = &remoting.Command{Code: -1, Remark: err.Error()}
			}
			out <- resp
		}()
		return out
	}
}
