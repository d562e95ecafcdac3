package bench

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// Defaults of Apache's benchmark tools.
const (
	DefaultTopic          = "BenchmarkTest"
	DefaultProducerGroup  = "benchmark_producer"
	DefaultConsumerGroup  = "benchmark_consumer"
	DefaultReportInterval = 10 * time.Second
	maxAsyncInflight      = 10000 // Java's MAX_LENGTH_ASYNC_QUEUE
	errorPause            = 3 * time.Second
)

// ProducerOptions configure RunProducer. They mirror the options of
// Apache's benchmark Producer (and BatchProducer for BatchSize > 1).
type ProducerOptions struct {
	RunOptions
	Group           string
	Threads         int // sync senders; async mode uses one, as Java
	MessageSize     int
	KeyEnable       bool
	PropertySize    int
	TagCount        int
	MessageQuantity int64 // 0: until Duration or ctx ends
	DelayEnable     bool
	DelayLevel      int
	Async           bool
	BatchSize       int // > 1: SEND_BATCH_MESSAGE with this many messages
	CompressEnable  bool
	CompressLevel   int
	CompressOver    int
	FlushCheck      bool
	MaxInflight     int // async: in-flight cap; default 10000
	// Rate > 0 paces the sends (requests, all threads together) to Rate
	// per second, open loop: send i is due at start + i/Rate and its
	// latency counts from when it was due, so a slow answer that holds a
	// sender back shows in the latency instead of lowering the rate the
	// broker sees (no coordinated omission). One uncounted warm-up send
	// precedes them (route lookup, connections). 0: as fast as possible.
	Rate       float64
	ErrorPause time.Duration // pause after a failed send; default 3 s (Java)

	// LiteTopics > 0 is the lite mode: Topic is a LITE parent and every
	// message names one of LiteTopics lite topics <LitePrefix>0 … (one
	// per batch), round-robin or, with LiteRandom, at random.
	LiteTopics int
	LitePrefix string // default "lite-"
	LiteRandom bool
}

func (o *ProducerOptions) defaults() error {
	o.RunOptions.fill()
	o.Group = cmp.Or(o.Group, DefaultProducerGroup)
	if o.Threads <= 0 {
		o.Threads = 64
	}
	if o.Async {
		o.Threads = 1
	}
	if o.MessageSize <= 0 {
		o.MessageSize = 128
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1
	}
	if o.DelayLevel <= 0 {
		o.DelayLevel = 1
	}
	if o.CompressLevel == 0 {
		o.CompressLevel = 5
	}
	if o.CompressOver <= 0 {
		o.CompressOver = 4096
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = maxAsyncInflight
	}
	if o.ErrorPause <= 0 {
		o.ErrorPause = errorPause
	}
	if o.MessageQuantity < 0 || o.TagCount < 0 || o.PropertySize < 0 || o.Rate < 0 {
		return errors.New("negative messageQuantity, tagCount, propertySize or rate")
	}
	if o.BatchSize > 1 && o.DelayEnable {
		return errors.New("delay messages cannot be batched")
	}
	if err := liteDefaults(&o.LiteTopics, &o.LitePrefix); err != nil {
		return err
	}
	if o.LiteTopics > 0 && o.DelayEnable {
		return errors.New("lite topic messages cannot be delayed")
	}
	return protocol.ValidateTopic(o.Topic)
}

// producerRun is one RunProducer call.
type producerRun struct {
	o      ProducerOptions
	p      *client.Producer
	stats  ProducerStats
	status [4]atomic.Int64 // acknowledged requests by client.SendStatus
	acked  atomic.Int64    // messages the brokers stored, whatever the status
	body   []byte
	lite   atomic.Uint64 // round-robin position over the lite topics
	pace   *pacer        // nil: no Rate
}

// pacer hands out the due times of a fixed-rate run.
type pacer struct {
	start    time.Time
	interval float64 // ns between sends
	next     atomic.Int64
}

// due takes the next send's due time and waits for it. It returns false
// when stop ended first.
func (p *pacer) due(stop context.Context) (time.Time, bool) {
	at := p.start.Add(time.Duration(float64(p.next.Add(1)-1) * p.interval))
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop.Done():
			return at, false
		}
	}
	return at, stop.Err() == nil
}

// RunProducer sends until MessageQuantity messages were attempted, Duration
// elapsed or ctx ends, printing Apache's report lines to o.Out, then the
// final lines (and the JSON line with o.JSON).
func RunProducer(ctx context.Context, o ProducerOptions) (*ProducerSummary, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	r := &producerRun{o: o, body: randomBody(o.MessageSize)}
	r.printHeader()

	compressOver := -1 // Java sets the threshold to Integer.MAX_VALUE when disabled
	if o.CompressEnable {
		compressOver = o.CompressOver
		fmt.Fprintf(o.Out, "compressType: %s compressLevel: %d\n", "ZLIB", o.CompressLevel)
	}
	p, err := started(client.NewProducer(client.ProducerConfig{
		// RocketMQ headers, as Apache's benchmark tools.
		CommonConfig:  runClientConfig(o.RunOptions, "", remoting.SerializeRocketMQ),
		Group:         o.Group,
		CompressOver:  compressOver,
		CompressLevel: o.CompressLevel,
	}))
	if err != nil {
		return nil, err
	}
	r.p = p
	defer shutdown(ctx, p)

	var flush *flushChecker
	if o.FlushCheck {
		flush = newFlushChecker(ctx, o)
		defer flush.close()
	}

	stopCtx, stop := runContext(ctx, o.Duration)
	defer stop()
	repCtx, stopRep := context.WithCancel(context.Background())
	line := ProducerLine
	if o.BatchSize > 1 {
		line = BatchProducerLine
	}
	rep := startReporter(repCtx, o.ReportInterval, r.stats.Snapshot, func(now time.Time, begin, end ProducerSnapshot) {
		fmt.Fprint(o.Out, line(now, begin, end, r.stats.MaxRTMicros.Load()))
	})

	if o.Rate > 0 {
		// The route lookup and the connections come first, uncounted:
		// paced sends due meanwhile would all count that wait.
		if _, err := r.p.SendSync(stopCtx, r.build(1)[0]); err != nil {
			o.Logger.Error("[BENCHMARK_PRODUCER] warm-up send failed", "err", err)
		} else {
			r.acked.Add(1) // stored: the flush check counts it
		}
	}
	start := time.Now()
	if o.Rate > 0 {
		r.pace = &pacer{start: start, interval: 1e9 / o.Rate}
	}
	var wg sync.WaitGroup
	for _, limit := range splitQuantity(o.MessageQuantity, o.Threads) {
		if o.MessageQuantity > 0 && limit == 0 {
			break
		}
		if o.Async {
			wg.Go(func() { r.asyncLoop(stopCtx, limit) })
		} else {
			wg.Go(func() { r.syncLoop(stopCtx, limit) })
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopRep()
	snaps := rep.wait()

	total := r.stats.Snapshot(time.Now())
	if o.BatchSize <= 1 {
		fmt.Fprint(o.Out, ProducerComplete(snaps, total, r.stats.MaxRTMicros.Load()))
	}
	sum := r.summary(elapsed, total)
	if flush != nil {
		sum.FlushCheck = flush.check(ctx, r.acked.Load())
	}
	return printSummary(o.Out, o.JSON, sum)
}

// splitQuantity divides a message quantity among threads as Java does
// (the remainder goes to the first); 0 means unlimited for all.
func splitQuantity(q int64, threads int) []int64 {
	out := make([]int64, threads)
	if q <= 0 {
		return out
	}
	for i := range out {
		out[i] = q / int64(threads)
	}
	out[0] += q % int64(threads)
	return out
}

func (r *producerRun) printHeader() {
	o := r.o
	if o.BatchSize > 1 {
		fmt.Fprintf(o.Out, "topic: %s, threadCount: %d, messageSize: %d, batchSize: %d, keyEnable: %t, propertySize: %d, tagCount: %d, traceEnable: %t, aclEnable: %t\n compressEnable: %t, reportInterval: %d\n",
			o.Topic, o.Threads, o.MessageSize, o.BatchSize, o.KeyEnable, o.PropertySize, o.TagCount, false, o.Credentials != nil, o.CompressEnable, o.ReportInterval.Milliseconds())
	} else {
		fmt.Fprintf(o.Out, "topic: %s, threadCount: %d, messageSize: %d, keyEnable: %t, propertySize: %d, tagCount: %d, traceEnable: %t, aclEnable: %t, messageQuantity: %d, delayEnable: %t, delayLevel: %d, asyncEnable: %t\n compressEnable: %t, reportInterval: %d\n",
			o.Topic, o.Threads, o.MessageSize, o.KeyEnable, o.PropertySize, o.TagCount, false, o.Credentials != nil, o.MessageQuantity,
			o.DelayEnable, o.DelayLevel, o.Async, o.CompressEnable, o.ReportInterval.Milliseconds())
	}
	if o.LiteTopics > 0 {
		fmt.Fprintf(o.Out, " liteTopics: %d, litePrefix: %s, liteRandom: %t\n", o.LiteTopics, o.LitePrefix, o.LiteRandom)
	}
}

// syncLoop is one Java sender thread: send, record, repeat.
func (r *producerRun) syncLoop(stop context.Context, limit int64) {
	var sent int64
	for stop.Err() == nil && (limit == 0 || sent < limit) {
		n := r.o.BatchSize
		if limit > 0 {
			n = int(min(int64(n), limit-sent))
		}
		begin, ok := r.begin(stop)
		if !ok {
			return
		}
		msgs := r.build(n)
		// Sends are not cut short by stop: the last one completes and counts.
		sctx := context.WithoutCancel(stop)
		var res *client.SendResult
		var err error
		if n == 1 && r.o.BatchSize == 1 {
			res, err = r.p.SendSync(sctx, msgs[0])
		} else {
			res, err = r.p.SendBatch(sctx, msgs)
		}
		sent += int64(n)
		if r.record(begin, n, res, err) {
			sleepUntil(stop, r.o.ErrorPause)
		}
	}
}

// asyncLoop is Java's async mode: one sender, callbacks record, in-flight
// sends capped.
func (r *producerRun) asyncLoop(stop context.Context, limit int64) {
	sem := make(chan struct{}, r.o.MaxInflight)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var sent int64
	for stop.Err() == nil && (limit == 0 || sent < limit) {
		select {
		case sem <- struct{}{}:
		case <-stop.Done():
			return
		}
		n := r.o.BatchSize
		if limit > 0 {
			n = int(min(int64(n), limit-sent))
		}
		begin, ok := r.begin(stop)
		if !ok {
			<-sem
			return
		}
		msgs := r.build(n)
		inflight.Add(1)
		cb := func(res *client.SendResult, err error) {
			r.record(begin, n, res, err)
			<-sem
			inflight.Done()
		}
		sctx := context.WithoutCancel(stop)
		var err error
		if r.o.BatchSize == 1 {
			err = r.p.SendAsync(sctx, msgs[0], cb)
		} else {
			err = r.p.SendBatchAsync(sctx, msgs, cb)
		}
		sent += int64(n)
		if err != nil {
			cb(nil, err)
		}
	}
}

// begin is when the next send starts counting: now, or with a Rate its
// due time once it has come (false: stop ended while waiting).
func (r *producerRun) begin(stop context.Context) (time.Time, bool) {
	if r.pace == nil {
		return time.Now(), true
	}
	return r.pace.due(stop)
}

// record counts one send's outcome like Java's benchmark: broker answers
// that are errors are "Response Failed", everything else "Send Failed";
// batches count as failed unless SEND_OK. It reports whether the sender
// should pause (Java sleeps 3 s after remoting and broker errors).
func (r *producerRun) record(begin time.Time, n int, res *client.SendResult, err error) bool {
	s := &r.stats
	if err == nil {
		r.status[res.Status].Add(1)
		r.acked.Add(int64(n))
		if r.o.BatchSize > 1 && res.Status != client.SendOK {
			s.SendRequestFailed.Add(1)
			s.SendMessageFailed.Add(int64(n))
			return false
		}
		s.Success(time.Since(begin), n)
		return false
	}
	r.o.Logger.Error("[BENCHMARK_PRODUCER] Send Exception", "err", err)
	var re *client.ResponseError
	if errors.As(err, &re) && r.o.BatchSize <= 1 {
		s.ReceiveResponseFailed.Add(1)
	} else {
		s.SendRequestFailed.Add(1)
		s.SendMessageFailed.Add(int64(n))
	}
	// Client-side rejections (bad message, no route) are not worth a pause.
	return !errors.Is(err, client.ErrInvalidMessage) && !errors.Is(err, client.ErrNoRoute)
}

// build makes n messages with the options' keys, tags, properties and
// delay. Bodies share one random buffer, as Java's tool does.
func (r *producerRun) build(n int) []*message.Message {
	o := r.o
	now := time.Now()
	msgs := make([]*message.Message, n)
	tagBase := r.stats.SendMessageSuccess.Load()
	lite := r.nextLite()
	for i := range msgs {
		m := &message.Message{Topic: o.Topic, Body: r.body}
		if lite != "" {
			m.SetLiteTopic(lite)
		}
		if o.KeyEnable {
			m.SetKeys(strconv.FormatInt(now.UnixMilli()/1000, 10))
		}
		if o.DelayEnable {
			m.SetDelayTimeLevel(o.DelayLevel)
		}
		if o.TagCount > 0 {
			id := now.UnixMilli() % int64(o.TagCount) // Producer: currentTimeMillis % tagCount
			if o.BatchSize > 1 {
				id = (tagBase + int64(i)) % int64(o.TagCount) // BatchProducer: success count, then +1
			}
			m.SetTags("tag" + strconv.FormatInt(id, 10))
		}
		if o.PropertySize > 0 {
			addProperties(m, o.PropertySize)
		}
		msgs[i] = m
	}
	return msgs
}

// addProperties is Producer's filler: prop<i>=hello<v>, prop<i+1>=<v> pairs
// until their text exceeds size.
func addProperties(m *message.Message, size int) {
	v := rand.IntN(100)
	total := 0
	for i := 0; ; i += 2 {
		k1, v1 := "prop"+strconv.Itoa(i), "hello"+strconv.Itoa(v)
		k2, v2 := "prop"+strconv.Itoa(i+1), strconv.Itoa(v)
		m.SetProperty(k1, v1)
		m.SetProperty(k2, v2)
		total += len(k1) + len(k2) + len(v1) + len(v2)
		if total > size {
			return
		}
		v += 2
	}
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomBody is RandomStringUtils.randomAlphanumeric(size).
func randomBody(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = alphanumeric[rand.IntN(len(alphanumeric))]
	}
	return b
}

func (r *producerRun) summary(elapsed time.Duration, total ProducerSnapshot) *ProducerSummary {
	secs := elapsed.Seconds()
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	status := map[string]int64{}
	for i := range r.status {
		if n := r.status[i].Load(); n > 0 {
			status[client.SendStatus(i).String()] = n
		}
	}
	return &ProducerSummary{
		Type:           "producer",
		Topic:          r.o.Topic,
		Threads:        r.o.Threads,
		MessageSize:    r.o.MessageSize,
		BatchSize:      r.o.BatchSize,
		Async:          r.o.Async,
		Rate:           r.o.Rate,
		ElapsedSeconds: secs,
		SendTotal:      total.SendSuccess + total.SendFailed,
		SendSuccess:    total.SendSuccess,
		SendFailed:     total.SendFailed,
		ResponseFailed: total.RespFailed,
		Messages:       total.MsgSuccess,
		TPS:            rate(total.SendSuccess),
		MPS:            rate(total.MsgSuccess),
		Latency:        latencyOf(&r.stats.Latency),
		Status:         status,
		LiteTopics:     r.o.LiteTopics,
	}
}

// sleepUntil pauses d unless ctx ends first.
func sleepUntil(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// RunOptions are what every mode takes the same way: where to connect,
// how long to run, and how and where to report.
type RunOptions struct {
	NameServer     string
	Topic          string
	ReportInterval time.Duration
	Duration       time.Duration // 0: until the mode's own limit or ctx ends
	JSON           bool
	Credentials    *client.Credentials
	TLS            *tls.Config // nil: plaintext
	Out, Err       io.Writer
	Logger         *slog.Logger
}

// fill sets the defaults: DefaultTopic, DefaultReportInterval, and output
// and logs discarded.
func (o *RunOptions) fill() {
	o.Topic = cmp.Or(o.Topic, DefaultTopic)
	if o.ReportInterval <= 0 {
		o.ReportInterval = DefaultReportInterval
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}
