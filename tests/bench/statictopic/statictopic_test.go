package statictopicbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

const (
	remapTopic  = "StaticBenchRemap"
	staticTopic = "StaticBenchTPS"
	normalTopic = "NormalBenchTPS"
)

// The static topics start on broker-a and broker-b and move to broker-c.
func oldLeaders() []string { return []string{"broker-a", "broker-b"} }
func newLeaders() []string { return []string{"broker-c"} }

// TestStaticTopicBench: a nameserver and three brokers; a static topic of
// cfg.Queues logic queues on broker-a and broker-b made with our mqadmin;
// producers at full speed while every logic queue moves to broker-c
// (pkg/admin, timed step by step) and back (the mqadmin CLI, timed as a
// process); then everything is consumed from logic offset 0 and checked
// against the acknowledged sends. Last, send and pull TPS of a fresh
// static topic against a normal topic of the same queue count on the same
// two brokers, in alternating rounds.
func TestStaticTopicBench(t *testing.T) {
	if os.Getenv(envEnable) != "1" {
		t.Skipf("benchmark, not part of the default suite: set %s=1 to run it (make bench-static)", envEnable)
	}
	cfg := loadConfig(t)
	t.Setenv("TMPDIR", t.TempDir()) // mqadmin's plan files
	r := &report{cfg: cfg, loadStart: loadAvg()}
	bc := startBenchCluster(t)
	c := bc.Cluster
	r.where, r.brokerCPU = "3 brokers + nameserver on 127.0.0.1", len(bc.pids) > 0
	if bc.external != "" {
		r.where = bc.external
	}
	ac := newAdmin(t, c)
	remapPhase(t, c, ac, cfg, r)
	tpsPhase(t, c, ac, cfg, r, bc.pids)
	r.loadEnd = loadAvg()
	r.print(os.Stdout)
	r.verdicts(t)
}

func newAdmin(t *testing.T, c *harness.Cluster) *admin.Client {
	t.Helper()
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Close() })
	return ac
}

func newProducer(t *testing.T, c *harness.Cluster, cfg config, group string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr}}, Group: group,
		DisableFaultAvoidance: cfg.NoFaultAvoidance})
	return clienttest.Started(t, p, err)
}

// leadersIn reports whether the nameserver's route maps all n logic
// queues of topic to brokers of set.
func leadersIn(ctx context.Context, ac *admin.Client, topic string, n int, set []string) (bool, map[string]int, error) {
	route, err := ac.GetTopicRoute(ctx, topic)
	if err != nil {
		return false, nil, err
	}
	ep := statictopic.Endpoints(topic, route.TopicQueueMappingByBroker)
	count := map[string]int{}
	for _, b := range ep {
		count[b]++
	}
	if len(ep) != n {
		return false, count, nil
	}
	for b := range count {
		if !slices.Contains(set, b) {
			return false, count, nil
		}
	}
	return true, count, nil
}

func waitLeaders(t *testing.T, ac *admin.Client, topic string, n int, set []string) map[string]int {
	t.Helper()
	var count map[string]int
	testutil.Eventually(t, 20*time.Second, func() error {
		ok, cnt, err := leadersIn(context.Background(), ac, topic, n, set)
		if err != nil {
			return err
		}
		count = cnt
		if !ok {
			return fmt.Errorf("route of %s: leaders %v, want %d logic queues on %v", topic, cnt, n, set)
		}
		return nil
	})
	return count
}

// watchRoute polls the nameserver (its own admin client) from start until
// every logic queue is led by a broker of set, and sends the time it took
// (-1 after 30 s).
func watchRoute(nameserver, topic string, n int, set []string, start time.Time) <-chan time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		ac, err := admin.New(admin.Config{NameServers: []string{nameserver}}, nil)
		if err != nil {
			done <- -1
			return
		}
		defer ac.Close()
		for time.Since(start) < 30*time.Second {
			if ok, _, _ := leadersIn(context.Background(), ac, topic, n, set); ok {
				done <- time.Since(start)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		done <- -1
	}()
	return done
}

// mark is one event of a remap, from its start.
type mark struct {
	at   time.Duration
	what string
	step int // 0 before the plan is applied
	line bool
}

// remapRun is one remap under load.
type remapRun struct {
	how      string
	from, to []string
	start    time.Duration // on the load's clock
	until    time.Duration // the next remap's start or the load's end, on the load's clock
	wall     time.Duration // until the call or process returned
	route    time.Duration // until the nameserver's route showed every logic queue on `to`
	marks    []mark
	output   string // of the CLI

	// From the load's records, on the remap's clock:
	converged      time.Duration // every logic queue had an acknowledged send stored on `to`
	unconverged    int           // logic queues without one
	lastOld        time.Duration // last acknowledged send stored on `from`
	steadyTPS      float64       // acknowledged sends per second in the 2 s before
	windowTPS      float64       // ... from the start until converged
	windowFails    int
	windowRetried  int
	maxLatency     time.Duration // of sends ending in the window
	undecidedSends int           // acknowledged with logic offset -1 (new leader undecided)
}

func remapPhase(t *testing.T, c *harness.Cluster, ac *admin.Client, cfg config, r *report) {
	ctx := context.Background()
	t0 := time.Now()
	out, err := c.MQAdmin(t, "updateStaticTopic", "-t", remapTopic, "-qn", fmt.Sprint(cfg.Queues), "-b", strings.Join(oldLeaders(), ","))
	r.createCLI = time.Since(t0)
	if err != nil {
		t.Fatalf("updateStaticTopic: %v\n%s", err, out)
	}
	r.createLeaders = waitLeaders(t, ac, remapTopic, cfg.Queues, oldLeaders())

	p := newProducer(t, c, cfg, "static_bench_pg")
	l := startLoad(p, remapTopic, cfg.Senders, cfg.Body, brokerHosts(c))
	time.Sleep(cfg.Warmup)

	// 1. pkg/admin, every event timed.
	lib := &remapRun{how: "pkg/admin RemapStaticTopic", from: oldLeaders(), to: newLeaders(), start: l.since()}
	start := time.Now()
	routeCh := watchRoute(c.NamesrvAddr, remapTopic, cfg.Queues, newLeaders(), start)
	add := func(m mark) { m.at = time.Since(start); lib.marks = append(lib.marks, m) }
	_, err = ac.RemapStaticTopic(ctx, admin.StaticTopicRequest{
		Topic:   remapTopic,
		Brokers: newLeaders(),
		OnPlan: func(p *statictopic.Plan, _ statictopic.Configs) {
			add(mark{what: fmt.Sprintf("cluster info, topic config of every broker, plan (epoch %d, map in %v, map out %v)", p.Epoch, p.BrokerToMapIn, p.BrokerToMapOut)})
		},
		OnStep: func(s admin.StaticStep) {
			if s.Title != "" {
				add(mark{step: s.Step, what: fmt.Sprintf("step %d/%d %s", s.Step, s.Steps, s.Title)})
			} else {
				add(mark{step: s.Step, what: s.Line, line: true})
			}
		},
	})
	lib.wall = time.Since(start)
	if err != nil {
		t.Fatalf("remap to %v: %v", newLeaders(), err)
	}
	lib.route = <-routeCh
	time.Sleep(cfg.After)

	// 2. The CLI, timed as a process (start-up included).
	cli := &remapRun{how: "mqadmin remappingStaticTopic (CLI process)", from: newLeaders(), to: oldLeaders(), start: l.since()}
	start = time.Now()
	routeCh = watchRoute(c.NamesrvAddr, remapTopic, cfg.Queues, oldLeaders(), start)
	cli.output, err = c.MQAdmin(t, "remappingStaticTopic", "-t", remapTopic, "-b", strings.Join(oldLeaders(), ","))
	cli.wall = time.Since(start)
	if err != nil {
		t.Fatalf("remappingStaticTopic back to %v: %v\n%s", oldLeaders(), err, cli.output)
	}
	cli.route = <-routeCh
	time.Sleep(cfg.After)

	recs, fails := l.halt()
	r.loadDur = l.since()
	lib.until, cli.until = cli.start, r.loadDur
	for _, run := range []*remapRun{lib, cli} {
		run.analyze(recs, fails, cfg.Queues)
	}
	r.remaps = []*remapRun{lib, cli}
	if hist, err := c.MQAdmin(t, "staticTopicHistory", "-t", remapTopic); err != nil || strings.Contains(hist, "WARNING") {
		t.Errorf("staticTopicHistory after the remaps: %v\n%s", err, hist)
	}

	t0 = time.Now()
	got := consumeAll(t, c.NamesrvAddr, remapTopic, 4)
	r.consumeDur = time.Since(t0)
	r.check = compare(recs, fails, got)
	if len(fails) > 0 {
		r.firstFail = fails[0].err
	}
}

// analyze reads the load's records around the remap.
func (run *remapRun) analyze(recs []sendRec, fails []failRec, queues int) {
	first := map[int]time.Duration{}
	var before int
	for _, rc := range recs {
		if rc.end >= run.start-2*time.Second && rc.end < run.start {
			before++
		}
		if rc.end < run.start || rc.end >= run.until {
			continue
		}
		at := rc.end - run.start
		if slices.Contains(run.to, rc.broker) {
			if f, ok := first[rc.queue]; !ok || at < f {
				first[rc.queue] = at
			}
		}
		if slices.Contains(run.from, rc.broker) && at > run.lastOld {
			run.lastOld = at
		}
	}
	run.unconverged = queues - len(first)
	for _, f := range first {
		run.converged = max(run.converged, f)
	}
	window := max(run.converged, run.wall, 100*time.Millisecond)
	var in int
	for _, rc := range recs {
		if rc.end < run.start || rc.end > run.start+window {
			continue
		}
		in++
		if rc.attempts > 1 {
			run.windowRetried++
		}
		if rc.offset < 0 {
			run.undecidedSends++
		}
		run.maxLatency = max(run.maxLatency, rc.end-rc.start)
	}
	for _, f := range fails {
		if f.at >= run.start && f.at <= run.start+window {
			run.windowFails++
		}
	}
	run.steadyTPS = float64(before) / 2
	run.windowTPS = float64(in) / window.Seconds()
}

// measure is one topic's figures in one round: messages per second, and
// CPU time per message of the brokers and of the SDK (µs).
type measure struct{ tps, brokerUS, clientUS float64 }

// tpsRound is one round of each topic.
type tpsRound struct {
	sendStatic, sendNormal measure
	pullStatic, pullNormal measure
	staticFirst            bool
	// Both topics at the same time: TPS of static, normal.
	bothSend, bothPull [2]float64
}

func tpsPhase(t *testing.T, c *harness.Cluster, ac *admin.Client, cfg config, r *report, pids []int) {
	ctx := context.Background()
	if out, err := c.MQAdmin(t, "updateStaticTopic", "-t", staticTopic, "-qn", fmt.Sprint(cfg.Queues), "-b", strings.Join(oldLeaders(), ",")); err != nil {
		t.Fatalf("updateStaticTopic %s: %v\n%s", staticTopic, err, out)
	}
	for _, b := range c.Brokers {
		if !slices.Contains(oldLeaders(), b.Name) {
			continue
		}
		tc := protocol.TopicConfig{TopicName: normalTopic, ReadQueueNums: cfg.Queues / 2, WriteQueueNums: cfg.Queues / 2, Perm: protocol.PermRead | protocol.PermWrite}
		if err := ac.CreateTopic(ctx, b.Addr, tc, ""); err != nil {
			t.Fatalf("create %s on %s: %v", normalTopic, b.Name, err)
		}
	}
	r.tpsStaticLeaders = waitLeaders(t, ac, staticTopic, cfg.Queues, oldLeaders())
	testutil.Eventually(t, 20*time.Second, func() error {
		route, err := ac.GetTopicRoute(ctx, normalTopic)
		if err != nil {
			return err
		}
		n := 0
		for _, qd := range route.QueueDatas {
			n += qd.WriteQueueNums
		}
		if n != cfg.Queues {
			return fmt.Errorf("route of %s has %d write queues, want %d", normalTopic, n, cfg.Queues)
		}
		return nil
	})

	p := newProducer(t, c, cfg, "static_bench_tps_pg")
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr}}, Group: "static_bench_tps_cg"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(ctx)
	queues := map[string][]protocol.MessageQueue{}
	for _, topic := range []string{staticTopic, normalTopic} {
		qs, err := pc.Queues(ctx, topic)
		if err != nil || len(qs) != cfg.Queues {
			t.Fatalf("queues of %s: %d %v, want %d", topic, len(qs), err, cfg.Queues)
		}
		queues[topic] = qs
	}
	// Warm both up (routes, connections, page cache) outside the figures.
	for _, topic := range []string{staticTopic, normalTopic} {
		sendRound(p, []string{topic}, cfg.Senders, cfg.Body, time.Second)
		pullRound(pc, [][]protocol.MessageQueue{queues[topic]}, cfg.Pullers, time.Second)
	}
	timed := func(fails *int64, f func() roundResult) measure {
		before := sampleCPU(pids)
		rr := f()
		after := sampleCPU(pids)
		*fails += rr.failed
		b, cl := perMsg(before, after, rr.n)
		return measure{tps: rr.tps, brokerUS: b, clientUS: cl}
	}
	for i := range cfg.Rounds {
		rd := tpsRound{staticFirst: i%2 == 0}
		order := []string{staticTopic, normalTopic}
		if !rd.staticFirst {
			order = []string{normalTopic, staticTopic}
		}
		for _, topic := range order {
			m := timed(&r.sendFails, func() roundResult { return sendRound(p, []string{topic}, cfg.Senders, cfg.Body, cfg.Round)[0] })
			if topic == staticTopic {
				rd.sendStatic = m
			} else {
				rd.sendNormal = m
			}
		}
		for _, topic := range order {
			m := timed(&r.pullFails, func() roundResult {
				return pullRound(pc, [][]protocol.MessageQueue{queues[topic]}, cfg.Pullers, cfg.Round)[0]
			})
			if topic == staticTopic {
				rd.pullStatic = m
			} else {
				rd.pullNormal = m
			}
		}
		// Both topics at once, each with its own senders (pullers): the
		// same machine conditions for both, whatever else runs.
		both := sendRound(p, []string{staticTopic, normalTopic}, cfg.Senders, cfg.Body, cfg.Round)
		rd.bothSend = [2]float64{both[0].tps, both[1].tps}
		r.sendFails += both[0].failed + both[1].failed
		both = pullRound(pc, [][]protocol.MessageQueue{queues[staticTopic], queues[normalTopic]}, cfg.Pullers, cfg.Round)
		rd.bothPull = [2]float64{both[0].tps, both[1].tps}
		r.pullFails += both[0].failed + both[1].failed
		t.Logf("TPS round %d: send static %.0f normal %.0f, pull static %.0f normal %.0f; at once: send %.0f/%.0f, pull %.0f/%.0f", i+1,
			rd.sendStatic.tps, rd.sendNormal.tps, rd.pullStatic.tps, rd.pullNormal.tps, rd.bothSend[0], rd.bothSend[1], rd.bothPull[0], rd.bothPull[1])
		r.rounds = append(r.rounds, rd)
	}
}

// report gathers the figures.
type report struct {
	cfg                config
	where              string
	brokerCPU          bool // broker processes known: their CPU time is measured
	loadStart, loadEnd string

	createCLI        time.Duration
	createLeaders    map[string]int
	remaps           []*remapRun
	loadDur          time.Duration
	consumeDur       time.Duration
	check            check
	firstFail        string
	tpsStaticLeaders map[string]int
	rounds           []tpsRound
	sendFails        int64
	pullFails        int64
}

func ms(d time.Duration) string {
	if d < 0 {
		return "never (30 s)"
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func okMissed(ok bool) string {
	if ok {
		return "OK"
	}
	return "MISSED"
}

func (r *report) ratios() (send, pull []float64) {
	for _, rd := range r.rounds {
		send = append(send, rd.sendStatic.tps/rd.sendNormal.tps)
		pull = append(pull, rd.pullStatic.tps/rd.pullNormal.tps)
	}
	return send, pull
}

// bothRatios are static/normal TPS of the rounds with both topics at once.
func (r *report) bothRatios() (send, pull []float64) {
	for _, rd := range r.rounds {
		send = append(send, rd.bothSend[0]/rd.bothSend[1])
		pull = append(pull, rd.bothPull[0]/rd.bothPull[1])
	}
	return send, pull
}

// cpuRatios are static/normal CPU per message: brokers and SDK, send and pull.
func (r *report) cpuRatios() (sendB, sendC, pullB, pullC []float64) {
	for _, rd := range r.rounds {
		sendB = append(sendB, rd.sendStatic.brokerUS/rd.sendNormal.brokerUS)
		sendC = append(sendC, rd.sendStatic.clientUS/rd.sendNormal.clientUS)
		pullB = append(pullB, rd.pullStatic.brokerUS/rd.pullNormal.brokerUS)
		pullC = append(pullC, rd.pullStatic.clientUS/rd.pullNormal.clientUS)
	}
	return
}

func (r *report) print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("== static topic benchmark (issue 7) ==")
	p("%s; %s; load average %s at start, %s at end", r.cfg, r.where, r.loadStart, r.loadEnd)
	p("create: mqadmin updateStaticTopic -qn %d -b %s: %s (process), leaders %v", r.cfg.Queues, strings.Join(oldLeaders(), ","), ms(r.createCLI), r.createLeaders)
	for _, run := range r.remaps {
		p("")
		p("remap %v -> %v of %d logic queues under load, %s:", run.from, run.to, r.cfg.Queues, run.how)
		p("  wall time: %s [target <= %s] %s", ms(run.wall), ms(r.cfg.RemapMax), okMissed(run.wall <= r.cfg.RemapMax))
		p("  nameserver route all on %v: %s", run.to, ms(run.route))
		p("  producers: every logic queue stored on %v by %s (%d queues never); last send stored on %v at %s",
			run.to, ms(run.converged), run.unconverged, run.from, ms(run.lastOld))
		p("  sends: %.0f/s in the 2 s before, %.0f/s in the remap window; in the window %d failed, %d retried (NOT_LEADER_FOR_QUEUE), %d acknowledged with an undecided offset, max latency %s",
			run.steadyTPS, run.windowTPS, run.windowFails, run.windowRetried, run.undecidedSends, ms(run.maxLatency))
		if len(run.marks) > 0 {
			p("  breakdown (time since the call, and since the previous event):")
			prev := time.Duration(0)
			undecided := 0
			for i, m := range run.marks {
				if m.step == 3 && m.line {
					undecided++
					if i+1 < len(run.marks) && run.marks[i+1].step == 3 {
						continue // one summary line for the per-queue decisions
					}
					m.what = fmt.Sprintf("%d logic offsets decided", undecided)
				}
				p("    %8s  +%-8s %s", ms(m.at), ms(m.at-prev), m.what)
				prev = m.at
			}
			p("    %8s  +%-8s returned", ms(run.wall), ms(run.wall-prev))
		}
		if run.output != "" {
			p("  CLI output:")
			for _, line := range strings.Split(strings.TrimRight(run.output, "\n"), "\n") {
				if strings.HasPrefix(line, "  logic queue ") {
					continue // one line per logic queue: in the plan files
				}
				p("    | %s", line)
			}
		}
	}
	ck := r.check
	p("")
	p("messages of the remap run (%v of load): %d acknowledged, %d sends failed, %d consumed from logic offset 0 in %s",
		r.loadDur.Round(time.Millisecond), ck.sent, ck.failed, ck.consumed, ms(r.consumeDur))
	p("  lost (acknowledged, never consumed)      %d   [target 0] %s", ck.lost, okMissed(ck.lost == 0))
	p("  duplicated logic offsets                 %d   [target 0] %s", ck.dupOffsets, okMissed(ck.dupOffsets == 0))
	p("  one message id at two positions          %d", ck.dupStores)
	p("  consumed elsewhere than its send result  %d", ck.moved)
	p("  consumed but not acknowledged            %d", ck.extra)
	if ck.firstLost != "" {
		p("  first lost: %s", ck.firstLost)
	}
	if r.firstFail != "" {
		p("  first send failure: %s", r.firstFail)
	}
	p("")
	p("TPS, static (%s, leaders %v) vs normal (%s, %d queues on each of %v); %d senders SendSync, %d pullers (batches of 32), %d-byte bodies, %d rounds of %v alternating:",
		staticTopic, r.tpsStaticLeaders, normalTopic, r.cfg.Queues/2, oldLeaders(), r.cfg.Senders, r.cfg.Pullers, r.cfg.Body, len(r.rounds), r.cfg.Round)
	p("  round  first   send static  send normal  ratio   pull static  pull normal  ratio")
	for i, rd := range r.rounds {
		first := "normal"
		if rd.staticFirst {
			first = "static"
		}
		p("  %5d  %-6s  %11.0f  %11.0f  %5.2f   %11.0f  %11.0f  %5.2f", i+1, first, rd.sendStatic.tps, rd.sendNormal.tps, rd.sendStatic.tps/rd.sendNormal.tps, rd.pullStatic.tps, rd.pullNormal.tps, rd.pullStatic.tps/rd.pullNormal.tps)
	}
	send, pull := r.ratios()
	sm, pm := median(send), median(pull)
	p("  median ratio static/normal: send %.2f [target >= %.2f] %s, pull %.2f [target >= %.2f] %s", sm, r.cfg.MinRatio, okMissed(sm >= r.cfg.MinRatio), pm, r.cfg.MinRatio, okMissed(pm >= r.cfg.MinRatio))
	p("both topics at the same time (each with %d senders, then %d pullers), same rounds:", r.cfg.Senders, r.cfg.Pullers)
	p("  round   send static  send normal  ratio   pull static  pull normal  ratio")
	for i, rd := range r.rounds {
		p("  %5d   %11.0f  %11.0f  %5.2f   %11.0f  %11.0f  %5.2f", i+1, rd.bothSend[0], rd.bothSend[1], rd.bothSend[0]/rd.bothSend[1], rd.bothPull[0], rd.bothPull[1], rd.bothPull[0]/rd.bothPull[1])
	}
	bs, bp := r.bothRatios()
	p("  median ratio static/normal at the same time: send %.2f, pull %.2f", median(bs), median(bp))
	p("  failures (all rounds): %d sends, %d pulls", r.sendFails, r.pullFails)
	p("CPU per message in µs (user+system; brokers from /proc, SDK = this process), static / normal:")
	if !r.brokerCPU {
		p("  (brokers not measured: set %s to their process ids)", envBrokerPIDs)
	}
	p("  round   send brokers      send SDK          pull brokers      pull SDK")
	for i, rd := range r.rounds {
		p("  %5d   %6.1f / %-6.1f   %6.1f / %-6.1f   %6.2f / %-6.2f   %6.2f / %.2f", i+1,
			rd.sendStatic.brokerUS, rd.sendNormal.brokerUS, rd.sendStatic.clientUS, rd.sendNormal.clientUS,
			rd.pullStatic.brokerUS, rd.pullNormal.brokerUS, rd.pullStatic.clientUS, rd.pullNormal.clientUS)
	}
	sb, sc, pb, pc := r.cpuRatios()
	p("  median CPU ratio static/normal (above 1: the static topic costs more): send brokers %.2f, send SDK %.2f, pull brokers %.2f, pull SDK %.2f",
		median(sb), median(sc), median(pb), median(pc))
}

// verdicts fails the run for every missed target.
func (r *report) verdicts(t *testing.T) {
	for _, run := range r.remaps {
		if run.wall > r.cfg.RemapMax {
			t.Errorf("remap %v -> %v (%s) took %v, target %v", run.from, run.to, run.how, run.wall, r.cfg.RemapMax)
		}
		if run.unconverged > 0 {
			t.Errorf("remap %v -> %v: %d logic queues never had a send stored on the new leader", run.from, run.to, run.unconverged)
		}
	}
	if r.check.lost > 0 || r.check.dupOffsets > 0 {
		t.Errorf("%d messages lost, %d duplicated logic offsets; target 0 and 0", r.check.lost, r.check.dupOffsets)
	}
	send, pull := r.ratios()
	if m := median(send); m < r.cfg.MinRatio {
		t.Errorf("send TPS static/normal median %.2f, target >= %.2f", m, r.cfg.MinRatio)
	}
	if m := median(pull); m < r.cfg.MinRatio {
		t.Errorf("pull TPS static/normal median %.2f, target >= %.2f", m, r.cfg.MinRatio)
	}
}
