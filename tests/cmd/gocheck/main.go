// Command gocheck is the Go real-client check (rocketmq-client-go v2) for any
// RocketMQ cluster: it produces messages in the shared check format
// (tests/interop/checkmsg, docs/interop.md) and/or consumes them with push
// consumers, verifying every body, tag, key and property exactly and
// counting duplicates per consumer group.
//
//	gocheck roundtrip -n 127.0.0.1:9876 -t CheckTopic -count 1000
//	gocheck produce -n 127.0.0.1:9876 -t T -send-mode async -sizes 16,5000,65536
//	gocheck consume -n 127.0.0.1:9876 -t T -run RUN -count 1000 -groups 2 -consumers 2
//
// Modes: produce, consume, roundtrip (produce, then consume). Send modes:
// sync, async, oneway, batch. By default bodies cycle through
// 16 B .. 64 KiB (checkmsg.DefaultSizes), so bodies over 4 KiB are
// compressed by the client.
//
// The last line on stdout is a JSON object (checkmsg.Result); the exit code
// is 0 when the check passed, 1 when it failed, 2 on bad usage. Client logs
// go to stderr (-log-level, default error).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/tests/interop/checkmsg"
)

// clientGoVersionCode is the remoting "version" rocketmq-client-go v2 puts in
// every request (internal/remote/codec.go: 317 = V4_5_2).
const clientGoVersionCode = 317

// maxErrors bounds Result.Errors.
const maxErrors = 10

type options struct {
	mode          string
	namesrv       string
	topic         string
	group         string
	producerGroup string
	count         int
	sizes         []int
	tags          []string
	expr          string
	sendMode      string
	run           string
	timeout       time.Duration
	linger        time.Duration
	concurrency   int
	batch         int
	sendTimeout   time.Duration
	retries       int
	threads       int
	groups        int
	consumers     int
	allowDups     bool
	logLevel      string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintln(w, "usage: gocheck produce|consume|roundtrip [options]")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func parse(args []string, stderr io.Writer) (*options, int) {
	o := &options{}
	fs := flag.NewFlagSet("gocheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.namesrv, "n", "127.0.0.1:9876", "nameserver address")
	fs.StringVar(&o.topic, "t", "RmqgoCheck", "topic")
	fs.StringVar(&o.group, "g", "", "consumer group (default rmqgo_check_go_RUN; with -groups N: GROUP_0..GROUP_N-1)")
	fs.StringVar(&o.producerGroup, "pg", "rmqgo_check_producer_go", "producer group")
	fs.IntVar(&o.count, "count", 1000, "messages to send; distinct messages to expect per group")
	size := fs.Int("size", -1, "fixed body size (shortcut for -sizes N)")
	sizes := fs.String("sizes", checkmsg.DefaultSizes, "body sizes, cycled by sequence")
	tags := fs.String("tags", "TagA,TagB", "tags, cycled by sequence")
	fs.StringVar(&o.expr, "expr", "*", "consumer tag expression, e.g. '*' or 'TagA || TagB'")
	fs.StringVar(&o.sendMode, "send-mode", "sync", "sync | async | oneway | batch")
	fs.StringVar(&o.run, "run", "", "run id (default random; consume: only this run's messages count, empty = any run)")
	timeout := fs.Float64("timeout", 120, "consume deadline in seconds")
	linger := fs.Int("linger", 1000, "keep consuming this many ms after the last expected message to catch duplicates")
	fs.IntVar(&o.concurrency, "concurrency", 64, "async sends in flight")
	fs.IntVar(&o.batch, "batch", 32, "messages per batch in batch mode")
	sendTimeout := fs.Int("send-timeout", 10000, "producer send timeout in ms")
	fs.IntVar(&o.retries, "retries", 2, "producer retries when a send fails")
	fs.IntVar(&o.threads, "threads", 4, "consume goroutines per consumer")
	fs.IntVar(&o.groups, "groups", 1, "consumer groups; each must receive every message")
	fs.IntVar(&o.consumers, "consumers", 1, "push consumers per group (share the queues)")
	fs.BoolVar(&o.allowDups, "allow-dups", false, "duplicates do not fail the check")
	fs.StringVar(&o.logLevel, "log-level", "error", "client-go log level (debug, info, warn, error), logs go to stderr")

	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(fs, stderr)
		if len(args) == 0 {
			return nil, 2
		}
		return nil, 0
	}
	o.mode = args[0]
	switch o.mode {
	case "produce", "consume", "roundtrip":
	default:
		fmt.Fprintf(stderr, "gocheck: unknown mode %q\n", o.mode)
		usage(fs, stderr)
		return nil, 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, stderr)
			return nil, 0
		}
		fmt.Fprintf(stderr, "gocheck: %v\n", err)
		usage(fs, stderr)
		return nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gocheck: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	}
	if *size >= 0 {
		*sizes = fmt.Sprint(*size)
	}
	var err error
	if o.sizes, err = checkmsg.ParseSizes(*sizes); err != nil {
		fmt.Fprintf(stderr, "gocheck: -sizes: %v\n", err)
		return nil, 2
	}
	o.tags = strings.Split(*tags, ",")
	switch o.sendMode {
	case "sync", "async", "oneway", "batch":
	default:
		fmt.Fprintf(stderr, "gocheck: unknown send mode %q\n", o.sendMode)
		return nil, 2
	}
	if o.count < 0 || o.concurrency < 1 || o.batch < 1 || o.threads < 1 || o.groups < 1 || o.consumers < 1 {
		fmt.Fprintln(stderr, "gocheck: count must be >= 0; concurrency, batch, threads, groups, consumers >= 1")
		return nil, 2
	}
	o.timeout = time.Duration(*timeout * float64(time.Second))
	o.linger = time.Duration(*linger) * time.Millisecond
	o.sendTimeout = time.Duration(*sendTimeout) * time.Millisecond
	if o.run == "" && o.mode != "consume" {
		o.run = fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff^int64(os.Getpid())<<20)
	}
	if o.group == "" {
		id := o.run
		if id == "" {
			id = fmt.Sprintf("%x", time.Now().UnixNano())
		}
		o.group = "rmqgo_check_go_" + id
	}
	return o, -1
}

// result collects the outcome; safe for concurrent use.
type result struct {
	mu  sync.Mutex
	res checkmsg.Result
}

func (r *result) error(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.res.Errors) < maxErrors {
		r.res.Errors = append(r.res.Errors, fmt.Sprintf(format, args...))
	}
}

func (r *result) fail(format string, args ...any) {
	r.error(format, args...)
	r.mu.Lock()
	r.res.OK = false
	r.mu.Unlock()
}

func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/apache/rocketmq-client-go/v2" {
				return "rocketmq-client-go/v2@" + d.Version
			}
		}
	}
	return "rocketmq-client-go/v2"
}

func run(args []string, stdout, stderr io.Writer) int {
	o, code := parse(args, stderr)
	if o == nil {
		return code
	}
	rlog.SetLogLevel(o.logLevel)

	r := &result{res: checkmsg.Result{
		Client:            "go",
		ClientVersion:     clientVersion(),
		ClientVersionCode: clientGoVersionCode,
		Mode:              o.mode,
		Namesrv:           o.namesrv,
		Topic:             o.topic,
		Group:             o.group,
		Run:               o.run,
		OK:                true,
		Errors:            []string{},
	}}
	start := time.Now()
	if o.mode != "consume" {
		produce(o, r)
	}
	if o.mode != "produce" && (r.res.OK || o.mode == "consume") {
		expected := o.count
		if o.mode == "roundtrip" {
			expected = checkmsg.Expected(o.count, o.tags, o.expr)
		}
		consume(o, r, expected)
	}
	r.res.TotalMs = time.Since(start).Milliseconds()
	line, err := json.Marshal(&r.res)
	if err != nil {
		fmt.Fprintf(stderr, "gocheck: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(line))
	if !r.res.OK {
		return 1
	}
	return 0
}

func build(o *options, seq int) *primitive.Message {
	body := checkmsg.Body(seq, o.sizes[seq%len(o.sizes)])
	tag := o.tags[seq%len(o.tags)]
	m := primitive.NewMessage(o.topic, body)
	// WithProperties replaces the whole property map (tags and keys
	// included), so it must come first.
	m.WithProperties(checkmsg.Props(o.run, seq, body, tag, "go"))
	m.WithTag(tag)
	m.WithKeys(checkmsg.KeyList(o.run, seq))
	return m
}

func produce(o *options, r *result) {
	var sent, failed atomic.Int64
	defer func() {
		r.res.SendMode = o.sendMode
		r.res.Sent = sent.Load()
		r.res.Failed = failed.Load()
		if r.res.SendMs > 0 {
			r.res.SendPerSec = r.res.Sent * 1000 / r.res.SendMs
		}
		if r.res.Failed > 0 || r.res.Sent != int64(o.count) {
			r.fail("produce: sent %d of %d, failed %d", r.res.Sent, o.count, r.res.Failed)
		}
	}()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{o.namesrv})),
		producer.WithGroupName(o.producerGroup),
		producer.WithInstanceName("rmqgo-check-p-"+o.run),
		producer.WithRetry(o.retries),
		producer.WithSendMsgTimeout(o.sendTimeout),
	)
	if err != nil {
		r.fail("new producer: %v", err)
		return
	}
	if err := p.Start(); err != nil {
		r.fail("start producer: %v", err)
		return
	}
	defer p.Shutdown()

	ctx := context.Background()
	start := time.Now()
	checkSync := func(what string, n int, res *primitive.SendResult, err error) {
		switch {
		case err != nil:
			failed.Add(int64(n))
			r.error("%s: %v", what, err)
		case res.Status != primitive.SendOK:
			failed.Add(int64(n))
			r.error("%s: status %d", what, res.Status)
		default:
			sent.Add(int64(n))
		}
	}
	switch o.sendMode {
	case "sync":
		for seq := 0; seq < o.count; seq++ {
			res, err := p.SendSync(ctx, build(o, seq))
			checkSync(fmt.Sprintf("seq %d", seq), 1, res, err)
		}
	case "oneway":
		for seq := 0; seq < o.count; seq++ {
			if err := p.SendOneWay(ctx, build(o, seq)); err != nil {
				failed.Add(1)
				r.error("seq %d: %v", seq, err)
			} else {
				sent.Add(1)
			}
		}
	case "batch":
		for from := 0; from < o.count; from += o.batch {
			to := min(o.count, from+o.batch)
			msgs := make([]*primitive.Message, 0, to-from)
			for seq := from; seq < to; seq++ {
				msgs = append(msgs, build(o, seq))
			}
			res, err := p.SendSync(ctx, msgs...)
			checkSync(fmt.Sprintf("batch %d..%d", from, to-1), to-from, res, err)
		}
	case "async":
		inflight := make(chan struct{}, o.concurrency)
		var wg sync.WaitGroup
		for seq := 0; seq < o.count; seq++ {
			inflight <- struct{}{}
			wg.Add(1)
			what := fmt.Sprintf("seq %d", seq)
			err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
				checkSync(what, 1, res, err)
				<-inflight
				wg.Done()
			}, build(o, seq))
			if err != nil {
				failed.Add(1)
				r.error("%s: %v", what, err)
				<-inflight
				wg.Done()
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		limit := o.sendTimeout*time.Duration(o.retries+2) + 30*time.Second
		select {
		case <-done:
		case <-time.After(limit):
			r.fail("async sends did not all complete within %v", limit)
		}
	}
	r.res.SendMs = time.Since(start).Milliseconds()
}

// tracker counts what one consumer group received.
type tracker struct {
	o        *options
	r        *result
	expected int

	mu        sync.Mutex
	gr        checkmsg.GroupResult
	seen      map[string]bool // verified messages
	bad       map[string]bool // messages that failed verification
	start     time.Time
	completed chan struct{} // closed when distinct reaches expected
	closed    bool
}

func (tr *tracker) handle(msgs ...*primitive.MessageExt) {
	for _, m := range msgs {
		rec := checkmsg.Received{
			Topic: m.Topic,
			Tags:  m.GetTags(),
			Keys:  m.GetKeys(),
			Body:  m.Body,
			Props: m.GetProperties(),
		}
		run, seq, ok := rec.ID()
		tr.mu.Lock()
		tr.gr.Received++
		if !ok || (tr.o.run != "" && run != tr.o.run) {
			tr.gr.Foreign++
			tr.mu.Unlock()
			continue
		}
		tr.mu.Unlock()
		key := fmt.Sprintf("%s/%d", run, seq)
		if err := checkmsg.Verify(rec, tr.o.topic, tr.o.expr); err != nil {
			tr.mu.Lock()
			tr.gr.Mismatched++
			if !tr.bad[key] {
				tr.bad[key] = true
				tr.checkComplete()
			}
			tr.mu.Unlock()
			tr.r.error("group %s: %v", tr.gr.Group, err)
			continue
		}
		tr.mu.Lock()
		if tr.seen[key] {
			tr.gr.Duplicates++
			if tr.gr.Duplicates <= 3 {
				tr.r.error("group %s: duplicate %s (msgId %s, queue %d, offset %d, reconsumeTimes %d)",
					tr.gr.Group, key, m.MsgId, m.Queue.QueueId, m.QueueOffset, m.ReconsumeTimes)
			}
		} else {
			tr.seen[key] = true
			tr.gr.Distinct++
			tr.checkComplete()
		}
		tr.mu.Unlock()
	}
}

// checkComplete closes completed once every expected message has arrived,
// intact or not (a mismatch fails the check; waiting longer does not help).
// tr.mu must be held.
func (tr *tracker) checkComplete() {
	if !tr.closed && len(tr.seen)+len(tr.bad) >= tr.expected {
		tr.closed = true
		tr.gr.ConsumeMs = time.Since(tr.start).Milliseconds()
		close(tr.completed)
	}
}

func consume(o *options, r *result, expected int) {
	trackers := make([]*tracker, o.groups)
	var consumers []rocketmq.PushConsumer
	defer func() {
		for _, c := range consumers {
			c.Shutdown()
		}
	}()
	start := time.Now()
	for g := range trackers {
		group := o.group
		if o.groups > 1 {
			group = fmt.Sprintf("%s_%d", o.group, g)
		}
		tr := &tracker{o: o, r: r, expected: expected, seen: map[string]bool{}, bad: map[string]bool{}, start: start,
			completed: make(chan struct{})}
		tr.gr.Group = group
		tr.gr.Consumers = o.consumers
		if expected == 0 {
			tr.closed = true
			close(tr.completed)
		}
		trackers[g] = tr
		for i := 0; i < o.consumers; i++ {
			c, err := rocketmq.NewPushConsumer(
				consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{o.namesrv})),
				consumer.WithGroupName(group),
				consumer.WithInstance(fmt.Sprintf("rmqgo-check-c-%s-%d-%d", o.run, g, i)),
				consumer.WithConsumerModel(consumer.Clustering),
				consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
				consumer.WithConsumeGoroutineNums(o.threads),
			)
			if err != nil {
				r.fail("new push consumer: %v", err)
				return
			}
			err = c.Subscribe(o.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: o.expr},
				func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
					tr.handle(msgs...)
					return consumer.ConsumeSuccess, nil
				})
			if err != nil {
				r.fail("subscribe: %v", err)
				return
			}
			if err := c.Start(); err != nil {
				r.fail("start push consumer: %v", err)
				return
			}
			consumers = append(consumers, c)
		}
	}
	deadline := time.After(o.timeout)
wait:
	for _, tr := range trackers {
		select {
		case <-tr.completed:
		case <-deadline:
			break wait
		}
	}
	consumeMs := time.Since(start).Milliseconds()
	if o.linger > 0 {
		time.Sleep(o.linger)
	}
	for _, c := range consumers {
		c.Shutdown()
	}
	consumers = nil

	res := &r.res
	res.Expected = int64(expected)
	res.ConsumeMs = consumeMs
	for i, tr := range trackers {
		tr.mu.Lock()
		gr := tr.gr
		tr.mu.Unlock()
		if gr.ConsumeMs == 0 {
			gr.ConsumeMs = consumeMs
		}
		res.Groups = append(res.Groups, gr)
		res.Received += gr.Received
		res.Duplicates += gr.Duplicates
		res.Mismatched += gr.Mismatched
		res.Foreign += gr.Foreign
		if i == 0 || gr.Distinct < res.Distinct {
			res.Distinct = gr.Distinct
		}
		if gr.Distinct < int64(expected) {
			r.fail("consume: group %s got %d of %d distinct messages within %v", gr.Group, gr.Distinct, expected, o.timeout)
		}
	}
	if res.ConsumeMs > 0 {
		res.ConsumePerSec = res.Distinct * int64(o.groups) * 1000 / res.ConsumeMs
	}
	if res.Mismatched > 0 {
		r.fail("consume: %d messages failed verification", res.Mismatched)
	}
	if res.Duplicates > 0 && !o.allowDups {
		r.fail("consume: %d duplicates", res.Duplicates)
	}
}
