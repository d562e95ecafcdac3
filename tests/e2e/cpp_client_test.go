package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// cpp4 runs scripts/cpp4's driver of the C++ client (rocketmq-client-cpp
// through Apache's Python wrapper rocketmq-client-python 0.5.0rc2, which
// bundles it); a first run installs the wheel. The C++ client logs under
// $HOME/logs: HOME is a temporary directory.
func cpp4(t *testing.T) clientScript {
	return clientScript{name: "cpp4-client.sh", who: "C++ client", timeout: 5 * time.Minute,
		env: []string{"HOME=" + t.TempDir()}}
}

// cppMessage is a message as the driver's consumer reports it.
type cppMessage struct {
	ID, Topic, Body, Tags, Keys, Color string
	QueueID                            int   `json:"queueId"`
	QueueOffset                        int64 `json:"queueOffset"`
	ReconsumeTimes                     int   `json:"reconsumeTimes"`
	BornTimestamp                      int64 `json:"bornTimestamp"`
	StoreTimestamp                     int64 `json:"storeTimestamp"`
}

type cppConsumed struct {
	Messages []cppMessage   `json:"messages"`
	Attempts map[string]int `json:"attempts"`
}

type cppSent struct {
	IDs     []string `json:"ids"`
	Checked []string `json:"checked"`
}

// TestCppClient: the C++ client (remoting, as the Python 2.x, PHP and Go
// cgo clients built on it use it) against our broker: sync, one-way,
// orderly (sharding key) and delay-level sends; its push consumer with a
// tag filter, concurrently and orderly (each queue in order), and a
// message it fails once redelivered with reconsumeTimes 1 under the same
// id; transactions committed, rolled back and committed at the check-back
// (its END_TRANSACTION writes fromTransactionCheck as "0"/"1", which
// Java's header decoding reads as false: refusing it lost every C++
// transaction). consumerConnection and consumerStatus -i show it (its
// running info writes numbers as strings). Both ways with client-go: each reads the other's messages
// with the same id, body, keys, tag and user property. Skips with a
// message where the client cannot run (python3 or its venv missing, not
// x86_64 Linux).
func TestCppClient(t *testing.T) {
	skipShort(t, "real processes and the C++ client")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		// A check-back within seconds, and a failed message back in 1 s
		// instead of level 3's 10 s.
		"transactionCheckInterval": "1000",
		"transactionTimeOut":       "2000",
		"messageDelayLevel":        "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s",
	}})
	topics := map[string]string{"CppSend": "4", "CppOrder": "4", "CppTx": "2", "CppRetry": "2", "CppAdmin": "2"}
	for tp, n := range topics {
		mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", tp, "-r", n, "-w", n)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		for tp := range topics {
			if _, err := c.MQAdmin(t, "topicRoute", "-t", tp); err != nil {
				return err
			}
		}
		return nil
	})
	ns := c.NamesrvAddr()
	cpp := cpp4(t)

	t.Run("send and consume, both ways with client-go", func(t *testing.T) {
		t.Parallel()
		const topic = "CppSend"
		type want struct{ body, keys string }
		byID := map[string]want{}
		var syncSent, delayed cppSent
		cpp.run(t, &syncSent, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_pg", "--count", "3", "--prefix", "sync")
		for i, id := range syncSent.IDs {
			byID[id] = want{fmt.Sprintf("sync-%d", i), fmt.Sprintf("key-%d", i)}
		}
		cpp.run(t, nil, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_pg", "--count", "2", "--prefix", "oneway", "--mode", "oneway")
		cpp.run(t, &delayed, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_pg", "--count", "1", "--prefix", "delayed", "--delay-level", "2")
		if len(syncSent.IDs) != 3 || len(delayed.IDs) != 1 {
			t.Fatalf("ids: sync %v, delayed %v", syncSent.IDs, delayed.IDs)
		}
		byID[delayed.IDs[0]] = want{"delayed-0", "key-0"}

		p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})), producer.WithInstanceName("cpp-go-p"), producer.WithRetry(2))
		p = started(t, p, err)
		defer func() { _ = p.Shutdown() }()
		for i, tag := range []string{"TagA", "TagA", "TagB"} {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("go-%d", i)))
			m.WithTag(tag)
			m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
			m.WithProperty("color", "red")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := p.SendSync(ctx, m)
			cancel()
			if err != nil || r.Status != primitive.SendOK {
				t.Fatalf("client-go send %d: %v %v", i, r, err)
			}
			if tag == "TagA" {
				byID[r.MsgID] = want{fmt.Sprintf("go-%d", i), fmt.Sprintf("key-%d", i)}
			}
		}

		// The C++ consumer, filtering TagA: 3 + 2 + 1 of its own, client-go's
		// two TagA messages, not the TagB one.
		var got cppConsumed
		cpp.run(t, &got, "consume", "--namesrv", ns, "--topic", topic, "--group", "cpp_cg", "--count", "8", "--expression", "TagA", "--timeout", "60", "--linger", "2")
		bodies := map[string]bool{}
		for _, m := range got.Messages {
			bodies[m.Body] = true
			if m.Topic != topic || m.Tags != "TagA" || m.Color != "red" || m.ReconsumeTimes != 0 || got.Attempts[m.ID] != 1 {
				t.Errorf("C++ consumer got %+v (attempts %d)", m, got.Attempts[m.ID])
			}
			if w, ok := byID[m.ID]; ok && (m.Body != w.body || m.Keys != w.keys) {
				t.Errorf("message %s: body %q keys %q, sent %q %q", m.ID, m.Body, m.Keys, w.body, w.keys)
			}
			if m.Body == "delayed-0" && m.StoreTimestamp-m.BornTimestamp < 900 {
				t.Errorf("delay level 2 (1 s here) stored %d ms after its birth: %+v", m.StoreTimestamp-m.BornTimestamp, m)
			}
		}
		for id, w := range byID {
			if !slices.ContainsFunc(got.Messages, func(m cppMessage) bool { return m.ID == id }) {
				t.Errorf("C++ consumer missed %s (%s)", id, w.body)
			}
		}
		if len(got.Messages) != 8 || !bodies["oneway-0"] || !bodies["oneway-1"] || bodies["go-2"] {
			t.Errorf("C++ consumer got %d messages %v, want 8: sync-0..2, oneway-0..1, delayed-0, go-0..1", len(got.Messages), bodies)
		}

		// client-go reads everything the C++ client sent, ids included.
		var mu sync.Mutex
		seen := map[string]*primitive.MessageExt{}
		pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
			consumer.WithGroupName("cpp_go_cg"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("cpp-go-c"))
		pc = goSubscribed(t, pc, err, topic, consumer.MessageSelector{}, func(_ context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				seen[string(m.Body)] = m
			}
			return consumer.ConsumeSuccess, nil
		})
		defer func() { _ = pc.Shutdown() }()
		testutil.Eventually(t, 60*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 9 {
				return fmt.Errorf("client-go has %d of 9 messages", len(seen))
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		for id, w := range byID {
			m := seen[w.body]
			if m == nil || m.MsgId != id || m.GetKeys() != w.keys || m.GetTags() != "TagA" || m.GetProperty("color") != "red" {
				t.Errorf("client-go read %s (%s) as %+v", id, w.body, m)
			}
		}
	})

	t.Run("orderly", func(t *testing.T) {
		t.Parallel()
		const topic = "CppOrder"
		for _, shard := range []string{"s1", "s2"} {
			var res cppSent
			cpp.run(t, &res, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_opg", "--count", "6", "--prefix", shard, "--mode", "orderly", "--shard", shard)
			if len(res.IDs) != 6 {
				t.Fatalf("orderly sends of %s: %v", shard, res.IDs)
			}
		}
		var got cppConsumed
		cpp.run(t, &got, "consume", "--namesrv", ns, "--topic", topic, "--group", "cpp_ocg", "--count", "12", "--orderly", "--timeout", "60")
		// Each shard's messages are on one queue and came in send order.
		next := map[string]int{}
		queue := map[string]int{}
		for _, m := range got.Messages {
			var shard string
			var i int
			if _, err := fmt.Sscanf(m.Body, "%2s-%d", &shard, &i); err != nil {
				t.Fatalf("body %q: %v", m.Body, err)
			}
			if q, ok := queue[shard]; ok && q != m.QueueID {
				t.Errorf("%s on queues %d and %d", shard, q, m.QueueID)
			}
			queue[shard] = m.QueueID
			if i != next[shard] {
				t.Errorf("%s: got %s after %d messages", shard, m.Body, next[shard])
			}
			next[shard] = i + 1
		}
		if next["s1"] != 6 || next["s2"] != 6 {
			t.Errorf("orderly consumer got %v", next)
		}
	})

	t.Run("transactions", func(t *testing.T) {
		t.Parallel()
		const topic = "CppTx"
		var res cppSent
		cpp.run(t, &res, "transaction", "--namesrv", ns, "--topic", topic, "--group", "cpp_tx_pg", "--count", "6", "--timeout", "60")
		// key-0, key-3 committed at once, key-1, key-4 rolled back, key-2,
		// key-5 unknown and committed when checked: only those checked.
		if !slices.Equal(res.Checked, []string{"key-2", "key-5"}) || len(res.IDs) != 6 {
			t.Errorf("checked back %v (ids %v), want key-2 and key-5", res.Checked, res.IDs)
		}
		var got cppConsumed
		cpp.run(t, &got, "consume", "--namesrv", ns, "--topic", topic, "--group", "cpp_tx_cg", "--count", "4", "--timeout", "60", "--linger", "3")
		var bodies []string
		for _, m := range got.Messages {
			bodies = append(bodies, m.Body)
		}
		sort.Strings(bodies)
		if !slices.Equal(bodies, []string{"cpp-0", "cpp-2", "cpp-3", "cpp-5"}) {
			t.Errorf("consumed %v, want the committed cpp-0, cpp-2, cpp-3, cpp-5", bodies)
		}
	})

	t.Run("admin", func(t *testing.T) {
		t.Parallel()
		const topic, group = "CppAdmin", "cpp_admin_cg"
		cpp.run(t, nil, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_apg", "--count", "3")
		_, wait := cpp.start(t, "consume", "--namesrv", ns, "--topic", topic, "--group", group, "--count", "3", "--timeout", "60", "--linger", "15")
		// consumerConnection lists it as a CPP client; consumerStatus -i
		// reads its running info (numbers as strings, see pkg/admin
		// flexInt64) once it has committed its offsets.
		var id string
		testutil.Eventually(t, 30*time.Second, func() error {
			out, err := c.MQAdmin(t, "consumerConnection", "-g", group)
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) < 2 || !strings.Contains(lines[1], " CPP ") {
				return fmt.Errorf("consumerConnection:\n%s", out)
			}
			id = strings.Fields(lines[1])[0]
			return nil
		})
		testutil.Eventually(t, 30*time.Second, func() error {
			out, err := c.MQAdmin(t, "consumerStatus", "-g", group, "-i", id)
			if err != nil {
				return err
			}
			for _, want := range []string{"PROP_CONSUME_TYPE                       : CONSUME_PASSIVELY", "Topic: " + topic, "commitOffset="} {
				if !strings.Contains(out, want) {
					return fmt.Errorf("consumerStatus has no %q:\n%s", want, out)
				}
			}
			return nil
		})
		var got cppConsumed
		wait(&got)
		if len(got.Messages) != 3 {
			t.Errorf("consumed %+v", got)
		}
	})

	t.Run("redelivery", func(t *testing.T) {
		t.Parallel()
		const topic = "CppRetry"
		var sent cppSent
		cpp.run(t, &sent, "produce", "--namesrv", ns, "--topic", topic, "--group", "cpp_rpg", "--count", "2")
		var got cppConsumed
		cpp.run(t, &got, "consume", "--namesrv", ns, "--topic", topic, "--group", "cpp_rcg", "--count", "2", "--fail-first", "--timeout", "60")
		if len(got.Messages) != 2 {
			t.Fatalf("consumed %+v", got)
		}
		for _, m := range got.Messages {
			if !slices.Contains(sent.IDs, m.ID) || m.ReconsumeTimes != 1 || got.Attempts[m.ID] != 2 || m.Topic != topic || m.Body != "cpp-"+strconv.Itoa(slices.Index(sent.IDs, m.ID)) {
				t.Errorf("redelivered %+v (attempts %d), sent %v", m, got.Attempts[m.ID], sent.IDs)
			}
		}
	})
}

// TestAuthCppClient: the C++ client signing with session credentials
// produces and consumes on our broker with ACL 2.0 on, as far as alice's
// ACL allows: a topic she may not publish to, and a wrong secret, fail its
// sends.
func TestAuthCppClient(t *testing.T) {
	skipShort(t, "real processes and the C++ client")
	t.Parallel()
	c := startAliceCluster(t, "AuthCpp", "auth_cpp_*")
	ns := c.NamesrvAddr()
	cpp := cpp4(t)
	var sent cppSent
	cpp.run(t, &sent, "produce", "--namesrv", ns, "--topic", "AuthCpp", "--group", "auth_cpp_pg", "--count", "3",
		"--access-key", "alice", "--secret-key", "alicepw")
	var got cppConsumed
	cpp.run(t, &got, "consume", "--namesrv", ns, "--topic", "AuthCpp", "--group", "auth_cpp_cg", "--count", "3",
		"--access-key", "alice", "--secret-key", "alicepw", "--timeout", "60")
	if len(sent.IDs) != 3 || len(got.Messages) != 3 {
		t.Fatalf("alice sent %v and consumed %+v", sent.IDs, got.Messages)
	}
	for _, refused := range [][]string{
		{"--topic", "AuthCppNo", "--access-key", "alice", "--secret-key", "alicepw"},
		{"--topic", "AuthCpp", "--access-key", "alice", "--secret-key", "wrong"},
	} {
		args := append([]string{"produce", "--namesrv", ns, "--group", "auth_cpp_pg", "--count", "1"}, refused...)
		ctx, cancel := context.WithTimeout(context.Background(), cpp.timeout)
		cmd := exec.CommandContext(ctx, filepath.Join(harness.RepoRoot(t), "scripts", cpp.name), args...)
		cmd.Env = append(cmd.Environ(), cpp.env...)
		stdout, err := cmd.Output()
		cancel()
		if err == nil || !strings.Contains(string(stdout), `"ok": false`) {
			t.Errorf("%v: %v: %s", refused, err, stdout)
		}
	}
}
