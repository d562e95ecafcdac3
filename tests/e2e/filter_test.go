package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

const (
	filterTopic     = "FilterTopic"
	filterFifoTopic = "FilterFifoTopic"
	filterCount     = 40
	filterSQL       = "a > 5 AND b = 'x'"
	filterBadSQL    = "a > 'x'"
)

// filterCollector records the "i" property of every message a consumer
// gets.
type filterCollector struct {
	mu  sync.Mutex
	got map[int]int
}

func (c *filterCollector) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		i, _ := strconv.Atoi(m.GetProperty("i"))
		c.got[i]++
	}
	return consumer.ConsumeSuccess, nil
}

func (c *filterCollector) ids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i := range c.got {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

func startFilterConsumer(t *testing.T, namesrv, group string, sel consumer.MessageSelector) *filterCollector {
	t.Helper()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithGroupName(group), consumer.WithInstance(group), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	col := &filterCollector{got: map[int]int{}}
	goSubscribed(t, pc, err, filterTopic, sel, col.handle)
	t.Cleanup(func() { _ = pc.Shutdown() })
	return col
}

// filterMessage is message i of the test: a = 1..10, b = x for i in
// 1..10 and 21..30 (y otherwise), tag A/B/C by i mod 3.
func filterMessage(i int) (*primitive.Message, int, string, string) {
	a := (i-1)%10 + 1
	b := []string{"x", "y"}[((i-1)/10)%2]
	tag := []string{"A", "B", "C"}[i%3]
	m := primitive.NewMessage(filterTopic, []byte(fmt.Sprint("filter-", i)))
	m.WithTag(tag)
	m.WithProperty("i", strconv.Itoa(i))
	m.WithProperty("a", strconv.Itoa(a))
	m.WithProperty("b", b)
	return m, a, b, tag
}

// TestFilterClientGo: rocketmq-client-go push consumers with an SQL92
// selector and a tag selector receive exactly their messages from a broker
// with enablePropertyFilter; a consumer with a bad SQL92 expression
// receives nothing and its pulls answer SUBSCRIPTION_PARSE_FAILED, as does
// CHECK_CLIENT_CONFIG (what Java consumers send at start); with
// enableTopicMessageTypeCheck a delay message to a FIFO topic and an
// oversize delay message are MESSAGE_ILLEGAL.
func TestFilterClientGo(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enablePropertyFilter":        "true",
		"enableTopicMessageTypeCheck": "true",
	}})
	addr := c.Brokers()[0].Addr()
	for _, args := range [][]string{
		{"updateTopic", "-b", addr, "-t", filterTopic, "-r", "4", "-w", "4"},
		{"updateTopic", "-b", addr, "-t", filterFifoTopic, "-r", "2", "-w", "2", "-a", "+message.type=FIFO"},
	} {
		mqadmin(t, c, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	sqlC := startFilterConsumer(t, c.NamesrvAddr(), "filter_sql_cg", consumer.MessageSelector{Type: consumer.SQL92, Expression: filterSQL})
	tagC := startFilterConsumer(t, c.NamesrvAddr(), "filter_tag_cg", consumer.MessageSelector{Type: consumer.TAG, Expression: "A || B"})
	badC := startFilterConsumer(t, c.NamesrvAddr(), "filter_bad_cg", consumer.MessageSelector{Type: consumer.SQL92, Expression: filterBadSQL})

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("filter_pg"), producer.WithInstanceName("filter-producer"), producer.WithRetry(0),
		producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	var wantSQL, wantTag []int
	for i := 1; i <= filterCount; i++ {
		m, a, b, tag := filterMessage(i)
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if a > 5 && b == "x" {
			wantSQL = append(wantSQL, i)
		}
		if tag == "A" || tag == "B" {
			wantTag = append(wantTag, i)
		}
	}

	testutil.Eventually(t, 90*time.Second, func() error {
		if got := sqlC.ids(); !slices.Equal(got, wantSQL) {
			return fmt.Errorf("SQL92 consumer has %v, want %v", got, wantSQL)
		}
		if got := tagC.ids(); !slices.Equal(got, wantTag) {
			return fmt.Errorf("TAG consumer has %v, want %v", got, wantTag)
		}
		return nil
	})
	// Nothing else arrives later; the bad consumer got nothing at all.
	time.Sleep(2 * time.Second)
	if got := sqlC.ids(); !slices.Equal(got, wantSQL) {
		t.Fatalf("SQL92 consumer later has %v", got)
	}
	if got := tagC.ids(); !slices.Equal(got, wantTag) {
		t.Fatalf("TAG consumer later has %v", got)
	}
	if got := badC.ids(); len(got) != 0 {
		t.Fatalf("consumer with a bad SQL92 expression got %v", got)
	}

	// The bad consumer's pulls (subscription from its heartbeat, as it
	// pulls) answer 23 with the parse error.
	pull := remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": "filter_bad_cg", "topic": filterTopic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0", "expressionType": "TAG",
	}, nil)
	resp := roundTrip(t, addr, pull)
	if resp.Code != code.SubscriptionParseFailed || !strings.Contains(resp.Remark, "Invalid MessageSelector") {
		t.Fatalf("pull for the bad SQL92 group: %d %q", resp.Code, resp.Remark)
	}
	// The same expression sent with the pull (sysFlag bit 2) is refused too.
	pull = remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": "filter_raw_cg", "topic": filterTopic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
		"subscription": filterBadSQL, "expressionType": "SQL92",
	}, nil)
	if resp := roundTrip(t, addr, pull); resp.Code != code.SubscriptionParseFailed {
		t.Fatalf("pull with a bad SQL92 subscription: %d %q", resp.Code, resp.Remark)
	}

	// CHECK_CLIENT_CONFIG, as a Java consumer sends it at start.
	check := func(expr string) *remoting.Command {
		body, _ := json.Marshal(map[string]any{"clientId": "127.0.0.1@java", "group": "filter_java_cg",
			"subscriptionData": map[string]any{"topic": filterTopic, "subString": expr, "expressionType": "SQL92",
				"classFilterMode": false, "codeSet": []int{}, "tagsSet": []string{}, "subVersion": time.Now().UnixMilli()}})
		return roundTrip(t, addr, remoting.NewRequest(code.CheckClientConfig, nil, body))
	}
	if resp := check(filterSQL); resp.Code != code.Success {
		t.Fatalf("CHECK_CLIENT_CONFIG %q: %d %q", filterSQL, resp.Code, resp.Remark)
	}
	if resp := check(filterBadSQL); resp.Code != code.SubscriptionParseFailed || !strings.Contains(resp.Remark, "cannot be compared") {
		t.Fatalf("CHECK_CLIENT_CONFIG %q: %d %q", filterBadSQL, resp.Code, resp.Remark)
	}

	// Message types and limits, through client-go's producer.
	fifo := primitive.NewMessage(filterFifoTopic, []byte("ordered"))
	if _, err := p.SendSync(ctx, fifo); err != nil {
		t.Fatalf("normal message to the FIFO topic: %v", err)
	}
	delayed := primitive.NewMessage(filterFifoTopic, []byte("later"))
	delayed.WithDelayTimeLevel(2)
	if _, err := p.SendSync(ctx, delayed); err == nil || !strings.Contains(err.Error(), "CODE: 13") ||
		!strings.Contains(err.Error(), "does not match the message.type [FIFO]") {
		t.Fatalf("delay message to the FIFO topic: %v", err)
	}
	// Random bytes: client-go compresses bodies over 4 KiB, and the limit
	// applies to the body as stored.
	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = byte(rand.IntN(256))
	}
	oversize := primitive.NewMessage(filterTopic, big)
	oversize.WithDelayTimeLevel(1)
	if _, err := p.SendSync(ctx, oversize); err == nil || !strings.Contains(err.Error(), "CODE: 13") ||
		!strings.Contains(err.Error(), "maxDelayMessageSize") {
		t.Fatalf("oversize delay message: %v", err)
	}
	if _, err := p.SendSync(ctx, primitive.NewMessage(filterTopic, big)); err != nil {
		t.Fatalf("the same body without a delay: %v", err)
	}

	// The Java client 5.5.0: a SQL92 push consumer checks its expression
	// with CHECK_CLIENT_CONFIG at start, then gets exactly the matching
	// messages; a bad expression makes start() fail with code 23.
	t.Run("java", func(t *testing.T) {
		skipShort(t, "starts JVMs")
		run := filterJavaCheck(t)
		out := run(c.NamesrvAddr(), filterTopic, "filter_java_cg", filterSQL, strconv.Itoa(len(wantSQL)))
		want := "GOT"
		for _, i := range wantSQL {
			want += " " + strconv.Itoa(i)
		}
		if out != want {
			t.Fatalf("Java SQL92 consumer: %q, want %q", out, want)
		}
		out = run(c.NamesrvAddr(), filterTopic, "filter_java_bad_cg", filterBadSQL, "0")
		if !strings.HasPrefix(out, "REFUSED 23 ") || !strings.Contains(out, "cannot be compared") {
			t.Fatalf("Java consumer with a bad SQL92 expression: %q", out)
		}
	})
	if !c.Brokers()[0].Running() {
		t.Fatal("broker exited")
	}
}

// filterJavaSource is a minimal Java SQL92 consumer: args namesrv, topic,
// group, expression, expected count. It prints "GOT i…" (the sorted "i"
// properties it received) or "REFUSED <code> <remark>" when start() fails.
const filterJavaSource = `
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class FilterCheck {
    public static void main(String[] args) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(args[2]);
        c.setNamesrvAddr(args[0]);
        c.setInstanceName(args[2]);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(args[1], MessageSelector.bySql(args[3]));
        Set<Integer> got = new ConcurrentSkipListSet<>();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(Integer.parseInt(m.getUserProperty("i")));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            c.start();
        } catch (MQClientException e) {
            System.out.println("REFUSED " + e.getResponseCode() + " " + e.getErrorMessage());
            System.out.flush();
            System.exit(0);
        }
        int want = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + 90000;
        while (got.size() < want && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(2000);
        StringBuilder sb = new StringBuilder("GOT");
        for (int i : got) {
            sb.append(' ').append(i);
        }
        System.out.println(sb);
        System.out.flush();
        c.shutdown();
        System.exit(0);
    }
}
`

// filterJavaCheck compiles filterJavaSource against the Java client of
// scripts/java (scripts/java-classpath.sh) and returns a runner printing its
// last output line. Skips without java/mvn (fails with RMQ_REQUIRE_JAVA=1).
func filterJavaCheck(t *testing.T) func(args ...string) string {
	t.Helper()
	root := harness.RepoRoot(t)
	cpCmd := exec.Command(filepath.Join(root, "scripts", "java-classpath.sh"))
	var stderr bytes.Buffer
	cpCmd.Stderr = &stderr
	cpOut, err := cpCmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 && os.Getenv("RMQ_REQUIRE_JAVA") != "1" {
			t.Skipf("%s", strings.TrimSpace(stderr.String()))
		}
		t.Fatalf("scripts/java-classpath.sh: %v\n%s", err, stderr.String())
	}
	cp := strings.TrimSpace(string(cpOut))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "FilterCheck.java"), []byte(filterJavaSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-nowarn", "-cp", cp, "-d", dir, filepath.Join(dir, "FilterCheck.java")).CombinedOutput(); err != nil {
		if errors.Is(err, exec.ErrNotFound) && os.Getenv("RMQ_REQUIRE_JAVA") != "1" {
			t.Skip("java/mvn not available: javac not found")
		}
		t.Fatalf("javac: %v\n%s", err, out)
	}
	logs := t.TempDir()
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "java", append([]string{"-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Drmq.logback.configurationFile=" + filepath.Join(root, "scripts", "java", "logback-client-check.xml"),
			"-Drocketmq.log.root=" + logs, "-Drocketmq.client.logRoot=" + logs, "-Drocketmq.client.logUseSlf4j=true",
			"-cp", dir + string(os.PathListSeparator) + cp, "FilterCheck"}, args...)...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("java FilterCheck %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[len(lines)-1]
	}
}
