package schedule

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/pkg/message"
)

// Cancelling a pending timer (Java 5.3.2+ TimerMessageStore, which the
// broker's RECALL_MESSAGE also uses): a timer message to the same topic
// whose TIMER_DEL_UNIQKEY is DeleteKey(topic, uniqKey) of a pending timer
// and whose delivery time falls in that timer's slot (Java floors both to
// timerPrecisionMs) is a cancellation marker. Neither is delivered.
//
// Java matches markers against messages inside one time slot as it
// dequeues it. Here the indexer, meeting a marker, writes a cancellation
// key (t x · deleteKey → the slot's end) in the same batch as the
// marker's own pending key, which it places at the end of the marker's
// slot: a matching timer due in the same slot finds the cancellation key
// when it comes due, and is dropped instead of delivered; when the
// marker's key comes due, the cancellation key goes, in the same deferred
// deletion batch as the marker's key. Keys of a slot sort by CommitLog
// offset, so a message due exactly at the slot end is still met before
// its (later) marker. A marker for another slot cancels nothing (Java).
//
// Restarts: the cancellation key is written and deleted by the same
// batches as the keys around it, and Pebble keeps a prefix of its batches
// across a crash, so a message whose key deletion survived had its
// cancellation survive too, and one whose deletion was lost still finds
// its cancellation key (its marker's deletion, later, was lost as well).
// A cancelled timer is never delivered, also across a restart.

// DeleteKey is the TIMER_DEL_UNIQKEY value that cancels the pending timer
// message uniqKey of topic (Java's TimerMessageStore.buildDeleteKey).
func DeleteKey(realTopic, uniqKey string) string { return realTopic + "+" + uniqKey }

// slotEnd is the end of the timer slot holding ms: Java delivers a timer
// due at ms in the slot (⌈ms/p⌉−1)·p, and a marker matches the messages of
// its own slot, so everything due up to ⌈ms/p⌉·p.
func slotEnd(ms int64, precision time.Duration) int64 {
	p := precision.Milliseconds()
	if p <= 1 || ms <= 0 {
		return ms
	}
	return (ms + p - 1) / p * p
}

func (s *Service) precision() time.Duration { return s.o.Config().TimerPrecisionMs }

// cancellation is what the indexer records for a marker.
type cancellation struct {
	deleteKey string
	slot      int64 // slot end of the marker's delivery time
}

// isCancelled reports whether a pending cancellation names the timer
// message (realTopic, uniqKey) due at dueMs, in the same slot.
func (s *Service) isCancelled(realTopic, uniqKey string, dueMs int64) (bool, error) {
	if !s.mayCancel || uniqKey == "" {
		return false, nil
	}
	v, closer, err := s.db.Get(cancelKey(DeleteKey(realTopic, uniqKey)))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("schedule: read cancellation: %w", err)
	}
	defer closer.Close()
	slot, ok := readU64(v)
	return ok && slot == slotEnd(dueMs, s.precision()), nil
}

// refreshMayCancel looks whether any cancellation is pending: without one,
// deliveries skip the lookup.
func (s *Service) refreshMayCancel() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: cancelPrefix(), UpperBound: kv.PrefixEnd(cancelPrefix())})
	if err != nil {
		return fmt.Errorf("schedule: look for cancellations: %w", err)
	}
	defer it.Close()
	s.mayCancel = it.First()
	return it.Error()
}

// markerOf returns the TIMER_DEL_UNIQKEY of a parked timer record: the
// record cancels rather than delivers. Delay-level messages are never
// markers (Java ignores the property on them).
func markerOf(topic string, props map[string]string) (string, bool) {
	if topic != TimerTopic {
		return "", false
	}
	v, ok := props[message.PropertyTimerDelUniqKey]
	return v, ok
}
