package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/index"
	"github.com/rmqgo/rmq/pkg/message"
)

const (
	// defaultMaxTransferBytes bounds one read when the caller sets no limit
	// (maxTransferBytesOnMessageInMemory).
	defaultMaxTransferBytes = 256 << 10
	// maxExamined bounds consume-queue entries examined by one filtered read
	// (RocketMQ scans at most maxFilterMessageSize/20 entries).
	maxExamined = 800
	readChunk   = 32
)

// GetMessage reads messages from a queue (RocketMQ's getMessage).
func (s *Store) GetMessage(ctx context.Context, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, filter MessageFilter) (*GetResult, error) {
	st, ok := s.cq.State(topic, queueID)
	r := &GetResult{MinOffset: st.Min, MaxOffset: st.Max}
	switch {
	case !ok:
		r.Status, r.NextBeginOffset = NoMatchedLogicQueue, 0
		return r, nil
	case st.Max == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
		return r, nil
	case offset < st.Min:
		r.Status, r.NextBeginOffset = OffsetTooSmall, st.Min
		return r, nil
	case offset == st.Max:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r, nil
	case offset > st.Max:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, st.Max
		return r, nil
	}
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	if maxBytes <= 0 {
		maxBytes = defaultMaxTransferBytes
	}
	// Sized once for the messages the read can return (a pull of 32 grew
	// each slice six times).
	want := int64(min(maxMsgNums, maxExamined))
	want = min(want, st.Max-offset)
	bufs := make([]commitlog.Buffer, 0, want)
	r.Records = make([][]byte, 0, want)
	r.QueueOffsets = make([]int64, 0, want)
	r.release = func() {
		for i := range bufs {
			bufs[i].Release()
		}
		bufs = nil
	}
	minPhy := s.cl.MinOffset()
	byProps := filter != nil
	if _, ok := filter.(TagsOnlyFilter); ok {
		byProps = false
	}
	next := offset
	examined, removed, missing := 0, 0, 0
scan:
	for examined < maxExamined && len(r.Records) < maxMsgNums && next < st.Max {
		if ctxDone(ctx) {
			break
		}
		entries, err := s.cq.Entries(topic, queueID, next, readChunk)
		if err != nil {
			r.Release()
			return nil, err
		}
		if len(entries) == 0 {
			missing++
			break
		}
		for _, e := range entries {
			if e.Offset >= st.Max {
				// Dispatch commits a round's entries before it publishes
				// the queues' new max offsets: an entry past the state read
				// above may already be readable. Returning it would have the
				// client pull past the max the next read may still see, and
				// be told its offset is illegal (PULL_OFFSET_MOVED back to
				// that max: client-go then consumes the message again).
				if e.Offset != next {
					// A hole up to the max (should not happen): skip it,
					// as below.
					missing++
					next = st.Max
				}
				break scan
			}
			if e.Offset != next {
				// A hole (should not happen): skip to the entry we have.
				missing++
			}
			if e.CommitLogOffset < minPhy {
				removed++
				examined++
				next = e.Offset + 1
				continue
			}
			if filter != nil && !filter.MatchTagsCode(e.TagsCode) {
				examined++
				next = e.Offset + 1
				continue
			}
			if len(r.Records) > 0 && r.TotalSize+int(e.Size) > maxBytes {
				break scan
			}
			buf, err := s.cl.Read(e.CommitLogOffset, int(e.Size))
			if err != nil {
				if errors.Is(err, commitlog.ErrOffsetOutOfRange) {
					removed++
					examined++
					next = e.Offset + 1
					continue
				}
				r.Release()
				return nil, fmt.Errorf("store: read %s-%d@%d: %w", topic, queueID, e.Offset, err)
			}
			if byProps {
				v, err := message.ParseView(buf.Bytes(), message.ParseOptions{})
				if err != nil || !filter.MatchProperties(v.Properties()) {
					buf.Release()
					examined++
					next = e.Offset + 1
					continue
				}
			}
			bufs = append(bufs, buf)
			r.Records = append(r.Records, buf.Bytes())
			r.QueueOffsets = append(r.QueueOffsets, e.Offset)
			r.TotalSize += int(e.Size)
			examined++
			next = e.Offset + 1
			if len(r.Records) >= maxMsgNums || examined >= maxExamined {
				break scan
			}
		}
	}
	r.NextBeginOffset = next
	switch {
	case len(r.Records) > 0:
		r.Status = Found
		s.getCount.Add(int64(len(r.Records)))
		s.tps.get(len(r.Records))
	case removed > 0:
		r.Status = MessageWasRemoving
	case missing > 0 && examined == 0:
		r.Status = OffsetFoundNull
	default:
		r.Status = NoMatchedMessage
	}
	return r, nil
}

// MaxOffset is the next offset to be written in a queue.
func (s *Store) MaxOffset(topic string, queueID int32) int64 { return s.cq.MaxOffset(topic, queueID) }

// MinOffset is the smallest offset of a queue.
func (s *Store) MinOffset(topic string, queueID int32) int64 { return s.cq.MinOffset(topic, queueID) }

// SearchOffsetByTime finds the queue offset for a timestamp.
func (s *Store) SearchOffsetByTime(topic string, queueID int32, ts int64, boundary consumequeue.BoundaryType) (int64, error) {
	return s.cq.SearchOffsetByTime(topic, queueID, ts, boundary)
}

// EarliestMessageTime returns the store time of a queue's first message.
func (s *Store) EarliestMessageTime(topic string, queueID int32) int64 {
	st, ok := s.cq.State(topic, queueID)
	if !ok || st.Max <= st.Min {
		return -1
	}
	return s.MessageStoreTime(topic, queueID, st.Min)
}

// MessageStoreTime returns the store time of the message at a queue offset.
func (s *Store) MessageStoreTime(topic string, queueID int32, off int64) int64 {
	e, ok, err := s.cq.Entry(topic, queueID, off)
	if err != nil || !ok {
		return -1
	}
	return e.StoreTimestamp
}

// ReadRecord returns a copy of the stored record at a CommitLog offset.
func (s *Store) ReadRecord(phy int64) ([]byte, error) {
	rec, err := s.cl.ReadRecord(phy)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return append([]byte(nil), rec.View.Bytes()...), nil
}

// spanRead bounds the bytes ReadRecords reads at once for records close
// together.
const spanRead = 1 << 20

// ReadRecords reads the records of entries (a consume queue's, in queue
// order) and calls fn with each one's index and bytes, or with the error
// that kept it from being read whole at its position; rec is valid only
// during the call, and an error fn returns stops the walk. Entries close
// together in the CommitLog (within spanRead, one segment) are read with
// one read: the pop journal's records, replayed up to 256 at a time, are
// mostly adjacent, and one read each was a third of a following slave's
// replay.
func (s *Store) ReadRecords(entries []consumequeue.Entry, fn func(i int, rec []byte, err error) error) error {
	for i := 0; i < len(entries); {
		first := entries[i].CommitLogOffset
		j, end := i, first
		for j < len(entries) {
			e := entries[j]
			if e.CommitLogOffset < first || e.CommitLogOffset+int64(e.Size)-first > spanRead {
				break
			}
			end = max(end, e.CommitLogOffset+int64(e.Size))
			j++
		}
		if j-i > 1 {
			if buf, err := s.cl.Read(first, int(end-first)); err == nil {
				b := buf.Bytes()
				for k := i; k < j; k++ {
					e := entries[k]
					rec := b[e.CommitLogOffset-first : e.CommitLogOffset-first+int64(e.Size)]
					if err := fn(k, rec, checkRecord(rec, e.CommitLogOffset)); err != nil {
						buf.Release()
						return err
					}
				}
				buf.Release()
				i = j
				continue
			}
			// Across a segment boundary, or partly gone: one at a time.
		}
		e := entries[i]
		buf, err := s.cl.Read(e.CommitLogOffset, int(e.Size))
		var rec []byte
		if err == nil {
			rec = buf.Bytes()
			err = checkRecord(rec, e.CommitLogOffset)
		}
		ferr := fn(i, rec, err)
		buf.Release()
		if ferr != nil {
			return ferr
		}
		i++
	}
	return nil
}

// checkRecord reports whether rec is one whole record that names off as
// its position.
func checkRecord(rec []byte, off int64) error {
	v, err := message.ParseView(rec, message.ParseOptions{})
	if err != nil {
		return fmt.Errorf("store: record at %d: %w", off, err)
	}
	if len(v.Bytes()) != len(rec) || v.PhysicalOffset() != off {
		return fmt.Errorf("store: record at %d: %w (size %d of %d, claims offset %d)", off, commitlog.ErrCorrupt, len(v.Bytes()), len(rec), v.PhysicalOffset())
	}
	return nil
}

// QueryMessage finds messages by key (newest first).
func (s *Store) QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*QueryResult, error) {
	kind := index.KindKey
	if uniq {
		kind = index.KindUniqKey
	}
	hits, err := index.Query(s.db.DB, topic, kind, key, begin, end, maxNum)
	if err != nil {
		return nil, err
	}
	res := &QueryResult{IndexLastUpdatePhyOffset: s.cq.DispatchedOffset()}
	minPhy := s.cl.MinOffset()
	for _, h := range hits {
		if h.PhyOffset < minPhy {
			continue
		}
		rec, err := s.ReadRecord(h.PhyOffset)
		if err != nil {
			continue
		}
		res.Records = append(res.Records, rec)
		if h.StoreTime > res.IndexLastUpdateTimestamp {
			res.IndexLastUpdateTimestamp = h.StoreTime
		}
	}
	return res, nil
}
