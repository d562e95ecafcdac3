package command

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- startMonitoring ----

// Java's MonitorService: the first round 20 s after the start, then one
// every MonitorConfig.roundInterval (60 s).
const (
	monitorFirstRound = 20 * time.Second
	monitorInterval   = 60 * time.Second
	monitorLogPrefix  = "[MONITOR] "
)

type monitorOpts struct {
	first, interval time.Duration
	rounds          int
}

func newStartMonitoring(a *app) *cobra.Command {
	o := monitorOpts{first: monitorFirstRound, interval: monitorInterval}
	c := newCmd("startMonitoring", "Start Monitoring.")
	// Ours, hidden (Java has no options): shorter rounds and a round count,
	// for tests.
	c.Flags().DurationVar(&o.first, "first-round", monitorFirstRound, "delay of the first round")
	c.Flags().DurationVar(&o.interval, "round-interval", monitorInterval, "time between rounds")
	c.Flags().IntVar(&o.rounds, "rounds", 0, "stop after this many rounds (0: run until interrupted)")
	for _, f := range []string{"first-round", "round-interval", "rounds"} {
		_ = c.Flags().MarkHidden(f)
	}
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		w := &lockedWriter{w: a.env.Stderr}
		return a.withPullConsumer(cmd.Context(), toolsConsumerGroup, func(pc *client.PullConsumer) error {
			return withStarted(cmd.Context(), a, "push consumer", func(cc client.CommonConfig) (*client.PushConsumer, error) {
				return newMonitorConsumer(cc, w)
			}, func(*client.PushConsumer) error {
				return a.startMonitoring(cmd.Context(), c, pc, w, o)
			})
		})
	})
	return c
}

// monitorConsumerGroup is MixAll.MONITOR_CONSUMER_GROUP: MonitorService's
// push consumer of OFFSET_MOVED_EVENT, whose events it reports. (Apache
// 5.5.0's broker builds an offset-moved event but never stores it, so the
// consumer is idle there as here; it still shows as an online group with a
// retry topic, which the rounds then report, as Java's do.)
const monitorConsumerGroup = "__MONITOR_CONSUMER"

func newMonitorConsumer(cc client.CommonConfig, w io.Writer) (*client.PushConsumer, error) {
	pc, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig:      cc,
		Group:             monitorConsumerGroup,
		ConsumeGoroutines: 1,
		Handler: func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			// Java drops an event it cannot decode, and consumes it.
			if line, ok := deleteMsgsEventLine(req.Messages[0]); ok {
				fmt.Fprintln(w, line)
			}
			return client.ConsumeSuccess
		},
	})
	if err != nil {
		return nil, err
	}
	if err := pc.Subscribe(protocol.OffsetMovedEvent, "*", ""); err != nil {
		return nil, err
	}
	return pc, nil
}

// deleteMsgsEventLine is DefaultMonitorListener.reportDeleteMsgsEvent's
// line for an OFFSET_MOVED_EVENT message (an OffsetMovedEvent in JSON).
func deleteMsgsEventLine(m *message.Message) (string, bool) {
	var ev struct {
		ConsumerGroup string                `json:"consumerGroup"`
		MessageQueue  protocol.MessageQueue `json:"messageQueue"`
		OffsetRequest int64                 `json:"offsetRequest"`
		OffsetNew     int64                 `json:"offsetNew"`
	}
	if protocol.Unmarshal(m.Body, &ev) != nil {
		return "", false
	}
	return fmt.Sprintf("%sreportDeleteMsgsEvent: DeleteMsgsEvent [offsetMovedEvent=OffsetMovedEvent [consumerGroup=%s, messageQueue=%s, offsetRequest=%d, offsetNew=%d], eventTimestamp=%d]",
		monitorLogPrefix, ev.ConsumerGroup, ev.MessageQueue.String(), ev.OffsetRequest, ev.OffsetNew, m.StoreTimestamp), true
}

// lockedWriter serialises the rounds' lines and the push consumer's.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startMonitoring is StartMonitoringSubCommand (MonitorService with
// DefaultMonitorListener): every round, for each consumer group that has
// a retry topic, the undone messages per topic (total and largest queue
// lag, and how far the group's last consume lags the newest message) and
// the analysis of its clients' running info (different subscriptions,
// blocked process queues). Java logs these lines to its log file and
// prints nothing; we write them to stderr. It runs until interrupted.
func (a *app) startMonitoring(ctx context.Context, c *admin.Client, pc *client.PullConsumer, w io.Writer, o monitorOpts) error {
	wait := o.first
	for round := 0; o.rounds == 0 || round < o.rounds; round++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = o.interval
		a.monitorRound(ctx, c, pc, w)
	}
	return nil
}

func (a *app) monitorRound(ctx context.Context, c *admin.Client, pc *client.PullConsumer, w io.Writer) {
	start := time.Now()
	fmt.Fprintln(w, monitorLogPrefix+"=========================================beginRound")
	tl, err := c.GetAllTopicList(ctx)
	if err != nil {
		a.warn("startMonitoring: %v", err)
		fmt.Fprintln(w, monitorLogPrefix+"=========================================endRound")
		return
	}
	for _, topic := range tl.TopicList {
		if !strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) {
			continue
		}
		group := admin.GroupOfRetryTopic(topic)
		a.reportUndoneMsgs(ctx, c, pc, w, group)
		a.reportConsumerRunningInfo(ctx, c, w, group)
	}
	fmt.Fprintln(w, monitorLogPrefix+"=========================================endRound")
	a.env.Log.Info("Execute one round monitor work", "spent", time.Since(start))
}

// reportUndoneMsgs is MonitorService.reportUndoneMsgs: nothing when the
// group's consume stats or connections cannot be read.
func (a *app) reportUndoneMsgs(ctx context.Context, c *admin.Client, pc *client.PullConsumer, w io.Writer, group string) {
	cs, err := c.ExamineConsumeStats(ctx, "", group, "")
	if err != nil {
		return
	}
	if _, err := c.ExamineConsumerConnection(ctx, group, ""); err != nil {
		return
	}
	byTopic := map[string][]protocol.MessageQueue{}
	for _, mq := range cs.OffsetTable.SortedKeys() {
		byTopic[mq.Topic] = append(byTopic[mq.Topic], mq)
	}
	for _, topic := range javaHashOrder(sortedKeys(byTopic), hashMapDefault, false) {
		var total, single, delay int64
		for _, mq := range byTopic[topic] {
			ow := cs.OffsetTable[mq]
			diff := ow.BrokerOffset - ow.ConsumerOffset
			single = max(single, diff)
			if diff > 0 {
				total += diff
			}
			if ow.LastTimestamp > 0 {
				if d, ok := lastMessageDelay(ctx, pc, mq, ow.LastTimestamp); ok {
					delay = max(delay, d)
				}
			}
		}
		fmt.Fprintf(w, "%sreportUndoneMsgs: UndoneMsgs [consumerGroup=%s, topic=%s, undoneMsgsTotal=%d, undoneMsgsSingleMQ=%d, undoneMsgsDelayTimeMills=%d]\n",
			monitorLogPrefix, group, topic, total, single, delay)
	}
}

// lastMessageDelay is the store time of the queue's newest message minus
// the group's last consume time.
func lastMessageDelay(ctx context.Context, pc *client.PullConsumer, mq protocol.MessageQueue, last int64) (int64, bool) {
	maxOff, err := pc.GetMaxOffset(ctx, mq)
	if err != nil || maxOff <= 0 {
		return 0, false
	}
	res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: maxOff - 1, MaxNums: 1, Expression: "*"})
	if err != nil || res.Status != client.PullFound || len(res.Messages) == 0 {
		return 0, false
	}
	return res.Messages[0].StoreTimestamp - last, true
}

// reportConsumerRunningInfo is MonitorService.reportConsumerRunningInfo
// with DefaultMonitorListener's checks: the clients' subscriptions differ,
// or a client's process queues are stuck.
func (a *app) reportConsumerRunningInfo(ctx context.Context, c *admin.Client, w io.Writer, group string) {
	cc, err := c.ExamineConsumerConnection(ctx, group, "")
	if err != nil {
		return
	}
	infos := map[string]*admin.ConsumerRunningInfo{}
	for _, conn := range cc.ConnectionSet {
		info, err := c.GetConsumerRunningInfo(ctx, group, conn.ClientID, false)
		if err != nil {
			continue
		}
		infos[conn.ClientID] = info
	}
	if len(infos) == 0 {
		return
	}
	ids := make([]string, 0, len(infos))
	for id := range infos {
		ids = append(ids, id)
	}
	sort.Strings(ids) // Java's TreeMap
	now := a.env.Now()
	if same, err := sameSubscription(ids, infos, now); err == nil && !same {
		fmt.Fprintf(w, "%s [NOTIFY] reportConsumerRunningInfo: ConsumerGroup: %s, Subscription different\n", monitorLogPrefix, group)
	}
	for _, id := range ids {
		if r := analyzeProcessQueue(id, infos[id], now); r != "" {
			fmt.Fprintf(w, "%s [NOTIFY] reportConsumerRunningInfo: ConsumerGroup: %s, ClientId: %s, %s\n", monitorLogPrefix, group, id, r)
		}
	}
}
