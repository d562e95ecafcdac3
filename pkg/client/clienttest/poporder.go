package clienttest

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// orderReviveQid marks an orderly pop's receipt handles (brokers answer
// reviveQid 999 for order=true).
const orderReviveQid = "999"

// popOrder is the orderly-pop state of one group's queue, as real brokers
// keep it: the offsets of the last pop, which are acked, when each
// becomes visible again, and how often each was handed out before. The
// queue is blocked while an un-acked offset is still invisible.
type popOrder struct {
	popTime   int64
	offsets   []int64
	acked     map[int64]bool
	visibleAt map[int64]int64
	counts    map[int64]int
	next      int64 // where the next pop starts: the first un-acked offset
}

func (o *popOrder) blocked(now int64) bool {
	for _, off := range o.offsets {
		if !o.acked[off] && now < o.visibleAt[off] {
			return true
		}
	}
	return false
}

func (o *popOrder) advance() {
	o.next = o.offsets[len(o.offsets)-1] + 1
	for _, off := range o.offsets {
		if !o.acked[off] {
			o.next = off
			return
		}
	}
}

// popOrderly answers an order=true POP_MESSAGE: every unblocked queue
// (queueId -1) or the one queue hands out its messages from its first
// un-acked offset, with orderCountInfo ("0 qo<q>%<offset> count" per
// message popped before, then "0 <q> min"). Caller holds b.mu.
func (b *Broker) popOrderlyLocked(req *remoting.Command, group, topic string, qid, maxNums int, invisible int64, initMode int32) (*remoting.Command, error) {
	n := b.topics[topic]
	now := b.now().UnixMilli()
	var body []byte
	var starts, offs, counts []string
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	if b.ext.orders == nil {
		b.ext.orders = make(map[string]*popOrder)
	}
	for q := range n {
		if qid >= 0 && q != qid || maxNums == 0 {
			continue
		}
		recs := b.queues[topic][q]
		k := group + "@" + topic + "@" + strconv.Itoa(q)
		prev := b.ext.orders[k]
		if prev != nil && prev.blocked(now) {
			continue
		}
		var start int64
		switch {
		case prev != nil:
			start = prev.next
		case initMode == 1:
			start = int64(len(recs))
		}
		cur := &popOrder{popTime: now, acked: map[int64]bool{}, visibleAt: map[int64]int64{}, counts: map[int64]int{}}
		var list, cnt []string
		lowest := -1
		for off := start; off < int64(len(recs)) && maxNums > 0; off++ {
			body = append(body, recs[off]...)
			cur.offsets = append(cur.offsets, off)
			cur.visibleAt[off] = now + invisible
			list = append(list, strconv.FormatInt(off, 10))
			c := 0
			if prev != nil && slices.Contains(prev.offsets, off) {
				c = prev.counts[off] + 1
				cur.counts[off] = c
				cnt = append(cnt, "0 qo"+strconv.Itoa(q)+"%"+strconv.FormatInt(off, 10)+" "+strconv.Itoa(c))
			}
			if lowest < 0 || c < lowest {
				lowest = c
			}
			maxNums--
		}
		if len(list) == 0 {
			continue
		}
		cur.advance()
		b.ext.orders[k] = cur
		starts = append(starts, "0 "+strconv.Itoa(q)+" "+strconv.FormatInt(start, 10))
		offs = append(offs, "0 "+strconv.Itoa(q)+" "+strings.Join(list, ","))
		counts = append(counts, append(cnt, "0 "+strconv.Itoa(q)+" "+strconv.Itoa(lowest))...)
	}
	if len(body) == 0 {
		return nil, remoting.Errorf(code.PollingTimeout, "no message")
	}
	return popAnswer(req, body, now, invisible, orderReviveQid, map[string]string{
		"restNum":         "0",
		"startOffsetInfo": strings.Join(starts, ";"),
		"msgOffsetInfo":   strings.Join(offs, ";"),
		"orderCountInfo":  strings.Join(counts, ";"),
	}), nil
}

// orderlyReceipt finds the orderly state an ACK or CHANGE_INVISIBLE_TIME
// names: ok false when its handle is not an orderly one. Caller holds
// b.ext.mu.
func (b *Broker) orderlyReceiptLocked(ext map[string]string) (o *popOrder, offset int64, ok bool, err error) {
	f := strings.Fields(ext["extraInfo"])
	if len(f) < 7 || f[3] != orderReviveQid {
		return nil, 0, false, nil
	}
	popTime, _ := strconv.ParseInt(f[1], 10, 64)
	offset, perr := strconv.ParseInt(ext["offset"], 10, 64)
	o = b.ext.orders[ext["consumerGroup"]+"@"+ext["topic"]+"@"+ext["queueId"]]
	if perr != nil || o == nil || o.popTime != popTime || !slices.Contains(o.offsets, offset) {
		return nil, 0, true, remoting.Errorf(code.NoMessage, "not a message of the queue's last orderly pop")
	}
	return o, offset, true, nil
}

// ackOrderlyLocked commits an orderly ack; handled false when the handle
// is not an orderly one. Caller holds b.ext.mu.
func (b *Broker) ackOrderlyLocked(ext map[string]string) (handled bool, err error) {
	o, off, ok, err := b.orderlyReceiptLocked(ext)
	if !ok || err != nil {
		return ok, err
	}
	o.acked[off] = true
	o.advance()
	return true, nil
}

// changeOrderlyLocked moves one orderly message's visible time; the pop
// time stays (later acks name it). Caller holds b.ext.mu.
func (b *Broker) changeOrderlyLocked(req *remoting.Command) (*remoting.Command, bool, error) {
	o, off, ok, err := b.orderlyReceiptLocked(req.ExtFields)
	if !ok || err != nil {
		return nil, ok, err
	}
	d, _ := strconv.ParseInt(req.Ext("invisibleTime"), 10, 64)
	o.visibleAt[off] = b.now().UnixMilli() + d
	resp := remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = map[string]string{
		"popTime":       strconv.FormatInt(o.popTime, 10),
		"invisibleTime": req.Ext("invisibleTime"),
		"reviveQid":     orderReviveQid,
	}
	return resp, true, nil
}
