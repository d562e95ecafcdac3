package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// javaSemanticsLevels: delay level 3 keeps its default 10 s (the delay
// check waits for it, and a first retry goes through it); every other level
// is 1 s so the retry check's second retry (level 4) is quick.
var javaSemanticsLevels = "1s 1s 10s" + strings.Repeat(" 1s", 15)

// TestJavaClientSemantics runs the Java client 5.5.0's semantics checks
// (scripts/java/.../SemanticsCheck.java, one JVM, checks in parallel)
// against our broker: transactions (commit, rollback, check-backs that
// answer UNKNOW first), orderly consumption (per-key and per-queue order
// through a suspend and a consumer hand-over), request/reply, retries up to
// %DLQ% with the right reconsume times, delay level 3 (≥ 10 s),
// message-type checks (enableTopicMessageTypeCheck: wrong types refused
// with MESSAGE_ILLEGAL), and a server-side offset reset
// (DefaultMQAdminExt.resetOffsetByTimestamp) that a running Java consumer
// follows through PULL_OFFSET_MOVED, as with Java 5 brokers (the broker
// pushes no RESET_CONSUMER_CLIENT_OFFSET to Java clients), and
// DefaultMQProducer.recallMessage cancelling a pending timer (RECALL_MESSAGE,
// the send result's recall handle), BROADCASTING consumption (two consumers
// of one group each get every message), and tag filtering ("TagA || TagB",
// and "Aa" whose hash code equals BB's: the broker filters by hash code, the
// client re-checks the string), the lite pull consumer (subscribe mode
// with commitSync and committed(), a new consumer resuming after the
// committed offsets; assign mode with seekToBegin, offsetForTimestamp,
// seek and seekToEnd) and the 4.x pull consumer (min/max offsets, pulls to
// NO_NEW_MSG, viewMessage, searchOffset, a held pullBlockIfNotFound woken
// by a send, offsets persisted and read back), and the admin calls every
// client has (createTopic through TBW102, offsets, earliestMsgStoreTime,
// viewMessage, queryMessage). Skips with a message when java or mvn is
// missing.
func TestJavaClientSemantics(t *testing.T) {
	skipShort(t, "real processes and a Java client")
	t.Parallel()
	javaSemantics(t, "JSem", nil, []string{"tx", "orderly", "reply", "retry", "delay", "msgtype", "reset", "recall", "broadcast", "tag", "litepull", "pull", "adminapi"})
}

// TestJava4ClientSemantics runs the same checks with Apache's Java client
// 4.9.8 (RMQ_JAVA_VERSION, the classes compiled against 5.5.0 use only
// what 4.9.8 has too), as 4.x applications run it against a 5.x broker:
// all but the message-type and recall checks, which need 5.x clients.
func TestJava4ClientSemantics(t *testing.T) {
	skipShort(t, "real processes and a Java client")
	t.Parallel()
	javaSemantics(t, "J4Sem", java4, []string{"tx", "orderly", "reply", "retry", "delay", "reset", "broadcast", "litepull", "pull", "adminapi"})
}

// javaSemantics starts a cluster for SemanticsCheck's topics (named
// after prefix) and runs the checks with the Java client env selects.
func javaSemantics(t *testing.T, prefix string, env, checks []string) {
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enableTopicMessageTypeCheck": "true",
		"transactionCheckInterval":    "1000",
		"transactionTimeOut":          "2000",
		"messageDelayLevel":           javaSemanticsLevels,
		"recallMessageEnable":         "true",
	}})
	addr := c.Brokers()[0].Addr()
	// The retry check's retry topic exists before its consumer starts: a
	// Java consumer rebalances every 20 s and would pull retries only
	// after its next rebalance otherwise.
	var topics []string
	for _, tp := range []struct{ name, typ string }{
		{prefix + "Tx", "TRANSACTION"}, {prefix + "Order", "FIFO"}, {prefix + "Reply", ""}, {prefix + "Retry", "NORMAL"},
		{prefix + "Delay", "DELAY"}, {prefix + "Normal", "NORMAL"}, {prefix + "Reset", ""}, {prefix + "Recall", "DELAY"},
		{prefix + "Broadcast", ""}, {prefix + "Tag", ""}, {prefix + "LitePull", ""}, {prefix + "Pull", ""},
		{"%RETRY%" + prefix + "_retry_cg", ""},
	} {
		args := []string{"updateTopic", "-b", addr, "-t", tp.name, "-r", "4", "-w", "4"}
		if tp.typ != "" {
			args = append(args, "-a", "+message.type="+tp.typ)
		}
		mqadmin(t, c, args...)
		topics = append(topics, tp.name)
	}
	// Every route is on the nameserver before the clients start (they
	// would wait for a rebalance otherwise).
	testutil.Eventually(t, 20*time.Second, func() error {
		for _, tp := range topics {
			if out, err := c.MQAdmin(t, "topicRoute", "-t", tp); err != nil {
				return fmt.Errorf("route of %s: %v: %s", tp, err, out)
			}
		}
		return nil
	})

	res := interop.RunJavaCheckEnv(t, env, "semantics", "-n", c.NamesrvAddr(), "-prefix", prefix, "-timeout", "40", "-checks", strings.Join(checks, ","))
	var fields map[string]any
	if err := json.Unmarshal([]byte(res.Line), &fields); err != nil {
		t.Fatalf("java semantics result: %v\n%s", err, res.Line)
	}
	t.Logf("java semantics: %s", res.Line)
	for _, check := range checks {
		t.Run(check, func(t *testing.T) {
			ok, found := fields[check+"_ok"].(bool)
			if !found {
				t.Fatalf("no result for %s in %s", check, res.Line)
			}
			if !ok {
				var errs []string
				for _, e := range res.Errors {
					if strings.HasPrefix(e, check+":") {
						errs = append(errs, e)
					}
				}
				t.Fatalf("%s failed: %s", check, strings.Join(errs, "; "))
			}
			t.Logf("%s passed in %v ms", check, fields[check+"_ms"])
		})
	}
	// The reset reached the Java consumer as Java 5 brokers deliver it: a
	// PULL_OFFSET_MOVED answer, no RESET_CONSUMER_CLIENT_OFFSET push.
	logs := c.Brokers()[0].Logs()
	group := "group=" + prefix + "_reset_cg"
	moved, pushed := false, false
	for _, line := range strings.Split(logs, "\n") {
		moved = moved || strings.Contains(line, "the queue under pulling was previously reset") && strings.Contains(line, group)
		pushed = pushed || strings.Contains(line, "reset offset: client notified") && strings.Contains(line, group)
	}
	if !moved || pushed {
		t.Errorf("server-side reset: answered by a pull %v (want true), pushed to the Java client %v (want false)", moved, pushed)
	}
	if res.ExitCode != 0 || !res.OK {
		t.Fatalf("java semantics check failed (exit %d): %s", res.ExitCode, strings.Join(res.Errors, "; "))
	}
}
