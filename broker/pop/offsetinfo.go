package pop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/pop/popcodec"
)

// offsetInfo builds the pop response's startOffsetInfo, msgOffsetInfo and
// orderCountInfo headers: one entry per popped queue, ';'-separated
// (Java's ExtraInfoUtil.build*Info).
type offsetInfo struct {
	start, msg, count strings.Builder
}

func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteByte(';')
	}
}

// addQueue records one popped queue: its retry flag, id, the pop's start
// offset and the offsets of the returned messages.
func (o *offsetInfo) addQueue(topic string, qid int32, start int64, offsets []int64) {
	flag := popcodec.RetryFlag(topic)
	sep(&o.start)
	fmt.Fprintf(&o.start, "%s %d %d", flag, qid, start)
	sep(&o.msg)
	fmt.Fprintf(&o.msg, "%s %d ", flag, qid)
	for i, off := range offsets {
		if i > 0 {
			o.msg.WriteByte(',')
		}
		o.msg.WriteString(strconv.FormatInt(off, 10))
	}
}

// addOffsetCount is one message's consume count ("qo<qid>%<offset>").
func (o *offsetInfo) addOffsetCount(topic string, qid int32, offset int64, count int) {
	sep(&o.count)
	fmt.Fprintf(&o.count, "%s qo%d%%%d %d", popcodec.RetryFlag(topic), qid, offset, count)
}

// addQueueCount is the queue's minimum consume count.
func (o *offsetInfo) addQueueCount(topic string, qid int32, count int) {
	sep(&o.count)
	fmt.Fprintf(&o.count, "%s %d %d", popcodec.RetryFlag(topic), qid, count)
}
