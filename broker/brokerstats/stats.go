// Package brokerstats keeps the broker's per-key call statistics the way
// Apache's BrokerStatsManager does (common/stats/StatsItem.java,
// StatsItemSet.java): a value and a call count per (stats name, key),
// sampled every 10 s (the last minute: 7 samples), every 10 min (the last
// hour: 7) and every hour (the last day: 25). VIEW_BROKER_STATS_DATA (315,
// mqadmin statsAll) reads them.
package brokerstats

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats names (Apache's BrokerStatsManager / Stats constants) the broker
// records.
const (
	TopicPutNums = "TOPIC_PUT_NUMS" // key: topic; value: messages
	TopicPutSize = "TOPIC_PUT_SIZE" // key: topic; value: body bytes
	GroupGetNums = "GROUP_GET_NUMS" // key: topic@group; value: messages
	GroupGetSize = "GROUP_GET_SIZE" // key: topic@group; value: bytes
)

// Sampling periods and how many samples each window keeps (Apache's).
const (
	minuteEvery = 10 * time.Second
	hourEvery   = 10 * time.Minute
	dayEvery    = time.Hour
	minuteKeep  = 7
	hourKeep    = 7
	dayKeep     = 25
)

// Snapshot is one window of an item (Apache's BrokerStatsItem): the value
// added in it, per second, and per call. Fields are in fastjson's order.
type Snapshot struct {
	Avgpt float64 `json:"avgpt"`
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
}

// Data is the VIEW_BROKER_STATS_DATA body (Apache's BrokerStatsData).
// Fields are in fastjson's (sorted) order.
type Data struct {
	StatsDay    Snapshot `json:"statsDay"`
	StatsHour   Snapshot `json:"statsHour"`
	StatsMinute Snapshot `json:"statsMinute"`
}

type sample struct {
	at           int64 // unix milliseconds
	times, value int64
}

type item struct {
	value, times atomic.Int64

	mu                sync.Mutex
	minute, hour, day []sample
}

// Manager holds the items. The zero value is not usable: call New.
type Manager struct {
	now func() time.Time

	mu    sync.RWMutex
	items map[string]map[string]*item // stats name → key → item
}

// New returns a Manager reading time from now (nil: time.Now).
func New(now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{now: now, items: map[string]map[string]*item{}}
}

// Add records value (and times calls) for key under the stats name.
func (m *Manager) Add(name, key string, value, times int64) {
	m.mu.RLock()
	it := m.items[name][key]
	m.mu.RUnlock()
	if it == nil {
		m.mu.Lock()
		if m.items[name] == nil {
			m.items[name] = map[string]*item{}
		}
		if it = m.items[name][key]; it == nil {
			it = &item{}
			m.items[name][key] = it
		}
		m.mu.Unlock()
	}
	it.value.Add(value)
	it.times.Add(times)
}

// TopicPut records a stored send: msgs messages of size bytes.
func (m *Manager) TopicPut(topic string, msgs, size int) {
	m.Add(TopicPutNums, topic, int64(msgs), 1)
	m.Add(TopicPutSize, topic, int64(size), 1)
}

// GroupGet records a pull that found msgs messages (size bytes).
func (m *Manager) GroupGet(group, topic string, msgs, size int) {
	key := topic + "@" + group
	m.Add(GroupGetNums, key, int64(msgs), 1)
	m.Add(GroupGetSize, key, int64(size), 1)
}

func (m *Manager) all() []*item {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*item
	for _, keys := range m.items {
		for _, it := range keys {
			out = append(out, it)
		}
	}
	return out
}

// take appends the item's current totals to a window, first with a zero
// sample one period back when the window is empty (as Apache's sampling),
// keeping at most keep samples.
func (it *item) take(w *[]sample, now int64, period time.Duration, keep int) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(*w) == 0 {
		*w = append(*w, sample{at: now - period.Milliseconds()})
	}
	*w = append(*w, sample{at: now, times: it.times.Load(), value: it.value.Load()})
	if len(*w) > keep {
		*w = (*w)[len(*w)-keep:]
	}
}

// SampleMinute takes the 10-second sample of every item.
func (m *Manager) SampleMinute() {
	now := m.now().UnixMilli()
	for _, it := range m.all() {
		it.take(&it.minute, now, minuteEvery, minuteKeep)
	}
}

// SampleHour takes the 10-minute sample of every item.
func (m *Manager) SampleHour() {
	now := m.now().UnixMilli()
	for _, it := range m.all() {
		it.take(&it.hour, now, hourEvery, hourKeep)
	}
}

// SampleDay takes the hourly sample of every item.
func (m *Manager) SampleDay() {
	now := m.now().UnixMilli()
	for _, it := range m.all() {
		it.take(&it.day, now, dayEvery, dayKeep)
	}
}

// Run samples on Apache's schedule (each window at once, then every
// period) until stop is closed.
func (m *Manager) Run(stop <-chan struct{}) {
	m.SampleMinute()
	m.SampleHour()
	m.SampleDay()
	tm, th, td := time.NewTicker(minuteEvery), time.NewTicker(hourEvery), time.NewTicker(dayEvery)
	defer tm.Stop()
	defer th.Stop()
	defer td.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tm.C:
			m.SampleMinute()
		case <-th.C:
			m.SampleHour()
		case <-td.C:
			m.SampleDay()
		}
	}
}

// compute is StatsItem.computeStatsData over one window.
func compute(w []sample) Snapshot {
	if len(w) == 0 {
		return Snapshot{}
	}
	first, last := w[0], w[len(w)-1]
	s := Snapshot{Sum: last.value - first.value}
	if d := last.at - first.at; d > 0 {
		s.Tps = float64(s.Sum) * 1000 / float64(d)
	}
	if t := last.times - first.times; t > 0 {
		s.Avgpt = float64(s.Sum) / float64(t)
	}
	return s
}

// View returns an item's three windows; false when nothing was recorded
// for it.
func (m *Manager) View(name, key string) (Data, bool) {
	m.mu.RLock()
	it := m.items[name][key]
	m.mu.RUnlock()
	if it == nil {
		return Data{}, false
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return Data{StatsMinute: compute(it.minute), StatsHour: compute(it.hour), StatsDay: compute(it.day)}, true
}
