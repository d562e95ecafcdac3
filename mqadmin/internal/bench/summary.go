package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// latencyOf reads a histogram of microseconds.
func latencyOf(h *Histogram) LatencySummary {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Avg:  h.Mean() / 1000,
		P50:  ms(h.Percentile(0.50)),
		P99:  ms(h.Percentile(0.99)),
		P999: ms(h.Percentile(0.999)),
		Max:  ms(h.Max()),
	}
}

// String is the text form printed after the Java lines.
func (l LatencySummary) String() string {
	return fmt.Sprintf("avg %.3f | p50 %.3f | p99 %.3f | p999 %.3f | max %.3f", l.Avg, l.P50, l.P99, l.P999, l.Max)
}

// FlushCheck compares what the producer was told was stored with how far
// the queues' max offsets moved during the run.
type FlushCheck struct {
	Acked    int64  `json:"acked"`    // messages the brokers acknowledged
	Advanced int64  `json:"advanced"` // sum of max offset increases over the topic's queues
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
}

// ProducerSummary is the producer's final result (the --json line).
type ProducerSummary struct {
	Type           string           `json:"type"`
	Topic          string           `json:"topic"`
	Threads        int              `json:"threads"`
	MessageSize    int              `json:"messageSize"`
	BatchSize      int              `json:"batchSize"`
	Async          bool             `json:"async"`
	Rate           float64          `json:"rate,omitempty"` // --rate: sends paced to this many per second
	ElapsedSeconds float64          `json:"elapsedSeconds"`
	SendTotal      int64            `json:"sendTotal"` // requests: success + send failed (Java's "Send Total")
	SendSuccess    int64            `json:"sendSuccess"`
	SendFailed     int64            `json:"sendFailed"`
	ResponseFailed int64            `json:"responseFailed"`
	Messages       int64            `json:"messages"` // messages acknowledged
	TPS            float64          `json:"tps"`      // acknowledged requests per second over the run
	MPS            float64          `json:"mps"`      // acknowledged messages per second over the run
	Latency        LatencySummary   `json:"latencyMs"`
	Status         map[string]int64 `json:"status"` // acknowledged requests by send status
	FlushCheck     *FlushCheck      `json:"flushCheck,omitempty"`
	// LiteTopics is how many lite topics the lite mode sent to.
	LiteTopics int `json:"liteTopics,omitempty"`
}

// ConsumerSummary is the consumer's final result (the --json line).
type ConsumerSummary struct {
	Type           string         `json:"type"`
	Topic          string         `json:"topic"`
	Group          string         `json:"group"`
	ElapsedSeconds float64        `json:"elapsedSeconds"`
	Consumed       int64          `json:"consumed"`
	Failed         int64          `json:"failed"`
	TPS            float64        `json:"tps"`
	B2C            LatencySummary `json:"b2cMs"` // born to consumed
	S2C            LatencySummary `json:"s2cMs"` // stored to consumed
	// LiteTopics is how many lite topics a lite consumer subscribed.
	LiteTopics int `json:"liteTopics,omitempty"`
}

// printText writes the summary lines that follow the Java ones.
func (s ProducerSummary) printText(w io.Writer) {
	fmt.Fprintf(w, "[Summary] Elapsed(s): %.1f | Requests OK: %d | Messages OK: %d | Send Failed: %d | Response Failed: %d | TPS: %.1f | MPS: %.1f\n",
		s.ElapsedSeconds, s.SendSuccess, s.Messages, s.SendFailed, s.ResponseFailed, s.TPS, s.MPS)
	fmt.Fprintf(w, "[Summary] RT(ms): %s\n", s.Latency)
	if len(s.Status) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Status)) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, s.Status[k]))
		}
		fmt.Fprintf(w, "[Summary] Send Status: %s\n", strings.Join(parts, " "))
	}
	if fc := s.FlushCheck; fc != nil {
		verdict := "OK"
		if !fc.OK {
			verdict = "MISMATCH"
		}
		if fc.Error != "" {
			verdict = "ERROR: " + fc.Error
		}
		fmt.Fprintf(w, "[Flush Check] Acked: %d | Max Offsets Advanced: %d | %s\n", fc.Acked, fc.Advanced, verdict)
	}
}

func (s ConsumerSummary) printText(w io.Writer) {
	fmt.Fprintf(w, "[Complete] Consume Total: %d | Consume Fail: %d | Elapsed(s): %.1f | Consume TPS: %.1f\n",
		s.Consumed, s.Failed, s.ElapsedSeconds, s.TPS)
	fmt.Fprintf(w, "[Summary] B2C RT(ms): %s\n", s.B2C)
	fmt.Fprintf(w, "[Summary] S2C RT(ms): %s\n", s.S2C)
}

// writeJSON prints v as one line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
