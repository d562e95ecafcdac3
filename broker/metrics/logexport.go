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
			logPoints[int64](e, m.Name, m.Data)
			logPoints[float64](e, m.Name, m.Data)
		}
	}
	return nil
}

// logPoints writes the points of data when its numbers are N's: one line
// a sum or gauge point, one a histogram point.
func logPoints[N int64 | float64](e logExporter, name string, data metricdata.Aggregation) {
	switch d := data.(type) {
	case metricdata.Sum[N]:
		logValues(e, name, d.DataPoints)
	case metricdata.Gauge[N]:
		logValues(e, name, d.DataPoints)
	case metricdata.Histogram[N]:
		logHistograms(e, name, d.DataPoints)
	}
}

// logValues writes one line a sum or gauge point (slog.Any keeps the kind:
// an int64 is written as Int64, a float64 as Float64).
func logValues[N int64 | float64](e logExporter, name string, pts []metricdata.DataPoint[N]) {
	for _, p := range pts {
		e.line(name, p.Attributes, slog.Any("value", p.Value))
	}
}

// logHistograms writes one line a histogram point: its count and sum.
func logHistograms[N int64 | float64](e logExporter, name string, pts []metricdata.HistogramDataPoint[N]) {
	for _, p := range pts {
		e.line(name, p.Attributes, slog.Uint64("count", p.Count), slog.Any("sum", p.Sum))
	}
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
