package dashboard

import (
	"context"
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
	// Lag is each sampled consumer group's total diff.
	Lag map[string]int64 `json:"lag"`
}

// sampler keeps the last keep samples, in memory only.
type sampler struct {
	mu      sync.Mutex
	keep    int
	samples []Sample
}

func newSampler(keep int) *sampler { return &sampler{keep: keep} }

func (s *sampler) add(x Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, x)
	if over := len(s.samples) - s.keep; over > 0 {
		s.samples = slices.Delete(s.samples, 0, over)
	}
}

func (s *sampler) all() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
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

// SampleOnce reads the brokers' TPS and the groups' lag once, with the
// server's own client (mqadmin's -ak/-sk).
func (s *Server) SampleOnce(ctx context.Context) {
	x := Sample{Time: s.cfg.Now().UnixMilli(), TPS: map[string][2]float64{}, Lag: map[string]int64{}}
	c := s.base
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		s.log.Debug("dashboard: sample", "err", err)
		return
	}
	for _, r := range figures.BrokerRows(ctx, c, ci, admin.ClusterNames(ci), s.cfg.Now()) {
		if r.Fetched {
			x.TPS[r.BrokerName+"/"+strconv.FormatInt(r.BrokerID, 10)] = [2]float64{r.InTPS, r.OutTPS}
		}
	}
	if tl, err := c.GetAllTopicList(ctx); err == nil {
		groups := figures.RetryGroups(tl.TopicList)
		slices.Sort(groups)
		groups = slices.Compact(groups)
		if len(groups) > s.cfg.SampleGroups {
			groups = groups[:s.cfg.SampleGroups]
		}
		for _, g := range groups {
			if st, err := c.ExamineConsumeStats(ctx, "", g, ""); err == nil {
				x.Lag[g] = st.TotalDiff()
			}
		}
	}
	s.samples.add(x)
}

func (s *Server) metrics(r *request) (any, error) {
	return map[string]any{"intervalMs": s.cfg.SampleInterval.Milliseconds(), "samples": s.samples.all()}, nil
}
