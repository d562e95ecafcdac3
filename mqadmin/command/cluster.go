package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
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
type clusterRow = figures.BrokerRow

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
	return figures.BrokerRows(ctx, c, ci, clusters, a.env.Now()), nil
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
		if readBehind, ok = figures.ParseJavaLong(kv["timerReadBehind"]); !ok {
			readBehind = 0
			return
		}
		if offsetBehind, ok = figures.ParseJavaLong(kv["timerOffsetBehind"]); !ok {
			offsetBehind = 0
			return
		}
		if congest, ok = figures.ParseJavaLong(kv["timerCongestNum"]); !ok {
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
			if !r.Fetched {
				return ""
			}
			return nullable(r.Runtime[k], hasKey(r.Runtime, k))
		}
		getN := func(k string) string {
			if !r.Fetched {
				return ""
			}
			if v, ok := r.Runtime[k]; ok {
				return v
			}
			return "N"
		}
		version := ""
		timer := "0-0(0.0w, 0.0, 0.0)"
		if r.Fetched {
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
