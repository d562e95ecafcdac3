package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Consumer administration commands: consumerProgress, consumerConnection,
// producerConnection and consumerStatus.

// javaDateTime is UtilAll.formatDate(d, "yyyy-MM-dd HH:mm:ss") in loc.
func javaDateTime(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("2006-01-02 15:04:05")
}

// javaHumanMillis is UtilAll.timeMillisToHumanString: "yyyyMMddHHmmssSSS".
func javaHumanMillis(ms int64, loc *time.Location) string {
	t := time.UnixMilli(ms).In(loc)
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// ---- consumerProgress ----

type consumerProgressOpts struct {
	group, topic, showClientIP, cluster string
}

func newConsumerProgress(a *app) *cobra.Command {
	var o consumerProgressOpts
	c := newCmd("consumerProgress", "Query consumer's progress, speed.")
	fs := c.Flags()
	stringOpt(fs, &o.group, "g", "groupName", "consumer group name")
	stringOpt(fs, &o.topic, "t", "topicName", "topic name")
	stringOpt(fs, &o.showClientIP, "s", "showClientIP", "Show Client IP per Queue")
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		if cmd.Flags().Changed("groupName") {
			return a.consumerProgressOfGroup(cmd.Context(), c, cmd, o)
		}
		return a.consumerProgressAll(cmd.Context(), c)
	})
	return c
}

func (a *app) consumerProgressOfGroup(ctx context.Context, c *admin.Client, cmd *cobra.Command, o consumerProgressOpts) error {
	group := strings.TrimSpace(o.group)
	showIP := cmd.Flags().Changed("showClientIP") && strings.EqualFold(o.showClientIP, "true")
	cluster := ""
	if cmd.Flags().Changed("cluster") {
		cluster = strings.TrimSpace(o.cluster)
	}
	var st *admin.ConsumeStats
	var err error
	if cmd.Flags().Changed("topicName") {
		st, err = c.ExamineConsumeStats(ctx, cluster, group, strings.TrimSpace(o.topic))
	} else {
		st, err = c.ExamineConsumeStats(ctx, "", group, "")
	}
	if err != nil {
		return err
	}
	var alloc map[protocol.MessageQueue]string
	if showIP {
		alloc = figures.QueueAllocation(ctx, c, group, a.env.Log)
	}
	p := figures.ProgressOf(st, alloc)
	rows := p.Queues
	w := a.env.Stdout
	if a.json() {
		return writeJSON(w, p)
	}
	if showIP {
		fmt.Fprintf(w, "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s\n",
			"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#Inflight", "#LastTime")
	} else {
		fmt.Fprintf(w, "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s%s\n",
			"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight", "#LastTime")
	}
	for _, r := range rows {
		last := "N/A"
		if r.LastTimestamp != 0 {
			last = javaDateTime(r.LastTimestamp, a.env.Location)
		}
		if showIP {
			fmt.Fprintf(w, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d %-20d %s\n", frontStringAtLeast(r.Topic, 64),
				frontStringAtLeast(r.BrokerName, 32), r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.ClientIP, r.Diff, r.Inflight, last)
		} else {
			fmt.Fprintf(w, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d %-20d %s\n", frontStringAtLeast(r.Topic, 64),
				frontStringAtLeast(r.BrokerName, 32), r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Diff, r.Inflight, last)
		}
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Consume TPS: %s\n", javaFixed(p.ConsumeTps, 2))
	fmt.Fprintf(w, "Consume Diff Total: %d\n", p.DiffTotal)
	fmt.Fprintf(w, "Consume Inflight Total: %d\n", p.InflightTotal)
	return nil
}

type groupConsumeRow = figures.GroupRow

// consumerProgressAll lists every group that has a %RETRY% topic, as
// Java's consumerProgress without -g: 206, then per group 105+208 and
// 105+203. A group whose stats or connection cannot be read shows zeros.
func (a *app) consumerProgressAll(ctx context.Context, c *admin.Client) error {
	tl, err := c.GetAllTopicList(ctx)
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if !a.json() {
		fmt.Fprintf(w, "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s\n", "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
	}
	rows := []groupConsumeRow{}
	for _, group := range figures.RetryGroups(javaHashOrder(tl.TopicList, hashMapDefault, false)) {
		r := figures.GroupOf(ctx, c, group, a.env.Log)
		rows = append(rows, r)
		if !a.json() {
			fmt.Fprintf(w, "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d\n", frontStringAtLeast(r.Group, 64), r.Count, r.Version,
				r.ConsumeType, r.MessageModel, r.ConsumeTps, r.DiffTotal)
		}
	}
	if a.json() {
		return writeJSONField(w, "groups", rows)
	}
	return nil
}

// ---- consumerConnection ----

func newConsumerConnection(a *app) *cobra.Command {
	var group, broker string
	c := newCmd("consumerConnection", "Query consumer's socket connection, client version and subscription.")
	stringOpt(c.Flags(), &group, "g", "consumerGroup", "consumer group name")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "broker address")
	markRequired(c, "consumerGroup")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		cc, err := c.ExamineConsumerConnection(cmd.Context(), strings.TrimSpace(group), strings.TrimSpace(broker))
		if err != nil {
			return err
		}
		return a.emit(cc, func(w io.Writer) {
			printConsumerConnection(w, cc)
		})
	})
	return c
}

func printConsumerConnection(w io.Writer, cc *admin.ConsumerConnection) {
	fmt.Fprintf(w, "%-36s %-22s %-10s %s\n", "#ClientId", "#ClientAddr", "#Language", "#Version")
	for _, conn := range cc.ConnectionSet {
		fmt.Fprintf(w, "%-36s %-22s %-10s %s\n", conn.ClientID, conn.ClientAddr, conn.Language, admin.VersionDesc(conn.Version))
	}
	fmt.Fprintf(w, "\nBelow is subscription:\n")
	fmt.Fprintf(w, "%-20s %s\n", "#Topic", "#SubExpression")
	// Java iterates a ConcurrentHashMap.
	for _, t := range javaHashOrder(sortedKeys(cc.SubscriptionTable), 0, true) {
		sd := cc.SubscriptionTable[t]
		fmt.Fprintf(w, "%-20s %s\n", sd.Topic, sd.SubString)
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "ConsumeType: %s\n", nullable(cc.ConsumeType, cc.ConsumeType != ""))
	fmt.Fprintf(w, "MessageModel: %s\n", nullable(cc.MessageModel, cc.MessageModel != ""))
	fmt.Fprintf(w, "ConsumeFromWhere: %s\n", nullable(cc.ConsumeFromWhere, cc.ConsumeFromWhere != ""))
}

// ---- producerConnection ----

func newProducerConnection(a *app) *cobra.Command {
	var group, topic string
	c := newCmd("producerConnection", "Query producer's socket connection and client version.")
	stringOpt(c.Flags(), &group, "g", "producerGroup", "producer group name")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	markRequired(c, "producerGroup", "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		pc, err := c.ExamineProducerConnection(cmd.Context(), strings.TrimSpace(group), strings.TrimSpace(topic))
		if err != nil {
			return err
		}
		return a.emit(pc, func(w io.Writer) {
			for i, conn := range pc.ConnectionSet {
				fmt.Fprintf(w, "%04d  %-32s %-22s %-8s %s\n", i+1, conn.ClientID, conn.ClientAddr, conn.Language, admin.VersionDesc(conn.Version))
			}
		})
	})
	return c
}

// ---- consumerStatus ----

type consumerStatusOpts struct {
	group, clientID, broker string
	jstack                  bool
}

func newConsumerStatus(a *app) *cobra.Command {
	var o consumerStatusOpts
	c := newCmd("consumerStatus", "Query consumer's internal data structure.")
	fs := c.Flags()
	stringOpt(fs, &o.group, "g", "consumerGroup", "consumer group name")
	stringOpt(fs, &o.clientID, "i", "clientId", "The consumer's client id")
	stringOpt(fs, &o.broker, "b", "brokerAddr", "broker address")
	boolOpt(fs, &o.jstack, "s", "jstack", "Run jstack command in the consumer progress")
	markRequired(c, "consumerGroup")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.consumerStatus(cmd.Context(), c, cmd.Flags().Changed("clientId"), o)
	})
	return c
}

type consumerStatusRow struct {
	ClientID    string                     `json:"clientId"`
	Version     string                     `json:"version"`
	File        string                     `json:"file,omitempty"`
	RunningInfo *admin.ConsumerRunningInfo `json:"runningInfo,omitempty"`
	Error       string                     `json:"error,omitempty"`
}

// consumerStatus is Java's ConsumerStatusSubCommand: the group's
// connections (203), then each client's running info (307). Without -i,
// every client's info is written to <now>/<clientId> (relative to the
// working directory, as Java) and the clients are compared; with -i, one
// client's info is printed.
func (a *app) consumerStatus(ctx context.Context, c *admin.Client, one bool, o consumerStatusOpts) error {
	group := strings.TrimSpace(o.group)
	cc, err := c.ExamineConsumerConnection(ctx, group, strings.TrimSpace(o.broker))
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if one {
		info, err := c.GetConsumerRunningInfo(ctx, group, strings.TrimSpace(o.clientID), o.jstack)
		if err != nil {
			return err
		}
		return a.emit(info, func(w io.Writer) {
			fmt.Fprintf(w, "%s", formatRunningInfo(info, a.env.Location))
		})
	}
	now := a.env.Now()
	if !a.json() {
		fmt.Fprintf(w, "%-10s %-40s %-20s %s\n", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
	}
	infos := map[string]*admin.ConsumerRunningInfo{}
	rows := []consumerStatusRow{}
	failed := 0
	for _, conn := range cc.ConnectionSet {
		row := consumerStatusRow{ClientID: conn.ClientID, Version: admin.VersionDesc(conn.Version)}
		info, err := c.GetConsumerRunningInfo(ctx, group, conn.ClientID, o.jstack)
		if err == nil {
			row.File = strconv.FormatInt(now.UnixMilli(), 10) + "/" + conn.ClientID
			err = writeFileAll(row.File, formatRunningInfo(info, a.env.Location))
		}
		if err != nil {
			failed++
			a.warn("consumerStatus: client %s: %v", conn.ClientID, err)
			row.File, row.Error = "", err.Error()
			rows = append(rows, row)
			continue
		}
		infos[conn.ClientID] = info
		row.RunningInfo = info
		rows = append(rows, row)
		if !a.json() {
			fmt.Fprintf(w, "%-10d %-40s %-20s %s\n", len(infos), conn.ClientID, row.Version, row.File)
		}
	}
	if a.json() {
		return writeJSONField(w, "clients", rows)
	}
	if len(infos) > 0 {
		ids := sortedKeys(infos)
		subSame, err := sameSubscription(ids, infos, now)
		if err != nil {
			return err
		}
		if subSame {
			fmt.Fprintf(w, "\n\nSame subscription in the same group of consumer")
			fmt.Fprintf(w, "\n\nRebalance %s\n", "OK")
			for _, id := range ids {
				fmt.Fprintf(w, "%s", analyzeProcessQueue(id, infos[id], now))
			}
		} else {
			fmt.Fprintf(w, "\n\nWARN: Different subscription in the same group of consumer!!!")
		}
	}
	if failed > 0 {
		return &partialError{n: failed}
	}
	return nil
}

// writeFileAll is MixAll.string2FileNotSafe: the parent directories are
// created.
func writeFileAll(path, content string) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// Consumer running info property keys (Java's ConsumerRunningInfo).
const (
	propConsumeType            = "PROP_CONSUME_TYPE"
	propConsumeOrderly         = "PROP_CONSUMEORDERLY"
	propConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
)

func isPushConsumer(info *admin.ConsumerRunningInfo) (bool, error) {
	switch t := info.Properties[propConsumeType]; t {
	case "CONSUME_PASSIVELY":
		return true, nil
	case "CONSUME_ACTIVELY", "CONSUME_POP":
		return false, nil
	default:
		return false, fmt.Errorf("consumer running info: unknown %s %q", propConsumeType, t)
	}
}

// sameSubscription is ConsumerRunningInfo.analyzeSubscription: push
// consumers started more than two minutes ago must all have the first
// client's subscriptions (compared by topic and expression, as Java's
// TreeSet does).
func sameSubscription(ids []string, infos map[string]*admin.ConsumerRunningInfo, now time.Time) (bool, error) {
	first := infos[ids[0]]
	push, err := isPushConsumer(first)
	if err != nil {
		return false, err
	}
	started, err := strconv.ParseInt(first.Properties[propConsumerStartTimestamp], 10, 64)
	if err != nil {
		return false, fmt.Errorf("consumer running info: bad %s %q", propConsumerStartTimestamp, first.Properties[propConsumerStartTimestamp])
	}
	if !push || now.UnixMilli()-started <= 2*60*1000 {
		return true, nil
	}
	key := func(info *admin.ConsumerRunningInfo) []string {
		var out []string
		for _, s := range info.SubscriptionSet {
			out = append(out, s.Topic+"@"+s.SubString)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	want := key(first)
	for _, id := range ids[1:] {
		if !slices.Equal(key(infos[id]), want) {
			return false, nil
		}
	}
	return true, nil
}

// analyzeProcessQueue is ConsumerRunningInfo.analyzeProcessQueue: the
// queues of a push consumer that look stuck.
func analyzeProcessQueue(clientID string, info *admin.ConsumerRunningInfo, now time.Time) string {
	push, err := isPushConsumer(info)
	if err != nil || !push {
		return ""
	}
	orderly := javaBool(info.Properties[propConsumeOrderly])
	var b strings.Builder
	nowMs := now.UnixMilli()
	for _, mq := range info.MqTable.SortedKeys() {
		pq := info.MqTable[mq]
		switch {
		case orderly && !pq.Locked:
			fmt.Fprintf(&b, "%s %s can't lock for a while, %dms\n", clientID, mq, nowMs-pq.LastLockTimestamp)
		case orderly && pq.Droped && pq.TryUnlockTimes > 0:
			fmt.Fprintf(&b, "%s %s unlock %d times, still failed\n", clientID, mq, pq.TryUnlockTimes)
		case !orderly && nowMs-pq.LastConsumeTimestamp > 60*1000 && pq.CachedMsgCount > 0:
			fmt.Fprintf(&b, "%s %s can't consume for a while, maybe blocked, %dms\n", clientID, mq, nowMs-pq.LastConsumeTimestamp)
		}
	}
	return b.String()
}

// processQueueInfoString is ProcessQueueInfo.toString.
func processQueueInfoString(pq admin.ProcessQueueInfo, loc *time.Location) string {
	return fmt.Sprintf("ProcessQueueInfo [commitOffset=%d, cachedMsgMinOffset=%d, cachedMsgMaxOffset=%d, cachedMsgCount=%d, cachedMsgSizeInMiB=%d, "+
		"transactionMsgMinOffset=%d, transactionMsgMaxOffset=%d, transactionMsgCount=%d, locked=%t, tryUnlockTimes=%d, "+
		"lastLockTimestamp=%s, droped=%t, lastPullTimestamp=%s, lastConsumeTimestamp=%s]",
		pq.CommitOffset, pq.CachedMsgMinOffset, pq.CachedMsgMaxOffset, pq.CachedMsgCount, pq.CachedMsgSizeInMiB,
		pq.TransactionMsgMinOffset, pq.TransactionMsgMaxOffset, pq.TransactionMsgCount, pq.Locked, pq.TryUnlockTimes,
		javaHumanMillis(pq.LastLockTimestamp, loc), pq.Droped, javaHumanMillis(pq.LastPullTimestamp, loc), javaHumanMillis(pq.LastConsumeTimestamp, loc))
}

// formatRunningInfo is ConsumerRunningInfo.formatString.
func formatRunningInfo(info *admin.ConsumerRunningInfo, loc *time.Location) string {
	var b strings.Builder
	b.WriteString("#Consumer Properties#\n")
	// Java's Properties iterate as a ConcurrentHashMap filled in the
	// client's order.
	keys := info.PropertyKeys
	if len(keys) != len(info.Properties) {
		keys = sortedKeys(info.Properties)
	}
	for _, k := range javaHashOrder(keys, 0, true) {
		fmt.Fprintf(&b, "%-40s: %s\n", k, info.Properties[k])
	}

	b.WriteString("\n\n#Consumer Subscription#\n")
	subs := slices.Clone(info.SubscriptionSet)
	sort.SliceStable(subs, func(i, j int) bool { return subs[i].Topic+"@"+subs[i].SubString < subs[j].Topic+"@"+subs[j].SubString })
	subs = slices.CompactFunc(subs, func(x, y admin.SubscriptionData) bool {
		return x.Topic+"@"+x.SubString == y.Topic+"@"+y.SubString
	}) // a TreeSet
	for i, s := range subs {
		fmt.Fprintf(&b, "%03d Topic: %-40s ClassFilter: %-8t SubExpression: %s\n", i+1, s.Topic, s.ClassFilterMode, s.SubString)
	}

	b.WriteString("\n\n#Consumer Offset#\n")
	fmt.Fprintf(&b, "%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
	for _, mq := range info.MqTable.SortedKeys() {
		fmt.Fprintf(&b, "%-32s  %-32s  %-4d  %-20d\n", mq.Topic, mq.BrokerName, mq.QueueID, info.MqTable[mq].CommitOffset)
	}

	b.WriteString("\n\n#Consumer MQ Detail#\n")
	fmt.Fprintf(&b, "%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
	for _, mq := range info.MqTable.SortedKeys() {
		fmt.Fprintf(&b, "%-64s  %-32s  %-4d  %s\n", mq.Topic, mq.BrokerName, mq.QueueID, processQueueInfoString(info.MqTable[mq], loc))
	}

	b.WriteString("\n\n#Consumer Pop Detail#\n")
	fmt.Fprintf(&b, "%-32s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
	for _, mq := range info.MqPopTable.SortedKeys() {
		p := info.MqPopTable[mq]
		fmt.Fprintf(&b, "%-32s  %-32s  %-4d  PopProcessQueueInfo [waitAckCount:%d, droped:%t, lastPopTimestamp:%d]\n",
			mq.Topic, mq.BrokerName, mq.QueueID, p.WaitAckCount, p.Droped, p.LastPopTimestamp)
	}

	b.WriteString("\n\n#Consumer RT&TPS#\n")
	fmt.Fprintf(&b, "%-64s  %14s %14s %14s %14s %18s %25s\n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
		"#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour")
	for _, t := range sortedKeys(info.StatusTable) {
		s := info.StatusTable[t]
		fmt.Fprintf(&b, "%-32s  %14s %14s %14s %14s %18s %25d\n", t, javaFixed(s.PullRT, 2), javaFixed(s.PullTPS, 2),
			javaFixed(s.ConsumeRT, 2), javaFixed(s.ConsumeOKTPS, 2), javaFixed(s.ConsumeFailedTPS, 2), s.ConsumeFailedMsgs)
	}

	b.WriteString("\n\n#User Consume Info#\n")
	for _, k := range sortedKeys(info.UserConsumerInfo) {
		fmt.Fprintf(&b, "%-40s: %s\n", k, info.UserConsumerInfo[k])
	}
	if info.Jstack != nil {
		b.WriteString("\n\n#Consumer jstack#\n")
		b.WriteString(*info.Jstack)
	}
	return b.String()
}
