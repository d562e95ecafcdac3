package statictopic

import (
	"context"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// relay answers req with a forwarded request's response.
func relay(req, resp *remoting.Command) *remoting.Command {
	out := remoting.NewResponse(req, resp.Code, resp.Remark)
	out.ExtFields = cloneExt(resp.ExtFields)
	out.Body = resp.Body
	return out
}

// queueOf parses topic and queueId and builds the logic queue context;
// ok=false means "not a static request, let inner answer".
func (s *Service) queueOf(req *remoting.Command) (queueCtx, *protocol.Fields, bool, error) {
	d := s.mapped(req, "topic")
	if d == nil {
		return queueCtx{}, nil, false, nil
	}
	f := protocol.FieldsOf(req.ExtFields)
	qid := f.Int32("queueId")
	if f.Err() != nil {
		return queueCtx{}, nil, false, nil
	}
	qc, err := s.queue(d, qid)
	return qc, f, true, err
}

// staticQueue answers requests on a static topic's logic queue with h and
// leaves all others (and unparsable queue ids) to inner.
func (s *Service) staticQueue(inner remoting.Handler, h func(ctx context.Context, ch *remoting.Channel, req *remoting.Command, qc queueCtx, f *protocol.Fields) (*remoting.Command, error)) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		qc, f, ok, err := s.queueOf(req)
		if !ok {
			return inner(ctx, ch, req)
		}
		if err != nil {
			return nil, err
		}
		return h(ctx, ch, req, qc, f)
	}
}

// staticValue is a staticQueue handler whose answer is the one number v
// computes, in the response header field named field.
func (s *Service) staticValue(inner remoting.Handler, field string, v func(ctx context.Context, req *remoting.Command, qc queueCtx, f *protocol.Fields) (int64, error)) remoting.Handler {
	return s.staticQueue(inner, func(ctx context.Context, _ *remoting.Channel, req *remoting.Command, qc queueCtx, f *protocol.Fields) (*remoting.Command, error) {
		x, err := v(ctx, req, qc, f)
		if err != nil {
			return nil, err
		}
		return offsetResponse(req, field, x), nil
	})
}

// physMax and physMin read a segment's physical bounds, locally or from
// the broker that holds it.
func (s *Service) physMax(ctx context.Context, req *remoting.Command, qc queueCtx, it *item) (int64, error) {
	if it.Bname == s.me {
		return max(s.d.Store.MaxOffset(qc.topic, int32(it.QueueID)), 0), nil
	}
	return s.remoteOffset(ctx, asCode(req, code.GetMaxOffset), it, nil, "offset")
}

func (s *Service) physMin(ctx context.Context, req *remoting.Command, qc queueCtx, it *item) (int64, error) {
	if it.Bname == s.me {
		return max(s.d.Store.MinOffset(qc.topic, int32(it.QueueID)), 0), nil
	}
	return s.remoteOffset(ctx, asCode(req, code.GetMinOffset), it, nil, "offset")
}

// asCode reuses a request's header (topic, RPC fields) for another code.
func asCode(req *remoting.Command, c int32) *remoting.Command {
	if req.Code == c {
		return req
	}
	ext := map[string]string{"topic": req.ExtFields["topic"]}
	for _, k := range []string{"ns", "nsd"} {
		if v, ok := req.ExtFields[k]; ok {
			ext[k] = v
		}
	}
	return remoting.NewRequest(c, ext, nil)
}

// logicMax is the logic max offset of a queue (docs/static-topics.md §7.3): the latest decided
// segment's physical max, translated.
func (s *Service) logicMax(ctx context.Context, req *remoting.Command, qc queueCtx) (int64, error) {
	m := latestDecided(qc.items)
	if m == nil {
		return 0, remoting.Errorf(code.SystemError, "%s-%d: no decided mapping item", qc.topic, qc.logicID)
	}
	p, err := s.physMax(ctx, req, qc, m)
	if err != nil {
		return 0, err
	}
	return strictLogic(m, p), nil
}

// logicMin is the logic min offset (docs/static-topics.md §7.4).
func (s *Service) logicMin(ctx context.Context, req *remoting.Command, qc queueCtx) (int64, error) {
	ea := earliestDecided(qc.items)
	if ea == nil {
		return 0, remoting.Errorf(code.SystemError, "%s-%d: no decided mapping item", qc.topic, qc.logicID)
	}
	p, err := s.physMin(ctx, req, qc, ea)
	if err != nil {
		return 0, err
	}
	return looseLogic(ea, p), nil
}

// getMaxOffset is GET_MAX_OFFSET (30, docs/static-topics.md §7.3).
func (s *Service) getMaxOffset(inner remoting.Handler) remoting.Handler {
	return s.staticValue(inner, "offset", func(ctx context.Context, req *remoting.Command, qc queueCtx, _ *protocol.Fields) (int64, error) {
		return s.logicMax(ctx, req, qc)
	})
}

// getMinOffset is GET_MIN_OFFSET (31, docs/static-topics.md §7.4).
func (s *Service) getMinOffset(inner remoting.Handler) remoting.Handler {
	return s.staticValue(inner, "offset", func(ctx context.Context, req *remoting.Command, qc queueCtx, _ *protocol.Fields) (int64, error) {
		return s.logicMin(ctx, req, qc)
	})
}

// earliestTime is the store time of a segment's first retained message.
func (s *Service) earliestTime(ctx context.Context, req *remoting.Command, qc queueCtx, it *item) (int64, error) {
	if it.Bname == s.me {
		return s.d.Store.EarliestMessageTime(qc.topic, int32(it.QueueID)), nil
	}
	return s.remoteOffset(ctx, asCode(req, code.GetEarliestMsgStoreTime), it, nil, "timestamp")
}

// getEarliestMsgStoreTime is GET_EARLIEST_MSG_STORETIME (32, docs/static-topics.md §7.6), read
// where the earliest segment lives, with its physical queue id.
func (s *Service) getEarliestMsgStoreTime(inner remoting.Handler) remoting.Handler {
	return s.staticValue(inner, "timestamp", func(ctx context.Context, req *remoting.Command, qc queueCtx, _ *protocol.Fields) (int64, error) {
		ea := earliestDecided(qc.items)
		if ea == nil {
			return 0, remoting.Errorf(code.SystemError, "%s-%d: no decided mapping item", qc.topic, qc.logicID)
		}
		return s.earliestTime(ctx, req, qc, ea)
	})
}

// search runs SEARCH_OFFSET_BY_TIMESTAMP on one segment's physical queue.
func (s *Service) search(ctx context.Context, req *remoting.Command, qc queueCtx, it *item, ts int64, bt consumequeue.BoundaryType, btText string) (int64, error) {
	if it.Bname == s.me {
		o, err := s.d.Store.SearchOffsetByTime(qc.topic, int32(it.QueueID), ts, bt)
		if err != nil {
			return 0, remoting.Errorf(code.SystemError, "search offset of %s-%d by timestamp %d: %v", qc.topic, it.QueueID, ts, err)
		}
		return o, nil
	}
	set := map[string]string{"timestamp": strconv.FormatInt(ts, 10)}
	if btText != "" {
		set["boundaryType"] = btText
	}
	return s.remoteOffset(ctx, asCode(req, code.SearchOffsetByTimestamp), it, set, "offset")
}

// searchOffsetByTimestamp is SEARCH_OFFSET_BY_TIMESTAMP (29, docs/static-topics.md §7.5) with
// the intended semantics rather than Java's: LOWER answers the logic
// offset of the first message stored at or after the timestamp (the logic
// max when there is none), UPPER the last message stored at or before it
// (the logic min when there is none).
func (s *Service) searchOffsetByTimestamp(inner remoting.Handler) remoting.Handler {
	return s.staticValue(inner, "offset", func(ctx context.Context, req *remoting.Command, qc queueCtx, f *protocol.Fields) (int64, error) {
		ts := f.Int64("timestamp")
		if err := f.Err(); err != nil {
			return 0, processor.BadRequest(err)
		}
		btText := f.OptStr("boundaryType", "")
		if strings.EqualFold(strings.TrimSpace(btText), "upper") {
			return s.searchUpper(ctx, req, qc, ts, btText)
		}
		return s.searchLower(ctx, req, qc, ts, btText)
	})
}

func (s *Service) searchLower(ctx context.Context, req *remoting.Command, qc queueCtx, ts int64, btText string) (int64, error) {
	for i := range qc.items {
		it := &qc.items[i]
		if !decided(it) {
			continue
		}
		o, err := s.search(ctx, req, qc, it, ts, consumequeue.BoundaryLower, btText)
		if err != nil {
			return 0, err
		}
		limit, err := s.physMax(ctx, req, qc, it)
		if err != nil {
			return 0, err
		}
		if endDecided(it) {
			limit = min(limit, it.EndOffset)
		}
		if o >= it.StartOffset && o < limit {
			return strictLogic(it, o), nil
		}
	}
	return s.logicMax(ctx, req, qc)
}

func (s *Service) searchUpper(ctx context.Context, req *remoting.Command, qc queueCtx, ts int64, btText string) (int64, error) {
	for i := len(qc.items) - 1; i >= 0; i-- {
		it := &qc.items[i]
		if !decided(it) {
			continue
		}
		first, err := s.earliestTime(ctx, req, qc, it)
		if err != nil {
			return 0, err
		}
		if first < 0 || first > ts {
			continue // empty, or every message is later
		}
		o, err := s.search(ctx, req, qc, it, ts, consumequeue.BoundaryUpper, btText)
		if err != nil {
			return 0, err
		}
		if endDecided(it) && o >= it.EndOffset {
			o = it.EndOffset - 1
		}
		return strictLogic(it, o), nil
	}
	return s.logicMin(ctx, req, qc)
}

// updateConsumerOffset is UPDATE_CONSUMER_OFFSET (15, docs/static-topics.md §7.7): the offset is
// stored, physical, on the broker holding the segment that contains it.
func (s *Service) updateConsumerOffset(inner remoting.Handler) remoting.Handler {
	return s.staticQueue(inner, func(ctx context.Context, ch *remoting.Channel, req *remoting.Command, qc queueCtx, f *protocol.Fields) (*remoting.Command, error) {
		x := f.Int64("commitOffset")
		if f.Err() != nil {
			return inner(ctx, ch, req)
		}
		it := findItem(qc.items, x, true)
		if it == nil {
			return nil, remoting.Errorf(code.SystemError, "%s-%d: no decided mapping item", qc.topic, qc.logicID)
		}
		set := map[string]string{
			"queueId":      strconv.Itoa(it.QueueID),
			"commitOffset": strconv.FormatInt(max(physical(it, x), it.StartOffset), 10),
		}
		if it.Bname == s.me {
			set[FieldLogic] = "false"
			return inner(ctx, ch, rewritten(req, set))
		}
		resp, err := s.forward(ctx, req, it.Bname, set)
		if err != nil {
			return nil, err
		}
		if resp.Code != code.Success {
			return nil, remoting.Errorf(code.SystemError, "update offset on broker %s: code %d: %s", it.Bname, resp.Code, resp.Remark)
		}
		return relay(req, resp), nil
	})
}

// queryConsumerOffset is QUERY_CONSUMER_OFFSET (14, docs/static-topics.md §7.8): the newest
// segment that has an offset for the group wins.
func (s *Service) queryConsumerOffset(inner remoting.Handler) remoting.Handler {
	return s.staticQueue(inner, func(ctx context.Context, ch *remoting.Channel, req *remoting.Command, qc queueCtx, f *protocol.Fields) (*remoting.Command, error) {
		group := f.Str("consumerGroup")
		if f.Err() != nil {
			return inner(ctx, ch, req)
		}
		if len(qc.items) == 1 && qc.items[0].LogicOffset == 0 {
			// Never remapped: the physical answer, including its
			// "start at 0" rule, is the logic one.
			it := &qc.items[0]
			resp, err := inner(ctx, ch, rewritten(req, map[string]string{"queueId": strconv.Itoa(it.QueueID), FieldLogic: "false"}))
			if err != nil || resp == nil || resp.Code != code.Success {
				return resp, err
			}
			if p, err := strconv.ParseInt(resp.Ext("offset"), 10, 64); err == nil {
				resp.SetExt("offset", strconv.FormatInt(strictLogic(it, p), 10))
			}
			return resp, nil
		}
		for i := len(qc.items) - 1; i >= 0; i-- {
			it := &qc.items[i]
			if !decided(it) {
				continue // nothing can be read there yet, nor translated
			}
			if it.Bname == s.me {
				if off, ok := s.d.Store.QueryOffset(group, qc.topic, int32(it.QueueID)); ok && off >= 0 {
					return offsetResponse(req, "offset", strictLogic(it, off)), nil
				}
				continue
			}
			resp, err := s.forward(ctx, req, it.Bname, map[string]string{"queueId": strconv.Itoa(it.QueueID), "setZeroIfNotFound": "false"})
			if err != nil {
				return nil, err
			}
			switch resp.Code {
			case code.Success:
				off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
				if err != nil {
					return nil, remoting.Errorf(code.SystemError, "broker %s answered a bad offset %q", it.Bname, resp.Ext("offset"))
				}
				return offsetResponse(req, "offset", strictLogic(it, off)), nil
			case code.QueryNotFound:
			default:
				return nil, remoting.Errorf(code.SystemError, "query offset on broker %s: code %d: %s", it.Bname, resp.Code, resp.Remark)
			}
		}
		return nil, remoting.Errorf(code.QueryNotFound, "Not found, %s has no committed offset on %s-%d", group, qc.topic, qc.logicID)
	})
}

// consumeStats mirrors the GET_CONSUME_STATS body.
type consumeStats struct {
	ConsumeTps  float64                             `json:"consumeTps"`
	OffsetTable protocol.MQMap[consumeStatsOffsets] `json:"offsetTable"`
}

type consumeStatsOffsets struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	PullOffset     int64 `json:"pullOffset"`
}

// getConsumeStats keeps consumerOffset -1 for the physical queues of
// static topics where the group has no offset (docs/static-topics.md §7.11): the admin finds the
// segment that holds the group's offset by "≥ 0".
func (s *Service) getConsumeStats(inner remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp, err := inner(ctx, ch, req)
		if err != nil || resp == nil || resp.Code != code.Success || s.d.Mappings.Len() == 0 {
			return resp, err
		}
		var st consumeStats
		if err := protocol.UnmarshalMQKeyed(resp.Body, &st); err != nil {
			s.log.Warn("decode consume stats for static topics", "err", err)
			return resp, nil
		}
		group := req.Ext("consumerGroup")
		changed := false
		for mq, w := range st.OffsetTable {
			if s.d.Mappings.lookup(mq.Topic) == nil || w.ConsumerOffset < 0 {
				continue
			}
			if _, ok := s.d.Store.QueryOffset(group, mq.Topic, int32(mq.QueueID)); !ok {
				w.ConsumerOffset = -1
				st.OffsetTable[mq] = w
				changed = true
			}
		}
		if !changed {
			return resp, nil
		}
		body, err := protocol.MarshalMQKeyed(st)
		if err != nil {
			return nil, remoting.Errorf(code.SystemError, "encode consume stats: %v", err)
		}
		resp.Body = body
		return resp, nil
	}
}
