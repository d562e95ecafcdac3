package lite_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// debugLag prints the dispatch backlog every 500 ms during the delivery
// benchmark (go test -bench ... -args -lite.debuglag).
var debugLag = flag.Bool("lite.debuglag", false, "print the dispatch backlog during the delivery benchmark")

// BenchmarkLiteTopics creates b.N lite topics (one message each, 8
// writers) in a store with lite support attached, reports the creation
// rate and what they cost (RSS, Go heap and Pebble bytes per lite topic),
// then expires all of them in one sweep and reports its duration.
// A million lite topics (make bench-lite):
//
//	go test -run '^$' -bench LiteTopics -benchtime 1000000x ./broker/lite/
func BenchmarkLiteTopics(b *testing.B) {
	// One client of bench_cg subscribed to the first `subscribed` lite
	// topics, each with a committed offset, as after make bench-lite's
	// latency phase: the sweep's cascade then has offsets and
	// subscriptions to clean (LITE_BENCH_SUBSCRIBED, default 10%).
	subscribed := b.N / 10
	if v := os.Getenv("LITE_BENCH_SUBSCRIBED"); v != "" {
		subscribed, _ = strconv.Atoi(v)
	}
	subscribed = min(subscribed, b.N)
	// Expiration of 1 ms: after the creation every lite topic is idle
	// past its TTL.
	r := newStoreRig(b, storeRigOptions{
		maxLmqs: b.N + 1, maxSubs: subscribed + 1,
		parents: map[string]string{"Parent": "1"},
		groups:  map[string]map[string]string{"bench_cg": {"lite.bind.topic": "Parent", "lite.sub.client.quota": strconv.Itoa(subscribed + 1)}},
		tune: func(sc *store.Config) {
			sc.CommitLog.FileSize = 256 << 20
			sc.MessageIndexEnable = false
		},
	})
	st, svc := r.st, r.svc
	dir := r.dir
	body := make([]byte, 128)
	b.ResetTimer()
	start := time.Now()
	putLiteTopics(b, st, b.N, body)
	r.waitDispatched()
	// The index learns of new LMQs just after each dispatch round commits.
	for deadline := time.Now().Add(10 * time.Second); svc.Lifecycle.Index().Count("Parent") < b.N && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	created := time.Since(start)
	b.StopTimer()
	if got := svc.Lifecycle.Index().Count("Parent"); got != b.N {
		b.Fatalf("indexed %d lite topics, want %d", got, b.N)
	}
	if subscribed > 0 {
		lmqs := make([]string, subscribed)
		for i := range lmqs {
			lmqs[i] = "%LMQ%$Parent$lite-" + strconv.Itoa(i)
			svc.Offsets.Commit("bench_cg", lmqs[i], 1)
		}
		key := registry.ClientKey{ClientID: "bench-client", Group: "bench_cg"}
		if err := svc.Registry.AddPartial(key, "Parent", lmqs, nil); err != nil {
			b.Fatal(err)
		}
		if n := svc.Registry.Active(); n != int64(subscribed) {
			b.Fatalf("%d lite subscriptions, want %d", n, subscribed)
		}
	}
	if err := st.ConsumeQueue().Flush(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	// One more GC cycle, timed: what marking the live lite topics costs
	// (the machine otherwise idle, so it runs on every processor).
	gcStart := time.Now()
	runtime.GC()
	b.ReportMetric(time.Since(gcStart).Seconds()*1000, "gcMs")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N)/created.Seconds(), "created/s")
	b.ReportMetric(float64(rssKiB("VmRSS:"))/1024, "rssMiB")
	b.ReportMetric(float64(rssKiB("RssAnon:"))/1024, "rssAnonMiB")
	b.ReportMetric(float64(ms.HeapInuse)/float64(b.N), "heapB/lite")
	b.ReportMetric(float64(testutil.DirSize(filepath.Join(dir, "kv")))/float64(b.N), "pebbleB/lite")

	if f := os.Getenv("LITE_HEAP_PROFILE"); f != "" {
		// What the live lite topics hold, before the sweep frees it.
		writeProfile(b, f, "heap")
	}
	time.Sleep(5 * time.Millisecond)
	if f := os.Getenv("LITE_SWEEP_CPUPROFILE"); f != "" {
		stop := startRecording(b, f, pprof.StartCPUProfile, pprof.StopCPUProfile)
		defer stop()
	}
	// Let Pebble finish compacting the creation first: the sweep's own CPU
	// time is measured on its thread (RUSAGE_THREAD), its wall time as is.
	for i := 0; i < 300 && st.DB().Metrics().Compact.NumInProgress > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	runtime.LockOSThread()
	cpu0 := threadCPU()
	res, err := svc.Lifecycle.Sweep()
	cpu := threadCPU() - cpu0
	runtime.UnlockOSThread()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(cpu.Seconds(), "sweepCPUSec")
	if res.Deleted != b.N || st.LmqCount() != 0 || svc.Lifecycle.Index().Count("") != 0 {
		b.Fatalf("sweep %+v, %d LMQs left", res, st.LmqCount())
	}
	if n := svc.Registry.Active(); n != 0 {
		b.Fatalf("%d lite subscriptions left after the sweep", n)
	}
	if off := svc.Offsets.Committed("bench_cg", "%LMQ%$Parent$lite-0"); off != -1 {
		b.Fatalf("offset %d left after the sweep", off)
	}
	b.ReportMetric(res.Took.Seconds(), "sweepSec")
	b.ReportMetric(res.Cascade.Seconds(), "cascadeSec")
}

// BenchmarkLiteSend compares sends to a LITE parent, each message to a new
// lite topic (a new LMQ), with plain sends to the same parent, through an
// in-process broker over loopback (32 senders):
//
//	go test -run '^$' -bench LiteSend -benchtime 200000x ./broker/lite/
func BenchmarkLiteSend(b *testing.B) {
	r := newBenchRig(b)
	for _, mode := range []string{"parent", "lite"} {
		b.Run(mode, func(b *testing.B) {
			var seq atomic.Int64
			prefix := fmt.Sprintf("%s-%d-", mode, time.Now().UnixNano())
			b.SetParallelism(32 / max(runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				body := make([]byte, 256)
				for pb.Next() {
					i := seq.Add(1)
					props := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: prefix + strconv.FormatInt(i, 10)}
					if mode == "lite" {
						props[message.PropertyLiteTopic] = "u" + prefix + strconv.FormatInt(i, 10)
					}
					if resp := r.send(int(i%8), body, props); resp.Code != code.Success {
						b.Errorf("send: %d %s", resp.Code, resp.Remark)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSweepUnderSends: b.N lite topics (one message each, written
// straight to the store of an in-process broker) expire in one sweep while
// 8 senders send plain messages to the broker over loopback; it reports
// the sweep's duration and the send p99 in the 2 s before it and during
// it. LITE_SWEEP_SEND_RATE=n sends n msgs/s on a fixed schedule instead
// of as fast as 8 senders can. LITE_SWEEP_REST_MS sets liteSweepRestMs
// (0: no pauses);
// LITE_SWEEP_MUTEXPROFILE and LITE_SWEEP_BLOCKPROFILE write the lock
// contention and blocking seen during the sweep; LITE_SWEEP_ALLOCPROFILE=f
// writes the allocation profile to f.before and f.after (compare them with
// go tool pprof -sample_index=alloc_space -base f.before f.after);
// LITE_SWEEP_CPUPROFILE writes a CPU profile of the sweep's duration and
// LITE_SWEEP_TRACE an execution trace of it (go tool trace).
//
//	go test -run '^$' -bench SweepUnderSends -benchtime 1000000x ./broker/lite/
func BenchmarkSweepUnderSends(b *testing.B) {
	r := newBenchRigWith(b, func(c *config.Config) {
		c.MinLiteTTL = 0
		c.LiteTTLCheckInterval = time.Hour // the benchmark sweeps itself
		c.MaxLmqConsumeQueueNum = b.N + 1
		if v := os.Getenv("LITE_SWEEP_REST_MS"); v != "" { // 0: an unpaced sweep
			ms, _ := strconv.Atoi(v)
			c.LiteSweepRestMs = time.Duration(ms) * time.Millisecond
		}
	}, broker.WithLiteExpirationUnit(time.Millisecond))
	ext := map[string]string{"topic": "Plain", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG"}
	if resp := r.invoke(code.UpdateAndCreateTopic, ext, nil); resp.Code != code.Success {
		b.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	st, svc := r.br.Store(), r.br.Lite()
	body := make([]byte, 128)
	putLiteTopics(b, st, b.N, body)
	for st.ConsumeQueue().DispatchedOffset() < st.CommitLog().MaxOffset() {
		time.Sleep(time.Millisecond)
	}
	ext = map[string]string{"topic": "Parent", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=LITE,+lite.topic.expiration=1"}
	if resp := r.invoke(code.UpdateAndCreateTopic, ext, nil); resp.Code != code.Success {
		b.Fatalf("lower the expiration: %d %s", resp.Code, resp.Remark)
	}
	runtime.GC()

	// Closed loop (8 senders back to back, saturating the machine), or open
	// loop at LITE_SWEEP_SEND_RATE msgs/s from 32 senders.
	rate, _ := strconv.Atoi(os.Getenv("LITE_SWEEP_SEND_RATE"))
	workers := 8
	if rate > 0 {
		workers = 32
	}
	load := testutil.StartLoad(workers, rate, func(s int) bool {
		if resp := r.sendTo("Plain", s%8, body, nil); resp.Code != code.Success {
			b.Errorf("send: %d %s", resp.Code, resp.Remark)
			return false
		}
		return true
	})
	time.Sleep(2 * time.Second)
	if os.Getenv("LITE_SWEEP_MUTEXPROFILE") != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if os.Getenv("LITE_SWEEP_BLOCKPROFILE") != "" {
		runtime.SetBlockProfileRate(int(time.Microsecond))
	}
	allocProfile := func(suffix string) {
		if f := os.Getenv("LITE_SWEEP_ALLOCPROFILE"); f != "" {
			runtime.GC() // the profile is as of the last GC
			writeProfile(b, f+suffix, "allocs")
		}
	}
	allocProfile(".before")
	stopCPU := func() {}
	if f := os.Getenv("LITE_SWEEP_CPUPROFILE"); f != "" {
		stopCPU = startRecording(b, f, pprof.StartCPUProfile, pprof.StopCPUProfile)
	}
	stopTrace := func() {}
	if f := os.Getenv("LITE_SWEEP_TRACE"); f != "" {
		stopTrace = startRecording(b, f, trace.Start, trace.Stop)
	}
	b.ResetTimer()
	sweepStart := time.Now()
	res, err := svc.Lifecycle.Sweep()
	sweepEnd := time.Now()
	b.StopTimer()
	stopCPU()
	stopTrace()
	allocProfile(".after")
	runtime.SetMutexProfileFraction(0)
	runtime.SetBlockProfileRate(0)
	for env, name := range map[string]string{"LITE_SWEEP_MUTEXPROFILE": "mutex", "LITE_SWEEP_BLOCKPROFILE": "block"} {
		if f := os.Getenv(env); f != "" {
			writeProfile(b, f, name)
		}
	}
	time.Sleep(200 * time.Millisecond)
	samples := load.Stop()
	if err != nil || res.Deleted != b.N {
		b.Fatalf("sweep %+v %v, want %d deleted", res, err, b.N)
	}
	if os.Getenv("LITE_SWEEP_TIMELINE") == "1" {
		// Sends by 50 ms bucket of their start around the sweep (for tuning);
		// the cascade starts at took-cascade.
		type bucket struct {
			n, slow int
			max     time.Duration
		}
		tl := map[int]*bucket{}
		for _, s := range samples {
			k := int(math.Floor(float64(s.At.Sub(sweepStart)) / float64(50*time.Millisecond)))
			if s.At.Before(sweepStart.Add(-500*time.Millisecond)) || s.At.After(sweepEnd.Add(200*time.Millisecond)) {
				continue
			}
			bk := tl[k]
			if bk == nil {
				bk = &bucket{}
				tl[k] = bk
			}
			bk.n++
			if s.Lat > 10*time.Millisecond {
				bk.slow++
			}
			bk.max = max(bk.max, s.Lat)
		}
		fmt.Printf("sweep of %d took %v, cascade %v (from %v), flush %v\n", b.N, res.Took, res.Cascade, res.Took-res.Cascade, res.Flush)
		for _, k := range slices.Sorted(maps.Keys(tl)) {
			bk := tl[k]
			fmt.Printf("%+6d ms: %4d sends, %3d over 10 ms, max %v\n", k*50, bk.n, bk.slow, bk.max.Round(100*time.Microsecond))
		}
	}
	var before, during []time.Duration
	for _, s := range samples {
		switch {
		case !s.At.Before(sweepStart) && s.At.Before(sweepEnd):
			during = append(during, s.Lat)
		case s.At.Before(sweepStart) && s.At.After(sweepStart.Add(-2*time.Second)):
			before = append(before, s.Lat)
		}
	}
	b.ReportMetric(res.Took.Seconds(), "sweepSec")
	b.ReportMetric(res.Cascade.Seconds(), "cascadeSec")
	b.ReportMetric(float64(p99(before).Microseconds())/1000, "p99BeforeMs")
	b.ReportMetric(float64(p99(during).Microseconds())/1000, "p99DuringMs")
	b.ReportMetric(float64(len(during))/sweepEnd.Sub(sweepStart).Seconds(), "sendsDuring/s")
	b.ReportMetric(float64(len(before))/2, "sendsBefore/s")
}

// putLiteTopics stores n messages to Parent straight into st, each to a
// new lite topic lite-<i>, from 8 writers.
func putLiteTopics(b *testing.B, st *store.Store, n int, body []byte) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				l := "lite-" + strconv.FormatInt(i, 10)
				m := &message.Message{Topic: "Parent", QueueID: int32(i % 8), Body: body, BornTimestamp: 1, Properties: map[string]string{
					message.PropertyLiteTopic: l, message.PropertyInnerMultiDispatch: "%LMQ%$Parent$" + l,
				}}
				if _, err := st.PutMessage(context.Background(), m); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// writeProfile writes the runtime profile called name to path.
func writeProfile(b *testing.B, path, name string) {
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if err := pprof.Lookup(name).WriteTo(out, 0); err != nil {
		b.Fatal(err)
	}
}

// startRecording starts a recorder (trace.Start, pprof.StartCPUProfile)
// writing to path; the returned func ends it (trace.Stop,
// pprof.StopCPUProfile) and closes the file.
func startRecording(b *testing.B, path string, start func(io.Writer) error, end func()) (stop func()) {
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := start(out); err != nil {
		b.Fatal(err)
	}
	return func() {
		end()
		out.Close()
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)*99/100]
}

type benchRig struct {
	b      *testing.B
	br     *broker.Broker
	addr   string
	client *remoting.Client
}

func newBenchRig(b *testing.B) *benchRig { return newBenchRigWith(b, nil) }

// newBenchRigWith starts the rig's broker with tune applied to its config
// and opts passed to broker.New.
func newBenchRigWith(b *testing.B, tune func(*config.Config), opts ...broker.Option) *benchRig {
	b.Helper()
	nsAddr := fakens.Start(b).Addr()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: b.TempDir()})
	c.ListenPort = 0
	c.BindAddress = "127.0.0.1"
	c.StorePathRootDir = b.TempDir()
	c.NamesrvAddr = nsAddr
	c.EnableLmq, c.EnableMultiDispatch = true, true
	c.MaxLmqConsumeQueueNum = 100_000_000
	c.MappedFileSizeCommitLog = 256 << 20
	if tune != nil {
		tune(c)
	}
	br := startBrokerOf(b, c, opts...)
	r := &benchRig{b: b, br: br, addr: br.Addr(), client: remoting.NewClient(remoting.DefaultClientConfig(), nil)}
	b.Cleanup(func() { _ = r.client.Close() })
	ext := map[string]string{"topic": "Parent", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6",
		"topicFilterType": "SINGLE_TAG", "attributes": "+message.type=LITE"}
	if resp := r.invoke(code.UpdateAndCreateTopic, ext, nil); resp.Code != code.Success {
		b.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	return r
}

func (r *benchRig) invoke(c int32, ext map[string]string, body []byte) *remoting.Command {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.client.Invoke(ctx, r.addr, remoting.NewRequest(c, ext, body))
	if err != nil {
		return &remoting.Command{Code: -1, Remark: err.Error()}
	}
	return resp
}

// subscribe creates the group bench_cg bound to Parent, quota lite
// subscriptions per client, and subscribes client c1 to n lite topics
// prefix0..prefix<n-1>, whose names it returns.
func (r *benchRig) subscribe(prefix string, n, quota int) []string {
	r.b.Helper()
	body, _ := json.Marshal(map[string]any{"groupName": "bench_cg", "consumeEnable": true,
		"attributes": map[string]string{"+lite.bind.topic": "Parent", "+lite.sub.client.quota": strconv.Itoa(quota)}})
	if resp := r.invoke(code.UpdateAndCreateSubscriptionGroup, nil, body); resp.Code != code.Success {
		r.b.Fatalf("create group: %d %s", resp.Code, resp.Remark)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	sub, _ := json.Marshal(map[string]any{"subscriptionSet": []any{map[string]any{
		"action": "COMPLETE_ADD", "clientId": "c1", "group": "bench_cg", "topic": "Parent", "liteTopicSet": names, "version": 1}}})
	if resp := r.invoke(code.LiteSubscriptionCtl, nil, sub); resp.Code != code.Success {
		r.b.Fatalf("subscribe: %d %s", resp.Code, resp.Remark)
	}
	return names
}

// popLite long-polls (pollMs) client c1's lite messages of bench_cg, 32 at
// most.
func (r *benchRig) popLite(pollMs string) *remoting.Command {
	return r.invoke(code.PopLiteMessage, map[string]string{"clientId": "c1", "consumerGroup": "bench_cg", "topic": "Parent",
		"maxMsgNum": "32", "invisibleTime": "60000", "pollTime": pollMs, "bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10)}, nil)
}

// liteAck is the ACK_MESSAGE header of m, popped by popLite's answer resp.
func liteAck(resp *remoting.Command, m *message.Message) map[string]string {
	off := m.Properties[message.PropertyInnerMultiQueueOffset]
	return map[string]string{"consumerGroup": "bench_cg", "topic": "Parent", "queueId": "0", "offset": off,
		"liteTopic": m.Properties[message.PropertyLiteTopic],
		"extraInfo": fmt.Sprintf("0 %s %s 999 0 broker-a 0 %s", resp.ExtFields["popTime"], resp.ExtFields["invisibleTime"], off)}
}

func (r *benchRig) send(qid int, body []byte, props map[string]string) *remoting.Command {
	return r.sendTo("Parent", qid, body, props)
}

func (r *benchRig) sendTo(topic string, qid int, body []byte, props map[string]string) *remoting.Command {
	p, _ := message.EncodeProperties(props)
	return r.invoke(code.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "8",
		"queueId": strconv.Itoa(qid), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"properties": string(p), "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, body)
}

// threadCPU is the calling thread's user+system CPU time (Linux
// RUSAGE_THREAD): with the goroutine locked to its thread, what the sweep
// itself costs on a machine busy with other work.
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKiB reads a /proc/self/status line (VmRSS:, RssAnon:) in KiB.
func rssKiB(key string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkLitePop: one client subscribed to b.N lite topics with one
// message each pops (32 at a time) and acks them all, through an
// in-process broker over loopback: the drain rate of a backlog spread over
// many lite topics (events, full-dispatch refills, pop, ack).
//
//	go test -run '^$' -bench LitePop -benchtime 50000x ./broker/lite/
func BenchmarkLitePop(b *testing.B) {
	r := newBenchRig(b)
	names := r.subscribe("p", b.N, b.N+1)
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if resp := r.send(i%8, []byte("m"), map[string]string{message.PropertyLiteTopic: names[i]}); resp.Code != code.Success {
					b.Errorf("send: %d %s", resp.Code, resp.Remark)
				}
			}
		}()
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	acks := make(chan map[string]string, 256)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ext := range acks {
				if resp := r.invoke(code.AckMessage, ext, nil); resp.Code != code.Success {
					b.Errorf("ack: %d %s", resp.Code, resp.Remark)
				}
			}
		}()
	}
	b.ResetTimer()
	start := time.Now()
	got, pops := 0, 0
	for got < b.N && time.Since(start) < 5*time.Minute {
		resp := r.popLite("1000")
		pops++
		if resp.Code != code.Success {
			continue
		}
		msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			got++
			acks <- liteAck(resp, m)
		}
	}
	close(acks)
	wg.Wait()
	b.StopTimer()
	if got < b.N {
		b.Fatalf("popped %d of %d", got, b.N)
	}
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(got)/float64(pops), "msgs/pop")
}

// BenchmarkLiteDelivery: one client subscribed to 100k lite topics pops
// (two long polls in flight, 32 at a time, acking each message one way)
// while b.N messages go at LITE_DELIVERY_RATE msgs/s (2000) to random
// ones of them: store-to-receipt latency, as the e2e bench's delivery
// phase measures it (make bench-lite), in one process. Run it with -cpu
// 2,4: more processors than the bench machine has cores is how more
// parallel hardware shows races.
//
//	go test -run '^$' -bench LiteDelivery -benchtime 10000x -cpu 2,4 ./broker/lite/
func BenchmarkLiteDelivery(b *testing.B) {
	// LITE_DELIVERY_IDLE=n first stores n idle lite topics (one message
	// each) and sweeps every 2 s, finding none to expire, as the e2e
	// bench's broker does.
	idle, _ := strconv.Atoi(os.Getenv("LITE_DELIVERY_IDLE"))
	r := newBenchRigWith(b, func(c *config.Config) {
		if idle > 0 && os.Getenv("LITE_DELIVERY_NOSWEEP") != "1" {
			c.LiteTTLCheckInterval = 2 * time.Second
			c.MinLiteTTL = time.Second
		}
	})
	if idle > 0 {
		st := r.br.Store()
		putLiteTopics(b, st, idle, make([]byte, 128))
		// LITE_DELIVERY_BURST=1: do not wait for that preload to be
		// dispatched, so the first messages arrive in a burst behind it
		// and overflow the client's event set.
		for os.Getenv("LITE_DELIVERY_BURST") != "1" && st.ConsumeQueue().DispatchedOffset() < st.CommitLog().MaxOffset() {
			time.Sleep(time.Millisecond)
		}
	}
	const subscribed = 100_000
	names := r.subscribe("d", subscribed, 2*subscribed)
	rate := 2000
	if v, _ := strconv.Atoi(os.Getenv("LITE_DELIVERY_RATE")); v > 0 {
		rate = v
	}
	type got struct {
		lite  string
		off   string
		lat   time.Duration
		store int64
	}
	var mu sync.Mutex
	var recv []got
	stop := make(chan struct{})
	var pops sync.WaitGroup
	for w := 0; w < 2; w++ {
		pops.Add(1)
		go func() {
			defer pops.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp := r.popLite("2000")
				at := time.Now()
				if resp.Code != code.Success {
					continue
				}
				msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
				if err != nil {
					b.Error(err)
					return
				}
				for _, m := range msgs {
					off := m.Properties[message.PropertyInnerMultiQueueOffset]
					lite := m.Properties[message.PropertyLiteTopic]
					mu.Lock()
					recv = append(recv, got{lite, off, at.Sub(time.UnixMilli(m.StoreTimestamp)), m.StoreTimestamp})
					mu.Unlock()
					_ = r.client.InvokeOneway(context.Background(), r.addr, remoting.NewRequest(code.AckMessage, liteAck(resp, m), nil))
				}
			}
		}()
	}
	b.ResetTimer()
	start := time.Now()
	if *debugLag {
		go func() {
			st := r.br.Store()
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
				fmt.Printf("%v: dispatch behind %d bytes\n", time.Since(start).Round(time.Millisecond), st.CommitLog().MaxOffset()-st.ConsumeQueue().DispatchedOffset())
			}
		}()
	}
	var sends sync.WaitGroup
	sent := map[string]int{}
	for i := 0; i < b.N; i++ {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		name := names[rand.IntN(len(names))]
		sent[name]++
		sends.Add(1)
		go func() {
			defer sends.Done()
			if resp := r.send(i%8, []byte("latency"), map[string]string{message.PropertyLiteTopic: name}); resp.Code != code.Success {
				b.Errorf("send: %d %s", resp.Code, resp.Remark)
			}
		}()
	}
	sends.Wait()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(recv)
		mu.Unlock()
		if n >= b.N {
			break
		}
	}
	b.StopTimer()
	close(stop)
	pops.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(recv) < b.N {
		b.Errorf("received %d of %d", len(recv), b.N)
	}
	lats := make([]time.Duration, len(recv))
	slow := 0
	for i, g := range recv {
		lats[i] = g.lat
		if g.lat > time.Second {
			slow++
			if (slow <= 10 || slow%200 == 0) && os.Getenv("LITE_DELIVERY_SLOW") == "1" {
				fmt.Printf("slow: %s offset %s after %v (%d sent to it), stored at +%v\n", g.lite, g.off, g.lat, sent[g.lite], time.UnixMilli(g.store).Sub(start))
			}
		}
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50Ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99Ms")
		b.ReportMetric(float64(lats[len(lats)-1].Microseconds())/1000, "maxMs")
	}
	b.ReportMetric(float64(slow), "over1s")
}
