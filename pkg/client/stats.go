package client

import (
	"sync"
	"time"
)

// statsSampleEvery is how often consume statistics are sampled; rates are
// reported over the last statsWindow samples (about a minute).
const (
	statsSampleEvery = 10 * time.Second
	statsWindow      = 6
)

// topicCounters are cumulative counts for one topic.
type topicCounters struct {
	pulls, pulledMsgs  int64
	pullRT             time.Duration
	okMsgs, failedMsgs int64
	consumeCalls       int64
	consumeRT          time.Duration
}

// consumeStats backs the statusTable of GET_CONSUMER_RUNNING_INFO (Java's
// ConsumerStatsManager): rates over roughly the last minute.
type consumeStats struct {
	mu      sync.Mutex
	now     map[string]topicCounters
	samples []statsSample // oldest first, at most statsWindow
}

type statsSample struct {
	at       time.Time
	counters map[string]topicCounters
}

func newConsumeStats() *consumeStats {
	return &consumeStats{now: make(map[string]topicCounters), samples: []statsSample{{at: time.Now(), counters: map[string]topicCounters{}}}}
}

func (s *consumeStats) pulled(topic string, rt time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.now[topic]
	tc.pulls++
	tc.pulledMsgs += int64(n)
	tc.pullRT += rt
	s.now[topic] = tc
}

func (s *consumeStats) consumed(topic string, rt time.Duration, n int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.now[topic]
	tc.consumeCalls++
	tc.consumeRT += rt
	if ok {
		tc.okMsgs += int64(n)
	} else {
		tc.failedMsgs += int64(n)
	}
	s.now[topic] = tc
}

// sample remembers the counters now so that rates cover a sliding window.
func (s *consumeStats) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := make(map[string]topicCounters, len(s.now))
	for k, v := range s.now {
		cp[k] = v
	}
	s.samples = append(s.samples, statsSample{at: time.Now(), counters: cp})
	if len(s.samples) > statsWindow {
		s.samples = s.samples[len(s.samples)-statsWindow:]
	}
}

// consumeStatus is Java's ConsumeStatus, fields in fastjson order.
type consumeStatus struct {
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
}

// status returns topic's rates over the window.
func (s *consumeStats) status(topic string) consumeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.now[topic]
	old := s.samples[0]
	prev := old.counters[topic]
	secs := time.Since(old.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	st := consumeStatus{ConsumeFailedMsgs: cur.failedMsgs}
	st.PullTPS = float64(cur.pulledMsgs-prev.pulledMsgs) / secs
	st.ConsumeOKTPS = float64(cur.okMsgs-prev.okMsgs) / secs
	st.ConsumeFailedTPS = float64(cur.failedMsgs-prev.failedMsgs) / secs
	if n := cur.pulls - prev.pulls; n > 0 {
		st.PullRT = float64((cur.pullRT - prev.pullRT).Milliseconds()) / float64(n)
	}
	if n := cur.consumeCalls - prev.consumeCalls; n > 0 {
		st.ConsumeRT = float64((cur.consumeRT - prev.consumeRT).Milliseconds()) / float64(n)
	}
	return st
}
