package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// javaReceived is one message as scripts/java5's GrpcSimpleConsumer
// reports it.
type javaReceived struct {
	ID      string `json:"id"`
	Body    string `json:"body"`
	Tag     string `json:"tag"`
	Keys    string `json:"keys"`
	Color   string `json:"color"`
	Attempt int    `json:"attempt"`
}

// TestGrpcJavaConsumers: one store, two protocols (issue 17). client-go
// sends over remoting; the RocketMQ 5.x Java consumers (rocketmq-client-java
// 5.2.0, scripts/java5-consumer.sh) receive over gRPC with the same message
// id, body, tag, keys and user property, delivery attempt 1:
//   - the SimpleConsumer (over TLS) acks all but one; after the invisible time only
//     the un-acked message comes back, with delivery attempt 2, and nothing
//     else is redelivered;
//   - the PushConsumer (plaintext) fails one message once; it comes back (attempt 2,
//     after the group's first retry delay) and nothing else is redelivered.
//
// Skips with a message when java or mvn is missing.
func TestGrpcJavaConsumers(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{
		// A 2 s invisible time and short long polling keep the test short
		// (the PushConsumer's close waits for its polling receives).
		"minInvisibleTimeMillsForRecv":                  "1000",
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("grpc_java_consume_pg"), producer.WithInstanceName("grpc-java-consume"), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	t.Cleanup(func() { _ = p.Shutdown() })
	// send puts 4 messages into a new topic and returns id → body.
	send := func(t *testing.T, topic string) map[string]string {
		mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "2", "-w", "2")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sent := map[string]string{}
		for i := range 4 {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("c-%d", i)))
			m.WithTag("TagA")
			m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
			m.WithProperty("color", "red")
			res, err := p.SendSync(ctx, m)
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("client-go send %d: %v %v", i, res, err)
			}
			sent[res.MsgID] = string(m.Body)
		}
		return sent
	}
	// check compares a first delivery with what was sent.
	check := func(t *testing.T, sent map[string]string, m javaReceived) {
		i := strings.TrimPrefix(m.Body, "c-")
		if sent[m.ID] != m.Body || m.Tag != "TagA" || m.Keys != "key-"+i || m.Color != "red" || m.Attempt != 1 {
			t.Errorf("received %+v; sent %q under that id, tag TagA, keys key-%s, color red, attempt 1", m, sent[m.ID], i)
		}
	}

	t.Run("SimpleConsumer", func(t *testing.T) {
		t.Parallel()
		sent := send(t, "GrpcJavaSimple")
		first, again := runGrpcSimpleConsumer(t, endpoint, "GrpcJavaSimple", "GID_grpc_java_simple", len(sent), "-0")
		if len(first) != len(sent) {
			t.Fatalf("SimpleConsumer received %d messages, want %d: %+v", len(first), len(sent), first)
		}
		var kept string
		for _, m := range first {
			check(t, sent, m)
			if m.Body == "c-0" {
				kept = m.ID
			}
		}
		if len(again) != 1 || again[0].ID != kept || again[0].Body != "c-0" || again[0].Attempt != 2 {
			t.Fatalf("after the invisible time the SimpleConsumer got %+v, want the un-acked %s (c-0) alone with attempt 2", again, kept)
		}
	})

	t.Run("PushConsumer", func(t *testing.T) {
		t.Parallel()
		sent := send(t, "GrpcJavaPush")
		got := runGrpcJavaConsumer(t, "push", endpoint, "GrpcJavaPush", "GID_grpc_java_push", "false", strconv.Itoa(len(sent)), "-0", "1")
		seen := map[string]int{}
		var failed string
		for _, m := range got {
			seen[m.ID]++
			if seen[m.ID] == 1 {
				check(t, sent, m)
				if m.Body == "c-0" {
					failed = m.ID
				}
			} else if m.ID != failed || m.Attempt != 2 || seen[m.ID] > 2 {
				t.Errorf("redelivered %+v (delivery %d), want only the failed c-0 once more with attempt 2", m, seen[m.ID])
			}
		}
		if len(seen) != len(sent) || failed == "" || seen[failed] != 2 {
			t.Fatalf("PushConsumer got %+v, want the %d messages and the failed c-0 twice", got, len(sent))
		}
	})
}

// runGrpcSimpleConsumer runs scripts/java5-consumer.sh simple over TLS
// (the broker's self-signed certificate; 2 s invisible time, 10 s to see
// the un-acked message back, then 2 s quiet) and returns what it received
// first and after.
func runGrpcSimpleConsumer(t *testing.T, endpoint, topic, group string, count int, keep string) (first, again []javaReceived) {
	t.Helper()
	out := runGrpcJavaConsumerRaw(t, "simple", endpoint, topic, group, "true", strconv.Itoa(count), keep, "2", "10", "2")
	var res struct {
		First []javaReceived `json:"first"`
		Again []javaReceived `json:"again"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("java5-consumer simple: %v in %s", err, out)
	}
	return res.First, res.Again
}

// runGrpcJavaConsumer runs a java5-consumer.sh program whose answer lists
// its deliveries under "got".
func runGrpcJavaConsumer(t *testing.T, args ...string) []javaReceived {
	t.Helper()
	out := runGrpcJavaConsumerRaw(t, args...)
	var res struct {
		Got []javaReceived `json:"got"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("java5-consumer %s: %v in %s", args[0], err, out)
	}
	return res.Got
}

// runGrpcJavaConsumerRaw runs scripts/java5-consumer.sh's "simple" or
// "push" program and returns its JSON result; it skips the test when java
// or mvn is missing.
func runGrpcJavaConsumerRaw(t *testing.T, args ...string) []byte {
	t.Helper()
	program := map[string]string{"simple": "GrpcSimpleConsumer", "push": "GrpcPushConsumer"}[args[0]]
	var raw json.RawMessage
	java5(t).run(t, &raw, append([]string{program}, args[1:]...)...)
	return raw
}
