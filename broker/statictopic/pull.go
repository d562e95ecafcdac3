package statictopic

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Pull sysFlag bits (docs/static-topics.md §1).
const (
	flagCommitOffset = 0x1
	flagSuspend      = 0x2
)

type pullHeader struct {
	group         string
	queueID       int32
	queueOffset   int64
	maxMsgNums    int32
	sysFlag       int32
	commitOffset  int64
	suspendMillis int64
}

// parsePull reads the fields the rewriting needs; a bad header is left to
// the pull processor, which names the field.
func parsePull(ext map[string]string) (pullHeader, bool) {
	f := protocol.FieldsOf(ext)
	h := pullHeader{
		group:         f.Str("consumerGroup"),
		queueID:       f.Int32("queueId"),
		queueOffset:   f.Int64("queueOffset"),
		maxMsgNums:    f.Int32("maxMsgNums"),
		sysFlag:       f.Int32("sysFlag"),
		commitOffset:  f.OptInt64("commitOffset", -1),
		suspendMillis: f.OptInt64("suspendTimeoutMillis", 0),
	}
	return h, f.Err() == nil
}

// pull rewrites PULL_MESSAGE and LITE_PULL_MESSAGE (§7.2).
func (s *Service) pull(inner remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return s.pullStatic(ctx, ch, req, inner, true)
	}
}

// resume re-runs a parked static pull through the rewriting and answers it.
func (s *Service) resume(ctx context.Context, ch *remoting.Channel, req *remoting.Command) {
	inner, ok := s.inner[req.Code]
	if !ok {
		return
	}
	resp, err := s.pullStatic(ctx, ch, req, inner, false)
	processor.WriteResumed(s.log, "static pull", ch, req, resp, err)
}

// pullStatic is one static pull. The physical pull never suspends and
// never commits: suspension happens here, on the physical queue, so that
// the woken request is translated again; the commit offset is translated
// like UPDATE_CONSUMER_OFFSET (Java stores the logic value untranslated).
func (s *Service) pullStatic(ctx context.Context, ch *remoting.Channel, req *remoting.Command, inner remoting.Handler, allowSuspend bool) (*remoting.Command, error) {
	d := s.mapped(req, "topic")
	if d == nil {
		return inner(ctx, ch, req)
	}
	h, ok := parsePull(req.ExtFields)
	if !ok {
		return inner(ctx, ch, req)
	}
	qc, err := s.queue(d, h.queueID)
	if err != nil {
		return nil, err
	}
	c := findItem(qc.items, h.queueOffset, true)
	if c == nil {
		return nil, remoting.Errorf(code.SystemError, "%s-%d: no decided mapping item", qc.topic, qc.logicID)
	}
	phys := physical(c, h.queueOffset)
	set := map[string]string{
		"queueId":     strconv.Itoa(c.QueueID),
		"queueOffset": strconv.FormatInt(phys, 10),
		"sysFlag":     strconv.Itoa(int(h.sysFlag &^ (flagCommitOffset | flagSuspend))),
	}
	if endDecided(c) && h.maxMsgNums > 0 {
		set["maxMsgNums"] = strconv.FormatInt(min(c.EndOffset-c.StartOffset, int64(h.maxMsgNums)), 10)
	}
	cfg := s.d.Config()
	if allowSuspend && h.sysFlag&flagCommitOffset != 0 && h.commitOffset >= 0 && cfg.IsMaster() {
		s.commitLocal(h.group, qc, h.commitOffset)
	}

	var resp *remoting.Command
	remote := c.Bname != s.me
	if remote {
		// Java forwards lite pulls as PULL_MESSAGE too.
		fwd := req
		if req.Code != code.PullMessage {
			cp := *req
			cp.Code = code.PullMessage
			fwd = &cp
		}
		resp, err = s.forward(ctx, fwd, c.Bname, set)
		if err != nil {
			return nil, err
		}
		switch resp.Code {
		case code.Success, code.PullNotFound, code.PullRetryImmediately, code.PullOffsetMoved:
		default:
			return nil, remoting.Errorf(code.SystemError, "pull %s-%d from broker %s: code %d: %s", qc.topic, c.QueueID, c.Bname, resp.Code, resp.Remark)
		}
	} else {
		resp, err = inner(ctx, ch, rewritten(req, set))
		if err != nil || resp == nil {
			return resp, err
		}
		switch resp.Code {
		case code.Success, code.PullNotFound, code.PullRetryImmediately, code.PullOffsetMoved:
		default:
			return resp, nil // a refusal of the physical pull (permission, subscription, ...)
		}
	}

	out, cur := rewritePull(req, resp, qc, c, phys)
	if remote {
		out.SetExt("suggestWhichBrokerId", "0")
	}
	if out.Code == code.PullNotFound && allowSuspend && h.sysFlag&flagSuspend != 0 && ch != nil && !remote && cur.Gen == qc.leader.Gen {
		timeout := time.Duration(h.suspendMillis) * time.Millisecond
		if !cfg.LongPollingEnable {
			timeout = cfg.ShortPollingTimeMills
		}
		if timeout > 0 {
			err := s.hold.Park(longpoll.Request{
				Channel: ch, Command: req, Topic: qc.topic, QueueID: int32(cur.QueueID), Offset: phys,
				Deadline: s.d.Now().Add(timeout),
			})
			switch {
			case err == nil:
				if m := s.d.Store.MaxOffset(qc.topic, int32(cur.QueueID)); m > phys {
					s.hold.WakeQueue(qc.topic, int32(cur.QueueID), m)
				}
				return nil, nil
			case errors.Is(err, longpoll.ErrFull):
				return nil, remoting.Errorf(code.SystemBusy, "[PULL_HOLD_FULL] too many suspended pull requests, try again later")
			}
		}
	}
	return out, nil
}

// rewritePull translates a physical pull answer into logic offsets (§7.2
// response rewrite) and returns it with the item it finally refers to.
func rewritePull(req, resp *remoting.Command, qc queueCtx, c *item, reqOffset int64) (*remoting.Command, *item) {
	num := func(k string) int64 {
		v, _ := strconv.ParseInt(resp.Ext(k), 10, 64)
		return v
	}
	next, lo, hi := num("nextBeginOffset"), num("minOffset"), num("maxOffset")
	rc := resp.Code
	ld, ea := qc.leader, earliestDecided(qc.items)
	cur := c
	if rc != code.Success {
		isLeader := cur.Gen == ld.Gen
		isEarliest := ea != nil && cur.Gen == ea.Gen
		revised := false
		// step moves to the next segment, or reports "nothing yet".
		step := func() {
			if n := nextItem(qc.items, cur, true); n != nil {
				cur = n
				next, lo, hi = n.StartOffset, n.StartOffset, n.StartOffset
				rc = code.PullRetryImmediately
				revised = true
			} else {
				rc = code.PullNotFound
			}
		}
		if isLeader {
			// Beyond the end of the leader: OFFSET_MOVED may be trusted.
			if reqOffset > hi {
				if rc == code.PullOffsetMoved {
					next = hi
				}
			} else if reqOffset < lo {
				next, rc = lo, code.PullRetryImmediately
			}
		}
		if isEarliest {
			// Below the start of the earliest segment: OFFSET_MOVED too.
			if reqOffset < lo {
				next, rc = lo, code.PullOffsetMoved
			} else if reqOffset >= hi {
				step()
			}
		}
		if !revised && !isLeader && !isEarliest {
			// A middle segment never resets the consumer.
			if reqOffset < lo {
				next, rc = lo, code.PullRetryImmediately
			} else if reqOffset >= hi {
				step()
			}
		}
	}
	if endDecided(cur) && next >= cur.EndOffset {
		next = cur.EndOffset
	}
	out := remoting.NewResponse(req, rc, resp.Remark)
	out.ExtFields = cloneExt(resp.ExtFields)
	out.SetExt("nextBeginOffset", strconv.FormatInt(strictLogic(cur, next), 10))
	out.SetExt("minOffset", strconv.FormatInt(strictLogic(cur, max(cur.StartOffset, lo)), 10))
	out.SetExt("maxOffset", strconv.FormatInt(max(strictLogic(cur, hi), maxLogic(ld)), 10))
	out.SetExt("offsetDelta", strconv.FormatInt(offsetDelta(cur), 10))
	if rc == code.Success {
		// The inner answer's body is a recycled buffer: out hands it
		// back once written.
		out.Body, out.Written = resp.Body, resp.Written
	}
	return out, cur
}

// commitLocal stores a commit offset carried by a pull, translated to the
// segment that holds it; a segment on another broker is left to the
// consumer's next UPDATE_CONSUMER_OFFSET.
func (s *Service) commitLocal(group string, qc queueCtx, x int64) {
	it := findItem(qc.items, x, true)
	if it == nil || it.Bname != s.me {
		return
	}
	s.d.Store.CommitOffset(group, qc.topic, int32(it.QueueID), max(physical(it, x), it.StartOffset))
}
