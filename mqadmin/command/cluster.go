package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
)

// newCmd builds a sub-command with the Java tool's -h/--help.
func newCmd(use, short string) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short}
	c.Flags().BoolP("help", "h", false, "Print help")
	return c
}

func markRequired(c *cobra.Command, names ...string) {
	for _, n := range names {
		if err := c.MarkFlagRequired(n); err != nil {
			panic("mqadmin: " + err.Error()) // the flag was just defined
		}
	}
}

// ---- clusterList ----

type clusterListOpts struct {
	moreStats bool
	interval  string
	cluster   string
}

func newClusterList(a *app) *cobra.Command {
	var o clusterListOpts
	c := newCmd("clusterList", "List cluster infos.")
	fs := c.Flags()
	boolOpt(fs, &o.moreStats, "m", "moreStats", "Print more stats")
	stringOpt(fs, &o.interval, "i", "interval", "specify intervals numbers, it is in seconds")
	stringOpt(fs, &o.cluster, "c", "clusterName", "which cluster")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.clusterList(cmd.Context(), cmd, o) })
	return c
}

// clusterRow is one broker address of clusterList.
type clusterRow struct {
	Cluster    string            `json:"cluster"`
	BrokerName string            `json:"brokerName"`
	BrokerID   int64             `json:"brokerId"`
	Addr       string            `json:"addr"`
	Runtime    map[string]string `json:"runtime,omitempty"`
	Error      string            `json:"error,omitempty"`
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

	fetched bool
}

func (a *app) clusterList(ctx context.Context, cmd *cobra.Command, o clusterListOpts) error {
	var interval time.Duration
	if cmd.Flags().Changed("interval") {
		n, err := strconv.ParseInt(strings.TrimSpace(o.interval), 10, 64)
		if err != nil || n < 0 {
			return usagef("invalid interval %q: want a number of seconds", o.interval)
		}
		interval = time.Duration(n) * time.Second
	}
	return a.withClient(func(c *admin.Client) error {
		for i := 0; ; i++ {
			if i > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
			rows, err := a.clusterRows(ctx, c, strings.TrimSpace(o.cluster))
			if err != nil {
				if !cmd.Flags().Changed("interval") {
					return err
				}
				a.warn("clusterList: %v", err)
				continue
			}
			failed := 0
			for _, r := range rows {
				if r.Error != "" {
					failed++
					a.warn("clusterList: broker %s (%s): %s", r.BrokerName, r.Addr, r.Error)
				}
			}
			if a.json() {
				if err := writeJSON(a.env.Stdout, struct {
					Brokers []clusterRow `json:"brokers"`
				}{rows}); err != nil {
					return err
				}
			} else if o.moreStats {
				printClusterMoreStats(a.env.Stdout, rows)
			} else {
				printClusterBaseInfo(a.env.Stdout, rows)
			}
			if !cmd.Flags().Changed("interval") {
				if failed > 0 {
					return &partialError{n: failed}
				}
				return nil
			}
		}
	})
}

// clusterRows fetches the runtime info of every address of the clusters.
func (a *app) clusterRows(ctx context.Context, c *admin.Client, only string) ([]clusterRow, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusters := javaHashOrder(admin.ClusterNames(ci), hashMapDefault, false)
	if only != "" {
		if _, ok := ci.ClusterAddrTable[only]; !ok {
			return nil, fmt.Errorf("cluster %q: %w", only, admin.ErrClusterNotFound)
		}
		clusters = []string{only}
	}
	now := a.env.Now()
	var rows []clusterRow
	for _, cl := range clusters {
		for _, name := range admin.BrokerNamesOf(ci, cl) {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			for _, ba := range admin.SortedAddrs(bd) {
				r := clusterRow{Cluster: cl, BrokerName: name, BrokerID: ba.ID, Addr: ba.Addr}
				kv, err := c.GetBrokerRuntimeInfo(ctx, ba.Addr)
				if err != nil {
					r.Error = err.Error()
				} else {
					r.Runtime, r.fetched = kv, true
				}
				r.derive(now)
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

func parseJavaLong(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

func parseJavaDouble(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil
}

// firstTPS is the first space-separated number of a "putTps" value.
func firstTPS(s string) (float64, bool) {
	if strings.TrimSpace(s) == "" {
		return 0, true
	}
	return parseJavaDouble(strings.Split(s, " ")[0])
}

func (r *clusterRow) derive(now time.Time) {
	if !r.fetched {
		return
	}
	kv := r.Runtime
	r.Activated = strings.EqualFold(strings.TrimSpace(kv["brokerActive"]), "true")
	r.Version = nullable(kv["brokerVersionDesc"], hasKey(kv, "brokerVersionDesc"))
	if v, ok := firstTPS(kv["putTps"]); ok {
		r.InTPS = v
		if v, ok := firstTPS(kv["getTransferredTps"]); ok {
			r.OutTPS = v
		}
	}
	if ts := kv["earliestMessageTimeStamp"]; ts != "" {
		if ms, ok := parseJavaLong(ts); ok {
			// Clocks of tool and broker differ by a little: never "-0.00".
			r.Hours = max(float64(now.UnixMilli()-ms)/1000.0/60.0/60.0, 0)
		}
	}
	if s := kv["commitLogDiskRatio"]; s != "" {
		r.DiskRatio, _ = parseJavaDouble(s)
	}
	// The four totals are computed in sequence; the first unparsable value
	// stops the rest (they stay 0), as in the Java tool.
	pY, ok1 := parseJavaLong(kv["msgPutTotalYesterdayMorning"])
	pM, ok2 := parseJavaLong(kv["msgPutTotalTodayMorning"])
	if !ok1 || !ok2 {
		return
	}
	r.InTotalYest = pM - pY
	gY, ok1 := parseJavaLong(kv["msgGetTotalYesterdayMorning"])
	gM, ok2 := parseJavaLong(kv["msgGetTotalTodayMorning"])
	if !ok1 || !ok2 {
		return
	}
	r.OutTotalYest = gM - gY
	pN, ok := parseJavaLong(kv["msgPutTotalTodayNow"])
	if !ok {
		return
	}
	r.InTotalToday = pN - pM
	gN, ok := parseJavaLong(kv["msgGetTotalTodayNow"])
	if !ok {
		return
	}
	r.OutTotalToday = gN - gM
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// timerColumn is "%d-%d(%.1fw, %.1f, %.1f)" of the timer stats; parsing
// stops at the first bad value, as in Java.
func timerColumn(kv map[string]string) string {
	var readBehind, offsetBehind, congest int64
	var enq, deq float32
	func() {
		var ok bool
		if readBehind, ok = parseJavaLong(kv["timerReadBehind"]); !ok {
			readBehind = 0
			return
		}
		if offsetBehind, ok = parseJavaLong(kv["timerOffsetBehind"]); !ok {
			offsetBehind = 0
			return
		}
		if congest, ok = parseJavaLong(kv["timerCongestNum"]); !ok {
			congest = 0
			return
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(kv["timerEnqueueTps"]), 32)
		if err != nil {
			return
		}
		enq = float32(f)
		f, err = strconv.ParseFloat(strings.TrimSpace(kv["timerDequeueTps"]), 32)
		if err != nil {
			return
		}
		deq = float32(f)
	}()
	return fmt.Sprintf("%d-%d(%sw, %s, %s)", readBehind, offsetBehind,
		javaFixed(float64(float32(congest)/10000.0), 1), javaFixed(float64(enq), 1), javaFixed(float64(deq), 1))
}

func printClusterBaseInfo(w io.Writer, rows []clusterRow) {
	fmt.Fprintf(w, "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s\n",
		"#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
		"#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
	for _, r := range rows {
		// Before a successful fetch the Java tool's strings are "", after it
		// missing keys print "null" (ack* default to "N").
		get := func(k string) string {
			if !r.fetched {
				return ""
			}
			return nullable(r.Runtime[k], hasKey(r.Runtime, k))
		}
		getN := func(k string) string {
			if !r.fetched {
				return ""
			}
			if v, ok := r.Runtime[k]; ok {
				return v
			}
			return "N"
		}
		version := ""
		timer := "0-0(0.0w, 0.0, 0.0)"
		if r.fetched {
			version = r.Version
			timer = timerColumn(r.Runtime)
		}
		in := fmt.Sprintf("%9s(%s,%sms)", javaFixed(r.InTPS, 2), get("sendThreadPoolQueueSize"), get("sendThreadPoolQueueHeadWaitTimeMills"))
		out := fmt.Sprintf("%9s(%s,%sms|%s,%sms)", javaFixed(r.OutTPS, 2), get("pullThreadPoolQueueSize"), get("pullThreadPoolQueueHeadWaitTimeMills"),
			getN("ackThreadPoolQueueSize"), getN("ackThreadPoolQueueHeadWaitTimeMills"))
		fmt.Fprintf(w, "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s\n",
			r.Cluster, r.BrokerName, strconv.FormatInt(r.BrokerID, 10), r.Addr, version, in, out, timer,
			get("pageCacheLockTimeMills"), fmt.Sprintf("%2s", javaFixed(r.Hours, 2)), javaFixed(r.DiskRatio, 4),
			strconv.FormatBool(r.Activated))
	}
}

func printClusterMoreStats(w io.Writer, rows []clusterRow) {
	fmt.Fprintf(w, "%-16s  %-32s %14s %14s %14s %14s\n",
		"#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
	for _, r := range rows {
		fmt.Fprintf(w, "%-16s  %-32s %14d %14d %14d %14d\n",
			r.Cluster, r.BrokerName, r.InTotalYest, r.OutTotalYest, r.InTotalToday, r.OutTotalToday)
	}
}
