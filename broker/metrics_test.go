package broker

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/metrics"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestMetricsLifecycle: with metricsExporterType=PROM the broker serves
// /metrics while it runs (its rpc latency sees a request sent to it), and
// Shutdown stops the endpoint and leaves no goroutine behind (TestMain).
// An OTLP_GRPC broker with an unreachable collector starts and stops too.
func TestMetricsLifecycle(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.MetricsExporterType = "PROM"
	cfg.MetricsPromExporterHost = "127.0.0.1"
	cfg.MetricsPromExporterPort = 0
	b, err := New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	invoke := invoker(t, b)
	if resp := invoke(code.GetBrokerRuntimeInfo, nil, nil); resp.Code != code.Success {
		t.Fatalf("runtime info: %d", resp.Code)
	}
	// A pull of an empty queue (its subscription in the request), suspended 200 ms: answered PULL_NOT_FOUND
	// by the hold service, counted with is_long_polling=true and its wait.
	if resp := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": "MetricsLP", "readQueueNums": "1", "writeQueueNums": "1",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}, nil); resp.Code != code.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	if resp := invoke(code.PullMessage, map[string]string{"consumerGroup": "metrics_lp", "topic": "MetricsLP", "queueId": "0",
		"queueOffset": "0", "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "200",
		"subVersion": "0", "subscription": "*", "expressionType": "TAG"}, nil); resp.Code != code.PullNotFound {
		t.Fatalf("suspended pull: %d %s", resp.Code, resp.Remark)
	}
	addr := b.Metrics().PromAddr()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fams, err := metrics.ParseText(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if s := fams["rocketmq_rpc_latency_milliseconds"].Find(map[string]string{"request_code": "get_broker_runtime_info", "response_code": "success", "protocol_type": "remoting"}); len(s) != 1 || s[0].Value != 1 {
		t.Errorf("rpc latency of get_broker_runtime_info: %v\n%s", s, body)
	}
	lp := fams["rocketmq_rpc_latency_milliseconds"].Find(map[string]string{"request_code": "pull_message", "response_code": "pull_not_found", "is_long_polling": "true"})
	if len(lp) != 1 || lp[0].Value != 1 {
		t.Errorf("long-polling pull: %v\n%s", lp, body)
	}
	if s := fams["rocketmq_topic_create_execution_time_milliseconds"].Find(map[string]string{"invocation_status": "success", "is_system": "false"}); len(s) != 1 || s[0].Value != 1 {
		t.Errorf("topic create time: %v", s)
	}
	if s := fams["rocketmq_topic_number"].Find(nil); len(s) != 1 || int(s[0].Value) != b.Topics().Len() {
		t.Errorf("topic number %v, want %d", s, b.Topics().Len())
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("metrics endpoint still serving after Shutdown")
	}

	cfg = testConfig(t, t.TempDir(), ns.Addr())
	cfg.MetricsExporterType = "OTLP_GRPC"
	cfg.MetricsGrpcExporterTarget = "http://127.0.0.1:1"
	cfg.MetricGrpcExporterIntervalInMills = 50 * time.Millisecond
	cfg.MetricGrpcExporterTimeOutInMills = 100 * time.Millisecond
	b, err = New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // a few failed exports
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.Shutdown(ctx)
	http.DefaultClient.CloseIdleConnections()
}
