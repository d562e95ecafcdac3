package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// scaleTopics is the number of topics of TestRegistration100kTopics.
const scaleTopics = 100_000

// TestRegistration100kTopics: a broker with 100k topics registers them
// compressed and split (compressedRegister, enableSplitRegistration, 800
// topics per REGISTER_BROKER, as Apache), and the nameserver routes every
// one of them; a plain JSON body of that table would be about 16.8 MB, over
// the 16 MiB frame limit (upstream #5296). It logs how long creating and
// registering took and the nameserver's RSS.
func TestRegistration100kTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100k topics")
	}
	t.Parallel()
	c := harness.StartCluster(t, harness.ClusterOptions{Namesrvs: 1})
	b := c.StartBroker(t, "broker-scale", map[string]string{
		"compressedRegister":      "true",
		"enableSplitRegistration": "true",
	})
	// Each request creates 10k topics and rewrites the whole topic table
	// (up to 100k topics, as Apache's persist): 0.4 s alone, but a CI
	// run loaded with the other tests' brokers and JVMs took more than
	// the default 5 s for the last batch. Creation time is logged, not
	// tested.
	ac, err := admin.New(admin.Config{NameServers: c.NamesrvAddrs, Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	queues := func(i int) int { return 1 + i%8 }
	began := time.Now()
	const batch = 10_000
	for start := 0; start < scaleTopics; start += batch {
		list := make([]protocol.TopicConfig, 0, batch)
		for i := start; i < start+batch; i++ {
			tc := protocol.NewTopicConfig(fmt.Sprintf("Scale-%06d", i))
			tc.ReadQueueNums, tc.WriteQueueNums = queues(i), queues(i)
			list = append(list, tc)
		}
		if err := ac.CreateTopicList(ctx, b.Addr, list); err != nil {
			t.Fatalf("create topics %d..: %v", start, err)
		}
	}
	created := time.Now()
	t.Logf("created %d topics in %v (each batch registered on its own, as Apache's registerIncrementBrokerData)", scaleTopics, created.Sub(began).Round(time.Millisecond))
	scaleTopicsListed := func() int {
		tl, err := ac.GetAllTopicList(ctx)
		if err != nil {
			t.Fatalf("topic list: %v", err)
		}
		n := 0
		for _, name := range tl.TopicList {
			if strings.HasPrefix(name, "Scale-") {
				n++
			}
		}
		return n
	}
	waitListed := func(want int, what string) {
		for n := scaleTopicsListed(); n != want; n = scaleTopicsListed() {
			if ctx.Err() != nil {
				t.Fatalf("%s: the nameserver lists %d of %d topics", what, n, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitListed(scaleTopics, "after creation")

	// A stopped broker's routes go (UNREGISTER_BROKER); at start it
	// registers the whole table: 125 compressed bodies of 800 topics.
	if err := b.Proc.Stop(); err != nil {
		t.Fatalf("stop broker: %v", err)
	}
	waitListed(0, "after the broker stopped")
	restarted := time.Now()
	c.Restart(t, b)
	waitListed(scaleTopics, "after the broker restarted")
	t.Logf("restarted broker registered %d topics %v after its start; nameserver RSS %s", scaleTopics, time.Since(restarted).Round(time.Millisecond), rss(c.Namesrvs[0].Pid()))

	// Routes carry each topic's own queue numbers, from every split body.
	for _, i := range []int{0, 1, 799, 800, 801, 12345, 50_000, 99_998, 99_999} {
		name := fmt.Sprintf("Scale-%06d", i)
		rt, err := ac.GetTopicRoute(ctx, name)
		if err != nil {
			t.Fatalf("route of %s: %v", name, err)
		}
		if len(rt.QueueDatas) != 1 || rt.QueueDatas[0].BrokerName != "broker-scale" || rt.QueueDatas[0].WriteQueueNums != queues(i) {
			t.Fatalf("route of %s: %+v, want %d queues on broker-scale", name, rt.QueueDatas, queues(i))
		}
	}
}

// rss is a process's resident set size from /proc ("?" when unreadable).
func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			if kb, err := strconv.Atoi(f[1]); err == nil {
				return fmt.Sprintf("%d MiB", kb/1024)
			}
		}
	}
	return "?"
}
