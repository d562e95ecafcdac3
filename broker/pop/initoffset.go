package pop

import (
	"strings"

	"github.com/rmqgo/rmq/broker/internal/sysmem"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Init modes of PopMessageRequestHeader.initMode (Java's ConsumeInitMode).
const (
	InitModeMin = 0
	InitModeMax = 1
)

// hotRatio is Java's accessMessageInMemoryMaxRatio (40% of RAM).
const hotRatio = 0.4

func defaultHotBytes() int64 {
	if m := sysmem.Total(); m > 0 {
		return int64(float64(m) * hotRatio)
	}
	return 1 << 30
}

// InitOffset is where a group without a committed offset starts popping a
// queue (Java's PopMessageProcessor.getInitOffset): the queue's min offset
// in MIN mode and for retry topics; in MAX mode the last message (max−1),
// or 0 when the queue still starts at 0 and its first message is recent
// enough to be in memory (initPopOffsetByCheckMsgInMem), so that the first
// messages of a new queue are not skipped. hotBytes is how far behind the
// CommitLog's end "in memory" reaches. Lite topics reuse it for LMQs.
func InitOffset(st *store.Store, topic string, qid int32, mode int32, checkInMem bool, hotBytes int64) int64 {
	if mode == InitModeMin || strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) {
		return max(st.MinOffset(topic, qid), 0)
	}
	if checkInMem && st.MinOffset(topic, qid) <= 0 && inMemory(st, topic, qid, 0, hotBytes) {
		return 0
	}
	return max(st.MaxOffset(topic, qid)-1, 0)
}

// inMemory is Java's checkInMemByConsumeOffset: the message at offset lies
// within hotBytes of the CommitLog's end.
func inMemory(st *store.Store, topic string, qid int32, offset, hotBytes int64) bool {
	e, ok, err := st.ConsumeQueue().Entry(topic, qid, offset)
	if err != nil || !ok {
		return false
	}
	return st.CommitLog().MaxOffset()-e.CommitLogOffset <= hotBytes
}
