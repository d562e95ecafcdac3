package store

import (
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// tpsMeter keeps per-second counts over the last minute for the runtime
// info's putTps / getTransferredTps.
type tpsMeter struct {
	mu   sync.Mutex
	sec  int64
	puts [60]int64
	gets [60]int64
}

func newTPSMeter() *tpsMeter { return &tpsMeter{} }

func (m *tpsMeter) advance(now int64) {
	if m.sec == 0 {
		m.sec = now
		return
	}
	for m.sec < now {
		m.sec++
		m.puts[m.sec%60] = 0
		m.gets[m.sec%60] = 0
		if now-m.sec > 60 {
			m.sec = now
			m.puts, m.gets = [60]int64{}, [60]int64{}
		}
	}
}

func (m *tpsMeter) put(n int) { m.putAt(n, time.Now().Unix()) }

// putAt is put at a second already known (an append's store time).
func (m *tpsMeter) putAt(n int, sec int64) {
	m.mu.Lock()
	m.advance(sec)
	m.puts[m.sec%60] += int64(n)
	m.mu.Unlock()
}

func (m *tpsMeter) get(n int) {
	m.mu.Lock()
	m.advance(time.Now().Unix())
	m.gets[m.sec%60] += int64(n)
	m.mu.Unlock()
}

// rates returns the average per second over the last 10 complete seconds.
func (m *tpsMeter) rates() (put, get float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(time.Now().Unix())
	var p, g int64
	for i := int64(1); i <= 10; i++ {
		p += m.puts[(m.sec-i+600)%60]
		g += m.gets[(m.sec-i+600)%60]
	}
	return float64(p) / 10, float64(g) / 10
}

// diskRatio is the used fraction of the file system holding dir, as the
// retention sees it (vfs DiskUsage: df's and Apache's used / (used +
// available)); 0 when unknown.
func diskRatio(dir string) float64 {
	u, err := vfs.OS().DiskUsage(dir)
	if err != nil {
		return 0
	}
	return u.UsedRatio()
}
