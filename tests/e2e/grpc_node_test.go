package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestGrpcNodeClient: the RocketMQ 5.x Node.js client
// (rocketmq-client-nodejs 1.0.8, scripts/node5-client.sh) on the broker's
// gRPC endpoint (issue 17): see grpcScriptClientRoundTrip. Skips with a
// message when node or npm is missing.
func TestGrpcNodeClient(t *testing.T) {
	skipShort(t, "real processes and a Node.js 5.x client")
	t.Parallel()
	grpcScriptClientRoundTrip(t, node5(), "GrpcNodeTopic", "node")
}

// TestGrpcPythonClient: the RocketMQ 5.x Python client
// (rocketmq-python-client 5.1.2, scripts/python5-client.sh) on the broker's
// gRPC endpoint (issue 17): see grpcScriptClientRoundTrip. Skips with a
// message when python3 or its venv module is missing.
func TestGrpcPythonClient(t *testing.T) {
	skipShort(t, "real processes and a Python 5.x client")
	t.Parallel()
	grpcScriptClientRoundTrip(t, python5(t), "GrpcPythonTopic", "python")
}

// grpcScriptClientRoundTrip: a 5.x client run by a script with
// scripts/node5/client.js's command line sends NORMAL messages over gRPC;
// client-go sends more over remoting; the client's SimpleConsumer receives
// and acks all of them with the ids, bodies, tags, keys and user
// properties they were sent with, whichever protocol sent them.
func grpcScriptClientRoundTrip(t *testing.T, client clientScript, topic, prefix string) {
	c, endpoint := startGrpcCluster(t, map[string]string{
		// As the proxy, a receive's long polling is at least
		// grpcClientConsumerMinLongPollingTimeoutMillis (5 s by default) and
		// one whose deadline leaves less is refused ILLEGAL_POLLING_TIME:
		// the test consumers' 2 s await plus 3 s request timeout leave
		// just under 5 s.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "1000",
	})
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "2", "-w", "2")

	type sent struct{ body, keys string }
	want := map[string]sent{} // message id → what was sent
	var res struct {
		IDs []string `json:"ids"`
	}
	client.run(t, &res, "produce", "--endpoint", endpoint, "--topic", topic, "--count", "3", "--prefix", prefix)
	for i, id := range res.IDs {
		want[id] = sent{fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("key-%d", i)}
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})), producer.WithInstanceName("grpc-"+prefix), producer.WithRetry(2))
	p = started(t, p, err)
	defer func() { _ = p.Shutdown() }()
	for i := range 2 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("go-%d", i)))
		m.WithTag("TagA")
		m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		m.WithProperty("color", "red")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("client-go send %d: %v %v", i, r, err)
		}
		want[r.MsgID] = sent{fmt.Sprintf("go-%d", i), fmt.Sprintf("key-%d", i)}
	}
	if len(want) != 5 {
		t.Fatalf("%d distinct ids for 5 messages: %v", len(want), want)
	}

	var got struct {
		Messages []struct {
			ID, Body, Tag, Color string
			Keys                 []string
			DeliveryAttempt      int `json:"deliveryAttempt"`
		} `json:"messages"`
	}
	client.run(t, &got, "consume", "--endpoint", endpoint, "--topic", topic, "--group", prefix+"_grpc_cg", "--count", "5", "--timeout", "30")
	seen := map[string]bool{}
	for _, m := range got.Messages {
		w, ok := want[m.ID]
		switch {
		case !ok:
			t.Errorf("received unknown id %s (body %q)", m.ID, m.Body)
		case seen[m.ID]:
			t.Errorf("received %s twice", m.ID)
		case m.Body != w.body || m.Tag != "TagA" || strings.Join(m.Keys, " ") != w.keys || m.Color != "red" || m.DeliveryAttempt != 1:
			t.Errorf("message %s: body %q tag %q keys %v color %q attempt %d; want body %q tag TagA keys [%s] color red attempt 1",
				m.ID, m.Body, m.Tag, m.Keys, m.Color, m.DeliveryAttempt, w.body, w.keys)
		}
		seen[m.ID] = true
	}
	if len(seen) != len(want) {
		var missing []string
		for id := range want {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		t.Errorf("the %s consumer got %d of %d messages; missing %v", client.who, len(seen), len(want), missing)
	}
}
