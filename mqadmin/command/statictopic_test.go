package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const staticNS = "127.0.0.1:39876"

// staticCluster: cluster DefaultCluster with masters broker-a, -b, -c.
func staticCluster() *admintest.Cluster {
	fc := admintest.New(staticNS)
	fc.AddBroker("DefaultCluster", "broker-a", 0, "127.0.0.1:40911")
	fc.AddBroker("DefaultCluster", "broker-b", 0, "127.0.0.1:40921")
	fc.AddBroker("DefaultCluster", "broker-c", 0, "127.0.0.1:40931")
	return fc
}

// runStatic runs mqadmin against fc with TMPDIR set to tmp.
func runStatic(t *testing.T, fc *admintest.Cluster, tmp string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := fakeEnv(fc, &out, &errb)
	env.Getenv = func(k string) string {
		if k == "TMPDIR" {
			return tmp
		}
		return ""
	}
	code := Main(context.Background(), append(args, "-n", staticNS), env)
	return result{code, out.String(), errb.String()}
}

func writes513(fc *admintest.Cluster) int {
	n := 0
	for _, c := range fc.Calls() {
		if c.Code == code.UpdateAndCreateStaticTopic {
			n++
		}
	}
	return n
}

func leaderCounts(t *testing.T, fc *admintest.Cluster) map[string]int {
	t.Helper()
	cfgs := statictopic.Configs{}
	fc.Lock(func() {
		for _, b := range fc.Brokers {
			if tc, ok := b.Topics["T"]; ok {
				cfgs[b.Name] = &protocol.TopicConfigAndQueueMapping{TopicName: "T", ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums, MappingDetail: b.Mapping["T"]}
			}
		}
	})
	leaders, err := statictopic.CheckAll("T", cfgs)
	if err != nil {
		t.Fatalf("brokers' state: %v", err)
	}
	out := map[string]int{}
	for _, q := range leaders {
		out[q.Leader]++
	}
	return out
}

func TestStaticTopicCommands(t *testing.T) {
	fc := staticCluster()
	tmp := t.TempDir()
	// The fake clock is fixed: epochs are now+1000, +2000, ...
	now := int64(1700000000000 + 3*3600*1000 + 1800*1000)

	r := runStatic(t, fc, tmp, "updateStaticTopic", "-t", "T", "-qn", "8", "-b", "broker-a,broker-b")
	if r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	lines := strings.Split(r.stdout, "\n")
	// The Java tool's two lines first.
	if want := fmt.Sprintf("The old mapping data is written to file %s/T-%d.before", tmp, now); lines[0] != want {
		t.Fatalf("line 1 %q, want %q", lines[0], want)
	}
	if want := fmt.Sprintf("The new mapping data is written to file %s/T-%d.after", tmp, now+1000); lines[1] != want {
		t.Fatalf("line 2 %q, want %q", lines[1], want)
	}
	outputHas(t, "create", r.stdout,
		fmt.Sprintf("Plan CREATE_OR_UPDATE of topic T at epoch %d:", now+1000),
		"  broker broker-c: read/write queues new -> 0/0, leads 0 -> 0 logic queues",
		"step 1/1: write every broker at epoch",
		"  [1/3] broker-a (127.0.0.1:40911): epoch",
		"Topic T now has 8 logic queues at epoch",
		"  logic queue 7 -> broker-",
	)
	if got := leaderCounts(t, fc); got["broker-a"] != 4 || got["broker-b"] != 4 {
		t.Fatalf("leaders %v", got)
	}
	for _, f := range []string{fmt.Sprintf("T-%d.before", now), fmt.Sprintf("T-%d.after", now+1000)} {
		data, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := statictopic.DecodePlan(data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}

	// Remap everything to broker-c.
	r = runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-b", "broker-c")
	if r.code != 0 {
		t.Fatalf("remap: %+v", r)
	}
	old := regexp.MustCompile(`(?m)^The old mapping data is written to file .*/T-\d+\.(before|after)$`)
	if m := old.FindAllString(r.stdout, -1); len(m) != 2 || !strings.HasSuffix(m[0], ".before") || !strings.HasSuffix(m[1], ".after") {
		t.Fatalf("remap file lines %q:\n%s", m, r.stdout)
	}
	outputHas(t, "remap", r.stdout,
		"  broker broker-c (map in): read/write queues 0/0 -> 8/8, leads 0 -> 8 logic queues",
		"  broker broker-a (map out): read/write queues 4/4 -> 4/4, leads 4 -> 0 logic queues",
		"step 1/5: new leaders accept writes: broker-c",
		"step 2/5: old leaders stop accepting writes: broker-a, broker-b",
		"step 3/5: decide the logic offsets of 8 moved logic queue(s)",
		"  [8/8] logic queue 7: broker-",
		"the new leader starts at logic offset 10000",
		"  [3/3] broker-b (127.0.0.1:40921): epoch",
		"step 4/5: write the logic offsets: broker-c, then the copies on broker-a, broker-b",
		"step 5/5: every other broker: (none)",
	)
	if got := leaderCounts(t, fc); got["broker-c"] != 8 {
		t.Fatalf("leaders %v", got)
	}

	// The history of every logic queue.
	r = runStatic(t, fc, tmp, "staticTopicHistory", "-t", "T")
	if r.code != 0 || strings.Count(r.stdout, "Logic queue ") != 8 || !strings.Contains(r.stdout, "Logic queue 0: leader broker-c, epoch") ||
		strings.Contains(r.stdout, "WARNING") {
		t.Fatalf("history: %+v", r)
	}
	row := regexp.MustCompile(`(?m)^  1\s+broker-c\s+\d+\s+10000\s+0\s+-1\s+-1\s+-1$`)
	if n := len(row.FindAllString(r.stdout, -1)); n != 8 {
		t.Fatalf("history: %d gen-1 rows:\n%s", n, r.stdout)
	}
	r = runStatic(t, fc, tmp, "staticTopicHistory", "-t", "T", "--output", "json")
	var h figures.History
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h.Queues) != 8 || h.TotalQueues != 8 || len(h.Queues[3].Items) != 2 {
		t.Fatalf("history json: %v %+v", err, h)
	}

	// A dry run writes a plan and nothing else; -mf applies it.
	n := writes513(fc)
	r = runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-c", "DefaultCluster", "--dry-run")
	if r.code != 0 || writes513(fc) != n || !strings.Contains(r.stdout, "Dry run: nothing was changed. To apply this plan: mqadmin remappingStaticTopic -t T -c DefaultCluster -mf ") {
		t.Fatalf("dry run: %+v", r)
	}
	plan := regexp.MustCompile(`-mf (\S+)`).FindStringSubmatch(r.stdout)[1]
	r = runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-c", "DefaultCluster", "-mf", plan)
	if r.code != 0 || writes513(fc) == n {
		t.Fatalf("apply plan file: %+v", r)
	}
	if got := leaderCounts(t, fc); len(got) != 3 || got["broker-c"] < 2 {
		t.Fatalf("leaders %v", got)
	}
	// Applying it again: already done.
	r = runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-c", "DefaultCluster", "-mf", plan)
	if r.code != 0 || !strings.Contains(r.stdout, "already applied") {
		t.Fatalf("apply again: %+v", r)
	}
	// JSON output.
	r = runStatic(t, fc, tmp, "updateStaticTopic", "-t", "T", "-qn", "9", "-b", "broker-a", "--output", "json")
	var js staticResultJSON
	if err := json.Unmarshal([]byte(r.stdout), &js); r.code != 0 || err != nil || !js.Applied || len(js.Leaders) != 9 || len(js.Files) != 2 {
		t.Fatalf("json: %+v %v", r, err)
	}
}

func TestStaticTopicBadInput(t *testing.T) {
	tmp := t.TempDir()
	fc := staticCluster()
	if r := runStatic(t, fc, tmp, "updateStaticTopic", "-t", "T", "-qn", "4", "-b", "broker-a"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	planFile := filepath.Join(tmp, "stale.json")
	r := runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-b", "broker-b", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: %+v", r)
	}
	dry := regexp.MustCompile(`-mf (\S+)`).FindStringSubmatch(r.stdout)[1]
	data, _ := os.ReadFile(dry)
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runStatic(t, fc, tmp, "updateStaticTopic", "-t", "T", "-qn", "5", "-b", "broker-a"); r.code != 0 {
		t.Fatalf("extend: %+v", r)
	}
	twice := filepath.Join(tmp, "twice.json")
	p, _ := statictopic.DecodePlan(data)
	for _, items := range p.BrokerConfigMap["broker-b"].MappingDetail.HostedQueues {
		items[len(items)-1].QueueID = 0
	}
	if err := os.WriteFile(twice, protocol.MustMarshal(p), 0o644); err != nil {
		t.Fatal(err)
	}
	n := writes513(fc)
	for _, tc := range []struct {
		args []string
		exit int
		err  string
	}{
		{[]string{"updateStaticTopic", "-t", "T", "-qn", "2", "-b", "broker-a"}, ExitError, "cannot decrease the queue num"},
		{[]string{"updateStaticTopic", "-t", "T", "-qn", "8", "-b", "broker-a,broker-x"}, ExitError, "broker broker-x is not in the cluster (known brokers: broker-a, broker-b, broker-c)"},
		{[]string{"remappingStaticTopic", "-t", "T", "-b", "nope"}, ExitError, "broker nope is not in the cluster"},
		{[]string{"remappingStaticTopic", "-t", "T", "-c", "NoCluster"}, ExitError, "Make sure the specified clusterName exists"},
		{[]string{"remappingStaticTopic", "-t", "T", "-b", "broker-b", "-mf", planFile}, ExitError, "stale epoch: "},
		{[]string{"remappingStaticTopic", "-t", "T", "-b", "broker-b", "-mf", twice}, ExitError, "share the physical queue"},
		{[]string{"remappingStaticTopic", "-t", "T", "-b", "broker-b", "-mf", filepath.Join(tmp, "missing")}, ExitError, "read mapping file"},
		{[]string{"remappingStaticTopic", "-t", "Nope", "-b", "broker-b"}, ExitError, "no topic route to do the remapping"},
		{[]string{"updateStaticTopic", "-t", "T", "-qn", "x", "-b", "broker-a"}, ExitUsage, "not an integer"},
		{[]string{"updateStaticTopic", "-t", "T", "-qn", "0", "-b", "broker-a"}, ExitUsage, "must be positive"},
		{[]string{"updateStaticTopic", "-t", "T", "-qn", "4"}, ExitUsage, "brokers"},
		{[]string{"remappingStaticTopic", "-t", "T", "-b", "broker-a", "-c", "DefaultCluster"}, ExitUsage, "none of the others can be"},
	} {
		r := runStatic(t, fc, tmp, tc.args...)
		if r.code != tc.exit || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%v: exit %d stderr %q, want %d %q", tc.args, r.code, r.stderr, tc.exit, tc.err)
		}
	}
	if writes513(fc) != n {
		t.Fatal("a refused command wrote to a broker")
	}
}

// TestStaticTopicRerunFinishes: a remap that fails half way exits
// non-zero saying so; the same command again finishes it.
func TestStaticTopicRerunFinishes(t *testing.T) {
	tmp := t.TempDir()
	fc := staticCluster()
	if r := runStatic(t, fc, tmp, "updateStaticTopic", "-t", "T", "-qn", "6", "-b", "broker-a,broker-b"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	writes := 0
	fc.Lock(func() {
		fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
			if req.Code == code.UpdateAndCreateStaticTopic {
				if writes++; writes == 2 { // step 2: the first old leader
					return remoting.NewResponse(req, code.SystemError, "disk full"), true
				}
			}
			return nil, false
		}
	})
	r := runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-b", "broker-c")
	if r.code != ExitError || !strings.Contains(r.stderr, "disk full") || !strings.Contains(r.stderr, "run the same command again to finish it") {
		t.Fatalf("interrupted: %+v", r)
	}
	fc.Lock(func() { fc.Override = nil })
	r = runStatic(t, fc, tmp, "staticTopicHistory", "-t", "T")
	if r.code != 0 || !strings.Contains(r.stdout, "WARNING: the topic has an interrupted change") {
		t.Fatalf("history of the interrupted topic: %+v", r)
	}
	r = runStatic(t, fc, tmp, "remappingStaticTopic", "-t", "T", "-b", "broker-c")
	if r.code != 0 || !strings.Contains(r.stdout, "Topic T has an interrupted change; finishing it first") || !strings.Contains(r.stdout, "The repair data is written to file "+tmp) {
		t.Fatalf("rerun: %+v", r)
	}
	t.Logf("rerun output:\n%s", r.stdout)
	if got := leaderCounts(t, fc); got["broker-c"] != 6 {
		t.Fatalf("leaders %v", got)
	}
}

// TestStaticTopicProgress: with stderr a terminal, every step with work
// gets a bar there, redrawn in place per unit and left complete; stdout
// has the same plain lines as without a terminal. TERM=dumb draws none.
func TestStaticTopicProgress(t *testing.T) {
	run := func(term string, failSecondWrite bool, args ...string) result {
		t.Helper()
		fc := staticCluster()
		tmp := t.TempDir()
		var out, errb bytes.Buffer
		env := fakeEnv(fc, &out, &errb)
		env.Getenv = func(k string) string {
			switch k {
			case "TMPDIR":
				return tmp
			case "TERM":
				return term
			}
			return ""
		}
		env.IsTerminal = func(w io.Writer) bool { return w == &errb }
		if c := Main(context.Background(), []string{"updateStaticTopic", "-t", "T", "-qn", "4", "-b", "broker-a", "-n", staticNS}, env); c != 0 {
			t.Fatalf("create: %d %s", c, errb.String())
		}
		out.Reset()
		errb.Reset()
		if failSecondWrite {
			writes := 0
			fc.Lock(func() {
				fc.Override = func(_ string, req *remoting.Command) (*remoting.Command, bool) {
					if req.Code == code.UpdateAndCreateStaticTopic {
						if writes++; writes == 2 {
							return remoting.NewResponse(req, code.SystemError, "disk full"), true
						}
					}
					return nil, false
				}
			})
		}
		c := Main(context.Background(), append(args, "-n", staticNS), env)
		return result{c, out.String(), errb.String()}
	}
	r := run("xterm", false, "remappingStaticTopic", "-t", "T", "-b", "broker-b")
	t.Logf("stdout:\n%s\nstderr (terminal):\n%q", r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("remap: %+v", r)
	}
	// Step 3 decides 4 logic queues: drawn at 0/4, then once per queue,
	// each time after erasing the line.
	if !strings.Contains(r.stderr, "\n  [....................] 0/4 logic queues\r\x1b[K") {
		t.Errorf("stderr lacks the step-3 bar at 0/4:\n%q", r.stderr)
	}
	for i := 1; i <= 4; i++ {
		bar := fmt.Sprintf("\r\x1b[K  [%s%s] %d/4 logic queues", strings.Repeat("#", 5*i), strings.Repeat(".", 20-5*i), i)
		if !strings.Contains(r.stderr, bar) {
			t.Errorf("stderr lacks %q:\n%q", bar, r.stderr)
		}
	}
	// Steps 1, 2 and 5 write one broker, step 4 two.
	for _, bar := range []string{"[####################] 1/1 brokers\n", "[####################] 2/2 brokers\n"} {
		if !strings.Contains(r.stderr, bar) {
			t.Errorf("stderr lacks %q:\n%q", bar, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "] 4/4 logic queues\n"); n != 1 {
		t.Errorf("the finished step-3 bar is left %d times:\n%q", n, r.stderr)
	}
	if n := strings.Count(r.stderr, "\n"); n != 5 {
		t.Errorf("%d finished bars, want 5:\n%q", n, r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b") || strings.Contains(r.stdout, "#") {
		t.Errorf("terminal codes on stdout:\n%q", r.stdout)
	}
	for _, want := range []string{"step 3/5: decide the logic offsets of 4 moved logic queue(s)\n  [1/4] logic queue 0: broker-a-", "step 5/5: every other broker: broker-c\n  [1/1] broker-c"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	// The same on a dumb terminal: plain lines only, identical stdout
	// apart from the epochs and file names.
	d := run("dumb", false, "remappingStaticTopic", "-t", "T", "-b", "broker-b")
	if d.code != 0 || d.stderr != "" {
		t.Fatalf("TERM=dumb: %+v", d)
	}
	norm := regexp.MustCompile(`\d{13}|/\S+`)
	if a, b := norm.ReplaceAllString(r.stdout, "X"), norm.ReplaceAllString(d.stdout, "X"); a != b {
		t.Errorf("stdout differs with and without bars:\n%s\n---\n%s", a, b)
	}

	// A failure ends the open bar first, so the error has a line of its own.
	f := run("xterm", true, "remappingStaticTopic", "-t", "T", "-b", "broker-b")
	if f.code != ExitError || !strings.Contains(f.stderr, "] 1/1 brokers\n  [....................] 0/1 brokers\nmqadmin remappingStaticTopic: ") {
		t.Fatalf("failure: %+v", f)
	}
}

func TestRenderBar(t *testing.T) {
	for _, tc := range []struct {
		done, total int
		want        string
	}{
		{0, 8, "  [....................] 0/8 brokers"},
		{3, 8, "  [#######.............] 3/8 brokers"},
		{8, 8, "  [####################] 8/8 brokers"},
		{9, 8, "  [####################] 8/8 brokers"},
		{-1, 3, "  [....................] 0/3 brokers"},
	} {
		if got := renderBar(tc.done, tc.total, "brokers"); got != tc.want {
			t.Errorf("renderBar(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
}

// outputHas fails t unless out (the output of the command what) contains
// every one of wants.
func outputHas(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Fatalf("%s output lacks %q:\n%s", what, want, out)
		}
	}
}
