package command

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Pop consumption commands (ours: the Java tool has none). popStatus asks
// brokers for GET_POP_STATUS, an rmq-go extension; an Apache broker
// answers REQUEST_CODE_NOT_SUPPORTED and is reported as such.

// popCommands returns the pop commands for the root.
func popCommands(a *app) []*cobra.Command {
	return []*cobra.Command{newPopStatus(a)}
}

type popStatusOpts struct {
	group, topic, broker, cluster, maxQueues string
	detail                                   bool
}

func newPopStatus(a *app) *cobra.Command {
	var o popStatusOpts
	c := newCmd("popStatus", "Show pop consumption state: in-flight messages, blocked orderly queues, revive progress.")
	fs := c.Flags()
	stringOpt(fs, &o.group, "g", "groupName", "consumer group name (default: every group)")
	stringOpt(fs, &o.topic, "t", "topicName", "consumed topic name (default: every topic)")
	stringOpt(fs, &o.broker, "b", "brokerAddr", "Broker address")
	stringOpt(fs, &o.cluster, "c", "clusterName", "Cluster name (default: the masters of every cluster)")
	boolOpt(fs, &o.detail, "d", "detail", "Show every queue of each group")
	stringOpt(fs, &o.maxQueues, "m", "maxQueues", "With -d: at most this many queue rows per broker (default 1000)")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		q := admin.PopStatusQuery{Group: strings.TrimSpace(o.group), Topic: strings.TrimSpace(o.topic), Detail: o.detail}
		if s := strings.TrimSpace(o.maxQueues); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return usagef("invalid maxQueues %q: want a positive integer", o.maxQueues)
			}
			q.MaxQueues = n
		}
		return a.withClient(func(cl *admin.Client) error {
			return a.popStatus(cmd.Context(), cl, o, q)
		})
	})
	return c
}

// popStatusAddrs resolves -b, -c, or every cluster's masters.
func popStatusAddrs(ctx context.Context, cl *admin.Client, o popStatusOpts) ([]string, error) {
	if b := strings.TrimSpace(o.broker); b != "" {
		return []string{b}, nil
	}
	ci, err := cl.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusters := admin.ClusterNames(ci)
	if c := strings.TrimSpace(o.cluster); c != "" {
		clusters = []string{c}
	}
	var addrs []string
	for _, c := range clusters {
		as, err := admin.MasterAddrs(ci, c)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, as...)
	}
	return addrs, nil
}

type popStatusJSON struct {
	Addr   string                  `json:"addr"`
	Status *protocol.PopStatusBody `json:"status,omitempty"`
	Error  string                  `json:"error,omitempty"`
}

const (
	popGroupFormat  = "%-16s %-32s %-32s %-10s %-9s %-9s %-10s %-14s %-10s %s\n"
	popQueueFormat  = "    %-48s %-5s %-12s %-12s %-10s %-9s %-12s %s\n"
	popReviveFormat = "%-16s %-12s %-9s %-16s %-10s %-26s %-20s %-9s %-9s %s\n"
)

func (a *app) popStatus(ctx context.Context, cl *admin.Client, o popStatusOpts, q admin.PopStatusQuery) error {
	addrs, err := popStatusAddrs(ctx, cl, o)
	if err != nil {
		return err
	}
	results := cl.PopStatusOf(ctx, addrs, q)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			a.warn("popStatus: %v", r.Err)
		}
	}
	if len(addrs) == 1 && failed == 1 {
		return results[0].Err // already printed: exit 1 without a second line
	}
	// Brokers by name, then address (a listing that does not move).
	slices.SortStableFunc(results, func(x, y admin.BrokerPopStatus) int {
		return cmp.Or(cmp.Compare(popBrokerName(x), popBrokerName(y)), cmp.Compare(x.Addr, y.Addr))
	})
	w := a.env.Stdout
	if a.json() {
		out := make([]popStatusJSON, 0, len(results))
		for _, r := range results {
			j := popStatusJSON{Addr: r.Addr, Status: r.Status}
			if r.Err != nil {
				j.Error = r.Err.Error()
			}
			out = append(out, j)
		}
		if err := writeJSONField(w, "brokers", out); err != nil {
			return err
		}
	} else {
		a.printPopStatus(w, results, q.Detail)
	}
	if failed > 0 {
		return &partialError{n: failed}
	}
	return nil
}

func popBrokerName(r admin.BrokerPopStatus) string {
	if r.Status == nil {
		return "\xff" // failed brokers last
	}
	return r.Status.BrokerName
}

func (a *app) printPopStatus(w io.Writer, results []admin.BrokerPopStatus, detail bool) {
	loc := a.env.Location
	fmt.Fprintf(w, popGroupFormat, "#Broker Name", "#Consumer Group", "#Topic", "#InFlight", "#Overdue", "#Blocked",
		"#Backlog", "#RetryBacklog", "#Polling", "#Oldest InFlight")
	var tot protocol.PopStatusTotals
	truncated := false
	for _, r := range results {
		st := r.Status
		if st == nil {
			continue
		}
		truncated = truncated || st.Truncated
		for _, g := range st.Groups {
			fmt.Fprintf(w, popGroupFormat, frontStringAtLeast(st.BrokerName, 16), frontStringAtLeast(g.Group, 32),
				frontStringAtLeast(g.Topic, 32), strconv.FormatInt(g.InFlight, 10), strconv.FormatInt(g.Overdue, 10),
				strconv.Itoa(g.BlockedQueues), strconv.FormatInt(g.Backlog, 10), strconv.FormatInt(g.RetryBacklog, 10),
				strconv.Itoa(g.SuspendedPops), popAge(g.OldestPopTime, st.Now, loc))
			if detail && len(g.Queues) > 0 {
				fmt.Fprintf(w, popQueueFormat, "#Queue", "#QID", "#PopOffset", "#MaxOffset", "#InFlight", "#Overdue",
					"#Checkpoints", "#Blocked Until")
				for _, qs := range g.Queues {
					blocked := "-"
					if qs.Blocked {
						blocked = javaDateTime(qs.BlockedUntil, loc)
					}
					name := qs.Topic
					if qs.Orderly {
						name += " (orderly)"
					}
					fmt.Fprintf(w, popQueueFormat, frontStringAtLeast(name, 48), strconv.Itoa(int(qs.QueueID)),
						strconv.FormatInt(qs.PopOffset, 10), strconv.FormatInt(qs.MaxOffset, 10),
						strconv.FormatInt(qs.InFlight, 10), strconv.FormatInt(qs.Overdue, 10), strconv.Itoa(qs.Checkpoints), blocked)
				}
			}
		}
		// Summed over the rows shown; waiting requests are broker-wide.
		for _, g := range st.Groups {
			tot.Groups++
			tot.InFlight += g.InFlight
			tot.Overdue += g.Overdue
			tot.BlockedQueues += g.BlockedQueues
			tot.Checkpoints += g.Checkpoints
		}
		tot.SuspendedPops += st.Totals.SuspendedPops
		tot.SuspendedNotifications += st.Totals.SuspendedNotifications
	}
	if truncated {
		fmt.Fprintf(w, "(queue rows truncated: raise -m)\n")
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, popReviveFormat, "#Broker Name", "#Checkpoints", "#Overdue", "#Revive Lag(ms)", "#Journal", "#Last Revive Round",
		"#Oldest Due", "#Revived", "#DLQ", "#Failed")
	for _, r := range results {
		st := r.Status
		if st == nil {
			continue
		}
		rv := st.Revive
		var applied, maxOff int64
		for _, q := range rv.Queues {
			applied += q.Applied
			maxOff += q.MaxOffset
		}
		last := "-"
		if rv.LastRoundTime > 0 {
			last = javaDateTime(rv.LastRoundTime, loc) + " (" + strconv.FormatInt(rv.LastRoundCount, 10) + ")"
		}
		oldest := "-"
		if rv.OldestDue > 0 {
			oldest = javaDateTime(rv.OldestDue, loc)
		}
		fmt.Fprintf(w, popReviveFormat, frontStringAtLeast(st.BrokerName, 16), strconv.FormatInt(rv.Checkpoints, 10),
			strconv.FormatInt(rv.Overdue, 10), strconv.FormatInt(rv.LagMillis, 10), fmt.Sprintf("%d/%d", applied, maxOff),
			last, oldest, strconv.FormatInt(rv.Revived, 10), strconv.FormatInt(rv.DeadLettered, 10), strconv.FormatInt(rv.Failed, 10))
	}
	fmt.Fprintf(w, "\nTotal: %d group(s), %d in flight (%d overdue), %d checkpoint(s), %d blocked orderly queue(s); broker-wide %d suspended pop(s), %d suspended notification(s)\n",
		tot.Groups, tot.InFlight, tot.Overdue, tot.Checkpoints, tot.BlockedQueues, tot.SuspendedPops, tot.SuspendedNotifications)
}

// popAge is "<time> (<age>)" of a pop time, relative to the broker's
// clock; "-" for none.
func popAge(ms, now int64, loc *time.Location) string {
	if ms <= 0 {
		return "-"
	}
	age := time.Duration(max(now-ms, 0)) * time.Millisecond
	return javaDateTime(ms, loc) + " (" + age.String() + ")"
}
