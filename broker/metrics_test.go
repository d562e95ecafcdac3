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
	if resp := invoker(t, b)(code.GetBrokerRuntimeInfo, nil, nil); resp.Code != code.Success {
		t.Fatalf("runtime info: %d", resp.Code)
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
