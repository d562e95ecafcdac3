package metrics

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	collector "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/remoting/code"
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

// TestOTLPDeltaHistograms: with metricsInDelta and OTLP_GRPC the
// histograms are reported as deltas since the previous collection (Java's
// OTLP exporter does so); without it, cumulative.
func TestOTLPDeltaHistograms(t *testing.T) {
	for _, delta := range []bool{false, true} {
		cfg := testConfig()
		cfg.ExporterType, cfg.GrpcTarget, cfg.InDelta = ExporterOTLPGrpc, "http://127.0.0.1:1", delta
		cfg.GrpcInterval = time.Hour
		m, err := New(cfg, Sources{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		collect := func() (metricdata.Temporality, uint64, bool) {
			t.Helper()
			sms, err := producer{m}.Produce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, sm := range sms {
				for _, x := range sm.Metrics {
					if x.Name != histRPCLatency {
						continue
					}
					h := x.Data.(metricdata.Histogram[int64])
					return h.Temporality, h.DataPoints[0].Count, true
				}
			}
			return 0, 0, false
		}
		for range 3 {
			m.RPC(code.SendMessage, code.Success, time.Millisecond, false, false, false)
		}
		temp, n, ok := collect()
		want := metricdata.CumulativeTemporality
		if delta {
			want = metricdata.DeltaTemporality
		}
		if !ok || temp != want || n != 3 {
			t.Errorf("delta=%v: first collection %v %d %v, want %v 3", delta, temp, n, ok, want)
		}
		m.RPC(code.SendMessage, code.Success, time.Millisecond, false, false, false)
		temp, n, ok = collect()
		if wantN := map[bool]uint64{false: 4, true: 1}[delta]; !ok || temp != want || n != wantN {
			t.Errorf("delta=%v: second collection %v %d %v, want %v %d", delta, temp, n, ok, want, wantN)
		}
		if _, _, ok := collect(); ok == delta {
			t.Errorf("delta=%v: a collection with nothing new has a point: %v", delta, ok)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = m.Shutdown(ctx)
		cancel()
	}
}
