package transaction

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	// readBatch is how many records one read of the half or op queue
	// returns.
	readBatch = 32
	// maxRoundTime bounds one check round (Java's MAX_PROCESS_TIME_LIMIT).
	maxRoundTime = time.Minute
	// checkMaxQueueNums is the queue count of TRANS_CHECK_MAX_TIME_TOPIC.
	checkMaxQueueNums = 1
	// noProducerLogEvery rate-limits the "no producer online" warning.
	noProducerLogEvery = time.Minute
)

// readOps reads op records from the op read cursor to the end of the op
// queue into the state.
func (s *Service) readOps(ctx context.Context) error {
	for {
		from := s.st.snapshot().opRead
		if from >= s.d.Store.MaxOffset(protocol.TransOpHalfTopic, 0) {
			return nil
		}
		res, err := s.d.Store.GetMessage(ctx, protocol.TransOpHalfTopic, 0, from, readBatch, 0, nil)
		if err != nil {
			return err
		}
		for i, rec := range res.Records {
			v, err := message.ParseView(rec, message.ParseOptions{})
			if err != nil {
				s.log.Warn("unreadable op record: skipped", "opOffset", res.QueueOffsets[i], "err", err)
				s.st.addOp(res.QueueOffsets[i], nil)
				continue
			}
			var refs []int64
			if tag, _ := v.Property(message.PropertyTags); tag == opTag {
				refs = parseOpBody(v.Body())
			} else {
				s.log.Warn("op record with an unknown tag: skipped", "opOffset", res.QueueOffsets[i], "tag", tag)
			}
			s.st.addOp(res.QueueOffsets[i], refs)
		}
		next := res.NextBeginOffset
		res.Release()
		if len(res.Records) == 0 {
			if next <= from {
				return nil
			}
			s.st.skipOps(next)
		}
	}
}

// Check runs one check round: read new op records, then walk the half queue
// from the scan position over half messages stored before the round began,
// until one is not due yet. Tests call it directly; Start runs it every
// transactionCheckInterval.
func (s *Service) Check(ctx context.Context) error {
	s.round.Lock()
	defer s.round.Unlock()
	if !s.d.Config().IsMaster() {
		return nil
	}
	defer s.commitPositions()
	if err := s.readOps(ctx); err != nil {
		return fmt.Errorf("read op records: %w", err)
	}
	start := s.now()
	deadline := start.Add(min(max(s.interval(), time.Second), maxRoundTime))
	r := &round{s: s, ctx: ctx, start: start.UnixMilli(), cfg: roundConfig(s)}
	for {
		off := s.st.snapshot().progress
		if off >= s.d.Store.MaxOffset(protocol.TransHalfTopic, 0) || s.now().After(deadline) || ctx.Err() != nil {
			return nil
		}
		res, err := s.d.Store.GetMessage(ctx, protocol.TransHalfTopic, 0, off, readBatch, 0, nil)
		if err != nil {
			return fmt.Errorf("read half queue at %d: %w", off, err)
		}
		if len(res.Records) == 0 {
			next := res.NextBeginOffset
			res.Release()
			if res.Status == store.OffsetTooSmall || (next > off && res.Status != store.OffsetOverflowBadly) {
				// Retention removed half messages, or entries were skipped.
				s.log.Warn("half queue position moved", "from", off, "to", next, "status", res.Status)
				s.st.advance(next)
				continue
			}
			return nil
		}
		stop, err := r.process(res)
		res.Release()
		if err != nil || stop {
			return err
		}
	}
}

// roundCfg are the settings of one round.
type roundCfg struct {
	timeoutMs, reservedMs int64
	checkMax              int
	brokerName            string
}

func roundConfig(s *Service) roundCfg {
	c := s.d.Config()
	return roundCfg{
		timeoutMs:  c.TransactionTimeOut.Milliseconds(),
		reservedMs: int64(c.FileReservedTime) * int64(time.Hour/time.Millisecond),
		checkMax:   c.TransactionCheckMax,
		brokerName: c.BrokerName,
	}
}

type round struct {
	s     *Service
	ctx   context.Context
	start int64 // ms: copies appended by this round are not looked at again
	cfg   roundCfg
}

// process handles one read of the half queue; stop ends the round.
func (r *round) process(res *store.GetResult) (stop bool, err error) {
	for i, rec := range res.Records {
		off := res.QueueOffsets[i]
		m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
		if err != nil {
			r.s.log.Error("unreadable half message: skipped", "halfOffset", off, "err", err)
			r.s.st.advance(off + 1)
			continue
		}
		if m.StoreTimestamp >= r.start {
			return true, nil
		}
		done, err := r.one(off, m)
		if err != nil {
			return true, err
		}
		if !done {
			return true, nil
		}
		r.s.st.advance(off + 1)
	}
	return false, nil
}

// one handles the half message at queue offset off; done=false means it is
// not due yet and the round ends there.
func (r *round) one(off int64, m *message.Message) (done bool, err error) {
	s := r.s
	uniq := txKey(m)
	switch s.st.classify(off, uniq) {
	case resolvedByOp:
		return true, nil
	case endedInMemory:
		// Ended through another copy: make it durable for this one.
		return true, s.writeOps(r.ctx, []int64{off})
	case ending:
		// An END_TRANSACTION is storing it: look again next round.
		return false, nil
	}
	now := s.now().UnixMilli()
	// The producer's clock may be ahead: never count from later than the
	// broker stored the message.
	age := now - min(m.BornTimestamp, m.StoreTimestamp)
	checkTimes, _ := strconv.Atoi(m.Property(message.PropertyTransactionCheckTimes))
	imm := immunity(m, r.cfg.timeoutMs)
	switch {
	// Java's needDiscard/needSkip: checked transactionCheckMax times
	// already (a message never checked gets its first check whatever the
	// setting), or older than the CommitLog keeps files.
	case r.cfg.reservedMs > 0 && age > r.cfg.reservedMs, checkTimes > 0 && checkTimes >= r.cfg.checkMax:
		return r.discard(off, m, uniq, checkTimes, age)
	case age < imm:
		if imm > r.cfg.timeoutMs {
			// A long CHECK_IMMUNITY_TIME: move it to the end of the queue
			// rather than hold the scan back (Java's
			// putImmunityMsgBackToHalfQueue).
			_, err := r.reappend(off, m, uniq, checkTimes)
			return err == nil, err
		}
		return false, nil
	}
	group := m.Property(message.PropertyProducerGroup)
	target := s.d.Producers.CheckTarget(group)
	if target == nil {
		grace := s.now().Before(s.started.Add(s.d.ProducerGrace))
		if last := s.noProducerLogged.Load(); now-last > noProducerLogEvery.Milliseconds() && s.noProducerLogged.CompareAndSwap(last, now) {
			s.log.Warn("transaction check: no producer of the group is online", "group", group, "uniqKey", uniq,
				"checkTimes", checkTimes, "counted", !grace)
		}
		if !grace {
			checkTimes++
		}
		_, err := r.reappend(off, m, uniq, checkTimes)
		return err == nil, err
	}
	c, err := r.reappend(off, m, uniq, checkTimes+1)
	if err != nil || c == nil {
		return err == nil, err
	}
	req, err := checkRequest(c, r.cfg.brokerName)
	if err != nil {
		s.log.Error("build transaction check", "uniqKey", uniq, "err", err)
		return true, nil
	}
	s.checks.Add(1)
	if err := target.InvokeOneway(req); err != nil {
		s.log.Warn("send transaction check", "group", group, "remote", target.RemoteAddr(), "uniqKey", uniq, "err", err)
	} else {
		s.log.Debug("transaction check sent", "group", group, "remote", target.RemoteAddr(), "uniqKey", uniq,
			"halfOffset", c.QueueOffset, "checkTimes", checkTimes+1)
	}
	return true, nil
}

// reappend stores a copy of the half message with TRANSACTION_CHECK_TIMES
// set to checkTimes and returns it (nil when the transaction ended
// meanwhile: the copy then got its op record).
func (r *round) reappend(off int64, m *message.Message, uniq string, checkTimes int) (*message.Message, error) {
	s := r.s
	c := *m
	c.Properties = maps.Clone(m.Properties)
	if checkTimes > 0 {
		c.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(checkTimes)
	}
	c.Topic, c.QueueID = protocol.TransHalfTopic, 0
	c.QueueOffset, c.CommitLogOffset, c.StoreTimestamp, c.StoreSize = 0, 0, 0, 0
	res, err := s.d.Store.PutMessage(r.ctx, &c)
	if err != nil && !isStored(err) {
		return nil, fmt.Errorf("re-append half message %s: %w", uniq, err)
	}
	c.QueueOffset, c.CommitLogOffset, c.StoreTimestamp = res.QueueOffset, res.PhysicalOffset, res.StoreTimestamp
	if !c.StoreHost.IsValid() {
		c.StoreHost = s.storeHost()
	}
	if !s.st.replaced(uniq, off, c.QueueOffset) {
		return nil, s.writeOps(r.ctx, []int64{c.QueueOffset})
	}
	return &c, nil
}

// discard moves a half message checked transactionCheckMax times (or older
// than fileReservedTime) to TRANS_CHECK_MAX_TIME_TOPIC (Java's
// resolveDiscardMsg) and ends its transaction. It holds the transaction's
// end like an END_TRANSACTION does, so that a commit racing with it is
// either stored before (and nothing is discarded) or comes after the
// discard (and is stored as a late commit, once); done=false: an end is in
// flight, look again next round.
func (r *round) discard(off int64, m *message.Message, uniq string, checkTimes int, age int64) (done bool, err error) {
	s := r.s
	claim := s.st.claimEnd(uniq, off)
	switch {
	case claim.busy != nil:
		return false, nil
	case !claim.ok && claim.prevOutcome != 0:
		// Ended through another copy meanwhile: make it durable for this one.
		return true, s.writeOps(r.ctx, []int64{off})
	case !claim.ok:
		return true, nil
	}
	tc := protocol.NewTopicConfig(protocol.TransCheckMaxTopic)
	tc.ReadQueueNums, tc.WriteQueueNums = checkMaxQueueNums, checkMaxQueueNums
	tc.Perm = protocol.PermRead | protocol.PermWrite
	if _, _, err := s.d.Topics.CreateIfAbsent(tc); err != nil {
		s.log.Warn("create topic", "topic", protocol.TransCheckMaxTopic, "err", err)
	}
	d := *m
	d.Topic, d.QueueID = protocol.TransCheckMaxTopic, 0
	d.QueueOffset, d.CommitLogOffset, d.StoreTimestamp, d.StoreSize = 0, 0, 0, 0
	if _, err := s.d.Store.PutMessage(r.ctx, &d); err != nil && !isStored(err) {
		s.st.unclaim(uniq, claim)
		return true, fmt.Errorf("move half message %s to %s: %w", uniq, protocol.TransCheckMaxTopic, err)
	}
	s.st.finishEnd(uniq, outcomeDiscarded, s.d.Store.MaxOffset(protocol.TransHalfTopic, 0))
	s.discards.Add(1)
	if s.d.Discarded != nil {
		s.d.Discarded(m.Property(message.PropertyRealTopic))
	}
	s.log.Warn("transaction discarded", "uniqKey", uniq, "group", m.Property(message.PropertyProducerGroup),
		"realTopic", m.Property(message.PropertyRealTopic), "checkTimes", checkTimes, "ageMs", age, "halfOffset", off)
	return true, s.writeOps(r.ctx, claim.targets)
}

// checkRequest is CHECK_TRANSACTION_STATE for copy c: the header names the
// copy, the body is the message in stored format with its real topic and
// queue (docs/protocol.md §3.5).
func checkRequest(c *message.Message, brokerName string) (*remoting.Command, error) {
	uniq := c.UniqKey()
	ext := map[string]string{
		"topic":                protocol.TransHalfTopic,
		"tranStateTableOffset": strconv.FormatInt(c.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(c.CommitLogOffset, 10),
		"msgId":                uniq,
		"transactionId":        uniq,
		"offsetMsgId":          message.OffsetMsgID(c.StoreHost, c.CommitLogOffset),
		"bname":                brokerName,
	}
	body := *c
	body.Topic = c.Property(message.PropertyRealTopic)
	qid, err := strconv.Atoi(c.Property(message.PropertyRealQueueID))
	if body.Topic == "" || err != nil {
		return nil, errNoRealTopic
	}
	body.QueueID = int32(qid)
	rec, err := message.EncodeStored(&body)
	if err != nil {
		return nil, err
	}
	if len(body.Topic) > 127 {
		return nil, errors.New("real topic longer than 127 bytes: no v1 record")
	}
	return remoting.NewRequest(code.CheckTransactionState, ext, rec), nil
}
