package protocol

// OffsetWrapper is one queue of a ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	PullOffset     int64 `json:"pullOffset"`
}

// ConsumeStats is a group's progress per queue, the GET_CONSUME_STATS body
// (docs/protocol.md §4.8); encode it with MarshalMQKeyed so the queue keys
// are Java's object keys.
type ConsumeStats struct {
	ConsumeTps  float64              `json:"consumeTps"`
	OffsetTable MQMap[OffsetWrapper] `json:"offsetTable"`
}

// TotalDiff is Java's computeTotalDiff: the sum of brokerOffset −
// consumerOffset.
func (s *ConsumeStats) TotalDiff() int64 {
	var n int64
	for _, w := range s.OffsetTable {
		n += w.BrokerOffset - w.ConsumerOffset
	}
	return n
}
