package command

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// ---- resetOffsetByTime ----

type resetOffsetOpts struct {
	group, topic, timestamp, force, broker, queue, offset, cluster string
}

func newResetOffsetByTime(a *app) *cobra.Command {
	var o resetOffsetOpts
	c := newCmd("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).")
	fs := c.Flags()
	stringOpt(fs, &o.group, "g", "group", "set the consumer group")
	stringOpt(fs, &o.topic, "t", "topic", "set the topic")
	stringOpt(fs, &o.timestamp, "s", "timestamp", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.force, "f", "force", "set the force rollback by timestamp switch[true|false]. Deprecated.")
	stringOpt(fs, &o.broker, "b", "broker", "broker addr")
	stringOpt(fs, &o.queue, "q", "queue", "queue id")
	stringOpt(fs, &o.offset, "o", "offset", "Expect queue offset, not support old version broker")
	// Java also declares -c,--cplus (C++ clients, deprecated); the later
	// -c,--cluster replaces it.
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	markRequired(c, "group", "topic", "timestamp")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		return a.resetOffsetByTime(cmd.Context(), cmd, o)
	})
	return c
}

// parseResetTimestamp is the Java tool's timestamp option: "now", epoch
// milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS in local time.
func (a *app) parseResetTimestamp(s string) (int64, error) {
	if s == "now" {
		return a.env.Now().UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	// yyyy-MM-dd#HH:mm:ss:SSS (Go layouts cannot spell ":SSS").
	bad := usagef("invalid timestamp %q: want now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS", s)
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, bad
	}
	ms, err := strconv.Atoi(s[i+1:])
	if err != nil || len(s)-i-1 != 3 {
		return 0, bad
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05", s[:i], a.env.Location)
	if err != nil {
		return 0, bad
	}
	return t.UnixMilli() + int64(ms), nil
}

type resetOffsetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func (a *app) resetOffsetByTime(ctx context.Context, cmd *cobra.Command, o resetOffsetOpts) error {
	group, topic, tsText := strings.TrimSpace(o.group), strings.TrimSpace(o.topic), strings.TrimSpace(o.timestamp)
	changed := cmd.Flags().Changed
	cluster := ""
	if changed("cluster") {
		cluster = strings.TrimSpace(o.cluster)
	}
	ts, err := a.parseResetTimestamp(tsText)
	if err != nil {
		return err
	}
	force := true
	if changed("force") {
		force = javaBool(o.force)
	}
	queueID := -1
	if changed("queue") {
		if queueID, err = javaInt("q", o.queue); err != nil {
			return err
		}
	}
	var offset *int64
	if changed("offset") {
		n, err := strconv.ParseInt(strings.TrimSpace(o.offset), 10, 64)
		if err != nil {
			return usagef("invalid value %q for -o: not a number", o.offset)
		}
		offset = &n
	}
	w := a.env.Stdout
	return a.withClient(func(c *admin.Client) error {
		if changed("broker") && queueID >= 0 {
			broker := o.broker
			if !a.json() {
				fmt.Fprintf(w, "start reset consumer offset by specified, group[%s], topic[%s], queueId[%d], broker[%s], timestamp(string)[%s], timestamp(long)[%d]\n",
					group, topic, queueID, broker, tsText, ts)
			}
			var reset int64
			if offset != nil {
				reset = *offset
			} else if reset, err = c.SearchOffsetByTimestamp(ctx, broker, topic, queueID, ts); err != nil {
				return err
			}
			if !a.json() {
				fmt.Fprintf(w, "reset consumer offset to %d\n", reset)
			}
			if reset > 0 {
				if _, err := c.ResetOffsetByQueueID(ctx, broker, group, topic, queueID, reset); err != nil {
					return err
				}
			}
			if a.json() {
				return writeJSON(w, struct {
					Broker  string `json:"broker"`
					QueueID int    `json:"queueId"`
					Offset  int64  `json:"offset"`
					Reset   bool   `json:"reset"`
				}{broker, queueID, reset, reset > 0})
			}
			return nil
		}

		batches, err := c.ResetOffsetByTimestamp(ctx, cluster, topic, group, ts, force)
		if admin.IsCode(err, code.ConsumerNotOnline) {
			return a.resetOffsetOld(ctx, c, cluster, group, topic, ts, force, tsText)
		}
		if err != nil {
			return err
		}
		return a.emitResetOffsets(w, batches, fmt.Sprintf("start reset consumer offset by specified, group[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
			group, topic, force, tsText, ts))
	})
}

// resetOffsetOld is Java's ResetOffsetByTimeOldCommand.resetOffset: the
// admin client commits the offsets itself (brokers that only reset through
// online clients answered CONSUMER_NOT_ONLINE).
func (a *app) resetOffsetOld(ctx context.Context, c *admin.Client, cluster, group, topic string, ts int64, force bool, tsText string) error {
	stats, err := c.ResetOffsetByTimestampOld(ctx, cluster, group, topic, ts, force)
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if a.json() {
		if stats == nil {
			stats = []admin.RollbackStats{}
		}
		return writeJSONField(w, "rollback", stats)
	}
	fmt.Fprintf(w, "reset consumer offset by specified consumerGroup[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
		group, topic, force, tsText, ts)
	fmt.Fprintf(w, "%-20s  %-20s  %-20s  %-20s  %-20s  %-20s\n", "#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#resetOffset")
	for _, s := range javaRollbackOrder(stats, topic) {
		fmt.Fprintf(w, "%-20s  %-20d  %-20d  %-20d  %-20d  %-20d\n", frontStringAtLeast(s.BrokerName, 32), s.QueueID,
			s.BrokerOffset, s.ConsumerOffset, s.TimestampOffset, s.RollbackOffset)
	}
	return nil
}

// javaHashMapPutAllOrder is the iteration order of a java.util.HashMap
// filled by putAll of each batch in turn (Java's resetOffsetByTimestamp
// merges the brokers' answers so): the final table size follows HashMap's
// presizing and growth, and keys sharing a bucket keep insertion order.
// resetOffsetRows is the table the Java tool prints after a reset through
// the clients: the brokers' answers put into one HashMap, in its order.
// emitResetOffsets prints the offsets a reset by timestamp set, as Java's
// table after the line head (none when empty), or as JSON.
func (a *app) emitResetOffsets(w io.Writer, batches []protocol.MQMap[int64], head string) error {
	rows := resetOffsetRows(batches)
	if a.json() {
		if rows == nil {
			rows = []resetOffsetRow{}
		}
		return writeJSONField(w, "offsets", rows)
	}
	fmt.Fprint(w, head)
	fmt.Fprintf(w, "%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")
	for _, r := range rows {
		fmt.Fprintf(w, "%-40s  %-40d  %-40d\n", frontStringAtLeast(r.BrokerName, 32), r.QueueID, r.Offset)
	}
	return nil
}

func resetOffsetRows(batches []protocol.MQMap[int64]) []resetOffsetRow {
	var rows []resetOffsetRow
	var keys [][]protocol.MessageQueue
	table := map[protocol.MessageQueue]int64{}
	for _, b := range batches {
		ks := b.SortedKeys()
		keys = append(keys, ks)
		for _, k := range ks {
			table[k] = b[k]
		}
	}
	for _, mq := range javaHashMapPutAllOrder(keys) {
		rows = append(rows, resetOffsetRow{mq.BrokerName, mq.QueueID, table[mq]})
	}
	return rows
}

func javaHashMapPutAllOrder(batches [][]protocol.MessageQueue) []protocol.MessageQueue {
	tableSizeFor := func(c int) int {
		n := 1
		for n < c {
			n <<= 1
		}
		return n
	}
	n, threshold, size := 0, 0, 0
	var all []protocol.MessageQueue
	for _, b := range batches {
		if len(b) == 0 {
			continue
		}
		if n == 0 {
			n = tableSizeFor(int(float32(len(b))/0.75 + 1))
			threshold = n * 3 / 4
		} else {
			for len(b) > threshold {
				n, threshold = n*2, threshold*2
			}
		}
		for _, k := range b {
			all = append(all, k)
			if size++; size > threshold {
				n, threshold = n*2, threshold*2
			}
		}
	}
	bucket := func(mq protocol.MessageQueue) uint32 {
		h := uint32(mqHashCode(mq))
		return (h ^ h>>16) & uint32(n-1)
	}
	sort.SliceStable(all, func(i, j int) bool { return bucket(all[i]) < bucket(all[j]) })
	return all
}

// javaRollbackOrder puts each broker's queues in the iteration order of
// the ConcurrentHashMap Java decodes the broker's ConsumeStats into (the
// brokers stay in route order).
func javaRollbackOrder(stats []admin.RollbackStats, topic string) []admin.RollbackStats {
	out := make([]admin.RollbackStats, 0, len(stats))
	for i := 0; i < len(stats); {
		j := i
		for j < len(stats) && stats[j].BrokerName == stats[i].BrokerName {
			j++
		}
		group := slices.Clone(stats[i:j])
		n := 16
		for len(group) >= n-n/4 {
			n <<= 1
		}
		bucket := func(s admin.RollbackStats) uint32 {
			h := uint32(mqHashCode(protocol.MessageQueue{BrokerName: s.BrokerName, QueueID: s.QueueID, Topic: topic}))
			return (h ^ h>>16) & uint32(n-1)
		}
		sort.SliceStable(group, func(a, b int) bool { return bucket(group[a]) < bucket(group[b]) })
		out = append(out, group...)
		i = j
	}
	return out
}
