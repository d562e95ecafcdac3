// Package figures gathers the figures that mqadmin's commands print and
// the web console (mqadmin/dashboard) shows: one place computes a broker's
// TPS and disk ratio from its runtime info, a group's lag per queue and
// its connection summary, so the two views always agree.
package figures

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// BrokerRow is one broker address of clusterList.
type BrokerRow struct {
	Cluster    string            `json:"cluster"`
	BrokerName string            `json:"brokerName"`
	BrokerID   int64             `json:"brokerId"`
	Addr       string            `json:"addr"`
	Runtime    map[string]string `json:"runtime,omitempty"`
	Error      string            `json:"error,omitempty"`
	Err        error             `json:"-"` // what Error says
	// Derived values shown in the table.
	Version       string  `json:"version"`
	InTPS         float64 `json:"inTps"`
	OutTPS        float64 `json:"outTps"`
	Hours         float64 `json:"hours"`
	DiskRatio     float64 `json:"diskRatio"`
	Activated     bool    `json:"activated"`
	InTotalYest   int64   `json:"inTotalYest"`
	OutTotalYest  int64   `json:"outTotalYest"`
	InTotalToday  int64   `json:"inTotalToday"`
	OutTotalToday int64   `json:"outTotalToday"`

	// Fetched reports that the runtime info was read (Error is empty).
	Fetched bool `json:"-"`
}

// BrokerRows fetches the runtime info (28) of every address of clusters
// (in that order; brokers by name, addresses by id). A broker that cannot
// be read gets a row with Error set.
func BrokerRows(ctx context.Context, c *admin.Client, ci *protocol.ClusterInfo, clusters []string, now time.Time) []BrokerRow {
	var rows []BrokerRow
	for _, cl := range clusters {
		for _, name := range admin.BrokerNamesOf(ci, cl) {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			for _, ba := range admin.SortedAddrs(bd) {
				r := BrokerRow{Cluster: cl, BrokerName: name, BrokerID: ba.ID, Addr: ba.Addr}
				kv, err := c.GetBrokerRuntimeInfo(ctx, ba.Addr)
				if err != nil {
					r.Error, r.Err = err.Error(), err
				} else {
					r.Runtime, r.Fetched = kv, true
				}
				r.derive(now)
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// ParseJavaLong parses a Java long as Long.parseLong after trim.
func ParseJavaLong(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// ParseJavaDouble parses a Java double as Double.parseDouble after trim.
func ParseJavaDouble(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil
}

// firstTPS is the first space-separated number of a "putTps" value.
func firstTPS(s string) (float64, bool) {
	if strings.TrimSpace(s) == "" {
		return 0, true
	}
	return ParseJavaDouble(strings.Split(s, " ")[0])
}

func (r *BrokerRow) derive(now time.Time) {
	if !r.Fetched {
		return
	}
	kv := r.Runtime
	r.Activated = strings.EqualFold(strings.TrimSpace(kv["brokerActive"]), "true")
	r.Version = "null" // a Java null String
	if v, ok := kv["brokerVersionDesc"]; ok {
		r.Version = v
	}
	if v, ok := firstTPS(kv["putTps"]); ok {
		r.InTPS = v
		if v, ok := firstTPS(kv["getTransferredTps"]); ok {
			r.OutTPS = v
		}
	}
	if ts := kv["earliestMessageTimeStamp"]; ts != "" {
		if ms, ok := ParseJavaLong(ts); ok {
			// Clocks of tool and broker differ by a little: never "-0.00".
			r.Hours = max(float64(now.UnixMilli()-ms)/1000.0/60.0/60.0, 0)
		}
	}
	if s := kv["commitLogDiskRatio"]; s != "" {
		r.DiskRatio, _ = ParseJavaDouble(s)
	}
	// The four totals are computed in sequence; the first unparsable value
	// stops the rest (they stay 0), as in the Java tool.
	pY, ok1 := ParseJavaLong(kv["msgPutTotalYesterdayMorning"])
	pM, ok2 := ParseJavaLong(kv["msgPutTotalTodayMorning"])
	if !ok1 || !ok2 {
		return
	}
	r.InTotalYest = pM - pY
	gY, ok1 := ParseJavaLong(kv["msgGetTotalYesterdayMorning"])
	gM, ok2 := ParseJavaLong(kv["msgGetTotalTodayMorning"])
	if !ok1 || !ok2 {
		return
	}
	r.OutTotalYest = gM - gY
	pN, ok := ParseJavaLong(kv["msgPutTotalTodayNow"])
	if !ok {
		return
	}
	r.InTotalToday = pN - pM
	gN, ok := ParseJavaLong(kv["msgGetTotalTodayNow"])
	if !ok {
		return
	}
	r.OutTotalToday = gN - gM
}

// ProgressRow is one queue of consumerProgress -g.
type ProgressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int    `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	ClientIP       string `json:"clientIP,omitempty"`
	Diff           int64  `json:"diff"`
	Inflight       int64  `json:"inflight"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

// Progress is a group's consume progress: its queues in MessageQueue
// order and the totals consumerProgress prints.
type Progress struct {
	Queues        []ProgressRow `json:"queues"`
	ConsumeTps    float64       `json:"consumeTps"`
	DiffTotal     int64         `json:"diffTotal"`
	InflightTotal int64         `json:"inflightTotal"`
}

// ProgressOf turns consume stats into rows; alloc (may be nil: no client
// column) maps a queue to the IP of the client holding it ("N/A": none).
func ProgressOf(st *admin.ConsumeStats, alloc map[protocol.MessageQueue]string) Progress {
	p := Progress{Queues: []ProgressRow{}, ConsumeTps: st.ConsumeTps}
	for _, mq := range st.OffsetTable.SortedKeys() {
		w := st.OffsetTable[mq]
		r := ProgressRow{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: w.BrokerOffset,
			ConsumerOffset: w.ConsumerOffset, Diff: w.BrokerOffset - w.ConsumerOffset, Inflight: w.PullOffset - w.ConsumerOffset,
			LastTimestamp: w.LastTimestamp}
		if alloc != nil {
			r.ClientIP = "N/A"
			if ip, ok := alloc[mq]; ok {
				r.ClientIP = ip
			}
		}
		p.DiffTotal += r.Diff
		p.InflightTotal += r.Inflight
		p.Queues = append(p.Queues, r)
	}
	return p
}

// QueueAllocation is Java's getMessageQueueAllocationResult: which client
// (its IP, the client id up to '@') holds each queue, from every
// connection's running info. Failures leave queues out (Java logs them).
func QueueAllocation(ctx context.Context, c *admin.Client, group string, log *slog.Logger) map[protocol.MessageQueue]string {
	out := map[protocol.MessageQueue]string{}
	cc, err := c.ExamineConsumerConnection(ctx, group, "")
	if err != nil {
		log.Debug("consumerProgress: connection", "group", group, "err", err)
		return out
	}
	for _, conn := range cc.ConnectionSet {
		info, err := c.GetConsumerRunningInfo(ctx, group, conn.ClientID, false)
		if err != nil {
			log.Debug("consumerProgress: running info", "group", group, "clientId", conn.ClientID, "err", err)
			return out
		}
		ip, _, _ := strings.Cut(conn.ClientID, "@")
		for mq := range info.MqTable {
			out[mq] = ip
		}
	}
	return out
}

// GroupRow is one group of consumerProgress without -g.
type GroupRow struct {
	Group        string `json:"group"`
	Count        int    `json:"count"`
	Version      string `json:"version"`
	ConsumeType  string `json:"consumeType"`
	MessageModel string `json:"messageModel"`
	ConsumeTps   int    `json:"consumeTps"`
	DiffTotal    int64  `json:"diffTotal"`
}

// GroupOf is Java's consumerProgress row of one group: 105+208 for the
// stats and 105+203 for the connections. A group whose stats or
// connection cannot be read shows zeros (the failure is logged).
func GroupOf(ctx context.Context, c *admin.Client, group string, log *slog.Logger) GroupRow {
	r := GroupRow{Group: group}
	if st, err := c.ExamineConsumeStats(ctx, "", group, ""); err == nil {
		r.ConsumeTps = int(st.ConsumeTps)
		r.DiffTotal = st.TotalDiff()
	} else {
		log.Debug("consumerProgress: stats", "group", group, "err", err)
	}
	var consumeType, model string
	if cc, err := c.ExamineConsumerConnection(ctx, group, ""); err == nil {
		r.Count = len(cc.ConnectionSet)
		consumeType, model = cc.ConsumeType, cc.MessageModel
		r.Version = admin.VersionDesc(cc.MinVersion())
	} else {
		log.Debug("consumerProgress: connection", "group", group, "err", err)
	}
	if r.Count == 0 {
		r.Version = "OFFLINE"
	} else {
		r.ConsumeType = "PUSH"
		if consumeType == "CONSUME_ACTIVELY" {
			r.ConsumeType = "PULL"
		}
		if consumeType == "CONSUME_PASSIVELY" {
			r.MessageModel = model
		}
	}
	return r
}

// RetryGroups are the groups of the %RETRY% topics of a topic list, in
// the list's order: the groups consumerProgress lists.
func RetryGroups(topics []string) []string {
	var out []string
	for _, t := range topics {
		if strings.HasPrefix(t, protocol.RetryGroupTopicPrefix) {
			out = append(out, admin.GroupOfRetryTopic(t))
		}
	}
	return out
}

// GroupLags is every consumer group's total diff (consumerProgress's
// "Diff Total") over the masters of clusters, from one
// GET_BROKER_CONSUME_STATS (317) per master, which answers for all the
// broker's groups at once: the cost does not grow in requests with the
// number of groups. A master that cannot be read is left out and its
// error returned by address (the groups' lag then lacks its queues).
func GroupLags(ctx context.Context, c *admin.Client, ci *protocol.ClusterInfo, clusters []string) (map[string]int64, map[string]error) {
	lags, errs := map[string]int64{}, map[string]error{}
	for _, cl := range clusters {
		masters, err := admin.MasterAddrs(ci, cl)
		if err != nil {
			errs[cl] = err
			continue
		}
		for _, addr := range masters {
			st, err := c.FetchConsumeStatsInBroker(ctx, addr, false)
			if err != nil {
				errs[addr] = err
				continue
			}
			for _, m := range st.ConsumeStatsList {
				for group, list := range m {
					n := lags[group]
					for i := range list {
						n += list[i].TotalDiff()
					}
					lags[group] = n
				}
			}
		}
	}
	return lags, errs
}
