package transaction

import (
	"context"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// PendingHalf counts the transactions whose half message is still waiting
// for its END_TRANSACTION, by real topic: the half queue from the scan
// position to its end, less the offsets an op record names, each
// transaction (UNIQ_KEY) once however often the check scan re-appended it.
// It reads at most limit half messages (0: no limit). The broker seeds
// rocketmq_half_messages with it at start (Java persists that count in
// config/transactionMetrics instead).
func (s *Service) PendingHalf(ctx context.Context, limit int) (map[string]int64, error) {
	out := map[string]int64{}
	seen := map[string]bool{}
	off := s.st.snapshot().progress
	maxOff := s.d.Store.MaxOffset(protocol.TransHalfTopic, 0)
	read := 0
	for off < maxOff && (limit <= 0 || read < limit) {
		res, err := s.d.Store.GetMessage(ctx, protocol.TransHalfTopic, 0, off, readBatch, 0, nil)
		if err != nil {
			return out, err
		}
		if len(res.Records) == 0 {
			next := res.NextBeginOffset
			res.Release()
			if next <= off || res.Status == store.OffsetOverflowBadly {
				break
			}
			off = next
			continue
		}
		for i, rec := range res.Records {
			qo := res.QueueOffsets[i]
			off = qo + 1
			read++
			m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
			if err != nil {
				continue
			}
			uniq := txKey(m)
			if seen[uniq] || s.st.classify(qo, uniq) != pending {
				continue
			}
			seen[uniq] = true
			out[m.Property(message.PropertyRealTopic)]++
		}
		res.Release()
	}
	return out, nil
}
