package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestGrpcJavaProducerClientGoConsumer: one store, two protocols (issue
// 17). The RocketMQ 5.x Java client (rocketmq-client-java 5.2.0, gRPC,
// scripts/java5-producer.sh) sends NORMAL messages to the broker's gRPC
// endpoint, over TLS (the self-signed certificate) and over plaintext;
// client-go consumes them over remoting with the same message id
// (UNIQ_KEY), body, tag, keys and user property. Skips with a message when
// java or mvn is missing.
func TestGrpcJavaProducerClientGoConsumer(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	const topic = "GrpcJavaTopic"
	c, endpoint := startGrpcCluster(t, nil)
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "2", "-w", "2")
	sent := map[string]string{} // message id → body
	for _, tls := range []bool{true, false} {
		prefix := fmt.Sprintf("tls-%v", tls)
		ids := runGrpcProducer(t, endpoint, topic, 3, tls, prefix)
		for i, id := range ids {
			sent[id] = fmt.Sprintf("%s-%d", prefix, i)
		}
	}
	if len(sent) != 6 {
		t.Fatalf("%d distinct ids for 6 messages: %v", len(sent), sent)
	}

	var mu sync.Mutex
	got := map[string]string{}
	var bad []string
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		consumer.WithGroupName("grpc_java_cg"), consumer.WithInstance("grpc-java-cg"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	goSubscribed(t, pc, err, topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.MsgId] = string(m.Body)
			i := strings.LastIndex(string(m.Body), "-")
			if m.GetTags() != "TagA" || m.GetKeys() != "key"+string(m.Body)[i:] || m.GetProperty("color") != "red" {
				bad = append(bad, fmt.Sprintf("%s: tags %q keys %q color %q", m.MsgId, m.GetTags(), m.GetKeys(), m.GetProperty("color")))
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	defer func() { _ = pc.Shutdown() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(sent) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, body := range sent {
		if got[id] != body {
			t.Errorf("message %s: client-go got body %q, want %q", id, got[id], body)
		}
	}
	if len(got) != len(sent) {
		t.Errorf("client-go got %d messages, want %d: %v", len(got), len(sent), got)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// runGrpcProducer runs scripts/java5's GrpcProducer and returns the ids of
// the messages it sent; it skips the test when java or mvn is missing.
func runGrpcProducer(t *testing.T, endpoint, topic string, count int, tls bool, prefix string) []string {
	t.Helper()
	var res struct {
		IDs []string `json:"ids"`
	}
	java5(t).run(t, &res, "GrpcProducer", endpoint, topic, strconv.Itoa(count), strconv.FormatBool(tls), prefix)
	if len(res.IDs) != count {
		t.Fatalf("GrpcProducer (tls=%v): %d ids for %d messages", tls, len(res.IDs), count)
	}
	return res.IDs
}
