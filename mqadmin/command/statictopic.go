package command

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/statictopic"
)

// Static topics (docs/static-topics.md §9): updateStaticTopic and
// remappingStaticTopic with the Java tool's names, options and two output
// lines, plus what the Java tool lacks: the progress of every step (plain
// lines, and bars on a terminal, progress.go), --dry-run, a
// working -mf (apply a plan file, e.g. one a dry run wrote), non-zero exit
// on failure, and finishing an interrupted change when run again.
// staticTopicHistory prints every logic queue's mapping history.

type staticTopicOpts struct {
	clusters, brokers, topic, totalQueues, mapFile, forceReplace string
	dryRun                                                       bool
}

func staticFlags(c *cobra.Command, o *staticTopicOpts, withTotal bool) {
	fs := c.Flags()
	stringOpt(fs, &o.clusters, "c", "clusters", "remapping static topic to clusters, comma separated")
	stringOpt(fs, &o.brokers, "b", "brokers", "remapping static topic to brokers, comma separated")
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	if withTotal {
		stringOpt(fs, &o.totalQueues, "qn", "totalQueueNum", "total queue num")
	}
	stringOpt(fs, &o.mapFile, "mf", "mapFile", "The mapping data file name")
	stringOpt(fs, &o.forceReplace, "fr", "forceReplace", "Force replace the old mapping")
	boolOpt(fs, &o.dryRun, "", "dry-run", "print the plan and write it to a file, change nothing (apply it later with -mf)")
	markRequired(c, "topic")
	if withTotal {
		markRequired(c, "totalQueueNum")
	}
	c.MarkFlagsOneRequired("clusters", "brokers")
	c.MarkFlagsMutuallyExclusive("clusters", "brokers")
}

func newUpdateStaticTopic(a *app) *cobra.Command {
	return newStaticTopicCmd(a, "updateStaticTopic", "Update or create static topic, which has fixed number of queues.", false)
}

func newRemappingStaticTopic(a *app) *cobra.Command {
	return newStaticTopicCmd(a, "remappingStaticTopic", "Remapping static topic.", true)
}

// newStaticTopicCmd builds updateStaticTopic, which takes -qn, or with
// remap remappingStaticTopic.
func newStaticTopicCmd(a *app, use, short string, remap bool) *cobra.Command {
	var o staticTopicOpts
	c := newCmd(use, short)
	staticFlags(c, &o, !remap)
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.staticTopic(cmd.Context(), o, remap) })
	return c
}

// tempDir is where plan files go: $TMPDIR, else the system's (the Java
// tool uses java.io.tmpdir).
func (a *app) tempDir() string {
	if d := a.env.Getenv("TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

type staticResultJSON struct {
	Topic       string         `json:"topic"`
	Files       []string       `json:"files"`
	Repair      []string       `json:"repair,omitempty"`
	Type        string         `json:"type,omitempty"`
	Epoch       int64          `json:"epoch,omitempty"`
	MapIn       []string       `json:"brokerToMapIn,omitempty"`
	MapOut      []string       `json:"brokerToMapOut,omitempty"`
	Leaders     map[int]string `json:"leaders,omitempty"`
	DryRun      bool           `json:"dryRun"`
	Applied     bool           `json:"applied"`
	NothingToDo bool           `json:"nothingToDo"`
}

func (a *app) staticTopic(ctx context.Context, o staticTopicOpts, remap bool) error {
	req := admin.StaticTopicRequest{
		Topic:    strings.TrimSpace(o.topic),
		Brokers:  splitNonBlank(o.brokers),
		Clusters: splitNonBlank(o.clusters),
		DryRun:   o.dryRun,
		Options:  statictopic.Options{Now: a.env.Now, Shuffle: func(s []string) { rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] }) }},
	}
	if !remap {
		n, err := javaInt("qn", o.totalQueues)
		if err != nil {
			return err
		}
		if n <= 0 {
			return usagef("invalid value %q for -qn: the total queue number must be positive", o.totalQueues)
		}
		req.TotalQueues = n
	}
	if javaBool(o.forceReplace) {
		// The Java tool only reads -fr in a code path it never reaches;
		// forcing would bypass the brokers' epoch fencing.
		a.warn("-fr is accepted for compatibility and ignored: mappings are never force-replaced")
	}
	if f := strings.TrimSpace(o.mapFile); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read mapping file: %w", err)
		}
		if req.File, err = statictopic.DecodePlan(data); err != nil {
			return fmt.Errorf("mapping file %s: %w", f, err)
		}
	}

	text := !a.json()
	w := a.env.Stdout
	out := staticResultJSON{Topic: req.Topic, DryRun: o.dryRun, Files: []string{}}
	dir := a.tempDir()
	after := ""
	req.Save = func(p *statictopic.Plan, suffix string) (string, error) {
		path := filepath.Join(dir, fmt.Sprintf("%s-%d%s", p.Topic, p.Epoch, suffix))
		data, err := jsonIndent(p)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", err
		}
		return path, nil
	}
	req.OnFile = func(suffix, path string) {
		out.Files = append(out.Files, path)
		if suffix == statictopic.SuffixAfter {
			after = path
		}
		if !text {
			return
		}
		switch {
		case suffix == admin.SuffixRepair:
			fmt.Fprintf(w, "The repair data is written to file %s\n", path)
		case suffix == statictopic.SuffixBefore || remap:
			// The Java tool says "old" for both files of a remapping.
			fmt.Fprintf(w, "The old mapping data is written to file %s\n", path)
		case suffix == statictopic.SuffixAfter:
			fmt.Fprintf(w, "The new mapping data is written to file %s\n", path)
		}
	}
	req.OnRepair = func(reasons []string, p *statictopic.Plan) {
		out.Repair = reasons
		if text {
			fmt.Fprintf(w, "Topic %s has an interrupted change; finishing it first at epoch %d:\n", req.Topic, p.Epoch)
			for _, r := range reasons {
				fmt.Fprintf(w, "  - %s\n", r)
			}
		}
	}
	req.OnPlan = func(p *statictopic.Plan, cur statictopic.Configs) {
		if text {
			printPlan(w, p, cur)
		}
	}
	if text {
		prog := newStepProgress(w, a.progressTerminal())
		req.OnStep = prog.step
		defer prog.end()
	}

	return a.withClient(func(c *admin.Client) error {
		var res *admin.StaticTopicResult
		var err error
		if remap {
			res, err = c.RemapStaticTopic(ctx, req)
		} else {
			res, err = c.UpdateStaticTopic(ctx, req)
		}
		if err != nil {
			return err
		}
		out.Applied, out.NothingToDo = res.Applied, res.NothingToDo
		if res.Plan != nil {
			out.Type, out.Epoch, out.MapIn, out.MapOut, out.Leaders = res.Plan.Type, res.Plan.Epoch, res.Plan.BrokerToMapIn, res.Plan.BrokerToMapOut, res.Plan.Leaders()
		}
		if !text {
			return writeJSON(w, out)
		}
		cmdName := "updateStaticTopic"
		if remap {
			cmdName = "remappingStaticTopic"
		}
		switch {
		case o.dryRun && res.Repaired != nil:
			fmt.Fprintf(w, "Dry run: nothing was changed. The interrupted change above must be finished before the requested one can be planned: run the command without --dry-run.\n")
		case o.dryRun:
			fmt.Fprintf(w, "Dry run: nothing was changed. To apply this plan: mqadmin %s -t %s %s -mf %s\n", cmdName, req.Topic, targetArgs(o), after)
		case res.NothingToDo && req.File != nil:
			fmt.Fprintf(w, "The mapping data is already applied: nothing to do.\n")
		case res.NothingToDo:
			fmt.Fprintf(w, "The interrupted change is finished: nothing else to do.\n")
		case res.Applied:
			printLeaders(w, req.Topic, res.Plan)
		}
		return nil
	})
}

func targetArgs(o staticTopicOpts) string {
	s := "-b " + o.brokers
	if o.clusters != "" {
		s = "-c " + o.clusters
	}
	if o.totalQueues != "" {
		s += " -qn " + strings.TrimSpace(o.totalQueues)
	}
	return s
}

func jsonIndent(v any) ([]byte, error) {
	var b strings.Builder
	if err := writeJSON(&b, v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// printPlan shows what a plan changes per broker and per logic queue.
func printPlan(w io.Writer, p *statictopic.Plan, cur statictopic.Configs) {
	fmt.Fprintf(w, "Plan %s of topic %s at epoch %d:\n", p.Type, p.Topic, p.Epoch)
	oldLeaders := (&statictopic.Plan{BrokerConfigMap: cur}).Leaders()
	newLeaders := p.Leaders()
	for _, b := range p.BrokerConfigMap.Brokers() {
		tc := p.BrokerConfigMap[b]
		was := "new"
		if oc := cur[b]; oc != nil {
			was = fmt.Sprintf("%d/%d", oc.ReadQueueNums, oc.WriteQueueNums)
		}
		role := ""
		if slices.Contains(p.BrokerToMapIn, b) {
			role += " (map in)"
		}
		if slices.Contains(p.BrokerToMapOut, b) {
			role += " (map out)"
		}
		fmt.Fprintf(w, "  broker %s%s: read/write queues %s -> %d/%d, leads %d -> %d logic queues\n",
			b, role, was, tc.ReadQueueNums, tc.WriteQueueNums, countOf(oldLeaders, b), countOf(newLeaders, b))
	}
	for _, g := range slices.Sorted(maps.Keys(newLeaders)) {
		b := newLeaders[g]
		if oldLeaders[g] == b {
			continue
		}
		items := p.BrokerConfigMap[b].MappingDetail.HostedQueues[g]
		from := "(new)"
		if ob, ok := oldLeaders[g]; ok {
			from = ob
		}
		fmt.Fprintf(w, "  logic queue %d: %s -> %s, physical queue %d\n", g, from, b, statictopic.Leader(items).QueueID)
	}
}

func countOf(m map[int]string, b string) int {
	n := 0
	for _, v := range m {
		if v == b {
			n++
		}
	}
	return n
}

func printLeaders(w io.Writer, topic string, p *statictopic.Plan) {
	leaders := p.Leaders()
	fmt.Fprintf(w, "Topic %s now has %d logic queues at epoch %d:\n", topic, len(leaders), p.Epoch)
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		fmt.Fprintf(w, "  logic queue %d -> %s\n", g, leaders[g])
	}
}

// ---- staticTopicHistory ----

type staticHistoryOpts struct {
	topic string
}

func newStaticTopicHistory(a *app) *cobra.Command {
	var o staticHistoryOpts
	c := newCmd("staticTopicHistory", "Print the mapping history of every logic queue of a static topic.")
	stringOpt(c.Flags(), &o.topic, "t", "topic", "topic name")
	markRequired(c, "topic")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.staticTopicHistory(cmd.Context(), o) })
	return c
}

func (a *app) staticTopicHistory(ctx context.Context, o staticHistoryOpts) error {
	topic := strings.TrimSpace(o.topic)
	return a.withClient(func(c *admin.Client) error {
		h, state, err := figures.StaticHistory(ctx, c, topic, a.env.Now)
		if err != nil {
			return err
		}
		if a.json() {
			return writeJSON(a.env.Stdout, h)
		}
		w := a.env.Stdout
		fmt.Fprintf(w, "Topic: %s  Logic queues: %d  Scope: %s\n", topic, h.TotalQueues, state[state.Brokers()[0]].MappingDetail.Scope)
		fmt.Fprintf(w, "%-32s  %-14s  %s\n", "#Broker", "#Epoch", "#Read/Write")
		for _, b := range h.Brokers {
			fmt.Fprintf(w, "%-32s  %-14d  %d/%d\n", b.Broker, b.Epoch, b.ReadQueueNums, b.WriteQueueNums)
		}
		for _, q := range h.Queues {
			fmt.Fprintf(w, "\nLogic queue %d: leader %s, epoch %d\n", q.LogicQueue, q.Leader, q.Epoch)
			fmt.Fprintf(w, "  %-4s  %-32s  %-8s  %-12s  %-12s  %-10s  %-14s  %s\n", "#Gen", "#Broker", "#QueueId", "#LogicOffset", "#StartOffset", "#EndOffset", "#TimeOfStart", "#TimeOfEnd")
			for _, it := range q.Items {
				fmt.Fprintf(w, "  %-4d  %-32s  %-8d  %-12d  %-12d  %-10d  %-14d  %d\n", it.Gen, it.Bname, it.QueueID, it.LogicOffset, it.StartOffset, it.EndOffset, it.TimeOfStart, it.TimeOfEnd)
			}
		}
		for _, g := range h.Missing {
			fmt.Fprintf(w, "\nLogic queue %d: no leader\n", g)
		}
		if len(h.Warnings) > 0 {
			fmt.Fprintf(w, "\nWARNING: the topic has an interrupted change; run updateStaticTopic or remappingStaticTopic again to finish it:\n")
			for _, r := range h.Warnings {
				fmt.Fprintf(w, "  - %s\n", r)
			}
		}
		return nil
	})
}
