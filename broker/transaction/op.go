package transaction

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Op records (Java's TransactionalMessageUtil): a message in
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 tagged "d" whose body lists half queue
// offsets, each followed by ",".
const (
	opTag       = "d"
	opSeparator = ','
	// defaultOpMsgMaxSize bounds one op body (transactionOpMsgMaxSize).
	defaultOpMsgMaxSize = 4096
)

// appendOpBody appends "o," for each offset.
func appendOpBody(dst []byte, offsets []int64) []byte {
	for _, o := range offsets {
		dst = strconv.AppendInt(dst, o, 10)
		dst = append(dst, opSeparator)
	}
	return dst
}

// parseOpBody reads the offsets of an op body, skipping what is not a
// number (Java logs and skips such items too).
func parseOpBody(b []byte) []int64 {
	var out []int64
	for _, item := range strings.Split(string(b), string(opSeparator)) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if n, err := strconv.ParseInt(item, 10, 64); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	return out
}

// chunkOffsets splits offsets into bodies of at most maxSize bytes (at least
// one offset per body).
func chunkOffsets(offsets []int64, maxSize int) [][]byte {
	if maxSize <= 0 {
		maxSize = defaultOpMsgMaxSize
	}
	var out [][]byte
	var cur []byte
	for _, o := range offsets {
		item := strconv.AppendInt(nil, o, 10)
		item = append(item, opSeparator)
		if len(cur) > 0 && len(cur)+len(item) > maxSize {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, item...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// opWriter writes op records with group commit: callers that arrive while
// a write is in flight are written together by the caller in flight, so
// concurrent END_TRANSACTIONs share op messages without waiting for a timer.
// Every caller returns once its offsets are stored (or failed).
type opWriter struct {
	put func(ctx context.Context, offsets []int64) error

	mu    sync.Mutex
	queue []*opReq
	busy  bool
}

type opReq struct {
	offsets []int64
	done    chan error
}

func (w *opWriter) write(ctx context.Context, offsets []int64) error {
	if len(offsets) == 0 {
		return nil
	}
	req := &opReq{offsets: offsets, done: make(chan error, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, req)
	if w.busy {
		w.mu.Unlock()
		return <-req.done
	}
	w.busy = true
	for len(w.queue) > 0 {
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		var all []int64
		for _, r := range batch {
			all = append(all, r.offsets...)
		}
		// The leader's context bounds the write; followers wait for it.
		err := w.put(context.WithoutCancel(ctx), all)
		for _, r := range batch {
			r.done <- err
		}
		w.mu.Lock()
	}
	w.busy = false
	w.mu.Unlock()
	return <-req.done
}

// opMessage builds one op message.
func (s *Service) opMessage(body []byte) *message.Message {
	host := s.storeHost()
	return &message.Message{
		Topic:         protocol.TransOpHalfTopic,
		QueueID:       0,
		Body:          body,
		Properties:    map[string]string{message.PropertyTags: opTag},
		BornTimestamp: s.now().UnixMilli(),
		BornHost:      host,
		StoreHost:     host,
	}
}

// putOps stores op messages naming offsets.
func (s *Service) putOps(ctx context.Context, offsets []int64) error {
	for _, body := range chunkOffsets(offsets, s.d.Config().TransactionOpMsgMaxSize) {
		if _, err := s.d.Store.PutMessage(ctx, s.opMessage(body)); err != nil && !isStored(err) {
			return fmt.Errorf("write op record: %w", err)
		}
	}
	return nil
}

// writeOps writes op records for offsets and marks them done.
func (s *Service) writeOps(ctx context.Context, offsets []int64) error {
	if err := s.ops.write(ctx, offsets); err != nil {
		return err
	}
	s.st.markDone(offsets)
	return nil
}
