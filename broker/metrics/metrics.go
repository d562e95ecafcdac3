// Package metrics is the broker's metrics with Apache RocketMQ 5.5.0's
// metric families, label names and units (docs/operations.md, "Metrics"),
// exported as Prometheus text (metricsExporterType=PROM) or over OTLP gRPC
// (OTLP_GRPC) through the OpenTelemetry Go SDK, as Apache's
// BrokerMetricsManager does with OpenTelemetry Java.
//
// Counters and histograms on the message path are plain atomics (hot.go);
// every gauge is read from Sources when the exporter collects.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Exporter types (Java's MetricsExporterType).
const (
	ExporterDisable  = "DISABLE"
	ExporterOTLPGrpc = "OTLP_GRPC"
	ExporterProm     = "PROM"
	ExporterLog      = "LOG"
)

// Config is the part of the broker configuration the metrics use (Java's
// BrokerConfig keys in comments).
type Config struct {
	ExporterType     string        // metricsExporterType
	PromHost         string        // metricsPromExporterHost ("" = BrokerIP1)
	PromPort         int           // metricsPromExporterPort (0 picks a free port)
	GrpcTarget       string        // metricsGrpcExporterTarget
	GrpcHeader       string        // metricsGrpcExporterHeader "k:v,k:v"
	GrpcTimeout      time.Duration // metricGrpcExporterTimeOutInMills
	GrpcInterval     time.Duration // metricGrpcExporterIntervalInMills
	LogInterval      time.Duration // metricLoggingExporterIntervalInMills (LOG)
	Labels           string        // metricsLabel "k:v,k:v"
	InDelta          bool          // metricsInDelta
	CardinalityLimit int           // metricsOtelCardinalityLimit
	BrokerIP1        string
	Cluster          string // brokerClusterName: the cluster label
	NodeID           string // brokerName: the node_id label

	EnableStatsMetrics       bool
	EnableRequestMetrics     bool
	EnableConnectionMetrics  bool
	EnableLagAndDlqMetrics   bool
	EnableRemotingMetrics    bool
	EnableStoreMetrics       bool
	EnablePopMetrics         bool
	EnableTransactionMetrics bool
}

// Client is one producer or consumer connection.
type Client struct {
	Language string // lower case, e.g. "java", "go"
	Version  string // Java's MQVersion.getVersionDesc, lower case
	Protocol string // ProtocolRemoting or ProtocolGrpc
	// Consumers only.
	Group       string
	ConsumeMode string // "push", "pull", "pop" (Java's getTypeCN, lower case)
}

// Lag is one (group, topic) of the consumer lag gauges (Java's
// ConsumerLagCalculator results).
type Lag struct {
	Group, Topic string
	Retry        bool
	Lag          int64 // messages not yet committed
	// EarliestUnconsumedMs is the store time of the first message not
	// committed (0: none).
	EarliestUnconsumedMs int64
	Inflight             int64 // pulled, not yet committed
	// EarliestUnpulledMs is the store time of the first message not pulled
	// (0: none).
	EarliestUnpulledMs int64
	Ready              int64 // stored, not yet pulled
	// lite: an entry only lite lag made (liteCount, liteLatency: the
	// gauges it feeds); 0 for the regular ones.
	lite uint8
}

// StoreStats are the store gauges.
type StoreStats struct {
	SizeBytes           int64 // used bytes of the store's file system
	FlushBehindBytes    int64
	DispatchBehindBytes int64
	EarliestMessageMs   int64 // 0: no message
}

// TimerStats are the timer (delay message) gauges.
type TimerStats struct {
	EnqueueLag, EnqueueLatencyMs int64
	DequeueLag, DequeueLatencyMs int64
	// Snapshot counts the timers due within each TimerDistSeconds bound
	// (above the previous one).
	Snapshot [len(TimerDistSeconds)]int64
}

// Revive is one pop revive queue's progress.
type Revive struct {
	QueueID    int32
	BehindMsgs int64
	BehindMs   int64
}

// Sources are read at collection time; a nil source leaves its families
// out.
type Sources struct {
	BrokerPermission func() int64
	TopicCount       func() int64
	GroupCount       func() int64
	// Processors returns the queued requests of each processor pool.
	Processors func() map[string]int64
	Producers  func() []Client
	Consumers  func() []Client
	Lags       func() []Lag
	Store      func() StoreStats
	Timer      func() TimerStats
	// Timing returns the timer messages waiting per real topic
	// (rocketmq_timing_messages; the timer service's timing counts).
	Timing func() map[string]int64
	// PopBuffers returns the buffered offsets and checkpoints.
	PopBuffers func() (offsets, checkpoints int64)
	PopRevive  func() []Revive
	// Lite returns the liteLag* metrics switches (nil: no lite lag).
	Lite func() LiteSettings
	// LiteLagCounts returns the lite lag per (parent topic, group): Lag
	// summed over the parent's LMQs the group holds an offset of (Java's
	// LiteConsumerLagCalculator.calculateLiteLagCount). It may be slow (a
	// walk of every lite offset): it runs in the background.
	LiteLagCounts func() []Lag
}

// Metrics owns the meter provider, the exporter and the hot-path counters.
// A nil *Metrics records nothing (metrics disabled).
type Metrics struct {
	cfg  Config
	src  Sources
	log  *slog.Logger
	base []attribute.KeyValue
	now  func() time.Time

	provider *sdkmetric.MeterProvider
	promReg  *prometheus.Registry
	server   *http.Server
	addr     string

	start       time.Time
	in          cowMap[string, inStats]
	out         cowMap[outKey, outStats]
	popOut      cowMap[popOutKey, outStats]
	rpc         cowMap[rpcKey, rpcStats]
	inOverflow  *inStats
	outOverflow *outStats
	topicCreate [4]*histogram // success/failure × user/system
	groupCreate [2]*histogram // success/failure
	dlq         cowMap[outKey, counterStats]
	tx          cowMap[string, txStats]
	half        cowMap[string, counterStats]
	reviveIn    cowMap[reviveKey, counterStats]
	reviveOut   cowMap[reviveKey, counterStats]
	reviveRetry cowMap[reviveKey, counterStats]
	lite        cowMap[liteKey, liteTopK]
	timer       cowMap[string, timerStats]
	popScan     *histogram
	histDelta   histDeltas

	// live is set by Start: the gauges read their Sources only from then
	// on (an OTLP reader collects on its own schedule from New on, while
	// the broker is still being built).
	live atomic.Bool

	closeOnce sync.Once
}

// New builds the metrics for cfg; it returns nil, nil when cfg exports
// nothing (DISABLE). Nothing listens until Start.
func New(cfg Config, src Sources, log *slog.Logger) (*Metrics, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	typ := strings.ToUpper(cfg.ExporterType)
	switch typ {
	case "", ExporterDisable:
		return nil, nil
	case ExporterProm, ExporterOTLPGrpc, ExporterLog:
	default:
		return nil, fmt.Errorf("metrics: unknown metricsExporterType %q", cfg.ExporterType)
	}
	if typ == ExporterOTLPGrpc && strings.TrimSpace(cfg.GrpcTarget) == "" {
		// Java's checkConfig: no target, no metrics.
		log.Error("metricsExporterType=OTLP_GRPC without metricsGrpcExporterTarget; metrics are not exported")
		return nil, nil
	}
	if cfg.CardinalityLimit <= 0 {
		cfg.CardinalityLimit = 50000
	}
	m := &Metrics{cfg: cfg, src: src, log: log, now: time.Now, start: time.Now()}
	m.base = baseLabels(cfg, log)
	m.in.limit, m.out.limit, m.rpc.limit = cfg.CardinalityLimit, cfg.CardinalityLimit, cfg.CardinalityLimit
	m.popOut.limit = cfg.CardinalityLimit
	m.inOverflow = m.newInStats("")
	m.inOverflow.overflow(m)
	m.outOverflow = m.newOutStats(outKey{})
	m.outOverflow.attrs = m.attrs(attribute.Bool(overflowTopicLabel, true))
	for i := range m.topicCreate {
		m.topicCreate[i] = newHistogram(createTimeBounds)
	}
	for i := range m.groupCreate {
		m.groupCreate[i] = newHistogram(createTimeBounds)
	}
	m.dlq.limit, m.tx.limit, m.half.limit = cfg.CardinalityLimit, cfg.CardinalityLimit, cfg.CardinalityLimit
	m.reviveIn.limit, m.reviveOut.limit, m.reviveRetry.limit = cfg.CardinalityLimit, cfg.CardinalityLimit, cfg.CardinalityLimit
	m.lite.limit, m.timer.limit = cfg.CardinalityLimit, cfg.CardinalityLimit
	m.popScan = newHistogram(popScanBounds)
	m.histDelta.on = cfg.InDelta && typ == ExporterOTLPGrpc

	opts := []sdkmetric.Option{
		sdkmetric.WithResource(resource.Empty()),
		sdkmetric.WithCardinalityLimit(cfg.CardinalityLimit),
	}
	prod := producer{m}
	switch typ {
	case ExporterProm:
		m.promReg = prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(m.promReg), otelprom.WithProducer(prod))
		if err != nil {
			return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(exp))
	case ExporterOTLPGrpc:
		exp, err := otlpExporter(cfg, log)
		if err != nil {
			return nil, err
		}
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(prod)}
		if cfg.GrpcInterval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(cfg.GrpcInterval))
		}
		if cfg.GrpcTimeout > 0 {
			ropts = append(ropts, sdkmetric.WithTimeout(cfg.GrpcTimeout))
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, ropts...)))
	case ExporterLog:
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(prod)}
		if cfg.LogInterval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(cfg.LogInterval))
		}
		exp := logExporter{log: log.With("component", "metrics-log")}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, ropts...)))
	}
	m.provider = sdkmetric.NewMeterProvider(opts...)
	if err := m.register(m.provider.Meter(meterName)); err != nil {
		_ = m.provider.Shutdown(context.Background())
		return nil, err
	}
	return m, nil
}

// otlpExporter builds the OTLP gRPC exporter as Java's init does: a target
// without a scheme is https, headers come from metricsGrpcExporterHeader,
// counters are deltas with metricsInDelta (the histograms, which come from
// the producer, are turned into deltas there: histDeltas).
func otlpExporter(cfg Config, log *slog.Logger) (sdkmetric.Exporter, error) {
	target := cfg.GrpcTarget
	opts := []otlpmetricgrpc.Option{}
	switch {
	case strings.HasPrefix(target, "http://"):
		opts = append(opts, otlpmetricgrpc.WithEndpointURL(target), otlpmetricgrpc.WithInsecure())
	case strings.HasPrefix(target, "https://"):
		opts = append(opts, otlpmetricgrpc.WithEndpointURL(target))
	default:
		opts = append(opts, otlpmetricgrpc.WithEndpointURL("https://"+target))
	}
	if cfg.GrpcTimeout > 0 {
		opts = append(opts, otlpmetricgrpc.WithTimeout(cfg.GrpcTimeout))
	}
	if h := parsePairs(cfg.GrpcHeader, "metricsGrpcExporterHeader", log); len(h) > 0 {
		opts = append(opts, otlpmetricgrpc.WithHeaders(h))
	}
	if cfg.InDelta {
		opts = append(opts, otlpmetricgrpc.WithTemporalitySelector(func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindObservableCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
			return metricdata.CumulativeTemporality
		}))
	}
	exp, err := otlpmetricgrpc.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("metrics: otlp exporter: %w", err)
	}
	return exp, nil
}

// parsePairs reads Java's "k:v,k:v" lists (metricsLabel,
// metricsGrpcExporterHeader); a malformed item is skipped with a warning.
func parsePairs(s, key string, log *slog.Logger) map[string]string {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, ":")
		if !ok || strings.Contains(v, ":") {
			log.Warn("malformed metrics key:value item, skipped", "key", key, "item", item)
			continue
		}
		out[k] = v
	}
	return out
}

// baseLabels are on every series: metricsLabel pairs, aggregation=delta
// with metricsInDelta, node_type, cluster, node_id (Java's labelMap).
func baseLabels(cfg Config, log *slog.Logger) []attribute.KeyValue {
	var kv []attribute.KeyValue
	for k, v := range parsePairs(cfg.Labels, "metricsLabel", log) {
		kv = append(kv, attribute.String(k, v))
	}
	if cfg.InDelta {
		kv = append(kv, attribute.String(labelAggregation, aggregationDelta))
	}
	return append(kv,
		attribute.String(labelNodeType, nodeTypeBroker),
		attribute.String(labelCluster, cfg.Cluster),
		attribute.String(labelNodeID, cfg.NodeID))
}

// attrs is the base labels plus kv.
func (m *Metrics) attrs(kv ...attribute.KeyValue) attribute.Set {
	all := make([]attribute.KeyValue, 0, len(m.base)+len(kv))
	all = append(all, m.base...)
	all = append(all, kv...)
	return attribute.NewSet(all...)
}

// Start serves the Prometheus endpoint (PROM): /metrics on
// metricsPromExporterHost (brokerIP1 when empty) : metricsPromExporterPort.
func (m *Metrics) Start() error {
	if m == nil {
		return nil
	}
	m.live.Store(true)
	if m.promReg == nil {
		return nil
	}
	host := m.cfg.PromHost
	if host == "" {
		host = m.cfg.BrokerIP1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(m.cfg.PromPort)))
	if err != nil {
		return fmt.Errorf("metrics: prometheus listener: %w", err)
	}
	h := promhttp.HandlerFor(m.promReg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/", h)
	m.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.addr = ln.Addr().String()
	go func() {
		if err := m.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics: prometheus endpoint stopped", "err", err)
		}
	}()
	m.log.Info("metrics: prometheus endpoint", "addr", m.addr)
	return nil
}

// PromAddr is the Prometheus endpoint's address ("" unless PROM started).
func (m *Metrics) PromAddr() string {
	if m == nil {
		return ""
	}
	return m.addr
}

// Gather collects once into Prometheus families (tests; PROM only).
func (m *Metrics) Gather() (map[string]*Family, error) {
	if m == nil || m.promReg == nil {
		return nil, errors.New("metrics: no prometheus registry")
	}
	mfs, err := m.promReg.Gather()
	if err != nil {
		return nil, err
	}
	return families(mfs), nil
}

// Shutdown stops the endpoint and flushes the OTLP exporter.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	var errs []error
	m.closeOnce.Do(func() {
		if m.server != nil {
			if err := m.server.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := m.provider.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// register builds the observable instruments of the enabled groups (Java's
// init*Metrics), each reading its source at collection time.
func (m *Metrics) register(meter metric.Meter) error {
	var errs []error
	gauge := func(name, unit, desc string, cb func() []obs) {
		if cb == nil {
			return
		}
		opts := []metric.Int64ObservableGaugeOption{metric.WithDescription(desc)}
		if unit != "" {
			opts = append(opts, metric.WithUnit(unit))
		}
		g, err := meter.Int64ObservableGauge(name, opts...)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if !m.live.Load() {
				return nil
			}
			for _, v := range cb() {
				o.ObserveInt64(g, v.v, metric.WithAttributeSet(v.set))
			}
			return nil
		}, g); err != nil {
			errs = append(errs, err)
		}
	}
	single := func(f func() int64) func() []obs {
		if f == nil {
			return nil
		}
		return func() []obs { return []obs{{f(), m.attrs()}} }
	}
	c, s := m.cfg, m.src
	if c.EnableStatsMetrics {
		gauge(gaugeProcessorWatermark, "", "Request processor watermark", m.processors())
		gauge(gaugeBrokerPermission, "", "Broker permission", single(s.BrokerPermission))
		gauge(gaugeTopicNumber, "", "Active topic number", single(s.TopicCount))
		gauge(gaugeGroupNumber, "", "Active subscription group number", single(s.GroupCount))
	}
	if c.EnableRequestMetrics {
		m.counters(meter, &errs)
	}
	if c.EnableConnectionMetrics {
		gauge(gaugeProducerConnections, "", "Producer connections", m.producers())
		gauge(gaugeConsumerConnections, "", "Consumer connections", m.consumers())
	}
	m.eventCounters(meter, &errs)
	if c.EnableLagAndDlqMetrics && s.Lags != nil {
		var counts *asyncCache[[]Lag]
		if s.LiteLagCounts != nil {
			counts = &asyncCache[[]Lag]{src: s.LiteLagCounts, every: time.Second, now: m.clock}
		}
		lag := newLagCache(func() []Lag { return mergeLite(s.Lags(), m.liteLags(counts)) }, m.clock)
		gauge(gaugeLagMessages, "", "Consumer lag messages", m.lagGauge(lag, liteCount, func(l Lag, _ int64) int64 { return l.Lag }))
		gauge(gaugeLagLatency, unitMillis, "Consumer lag time", m.lagGauge(lag, liteLatency, func(l Lag, now int64) int64 { return since(now, l.EarliestUnconsumedMs) }))
		gauge(gaugeInflightMessages, "", "Consumer inflight messages", m.lagGauge(lag, 0, func(l Lag, _ int64) int64 { return l.Inflight }))
		gauge(gaugeQueueingLatency, unitMillis, "Consumer queueing time", m.lagGauge(lag, 0, func(l Lag, now int64) int64 { return since(now, l.EarliestUnpulledMs) }))
		gauge(gaugeReadyMessages, "", "Consumer ready messages", m.lagGauge(lag, liteCount, func(l Lag, _ int64) int64 { return l.Ready }))
	}
	if c.EnableStoreMetrics {
		m.storeGauges(gauge)
		m.timerCounters(meter, &errs)
	}
	if c.EnablePopMetrics {
		m.popGauges(gauge)
		m.reviveCounters(meter, &errs)
	}
	if c.EnableTransactionMetrics {
		// Java's initTransactionMetrics: every topic that ever had a half
		// message, its count now.
		gauge(gaugeHalfMessages, "", "Half messages of all topics", func() []obs {
			var out []obs
			m.half.each(func(_ string, s *counterStats) { out = append(out, obs{s.n.Load(), s.attrs}) })
			return out
		})
	}
	return errors.Join(errs...)
}

// clock reads m.now at each call (tests move it).
func (m *Metrics) clock() time.Time { return m.now() }

// obs is one observation of a gauge.
type obs struct {
	v   int64
	set attribute.Set
}

func since(now, ts int64) int64 {
	if ts <= 0 {
		return 0
	}
	return now - ts
}

// counters registers the message counters over the hot-path atomics.
func (m *Metrics) counters(meter metric.Meter, errs *[]error) {
	in, err1 := meter.Int64ObservableCounter(counterMessagesIn, metric.WithDescription("Total number of incoming messages"))
	out, err2 := meter.Int64ObservableCounter(counterMessagesOut, metric.WithDescription("Total number of outgoing messages"))
	tin, err3 := meter.Int64ObservableCounter(counterThroughputIn, metric.WithDescription("Total traffic of incoming messages"))
	tout, err4 := meter.Int64ObservableCounter(counterThroughputOut, metric.WithDescription("Total traffic of outgoing messages"))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		*errs = append(*errs, err)
		return
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		emitIn := func(s *inStats) {
			for t := range numMessageTypes {
				if n := s.msgs[t].Load(); n > 0 {
					opt := metric.WithAttributeSet(s.attrs[t])
					o.ObserveInt64(in, n, opt)
					o.ObserveInt64(tin, s.bytes[t].Load(), opt)
				}
			}
		}
		m.in.each(func(_ string, s *inStats) { emitIn(s) })
		emitIn(m.inOverflow)
		emitOut := func(s *outStats) {
			if n := s.msgs.Load(); n > 0 {
				opt := metric.WithAttributeSet(s.attrs)
				o.ObserveInt64(out, n, opt)
				o.ObserveInt64(tout, s.bytes.Load(), opt)
			}
		}
		m.out.each(func(_ outKey, s *outStats) { emitOut(s) })
		m.popOut.each(func(_ popOutKey, s *outStats) { emitOut(s) })
		emitOut(m.outOverflow)
		return nil
	}, in, out, tin, tout)
	if err != nil {
		*errs = append(*errs, err)
	}
}

// eventCounters registers the DLQ and transaction counters; a series
// appears once its event happened.
func (m *Metrics) eventCounters(meter metric.Meter, errs *[]error) {
	var insts []metric.Observable
	var dlq, commits, rollbacks metric.Int64ObservableCounter
	if m.cfg.EnableLagAndDlqMetrics {
		c, err := meter.Int64ObservableCounter(counterSendToDLQ, metric.WithDescription("Consumer send to DLQ messages"))
		if err != nil {
			*errs = append(*errs, err)
			return
		}
		dlq = c
		insts = append(insts, c)
	}
	if m.cfg.EnableTransactionMetrics {
		c1, err1 := meter.Int64ObservableCounter(counterCommits, metric.WithDescription("Total number of commit messages"))
		c2, err2 := meter.Int64ObservableCounter(counterRollbacks, metric.WithDescription("Total number of rollback messages"))
		if err := errors.Join(err1, err2); err != nil {
			*errs = append(*errs, err)
			return
		}
		commits, rollbacks = c1, c2
		insts = append(insts, c1, c2)
	}
	if len(insts) == 0 {
		return
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if dlq != nil {
			m.dlq.each(func(_ outKey, s *counterStats) { o.ObserveInt64(dlq, s.n.Load(), metric.WithAttributeSet(s.attrs)) })
		}
		if commits != nil {
			m.tx.each(func(_ string, s *txStats) {
				if n := s.commits.Load(); n > 0 {
					o.ObserveInt64(commits, n, metric.WithAttributeSet(s.commitAttrs))
				}
				if n := s.rollbacks.Load(); n > 0 {
					o.ObserveInt64(rollbacks, n, metric.WithAttributeSet(s.commitAttrs))
				}
			})
		}
		return nil
	}, insts...)
	if err != nil {
		*errs = append(*errs, err)
	}
}

func (m *Metrics) newInStats(topic string) *inStats {
	s := &inStats{}
	for t := range numMessageTypes {
		s.attrs[t] = m.attrs(attribute.String(labelTopic, topic), attribute.String(labelMessageType, t.String()),
			attribute.Bool(labelIsSystem, isSystemTopic(topic)))
		s.size[t] = newHistogram(messageSizeBounds)
	}
	return s
}

func (s *inStats) overflow(m *Metrics) {
	for t := range numMessageTypes {
		s.attrs[t] = m.attrs(attribute.Bool(overflowTopicLabel, true), attribute.String(labelMessageType, t.String()))
	}
}

func (m *Metrics) newOutStats(k outKey, extra ...attribute.KeyValue) *outStats {
	kv := append([]attribute.KeyValue{attribute.String(labelTopic, k.topic), attribute.String(labelGroup, k.group),
		attribute.Bool(labelIsSystem, isSystemTopic(k.topic) || isSystemGroup(k.group))}, extra...)
	return &outStats{attrs: m.attrs(kv...)}
}

func (m *Metrics) newRPCStats(k rpcKey) *rpcStats {
	proto, result := ProtocolRemoting, resultSuccess
	if k.grpc {
		proto = ProtocolGrpc
	}
	if k.oneway {
		result = resultOneway
	}
	return &rpcStats{
		attrs: m.attrs(attribute.String(labelProtocolType, proto),
			attribute.Bool(labelIsLongPolling, k.longPolling),
			attribute.String(labelRequestCode, requestCodeDesc(k.code)),
			attribute.String(labelResponseCode, responseCodeDesc(k.resp)),
			attribute.String(labelResult, result)),
		hist: newHistogram(rpcLatencyBounds),
	}
}

func (m *Metrics) processors() func() []obs {
	if m.src.Processors == nil {
		return nil
	}
	return func() []obs {
		var out []obs
		for name, n := range m.src.Processors() {
			out = append(out, obs{n, m.attrs(attribute.String(labelProcessor, name))})
		}
		return out
	}
}

func (m *Metrics) producers() func() []obs {
	if m.src.Producers == nil {
		return nil
	}
	return func() []obs {
		type key struct{ lang, ver, proto string }
		counts := map[key]int64{}
		for _, c := range m.src.Producers() {
			counts[key{c.Language, c.Version, c.Protocol}]++
		}
		out := make([]obs, 0, len(counts))
		for k, n := range counts {
			out = append(out, obs{n, m.attrs(attribute.String(labelLanguage, k.lang), attribute.String(labelVersion, k.ver),
				attribute.String(labelProtocolType, k.proto))})
		}
		return out
	}
}

func (m *Metrics) consumers() func() []obs {
	if m.src.Consumers == nil {
		return nil
	}
	return func() []obs {
		type key struct{ group, lang, ver, mode, proto string }
		counts := map[key]int64{}
		for _, c := range m.src.Consumers() {
			counts[key{c.Group, c.Language, c.Version, c.ConsumeMode, c.Protocol}]++
		}
		out := make([]obs, 0, len(counts))
		for k, n := range counts {
			out = append(out, obs{n, m.attrs(attribute.String(labelGroup, k.group), attribute.String(labelLanguage, k.lang),
				attribute.String(labelVersion, k.ver), attribute.String(labelConsumeMode, k.mode),
				attribute.String(labelProtocolType, k.proto), attribute.Bool(labelIsSystem, isSystemGroup(k.group)))})
		}
		return out
	}
}

// cache reads a source once per collection for the several gauges that
// read it (their callbacks run in the same collection, within a second).
type cache[T any] struct {
	mu  sync.Mutex
	src func() T
	now func() time.Time
	at  time.Time
	ok  bool
	v   T
}

func newCache[T any](src func() T, now func() time.Time) *cache[T] {
	return &cache[T]{src: src, now: now}
}

func (c *cache[T]) get() (T, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.ok || now.Sub(c.at) > time.Second {
		c.v, c.at, c.ok = c.src(), now, true
	}
	return c.v, now.UnixMilli()
}

type lagCache = cache[[]Lag]

func newLagCache(src func() []Lag, now func() time.Time) *lagCache { return newCache(src, now) }

// lagGauge reads one value of each lag entry; an entry only lite lag made
// is read only by the gauges its lite bits name.
func (m *Metrics) lagGauge(c *lagCache, lite uint8, val func(Lag, int64) int64) func() []obs {
	return func() []obs {
		lags, now := c.get()
		out := make([]obs, 0, len(lags))
		for _, l := range lags {
			if l.lite != 0 && l.lite&lite == 0 {
				continue
			}
			out = append(out, obs{val(l, now), m.attrs(attribute.String(labelGroup, l.Group), attribute.String(labelTopic, l.Topic),
				attribute.Bool(labelIsRetry, l.Retry), attribute.Bool(labelIsSystem, isSystemTopic(l.Topic) || isSystemGroup(l.Group)))})
		}
		return out
	}
}

func (m *Metrics) storeGauges(gauge func(name, unit, desc string, cb func() []obs)) {
	storeAttrs := func(kv ...attribute.KeyValue) attribute.Set {
		return m.attrs(append([]attribute.KeyValue{attribute.String(labelStorageType, storageTypeLocal),
			attribute.String(labelStorageMedium, storageMediumDisk)}, kv...)...)
	}
	if m.src.Store != nil {
		c := newCache(m.src.Store, m.now)
		st := func() StoreStats { v, _ := c.get(); return v }
		one := func(f func(StoreStats) (int64, bool)) func() []obs {
			return func() []obs {
				if v, ok := f(st()); ok {
					return []obs{{v, storeAttrs()}}
				}
				return nil
			}
		}
		gauge(gaugeStorageSize, unitBytes, "Broker storage size", one(func(s StoreStats) (int64, bool) { return s.SizeBytes, s.SizeBytes > 0 }))
		gauge(gaugeFlushBehind, unitBytes, "Broker flush behind bytes", one(func(s StoreStats) (int64, bool) { return s.FlushBehindBytes, true }))
		gauge(gaugeDispatchBehind, unitBytes, "Broker dispatch behind bytes", one(func(s StoreStats) (int64, bool) { return s.DispatchBehindBytes, true }))
		gauge(gaugeMessageReserveTime, unitMillis, "Broker message reserve time", one(func(s StoreStats) (int64, bool) {
			return since(m.now().UnixMilli(), s.EarliestMessageMs), s.EarliestMessageMs > 0
		}))
	}
	if m.src.Timer != nil {
		c := newCache(m.src.Timer, m.now)
		tm := func() TimerStats { v, _ := c.get(); return v }
		one := func(f func(TimerStats) int64) func() []obs {
			return func() []obs { return []obs{{f(tm()), storeAttrs()}} }
		}
		gauge(gaugeTimerEnqueueLag, "", "Timer enqueue messages lag", one(func(t TimerStats) int64 { return t.EnqueueLag }))
		gauge(gaugeTimerEnqueueLatency, unitMillis, "Timer enqueue latency", one(func(t TimerStats) int64 { return t.EnqueueLatencyMs }))
		gauge(gaugeTimerDequeueLag, "", "Timer dequeue messages lag", one(func(t TimerStats) int64 { return t.DequeueLag }))
		gauge(gaugeTimerDequeueLatency, unitMillis, "Timer dequeue latency", one(func(t TimerStats) int64 { return t.DequeueLatencyMs }))
		gauge(gaugeTimerMessageSnapshot, "", "Timer message distribution snapshot, only count timing messages in 24h.", func() []obs {
			t := tm()
			out := make([]obs, 0, len(TimerDistSeconds))
			for i, b := range TimerDistSeconds {
				out = append(out, obs{t.Snapshot[i], storeAttrs(attribute.String(labelTimerBound, strconv.Itoa(b)))})
			}
			return out
		})
	}
}

func (m *Metrics) popGauges(gauge func(name, unit, desc string, cb func() []obs)) {
	if pb := m.src.PopBuffers; pb != nil {
		gauge(gaugePopOffsetBuffer, "", "The number of buffered offset", func() []obs {
			o, _ := pb()
			return []obs{{o, m.attrs()}}
		})
		gauge(gaugePopCheckpointBuffer, "", "The number of buffered checkpoint", func() []obs {
			_, c := pb()
			return []obs{{c, m.attrs()}}
		})
	}
	if rv := m.src.PopRevive; rv != nil {
		// Java records revive-behind messages under pop_revive_lag and
		// revive-behind milliseconds under pop_revive_latency, both with
		// the unit milliseconds (PopMetricsManager).
		gauge(gaugePopReviveLag, unitMillis, "The processing lag of revive topic", func() []obs {
			var out []obs
			for _, r := range rv() {
				out = append(out, obs{r.BehindMsgs, m.attrs(attribute.Int(labelQueueID, int(r.QueueID)))})
			}
			return out
		})
		gauge(gaugePopReviveLatency, unitMillis, "The processing latency of revive topic", func() []obs {
			var out []obs
			for _, r := range rv() {
				out = append(out, obs{r.BehindMs, m.attrs(attribute.Int(labelQueueID, int(r.QueueID)))})
			}
			return out
		})
	}
}
