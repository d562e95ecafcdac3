package metrics

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// logExporter is metricsExporterType=LOG: every
// metricLoggingExporterIntervalInMills each data point is written to the
// broker's log, one line a series (Apache's LoggingMetricExporter writes
// them to its metrics log file).
type logExporter struct{ log *slog.Logger }

func (logExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (logExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e logExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Int64("value", p.Value))
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Float64("value", p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Int64("value", p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Float64("value", p.Value))
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Uint64("count", p.Count), slog.Int64("sum", p.Sum))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					e.line(m.Name, p.Attributes, slog.Uint64("count", p.Count), slog.Float64("sum", p.Sum))
				}
			}
		}
	}
	return nil
}

func (e logExporter) line(name string, set attribute.Set, value ...slog.Attr) {
	labels := make([]any, 0, set.Len())
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		labels = append(labels, slog.String(string(kv.Key), kv.Value.Emit()))
	}
	args := []any{slog.String("metric", name), slog.Group("labels", labels...)}
	for _, v := range value {
		args = append(args, v)
	}
	e.log.Info("metric", args...)
}

func (logExporter) ForceFlush(context.Context) error { return nil }
func (logExporter) Shutdown(context.Context) error   { return nil }
