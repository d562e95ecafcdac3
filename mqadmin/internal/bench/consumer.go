package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// routeWait is the pause between route lookups of a topic that does not
// exist yet.
const routeWait = time.Second

// ConsumerOptions configure RunConsumer. They mirror the options of
// Apache's benchmark Consumer, which is a push consumer; this one pulls
// every queue of the topic itself (no rebalancing between instances: run
// one per group).
type ConsumerOptions struct {
	RunOptions
	Group          string
	GroupSuffix    bool   // append "_<ms % 100>" to the group, as Java's -p
	FilterType     string // "TAG" or "SQL92" (with ExpressionFile)
	ExpressionFile string // file holding the filter expression
	FailRate       float64
	Threads        int // handler calls running at once
	FromFirst      bool
	Count          int64 // stop after this many messages; 0: no limit
}

func (o *ConsumerOptions) defaults() error {
	o.RunOptions.fill()
	o.Group = cmp.Or(o.Group, DefaultConsumerGroup)
	if o.GroupSuffix {
		o.Group += "_" + strconv.FormatInt(time.Now().UnixMilli()%100, 10)
	}
	if o.Threads <= 0 {
		o.Threads = 20
	}
	if o.FailRate < 0 || o.FailRate > 1 || o.Count < 0 {
		return errors.New("fail rate must be in [0, 1] and count not negative")
	}
	return protocol.ValidateTopic(o.Topic)
}

// expression reads the filter as Java's tool does (MixAll.file2String).
func (o *ConsumerOptions) expression() (expr, typ string, err error) {
	if o.FilterType == "" || o.ExpressionFile == "" {
		return "*", client.ExpressionTypeTag, nil
	}
	typ = strings.ToUpper(o.FilterType)
	if typ != client.ExpressionTypeTag && typ != client.ExpressionTypeSQL92 {
		return "", "", fmt.Errorf("Not support filter type! %s", o.FilterType) //nolint:staticcheck // Java's message
	}
	b, err := os.ReadFile(o.ExpressionFile)
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(b)), typ, nil
}

// RunConsumer consumes until Duration, Count or ctx ends, printing Apache's
// report lines to o.Out, then the final lines (and the JSON line).
func RunConsumer(ctx context.Context, o ConsumerOptions) (*ConsumerSummary, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	expr, typ, err := o.expression()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "topic: %s, threadCount %d, group: %s, suffix: %t, filterType: %s, expression: %s, msgTraceEnable: %t, aclEnable: %t, reportInterval: %d\n",
		o.Topic, o.Threads, o.Group, o.GroupSuffix, nullable(o.FilterType), nullable(o.ExpressionFile), false, o.Credentials != nil, o.ReportInterval.Milliseconds())
	if expr != "*" {
		fmt.Fprintf(o.Out, "Expression: %s\n", expr)
	}

	c, err := started(client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: runClientConfig(o.RunOptions, "", remoting.SerializeRocketMQ),
		Group:        o.Group,
	}))
	if err != nil {
		return nil, err
	}
	defer shutdown(ctx, c)

	runCtx, stop := runContext(ctx, o.Duration)
	defer stop()
	var stats ConsumerStats
	stopReport := reportConsumer(o.Out, o.ReportInterval, &stats)

	from := client.FromLastOffset()
	if o.FromFirst {
		from = client.FromFirstOffset()
	}
	fmt.Fprintf(o.Out, "Consumer Started.\n")
	start := time.Now()
	handler := func(_ context.Context, _ protocol.MessageQueue, msgs []*message.Message) error {
		now := time.Now()
		for _, m := range msgs {
			stats.Consumed(now, m.BornTimestamp, m.StoreTimestamp, o.FailRate > 0 && rand.Float64() < o.FailRate)
		}
		if o.Count > 0 && stats.Received.Load() >= o.Count {
			stop()
		}
		return nil
	}
	loopCfg := client.ConsumeLoopConfig{Topic: o.Topic, Expression: expr, ExpressionType: typ, From: from, MaxConcurrency: o.Threads}
	for waited := false; ; waited = true {
		err = c.ConsumeLoop(runCtx, loopCfg, handler)
		// Like Java's push consumer, wait for a topic that does not exist
		// yet (e.g. the producer will auto-create it).
		if !errors.Is(err, client.ErrNoRoute) || runCtx.Err() != nil {
			break
		}
		if !waited {
			fmt.Fprintf(o.Err, "mqbench: topic %s has no route yet; waiting for it\n", o.Topic)
		}
		sleepUntil(runCtx, routeWait)
	}
	if runCtx.Err() != nil && errors.Is(err, client.ErrNoRoute) {
		err = nil // stopped while waiting: report the empty run
	}
	elapsed := time.Since(start)
	stopReport()
	if err != nil {
		return nil, err
	}
	return finishConsumer(o.Out, o.JSON, &ConsumerSummary{Type: "consumer", Topic: o.Topic, Group: o.Group}, &stats, elapsed)
}

// nullable prints "" as Java prints a null String.
func nullable(s string) string {
	if s == "" {
		return "null"
	}
	return s
}
