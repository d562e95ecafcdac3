package transaction

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// endRequest is EndTransactionRequestHeader.
type endRequest struct {
	group                string
	tranStateTableOffset int64
	commitLogOffset      int64
	commitOrRollback     int32
	fromTransactionCheck bool
	msgID, transactionID string
}

func parseEnd(ext map[string]string) (endRequest, error) {
	f := protocol.FieldsOf(ext)
	r := endRequest{
		group:                f.Str("producerGroup"),
		tranStateTableOffset: f.Int64("tranStateTableOffset"),
		commitLogOffset:      f.Int64("commitLogOffset"),
		commitOrRollback:     f.Int32("commitOrRollback"),
		fromTransactionCheck: f.OptBool("fromTransactionCheck", false),
		msgID:                f.OptStr("msgId", ""),
		transactionID:        f.OptStr("transactionId", ""),
	}
	if err := f.Err(); err != nil {
		return r, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	switch r.commitOrRollback {
	case message.TransactionNotType, message.TransactionCommitType, message.TransactionRollbackType:
	default:
		// Java's EndTransactionRequestHeader.checkFields.
		return r, remoting.Errorf(code.InvalidParameter, "commitOrRollback field wrong: %d (want 0, 8 or 12)", r.commitOrRollback)
	}
	return r, nil
}

func outcomeName(t int32) string {
	switch t {
	case message.TransactionCommitType:
		return "commit"
	case message.TransactionRollbackType:
		return "rollback"
	case outcomeDiscarded:
		return "discarded after transactionCheckMax"
	}
	return "unknown"
}

// endTransaction answers END_TRANSACTION (37). client-go sends it without
// the one-way flag and ignores the answer; a Java producer sets the flag and
// gets none. Codes: SUCCESS; INVALID_PARAMETER for a bad header;
// SLAVE_NOT_AVAILABLE on a slave; SYSTEM_ERROR with Java's remarks when the
// half message is not found or does not match the request (producer group,
// queue offset, CommitLog offset); ILLEGAL_OPERATION when the record at
// commitLogOffset is not a half message, or (Java's
// rejectCommitOrRollback) the producer's own answer comes after the
// message's CHECK_IMMUNITY_TIME_IN_SECONDS; store errors as for a send.
func (s *Service) endTransaction(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	r, err := parseEnd(req.ExtFields)
	if err != nil {
		return nil, err
	}
	cfg := s.d.Config()
	if !cfg.IsMaster() {
		return nil, remoting.Errorf(code.SlaveNotAvailable, "Message store is slave mode, so end transaction is forbidden.")
	}
	remote := ""
	if ch != nil {
		remote = ch.RemoteAddr()
	}
	if r.commitOrRollback == message.TransactionNotType {
		s.log.Debug("end transaction: producer reports an unknown state", "group", r.group, "msgId", r.msgID,
			"fromCheck", r.fromTransactionCheck, "remote", remote, "remark", req.Remark)
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	half, err := s.lookupHalf(r)
	if err != nil {
		s.log.Debug("end transaction refused", "group", r.group, "commitLogOffset", r.commitLogOffset, "remote", remote, "err", err)
		return nil, err
	}
	if s.rejectLateEnd(cfg.TransactionTimeOut.Milliseconds(), &r, half) {
		return nil, remoting.Errorf(code.IllegalOperation,
			"end transaction of %s refused: the producer answered after the message's CHECK_IMMUNITY_TIME_IN_SECONDS; wait for the check", r.msgID)
	}
	uniq := txKey(half)
	claim, err := s.claim(ctx, uniq, func() claimResult { return s.st.claimEnd(uniq, r.tranStateTableOffset) })
	if err != nil {
		return nil, err
	}
	if !claim.ok && claim.busy == nil && r.commitOrRollback == message.TransactionCommitType && s.discardedNotCommitted(claim.prevOutcome, uniq, half) {
		// The check scan gave up on the transaction (transactionCheckMax)
		// before the producer's commit came. Apache's EndTransactionProcessor
		// stores a commit whatever the scan did, as long as the half record
		// is in the CommitLog: so do we, once (docs/protocol.md §6.5).
		if claim, err = s.claim(ctx, uniq, func() claimResult { return s.st.claimAfterDiscard(uniq) }); err != nil {
			return nil, err
		}
	}
	switch {
	case !claim.ok && claim.prevOutcome != 0 && claim.prevOutcome != outcomeDiscarded && claim.prevOutcome != r.commitOrRollback:
		return nil, remoting.Errorf(code.TransactionFailed, "transaction %s already ended (%s); %s refused",
			uniq, outcomeName(claim.prevOutcome), outcomeName(r.commitOrRollback))
	case !claim.ok:
		s.log.Debug("end transaction: already ended", "uniqKey", uniq, "halfOffset", r.tranStateTableOffset, "want", outcomeName(r.commitOrRollback))
		return remoting.NewResponse(req, code.Success, "transaction already ended"), nil
	}
	if r.commitOrRollback == message.TransactionCommitType {
		if err := s.commit(ctx, half); err != nil {
			s.st.unclaim(uniq, claim)
			s.log.Warn("commit transaction failed", "uniqKey", uniq, "err", err)
			return nil, err
		}
	}
	if err := s.writeOps(ctx, claim.targets); err != nil {
		if r.commitOrRollback == message.TransactionRollbackType {
			s.st.unclaim(uniq, claim)
			return nil, storeError("record rollback", err)
		}
		// The message is committed; without its op record the half message
		// may be checked again after a restart (Java logs and goes on too).
		s.log.Error("write op record after commit", "uniqKey", uniq, "halfOffsets", claim.targets, "err", err)
	}
	if claim.late {
		s.st.rememberLate(uniq)
	}
	s.st.finishEnd(uniq, r.commitOrRollback, s.d.Store.MaxOffset(protocol.TransHalfTopic, 0))
	if r.commitOrRollback == message.TransactionCommitType {
		s.commits.Add(1)
	} else {
		s.rollbacks.Add(1)
	}
	if s.d.Ended != nil {
		s.d.Ended(half.Properties[message.PropertyRealTopic], r.commitOrRollback == message.TransactionCommitType, half.BornTimestamp)
	}
	s.log.Debug("end transaction", "outcome", outcomeName(r.commitOrRollback), "uniqKey", uniq, "group", r.group,
		"halfOffsets", claim.targets, "fromCheck", r.fromTransactionCheck)
	return remoting.NewResponse(req, code.Success, ""), nil
}

// endWait bounds how long an END_TRANSACTION waits for another one of the
// same transaction (a duplicate) to finish.
const endWait = 5 * time.Second

// claim reserves the transaction's end with try, waiting while another
// END_TRANSACTION of it is in flight.
func (s *Service) claim(ctx context.Context, uniq string, try func() claimResult) (claimResult, error) {
	timer := time.NewTimer(endWait)
	defer timer.Stop()
	for {
		c := try()
		if c.busy == nil {
			return c, nil
		}
		select {
		case <-c.busy:
		case <-ctx.Done():
			return c, remoting.Errorf(code.SystemBusy, "transaction %s is being ended by another request: %v", uniq, ctx.Err())
		case <-timer.C:
			return c, remoting.Errorf(code.SystemBusy, "transaction %s is being ended by another request", uniq)
		}
	}
}

// discardedNotCommitted reports whether transaction uniq was given up by
// the check scan (moved to TRANS_CHECK_MAX_TIME_TOPIC) and not committed
// since. prev is what the in-memory state knows (0: nothing any more, e.g.
// after a restart or once the scan moved on): then the key index answers —
// a copy of the half message in TRANS_CHECK_MAX_TIME_TOPIC and none of the
// committed message in its topic. With messageIndexEnable=false the index
// holds nothing and a late commit the state forgot is not stored.
func (s *Service) discardedNotCommitted(prev int32, uniq string, half *message.Message) bool {
	switch prev {
	case outcomeDiscarded:
		return true
	case 0:
	default:
		return false
	}
	key := half.UniqKey()
	if key == "" {
		return false
	}
	// From well before the first copy: half may be a copy the check scan
	// re-appended after the commit was stored (its store time is later
	// than the committed message's); every copy keeps the producer's born
	// time, whose clock may be off by some margin.
	begin := min(half.BornTimestamp, half.StoreTimestamp) - lateCommitIndexSkew.Milliseconds()
	found := func(topic string) bool {
		res, err := s.d.Store.QueryMessage(topic, key, true, 1, begin, math.MaxInt64)
		if err != nil {
			s.log.Warn("end transaction: query the key index", "topic", topic, "uniqKey", key, "err", err)
			return false
		}
		return len(res.Records) > 0
	}
	if !found(protocol.TransCheckMaxTopic) {
		return false
	}
	topics := []string{half.Properties[message.PropertyRealTopic]}
	if message.IsScheduled(half.Properties) {
		topics = append(topics, protocol.ScheduleTopic, topic.TimerTopic)
	}
	for _, t := range topics {
		if found(t) {
			return false
		}
	}
	return true
}

// lateCommitIndexSkew is how far before a half message's born (or store)
// time the late-commit check searches the key index for the committed
// message: a producer clock ahead of the broker's by up to this much is
// tolerated.
const lateCommitIndexSkew = 24 * time.Hour

// txKey identifies a transaction across the copies of its half message.
func txKey(m *message.Message) string {
	if k := m.UniqKey(); k != "" {
		return k
	}
	if k := m.Property(message.PropertyTransactionID); k != "" {
		return k
	}
	return "@" + strconv.FormatInt(m.CommitLogOffset, 10)
}

// lookupHalf reads the half message at the request's CommitLog offset and
// checks it against the request (Java's checkPrepareMessage).
func (s *Service) lookupHalf(r endRequest) (*message.Message, error) {
	if r.commitLogOffset < 0 {
		return nil, remoting.Errorf(code.SystemError, "Find prepared transaction message failed: commitLogOffset %d", r.commitLogOffset)
	}
	rec, err := s.d.Store.ReadRecord(r.commitLogOffset)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "Find prepared transaction message failed: commitLogOffset %d: %v", r.commitLogOffset, err)
	}
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{AliasBody: true})
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "Find prepared transaction message failed: commitLogOffset %d: %v", r.commitLogOffset, err)
	}
	if m.Topic != protocol.TransHalfTopic {
		return nil, remoting.Errorf(code.IllegalOperation, "the message at commitLogOffset %d is not a half message (topic %s)", r.commitLogOffset, m.Topic)
	}
	switch {
	case m.Property(message.PropertyProducerGroup) != r.group:
		return nil, remoting.Errorf(code.SystemError, "The producer group wrong: the half message belongs to %q, not %q",
			m.Property(message.PropertyProducerGroup), r.group)
	case m.QueueOffset != r.tranStateTableOffset:
		return nil, remoting.Errorf(code.SystemError, "The transaction state table offset wrong: %d, the half message is at %d",
			r.tranStateTableOffset, m.QueueOffset)
	case m.CommitLogOffset != r.commitLogOffset:
		return nil, remoting.Errorf(code.SystemError, "The commit log offset wrong: %d", r.commitLogOffset)
	}
	return m, nil
}

// immunity is how old a half message must be before it is checked.
func immunity(m *message.Message, timeoutMs int64) int64 {
	v := m.Property(message.PropertyCheckImmunityTimeInSec)
	if v == "" {
		return timeoutMs
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec*1000 < timeoutMs {
		return timeoutMs
	}
	return sec * 1000
}

// rejectLateEnd is Java's rejectCommitOrRollback: a producer that set
// CHECK_IMMUNITY_TIME_IN_SECONDS must answer within it, after that only
// answers to a check count.
func (s *Service) rejectLateEnd(timeoutMs int64, r *endRequest, half *message.Message) bool {
	if r.fromTransactionCheck || half.Property(message.PropertyCheckImmunityTimeInSec) == "" {
		return false
	}
	return s.now().UnixMilli()-half.BornTimestamp > immunity(half, timeoutMs)
}

// errNoRealTopic: a half message without REAL_TOPIC/REAL_QID.
var errNoRealTopic = errors.New("the half message has no valid REAL_TOPIC/REAL_QID")

// commitMessage is Java's endMessageTransaction: the half message back in
// its real topic and queue, commit sysFlag, preparedTransactionOffset = the
// half record.
func commitMessage(half *message.Message) (*message.Message, error) {
	realTopic := half.Property(message.PropertyRealTopic)
	qid, err := strconv.Atoi(half.Property(message.PropertyRealQueueID))
	if realTopic == "" || err != nil || qid < 0 {
		return nil, errNoRealTopic
	}
	props := maps.Clone(half.Properties)
	delete(props, message.PropertyRealTopic)
	delete(props, message.PropertyRealQueueID)
	delete(props, message.PropertyTransactionPrepared)
	return &message.Message{
		Topic:                     realTopic,
		QueueID:                   int32(qid),
		Flag:                      half.Flag,
		Body:                      half.Body,
		Properties:                props,
		SysFlag:                   message.SetTransactionType(half.SysFlag, message.TransactionCommitType),
		BornTimestamp:             half.BornTimestamp,
		BornHost:                  half.BornHost,
		StoreHost:                 half.StoreHost,
		ReconsumeTimes:            half.ReconsumeTimes,
		PreparedTransactionOffset: half.CommitLogOffset,
	}, nil
}

// commit stores the committed message.
func (s *Service) commit(ctx context.Context, half *message.Message) error {
	m, err := commitMessage(half)
	if err != nil {
		return remoting.Errorf(code.SystemError, "commit %s: %v", half.UniqKey(), err)
	}
	// The send path skipped the lite-topic dispatch and the schedule hook
	// for the half message; they apply to the committed one.
	if tc, ok := s.d.Topics.Get(m.Topic); ok {
		if err := send.ApplyLite(&tc, m.Properties, s.d.Config().MaxLiteTopicSize); err != nil {
			return storeError("commit", err)
		}
	}
	if s.d.Schedule != nil && message.IsScheduled(m.Properties) {
		if err := s.d.Schedule.Schedule(m); err != nil {
			return storeError("commit: schedule", err)
		}
	}
	if _, err := s.d.Store.PutMessage(ctx, m); err != nil && !isStored(err) {
		return storeError(fmt.Sprintf("commit to %s-%d", m.Topic, m.QueueID), err)
	}
	return nil
}
