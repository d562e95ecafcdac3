package dashboard

import (
	"cmp"
	"context"
	"math"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
)

// Sample is one reading of the chart figures.
type Sample struct {
	Time int64 `json:"time"` // ms
	// TPS is each broker address's "name/id" put and get TPS.
	TPS map[string][2]float64 `json:"tps"`
	// Lag is every consumer group's total diff.
	Lag map[string]int64 `json:"lag"`
	// LagErrors are the masters (or clusters) whose stats could not be
	// read: the lag of this sample lacks their queues.
	LagErrors map[string]string `json:"lagErrors,omitempty"`
}

// noValue marks a sample in which a series had no value.
const noValue = math.MinInt64

// sampler keeps the last keep samples, in memory only, as one column per
// series: a group costs 8 bytes a sample, so thousands of groups fit.
type sampler struct {
	mu        sync.Mutex
	keep      int
	times     []int64
	in, out   map[string][]float64 // per broker; NaN: no value
	lag       map[string][]int64   // per group; noValue: none
	lagErrors map[string]string    // of the last sample
}

func newSampler(keep int) *sampler {
	return &sampler{keep: keep, in: map[string][]float64{}, out: map[string][]float64{}, lag: map[string][]int64{}}
}

// column appends v (or, absent, none) to each series of m, starts the
// series of new keys padded with none, and cuts every series to the
// sampler's window; series with no value left are dropped.
func column[V any](m map[string][]V, vals map[string]V, none V, isNone func(V) bool, n, cut int) {
	for k, v := range vals {
		if _, ok := m[k]; !ok {
			m[k] = slices.Repeat([]V{none}, n-1)
		}
		m[k] = append(m[k], v)
	}
	for k, s := range m {
		if len(s) < n {
			s = append(s, none)
		}
		s = s[cut:]
		if !slices.ContainsFunc(s, func(v V) bool { return !isNone(v) }) {
			delete(m, k)
			continue
		}
		m[k] = s
	}
}

func (s *sampler) add(x Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, x.Time)
	n := len(s.times)
	cut := max(n-s.keep, 0)
	in, out := map[string]float64{}, map[string]float64{}
	for b, v := range x.TPS {
		in[b], out[b] = v[0], v[1]
	}
	column(s.in, in, math.NaN(), math.IsNaN, n, cut)
	column(s.out, out, math.NaN(), math.IsNaN, n, cut)
	column(s.lag, x.Lag, int64(noValue), func(v int64) bool { return v == noValue }, n, cut)
	s.times = slices.Clone(s.times[cut:])
	s.lagErrors = x.LagErrors
}

// point is one [time, value] of a chart series.
type point [2]float64

type metricsView struct {
	IntervalMs int64 `json:"intervalMs"`
	Samples    int   `json:"samples"`
	// Groups is how many groups the last sample has a lag for.
	Groups    int                `json:"groups"`
	TPSIn     map[string][]point `json:"tpsIn"`
	TPSOut    map[string][]point `json:"tpsOut"`
	Lag       map[string][]point `json:"lag"`
	LagErrors map[string]string  `json:"lagErrors,omitempty"`
}

func floatPoints(times []int64, vals []float64) []point {
	out := []point{}
	for i, v := range vals {
		if !math.IsNaN(v) {
			out = append(out, point{float64(times[i]), v})
		}
	}
	return out
}

// view returns the TPS series, and the lag series of the top groups by
// their last lag (ties by name) and of the groups named.
func (s *sampler) view(top int, named []string) metricsView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := metricsView{Samples: len(s.times), TPSIn: map[string][]point{}, TPSOut: map[string][]point{}, Lag: map[string][]point{}, LagErrors: s.lagErrors}
	for b, vals := range s.in {
		v.TPSIn[b] = floatPoints(s.times, vals)
	}
	for b, vals := range s.out {
		v.TPSOut[b] = floatPoints(s.times, vals)
	}
	type last struct {
		group string
		lag   int64
	}
	var latest []last
	for g, vals := range s.lag {
		if l := vals[len(vals)-1]; l != noValue {
			latest = append(latest, last{g, l})
		}
	}
	v.Groups = len(latest)
	slices.SortFunc(latest, func(a, b last) int {
		return cmp.Or(cmp.Compare(b.lag, a.lag), cmp.Compare(a.group, b.group))
	})
	chosen := slices.Clone(named)
	for _, l := range latest[:min(top, len(latest))] {
		chosen = append(chosen, l.group)
	}
	for _, g := range chosen {
		vals, ok := s.lag[g]
		if !ok {
			continue
		}
		pts := []point{}
		for i, l := range vals {
			if l != noValue {
				pts = append(pts, point{float64(s.times[i]), float64(l)})
			}
		}
		v.Lag[g] = pts
	}
	return v
}

// Run samples every SampleInterval until ctx is done (the first sample at
// once).
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.SampleInterval)
	defer t.Stop()
	for {
		s.SampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SampleOnce reads the brokers' TPS and every group's lag once, with the
// server's own client (mqadmin's -ak/-sk): a runtime-info request per
// broker address and one GET_BROKER_CONSUME_STATS per master, however
// many groups there are.
func (s *Server) SampleOnce(ctx context.Context) {
	x := Sample{Time: s.cfg.Now().UnixMilli(), TPS: map[string][2]float64{}}
	c := s.base
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		s.log.Debug("dashboard: sample", "err", err)
		return
	}
	clusters := admin.ClusterNames(ci)
	for _, r := range figures.BrokerRows(ctx, c, ci, clusters, s.cfg.Now()) {
		if r.Fetched {
			x.TPS[r.BrokerName+"/"+strconv.FormatInt(r.BrokerID, 10)] = [2]float64{r.InTPS, r.OutTPS}
		}
	}
	lags, errs := figures.GroupLags(ctx, c, ci, clusters)
	x.Lag = lags
	for where, err := range errs {
		if x.LagErrors == nil {
			x.LagErrors = map[string]string{}
		}
		x.LagErrors[where] = err.Error()
		s.log.Debug("dashboard: sample lag", "broker", where, "err", err)
	}
	s.samples.add(x)
}

// metrics answers the chart series: ?top=N (default 10, at most 100)
// groups with the largest lag now, and the groups named by ?group=.
func (s *Server) metrics(r *request) (any, error) {
	q := r.URL.Query()
	top, err := intParam(q, "top", 10, 0, 100)
	if err != nil {
		return nil, err
	}
	named := q["group"]
	if len(named) > 100 {
		return nil, badRequest("at most 100 group parameters")
	}
	v := s.samples.view(top, named)
	v.IntervalMs = s.cfg.SampleInterval.Milliseconds()
	return v, nil
}

// intParam parses the query parameter name as an integer in [lo, hi]; def
// when absent.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s: want %d..%d", name, lo, hi)
	}
	return n, nil
}
