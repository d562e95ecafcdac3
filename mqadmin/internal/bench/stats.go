package bench

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// The report lines are Apache's benchmark tools' format strings, verbatim
// (org.apache.rocketmq.example.benchmark.Producer / BatchProducer /
// Consumer), so scripts that parse their output keep working.
const (
	producerLineFormat      = "Current Time: %s | Send TPS: %d | Max RT(ms): %d | Average RT(ms): %7.3f | Send Failed: %d | Response Failed: %d\n"
	producerCompleteFormat  = "[Complete] Send Total: %d | Send TPS: %d | Max RT(ms): %d | Average RT(ms): %7.3f | Send Failed: %d | Response Failed: %d\n"
	producerCompleteShort   = "[Complete] Send Total: %d Send Failed: %d Response Failed: %d\n"
	batchProducerLineFormat = "Current Time: %s | Send TPS: %d | Send MPS: %d | Max RT(ms): %d | Average RT(ms): %7.3f | Average Message RT(ms): %7.3f | Send Failed: %d | Send Message Failed: %d\n"
	consumerLineFormat      = "Current Time: %s | Consume TPS: %d | AVG(B2C) RT(ms): %7.3f | AVG(S2C) RT(ms): %7.3f | MAX(B2C) RT(ms): %d | MAX(S2C) RT(ms): %d | Consume Fail: %d\n"
)

// windowSize is how many 1-second snapshots the tools keep: rates are
// computed between the oldest and newest of them.
const windowSize = 10

// JavaTime formats t as UtilAll.timeMillisToHumanString2:
// "yyyy-MM-dd HH:mm:ss,SSS" in local time.
func JavaTime(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05,000")
}

// perSecond is Java's (long) ((delta / (double) millis) * 1000).
func perSecond(delta int64, elapsed time.Duration) int64 {
	ms := elapsed.Milliseconds()
	if ms <= 0 {
		return 0
	}
	return int64(float64(delta) / float64(ms) * 1000)
}

// ratioMS divides a microsecond total by a count, in milliseconds. Java
// prints NaN for 0/0 and so do we (%7.3f renders it the same way).
func ratioMS(totalMicros, n int64) float64 {
	if n == 0 {
		if totalMicros == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	return float64(totalMicros) / 1000 / float64(n)
}

// window keeps the last windowSize snapshots.
type window[S any] struct{ snaps []S }

func (w *window[S]) add(s S) {
	w.snaps = append(w.snaps, s)
	if len(w.snaps) > windowSize {
		w.snaps = w.snaps[1:]
	}
}

func (w *window[S]) full() bool { return len(w.snaps) >= windowSize }

func (w *window[S]) ends() (S, S) { return w.snaps[0], w.snaps[len(w.snaps)-1] }

// maxCAS raises m to v.
func maxCAS(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// ProducerStats are the producer's counters (Java's StatsBenchmarkProducer
// and StatsBenchmarkBatchProducer), with latency in microseconds.
type ProducerStats struct {
	SendRequestSuccess     atomic.Int64
	SendRequestFailed      atomic.Int64
	ReceiveResponseSuccess atomic.Int64
	ReceiveResponseFailed  atomic.Int64
	SendMessageSuccess     atomic.Int64 // messages (batch mode)
	SendMessageFailed      atomic.Int64 // messages (batch mode)
	RTTotalMicros          atomic.Int64
	MaxRTMicros            atomic.Int64
	Latency                Histogram
}

// Success records a delivered request that took rt and carried n messages.
func (s *ProducerStats) Success(rt time.Duration, n int) {
	s.SendRequestSuccess.Add(1)
	s.ReceiveResponseSuccess.Add(1)
	s.SendMessageSuccess.Add(int64(n))
	us := rt.Microseconds()
	s.RTTotalMicros.Add(us)
	maxCAS(&s.MaxRTMicros, us)
	s.Latency.Record(us)
}

// ProducerSnapshot is one point of the producer counters.
type ProducerSnapshot struct {
	At                                               time.Time
	SendSuccess, SendFailed, RespSuccess, RespFailed int64
	MsgSuccess, MsgFailed, RTMicros                  int64
}

// Snapshot reads the counters.
func (s *ProducerStats) Snapshot(at time.Time) ProducerSnapshot {
	return ProducerSnapshot{
		At:          at,
		SendSuccess: s.SendRequestSuccess.Load(),
		SendFailed:  s.SendRequestFailed.Load(),
		RespSuccess: s.ReceiveResponseSuccess.Load(),
		RespFailed:  s.ReceiveResponseFailed.Load(),
		MsgSuccess:  s.SendMessageSuccess.Load(),
		MsgFailed:   s.SendMessageFailed.Load(),
		RTMicros:    s.RTTotalMicros.Load(),
	}
}

// ProducerLine is Producer's periodic line between two snapshots.
func ProducerLine(now time.Time, begin, end ProducerSnapshot, maxRTMicros int64) string {
	tps := perSecond(end.RespSuccess-begin.RespSuccess, end.At.Sub(begin.At))
	avg := ratioMS(end.RTMicros-begin.RTMicros, end.RespSuccess-begin.RespSuccess)
	return fmt.Sprintf(producerLineFormat, JavaTime(now), tps, maxRTMicros/1000, avg, end.SendFailed, end.RespFailed)
}

// ProducerComplete is Producer's final line: over the last window when
// there is one (more than one snapshot), else the short form.
func ProducerComplete(snaps []ProducerSnapshot, total ProducerSnapshot, maxRTMicros int64) string {
	sent := total.SendSuccess + total.SendFailed
	if len(snaps) <= 1 {
		return fmt.Sprintf(producerCompleteShort, sent, total.SendFailed, total.RespFailed)
	}
	begin, end := snaps[0], snaps[len(snaps)-1]
	tps := perSecond(end.RespSuccess-begin.RespSuccess, end.At.Sub(begin.At))
	avg := ratioMS(end.RTMicros-begin.RTMicros, end.RespSuccess-begin.RespSuccess)
	return fmt.Sprintf(producerCompleteFormat, sent, tps, maxRTMicros/1000, avg, end.SendFailed, end.RespFailed)
}

// BatchProducerLine is BatchProducer's periodic line.
func BatchProducerLine(now time.Time, begin, end ProducerSnapshot, maxRTMicros int64) string {
	elapsed := end.At.Sub(begin.At)
	reqs := end.SendSuccess - begin.SendSuccess
	msgs := end.MsgSuccess - begin.MsgSuccess
	rt := end.RTMicros - begin.RTMicros
	return fmt.Sprintf(batchProducerLineFormat, JavaTime(now), perSecond(reqs, elapsed), perSecond(msgs, elapsed),
		maxRTMicros/1000, ratioMS(rt, reqs), ratioMS(rt, msgs), end.SendFailed, end.MsgFailed)
}

// ConsumerStats are the consumer's counters (Java's StatsBenchmarkConsumer).
// Born-to-consumer and store-to-consumer times are in milliseconds, as the
// message timestamps are.
type ConsumerStats struct {
	Received     atomic.Int64
	B2CTotalMS   atomic.Int64
	S2CTotalMS   atomic.Int64
	Failed       atomic.Int64
	B2CMaxMS     atomic.Int64 // reset at every report, as Java
	S2CMaxMS     atomic.Int64 // reset at every report, as Java
	B2CLatency   Histogram    // microseconds (ms × 1000)
	S2CLatency   Histogram
	maxB2CEverMS atomic.Int64
	maxS2CEverMS atomic.Int64
}

// Consumed records one message seen at now.
func (s *ConsumerStats) Consumed(now time.Time, bornMS, storeMS int64, failed bool) {
	nowMS := now.UnixMilli()
	b2c, s2c := nowMS-bornMS, nowMS-storeMS
	s.Received.Add(1)
	s.B2CTotalMS.Add(b2c)
	s.S2CTotalMS.Add(s2c)
	maxCAS(&s.B2CMaxMS, b2c)
	maxCAS(&s.S2CMaxMS, s2c)
	maxCAS(&s.maxB2CEverMS, b2c)
	maxCAS(&s.maxS2CEverMS, s2c)
	s.B2CLatency.Record(b2c * 1000)
	s.S2CLatency.Record(s2c * 1000)
	if failed {
		s.Failed.Add(1)
	}
}

// ConsumerSnapshot is one point of the consumer counters.
type ConsumerSnapshot struct {
	At                             time.Time
	Received, B2CMS, S2CMS, Failed int64
}

// Snapshot reads the counters.
func (s *ConsumerStats) Snapshot(at time.Time) ConsumerSnapshot {
	return ConsumerSnapshot{At: at, Received: s.Received.Load(), B2CMS: s.B2CTotalMS.Load(), S2CMS: s.S2CTotalMS.Load(), Failed: s.Failed.Load()}
}

// ConsumerLine is Consumer's periodic line; like Java it resets the
// maxima it reports.
func (s *ConsumerStats) ConsumerLine(now time.Time, begin, end ConsumerSnapshot) string {
	n := end.Received - begin.Received
	tps := perSecond(n, end.At.Sub(begin.At))
	b2c := ratioMS((end.B2CMS-begin.B2CMS)*1000, n)
	s2c := ratioMS((end.S2CMS-begin.S2CMS)*1000, n)
	b2cMax, s2cMax := s.B2CMaxMS.Swap(0), s.S2CMaxMS.Swap(0)
	return fmt.Sprintf(consumerLineFormat, JavaTime(now), tps, b2c, s2c, b2cMax, s2cMax, end.Failed-begin.Failed)
}
