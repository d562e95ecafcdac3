package metrics

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// fakeCollector is an OTLP gRPC metrics endpoint that remembers what it got.
type fakeCollector struct {
	collector.UnimplementedMetricsServiceServer
	mu      sync.Mutex
	names   map[string]bool
	headers metadata.MD
}

func (c *fakeCollector) Export(ctx context.Context, req *collector.ExportMetricsServiceRequest) (*collector.ExportMetricsServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headers, _ = metadata.FromIncomingContext(ctx)
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				c.names[m.GetName()] = true
			}
		}
	}
	return &collector.ExportMetricsServiceResponse{}, nil
}

// TestOTLPExport: metricsExporterType=OTLP_GRPC pushes the instruments (by
// their OpenTelemetry names, without the Prometheus suffixes) to
// metricsGrpcExporterTarget every metricGrpcExporterIntervalInMills, with
// the metricsGrpcExporterHeader headers.
func TestOTLPExport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &fakeCollector{names: map[string]bool{}}
	srv := grpc.NewServer()
	collector.RegisterMetricsServiceServer(srv, col)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cfg := testConfig()
	cfg.ExporterType = ExporterOTLPGrpc
	cfg.GrpcTarget = "http://" + ln.Addr().String()
	cfg.GrpcHeader = "x-token:secret,bad-item"
	cfg.GrpcInterval = 50 * time.Millisecond
	cfg.GrpcTimeout = time.Second
	m, err := New(cfg, testSources(time.Now()), nil)
	if err != nil || m == nil {
		t.Fatalf("New: %v %v", m, err)
	}
	if err := m.Start(); err != nil { // the gauges read their sources from Start on
		t.Fatal(err)
	}
	m.MessagesIn("t1", Normal, 1, 100)
	m.RPC(10, 0, time.Millisecond, false, false, false)
	deadline := time.Now().Add(10 * time.Second)
	want := []string{counterMessagesIn, histMessageSize, histRPCLatency, gaugeLagMessages, gaugeBrokerPermission}
	for {
		col.mu.Lock()
		missing := []string{}
		for _, n := range want {
			if !col.names[n] {
				missing = append(missing, n)
			}
		}
		token := col.headers.Get("x-token")
		col.mu.Unlock()
		if len(missing) == 0 && len(token) == 1 && token[0] == "secret" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector lacks %v (x-token %v)", missing, token)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOTLPWithoutTarget: OTLP_GRPC without a target exports nothing, as
// Java's checkConfig.
func TestOTLPWithoutTarget(t *testing.T) {
	cfg := testConfig()
	cfg.ExporterType = ExporterOTLPGrpc
	if m, err := New(cfg, Sources{}, nil); m != nil || err != nil {
		t.Fatalf("New = %v, %v; want nil, nil", m, err)
	}
}
