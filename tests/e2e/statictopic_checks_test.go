package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// Parts of TestStaticTopicRemapUnderLoad that run on its cluster.

// commitGroup is a consumer group that reads each logic queue from its
// committed offset and commits how far it got (pkg/client pull consumer).
type commitGroup struct {
	pc     *client.PullConsumer
	queues []protocol.MessageQueue
	next   map[int]int64 // logic queue → committed offset
}

func newCommitGroup(t *testing.T, namesrv, topic string, n int) *commitGroup {
	t.Helper()
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{namesrv}}, Group: "static_commit_cg"})
	pc = clienttest.Started(t, pc, err)
	qs, err := pc.Queues(context.Background(), topic)
	if err != nil || len(qs) != n {
		t.Fatalf("queues of %s: %v %v, want %d", topic, qs, err, n)
	}
	return &commitGroup{pc: pc, queues: qs, next: map[int]int64{}}
}

// consumeAndCommit reads every logic queue from the committed offset until
// it has caught up with the producer, commits the next offset and returns
// the committed offsets, which must all be at least floor (in the segment
// being written).
func (g *commitGroup) consumeAndCommit(t *testing.T, floor int64) map[int]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[int]int64{}
	for _, mq := range g.queues {
		off := g.next[mq.QueueID]
		for pulls := 0; ; pulls++ {
			if pulls > 200 {
				t.Fatalf("%v: never caught up (at %d)", mq, off)
			}
			res, err := g.pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
			if err != nil {
				time.Sleep(50 * time.Millisecond) // e.g. NOT_LEADER_FOR_QUEUE before the route refresh
				continue
			}
			if res.Status == client.PullNoNewMsg && res.NextBeginOffset == off {
				break // at the end of the leader's segment
			}
			off = res.NextBeginOffset
		}
		if off < floor {
			t.Fatalf("%v: caught up at logic offset %d, below %d: the consumer did not reach the segment being written", mq, off, floor)
		}
		if err := g.pc.UpdateOffset(ctx, mq, off); err != nil {
			t.Fatalf("commit %d on %v: %v", off, mq, err)
		}
		g.next[mq.QueueID], out[mq.QueueID] = off, off
	}
	t.Logf("group %s committed %v", g.pc.Group(), out)
	return out
}

// expectCommitted reads the group's committed offset of every logic queue
// through the SDK (QUERY_CONSUMER_OFFSET to the leader, which reads it
// from the segment that holds it) and wants want.
func (g *commitGroup) expectCommitted(t *testing.T, want map[int]int64, when string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, mq := range g.queues {
			got, err := g.pc.QueryOffset(context.Background(), mq)
			if err != nil {
				return fmt.Errorf("%s: query offset of %v: %w", when, mq, err)
			}
			if got != want[mq.QueueID] {
				return fmt.Errorf("%s: logic queue %d has committed offset %d, the group committed %d", when, mq.QueueID, got, want[mq.QueueID])
			}
		}
		return nil
	})
}

// logicMsg is a consumed message's logic offset and store time.
type logicMsg struct{ offset, stored int64 }

// readLogicQueues pulls each of the n logic queues of a static topic from
// offset 0 up to its max offset and returns where every message body was
// read (logic queue and offset); stored has each queue's messages in
// offset order. It fails t on a queue that is not a logic queue, a message
// read twice or out of offset order, or a queue that stops short of its
// max offset.
func readLogicQueues(t *testing.T, ctx context.Context, pc *client.PullConsumer, topic string, n int) (got map[string]sentMsg, stored map[int][]logicMsg) {
	t.Helper()
	queues, err := pc.Queues(ctx, topic)
	if err != nil || len(queues) != n {
		t.Fatalf("logic queues of %s: %v %v, want %d", topic, queues, err, n)
	}
	got, stored = map[string]sentMsg{}, map[int][]logicMsg{}
	for _, mq := range queues {
		if mq.BrokerName != statictopic.MockBrokerName("") {
			t.Fatalf("queue %v is not a logic queue", mq)
		}
		maxOff, err := pc.GetMaxOffset(ctx, mq)
		if err != nil {
			t.Fatalf("max offset of %v: %v", mq, err)
		}
		off, last := int64(0), int64(-1)
		for steps := 0; off < maxOff; steps++ {
			if steps > 10000 {
				t.Fatalf("%v: no progress at offset %d (max %d)", mq, off, maxOff)
			}
			res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
			if err != nil {
				t.Fatalf("pull %v at %d: %v", mq, off, err)
			}
			for _, m := range res.Messages {
				body := string(m.Body)
				if _, dup := got[body]; dup {
					t.Fatalf("%s read twice", body)
				}
				if int(m.QueueID) != mq.QueueID || m.QueueOffset <= last || m.QueueOffset < off {
					t.Fatalf("%v: %s at queue %d offset %d after offset %d (pulled at %d)", mq, body, m.QueueID, m.QueueOffset, last, off)
				}
				last = m.QueueOffset
				got[body] = sentMsg{queue: mq.QueueID, offset: m.QueueOffset}
				stored[mq.QueueID] = append(stored[mq.QueueID], logicMsg{offset: m.QueueOffset, stored: m.StoreTimestamp})
			}
			if res.Status == client.PullNoNewMsg && res.NextBeginOffset <= off {
				t.Fatalf("%v: nothing at %d below the max offset %d", mq, off, maxOff)
			}
			off = res.NextBeginOffset
		}
	}
	return got, stored
}

// segmentsOf splits a logic queue's messages (in offset order) into its
// segments: every segment starts at a new 10000 block, and none here
// spans more than one.
func segmentsOf(msgs []logicMsg) [][]logicMsg {
	var out [][]logicMsg
	for i, m := range msgs {
		if i == 0 || m.offset/statictopic.BlockSeqSize != msgs[i-1].offset/statictopic.BlockSeqSize {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], m)
	}
	return out
}

// searchLowerWant is SEARCH_OFFSET_BY_TIMESTAMP's LOWER answer
// (docs/static-topics.md §7.5): in the first segment holding a message stored
// at or after ts, that message's logic offset; else the logic max.
// Segments are searched one by one because store times need not increase
// across a boundary: the old leader takes writes until it is fenced,
// after the new one started taking them.
func searchLowerWant(segs [][]logicMsg, ts, logicMax int64) int64 {
	for _, seg := range segs {
		for _, m := range seg {
			if m.stored >= ts {
				return m.offset
			}
		}
	}
	return logicMax
}

// searchUpperWant is the UPPER answer: in the latest segment whose first
// message is stored at or before ts, the last message stored at or before
// ts; else the logic min.
func searchUpperWant(segs [][]logicMsg, ts, logicMin int64) int64 {
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		if seg[0].stored > ts {
			continue
		}
		want := seg[0].offset
		for _, m := range seg {
			if m.stored <= ts {
				want = m.offset
			}
		}
		return want
	}
	return logicMin
}

// askOffset sends an offset request about a logic queue to addr and
// returns its "offset" field.
func askOffset(ac *admin.Client, addr string, reqCode int32, topic string, queue int, kv ...string) (int64, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	resp, err := ac.Invoke(context.Background(), addr, reqCode, ext, nil)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(resp.Ext("offset"), 10, 64)
}

func brokerAddr(t *testing.T, c framework.Cluster, name string) string {
	t.Helper()
	for _, b := range c.Brokers() {
		if b.Name() == name {
			return b.Addr()
		}
	}
	t.Fatalf("no broker %s", name)
	return ""
}

// checkSegmentBoundaries asks the leader of each logic queue, by logic
// queue id, for GET_MIN_OFFSET, GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP
// (LOWER and UPPER) at the store times of the first and last message of
// every segment and one millisecond either side, and compares with what
// the consumer read (stored: every message of the queue in offset order).
// Another broker answers NOT_LEADER_FOR_QUEUE.
func checkSegmentBoundaries(t *testing.T, c framework.Cluster, ac *admin.Client, topic string, leaders map[int]string, stored map[int][]logicMsg) {
	asked := 0
	for q := range len(leaders) {
		msgs := stored[q]
		segs := segmentsOf(msgs)
		if len(segs) != 3 {
			t.Errorf("logic queue %d: %d segments consumed, want 3", q, len(segs))
			continue
		}
		addr := brokerAddr(t, c, leaders[q])
		logicMin, logicMax := int64(0), msgs[len(msgs)-1].offset+1
		for _, tc := range []struct {
			name string
			code int32
			want int64
		}{{"GET_MIN_OFFSET", code.GetMinOffset, logicMin}, {"GET_MAX_OFFSET", code.GetMaxOffset, logicMax}} {
			got, err := askOffset(ac, addr, tc.code, topic, q)
			asked++
			if err != nil || got != tc.want {
				t.Errorf("logic queue %d: %s from %s = %d (%v), want %d", q, tc.name, leaders[q], got, err, tc.want)
			}
		}
		for s, seg := range segs {
			first, last := seg[0], seg[len(seg)-1]
			for _, ts := range []int64{first.stored - 1, first.stored, first.stored + 1, last.stored - 1, last.stored, last.stored + 1} {
				for _, bt := range []string{"LOWER", "UPPER"} {
					want := searchLowerWant(segs, ts, logicMax)
					if bt == "UPPER" {
						want = searchUpperWant(segs, ts, logicMin)
					}
					got, err := askOffset(ac, addr, code.SearchOffsetByTimestamp, topic, q, "timestamp", strconv.FormatInt(ts, 10), "boundaryType", bt)
					asked++
					if err != nil || got != want {
						t.Errorf("logic queue %d segment %d (offsets %d..%d, stored %d..%d): SEARCH_OFFSET_BY_TIMESTAMP %s at %d = %d (%v), want %d",
							q, s, first.offset, last.offset, first.stored, last.stored, bt, ts, got, err, want)
					}
				}
			}
		}
		other := "broker-c"
		if _, err := askOffset(ac, brokerAddr(t, c, other), code.GetMaxOffset, topic, q); !admin.IsCode(err, code.NotLeaderForQueue) {
			t.Errorf("logic queue %d: GET_MAX_OFFSET from %s, which does not lead it: %v, want NOT_LEADER_FOR_QUEUE", q, other, err)
		}
	}
	t.Logf("%d offset requests on the segment boundaries of %d logic queues", asked, len(leaders))
}

// staticState is what a bad command must leave alone: the nameserver's
// route and every broker's topic config with its mapping.
type staticState struct {
	Route   *protocol.TopicRouteData
	Configs statictopic.Configs
}

func readStaticState(t *testing.T, ac *admin.Client, topic string) staticState {
	t.Helper()
	ctx := context.Background()
	route, err := ac.GetTopicRoute(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(route.QueueDatas, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	slices.SortFunc(route.BrokerDatas, func(a, b protocol.BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	ci, err := ac.GetBrokerClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := ac.ExamineTopicConfigAll(ctx, topic, ci)
	if err != nil {
		t.Fatal(err)
	}
	return staticState{Route: route, Configs: cfgs}
}

// staleBackups lists the mapping lists a broker keeps for a logic queue
// whose recorded leader is neither itself nor the real leader: the
// brokers drop those once the cluster has settled (Settle, clean.go).
func staleBackups(st staticState, leaders map[int]string) []string {
	var out []string
	for _, b := range st.Configs.Brokers() {
		d := st.Configs[b].MappingDetail
		for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
			items := d.HostedQueues[g]
			if l := items[len(items)-1].Bname; l != b && l != leaders[g] {
				out = append(out, fmt.Sprintf("%s keeps logic queue %d led by %s (now %s)", b, g, l, leaders[g]))
			}
		}
	}
	return out
}

// checkStaticBadInput runs refused commands through the mqadmin process:
// each exits 1 with a message saying why, and the route and every
// broker's config and mapping are as before. staleFile is the plan the
// first remap applied (older than the brokers' epoch now).
func checkStaticBadInput(t *testing.T, c framework.Cluster, ac *admin.Client, topic string, leaders map[int]string, staleFile string) {
	// The brokers drop the stale backups of the remap back a moment after
	// it: wait for that so that only a bad command could change the state.
	var before staticState
	waited := time.Now()
	testutil.Eventually(t, 15*time.Second, func() error {
		before = readStaticState(t, ac, topic)
		if s := staleBackups(before, leaders); len(s) > 0 {
			return fmt.Errorf("stale backups not dropped yet: %s", strings.Join(s, "; "))
		}
		return nil
	})
	t.Logf("no stale backups left %v after the remaps", time.Since(waited).Round(time.Millisecond))
	epoch := before.Configs.MaxEpoch()
	same := func(what string) {
		t.Helper()
		if after := readStaticState(t, ac, topic); !reflect.DeepEqual(before, after) {
			t.Errorf("%s changed the state:\nbefore %s\nafter  %s", what, protocol.MustMarshal(before), protocol.MustMarshal(after))
		}
	}

	// A dry run of a remap to broker-c: writes a plan file, nothing else.
	out, stderr, exit := c.MQAdminExit(t, "remappingStaticTopic", "-t", topic, "-b", "broker-c", "--dry-run")
	m := regexp.MustCompile(`-mf (\S+)`).FindStringSubmatch(out)
	if exit != 0 || m == nil {
		t.Fatalf("dry run: exit %d\n%s%s", exit, out, stderr)
	}
	same("a dry run")
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	plan, err := statictopic.DecodePlan(data)
	if err != nil {
		t.Fatal(err)
	}
	// Every new leader item on broker-c gets the physical queue of the
	// first one, in every broker's copy.
	shared, moved := -1, 0
	cd := plan.BrokerConfigMap["broker-c"].MappingDetail
	for _, g := range slices.Sorted(maps.Keys(cd.HostedQueues)) {
		if l := cd.HostedQueues[g][len(cd.HostedQueues[g])-1]; l.Bname == "broker-c" && shared < 0 {
			shared = l.QueueID
		}
	}
	for _, tc := range plan.BrokerConfigMap {
		for _, items := range tc.MappingDetail.HostedQueues {
			if l := &items[len(items)-1]; l.Bname == "broker-c" {
				l.QueueID = shared
				moved++
			}
		}
	}
	if moved < 2 {
		t.Fatalf("the dry-run plan moves %d logic queues to broker-c", moved)
	}
	staleData, err := os.ReadFile(staleFile)
	if err != nil {
		t.Fatal(err)
	}
	stalePlan, err := statictopic.DecodePlan(staleData)
	if err != nil {
		t.Fatalf("%s: %v", staleFile, err)
	}
	twice := filepath.Join(t.TempDir(), "twice.json")
	if err := os.WriteFile(twice, protocol.MustMarshal(plan), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown broker in -b", []string{"updateStaticTopic", "-t", topic, "-qn", "8", "-b", "broker-a,broker-x"},
			"broker broker-x is not in the cluster (known brokers: broker-a, broker-b, broker-c)"},
		{"remap to an unknown broker", []string{"remappingStaticTopic", "-t", topic, "-b", "broker-x"}, "broker broker-x is not in the cluster"},
		{"fewer queues", []string{"updateStaticTopic", "-t", topic, "-qn", "6", "-b", "broker-a,broker-b"},
			"cannot decrease the queue num for static topic " + topic + ": 6 < 8"},
		{"plan mapping a physical queue twice", []string{"remappingStaticTopic", "-t", topic, "-b", "broker-c", "-mf", twice},
			"the mapping file is invalid: logic queues "},
		{"plan of an older epoch", []string{"remappingStaticTopic", "-t", topic, "-b", "broker-c", "-mf", staleFile},
			fmt.Sprintf("stale epoch: the mapping file is at epoch %d but the brokers are at epoch %d; plan again", stalePlan.Epoch, epoch)},
	} {
		out, stderr, exit := c.MQAdminExit(t, tc.args...)
		t.Logf("%s: exit %d: %s", tc.name, exit, strings.TrimSpace(stderr))
		if exit != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: mqadmin %v: exit %d, stderr %q; want exit 1 and %q\nstdout:\n%s", tc.name, tc.args, exit, stderr, tc.want, out)
		}
		if tc.name == "plan mapping a physical queue twice" && !strings.Contains(stderr, fmt.Sprintf("share the physical queue broker-c-%d", shared)) {
			t.Errorf("%s: stderr %q does not name the physical queue", tc.name, stderr)
		}
		same(tc.name)
	}

	// A broker refuses an older epoch itself (request 513 as the admin
	// sends it), whatever a tool does.
	stale := *before.Configs["broker-a"]
	d := *stale.MappingDetail
	d.Epoch = epoch - 1
	stale.MappingDetail = &d
	err = ac.CreateStaticTopic(context.Background(), brokerAddr(t, c, "broker-a"), &stale, false)
	if !admin.IsCode(err, code.SystemError) || !strings.Contains(err.Error(), fmt.Sprintf("epoch %d is older than the stored %d", epoch-1, epoch)) {
		t.Errorf("513 with epoch %d to broker-a: %v, want SYSTEM_ERROR naming both epochs", epoch-1, err)
	}
	same("request 513 with an older epoch")
}
