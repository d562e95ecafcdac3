package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TransactionState is the outcome of a local transaction.
type TransactionState int

const (
	// TransactionUnknown leaves the half message pending: the broker asks
	// the producer group again later (CHECK_TRANSACTION_STATE).
	TransactionUnknown TransactionState = iota
	// TransactionCommit delivers the message to its consumers.
	TransactionCommit
	// TransactionRollback discards the message.
	TransactionRollback
)

// transactionStateNames are Java's LocalTransactionState names ("UNKNOW"
// sic).
var transactionStateNames = [...]string{TransactionUnknown: "UNKNOW", TransactionCommit: "COMMIT_MESSAGE", TransactionRollback: "ROLLBACK_MESSAGE"}

func (s TransactionState) String() string {
	return enumName(int(s), transactionStateNames[:], "TransactionState")
}

// endTxType is the END_TRANSACTION commitOrRollback value of a state (the
// sysFlag transaction types, docs/protocol.md §5.7).
func (s TransactionState) endTxType() int32 {
	switch s {
	case TransactionCommit:
		return message.TransactionCommitType
	case TransactionRollback:
		return message.TransactionRollbackType
	}
	return message.TransactionNotType
}

// LocalTransaction runs the local part of a transaction after its half
// message is stored; msg carries the transaction id
// (TransactionIDOf). An error counts as TransactionUnknown and is sent to
// the broker as the remark.
type LocalTransaction func(ctx context.Context, msg *message.Message) (TransactionState, error)

// TransactionChecker answers the broker's question about a transaction
// whose outcome it does not know yet (the local transaction returned
// TransactionUnknown, or its END_TRANSACTION was lost). msg is the half
// message with its original topic. It runs on its own goroutine; ctx ends
// at Shutdown.
type TransactionChecker func(ctx context.Context, msg *message.Message) (TransactionState, error)

// TransactionIDOf returns the transaction id of a transactional message
// (its UNIQ_KEY, as brokers and Java use it).
func TransactionIDOf(msg *message.Message) string {
	if id := msg.Property(message.PropertyTransactionID); id != "" {
		return id
	}
	return msg.UniqKey()
}

// TransactionResult is the outcome of SendInTransaction.
type TransactionResult struct {
	*SendResult
	// State is what the local transaction decided (and what was sent to
	// the broker).
	State TransactionState
	// LocalErr is the error the local transaction returned, if any.
	LocalErr error
}

// TransactionProducer sends transactional messages (two-phase: a half
// message, the local transaction, then commit or rollback) and answers the
// brokers' checks of pending transactions. Its embedded Producer sends
// ordinary messages too.
type TransactionProducer struct {
	*Producer
	checker TransactionChecker
	checks  chan struct{} // bounds concurrent checker calls
}

// maxConcurrentChecks bounds checker goroutines (Java: a pool of 1 to 5
// threads with a 2000-slot queue).
const maxConcurrentChecks = 8

// NewTransactionProducer builds a transactional producer; checker is
// required. Its group should be dedicated to it: brokers send checks to
// any producer of the half message's group.
func NewTransactionProducer(cfg ProducerConfig, checker TransactionChecker) (*TransactionProducer, error) {
	if checker == nil {
		return nil, errors.New("client: a transaction producer needs a checker")
	}
	p, err := NewProducer(cfg)
	if err != nil {
		return nil, err
	}
	tp := &TransactionProducer{Producer: p, checker: checker, checks: make(chan struct{}, maxConcurrentChecks)}
	p.core.rc.RegisterHandler(code.CheckTransactionState, tp.onCheck)
	return tp, nil
}

// SendInTransaction stores msg as a half message (invisible to consumers),
// runs local, then tells the broker to commit or roll back
// (END_TRANSACTION, one-way as in Java). With TransactionUnknown (or an
// error from local) the broker checks back later through the checker. A
// send that fails returns the error without running local. Delay levels
// are not supported by transactions and are dropped.
func (p *TransactionProducer) SendInTransaction(ctx context.Context, msg *message.Message, local LocalTransaction) (*TransactionResult, error) {
	if local == nil {
		return nil, errors.New("client: SendInTransaction needs a local transaction")
	}
	if msg == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	if err := p.life.begin(); err != nil {
		return nil, err
	}
	defer p.life.end()
	delete(msg.Properties, message.PropertyDelayTimeLevel)
	msg.SetProperty(message.PropertyTransactionPrepared, "true")
	msg.SetProperty(message.PropertyProducerGroup, p.cfg.Group)
	out, err := p.prepare(msg)
	if err != nil {
		return nil, err
	}
	res, err := p.sendSync(ctx, out, sendOptions{})
	if err != nil {
		return nil, fmt.Errorf("client: send half message: %w", err)
	}
	state := TransactionRollback // not stored safely: Java rolls back
	var localErr error
	if res.Status == SendOK {
		if res.TransactionID != "" {
			msg.SetProperty(message.PropertyTransactionID, res.TransactionID)
		}
		state, localErr = p.runLocal(ctx, msg, local)
	}
	remark := ""
	if localErr != nil {
		remark = "executeLocalTransactionBranch exception: " + localErr.Error()
	}
	if err := p.endTransaction(ctx, msg, res, state, remark); err != nil {
		// The broker will check back: the outcome is not lost.
		p.cfg.Logger.Warn("client: end transaction failed", "msgId", res.MsgID, "state", state.String(), "err", err)
	}
	return &TransactionResult{SendResult: res, State: state, LocalErr: localErr}, nil
}

// runLocal calls local; a panic or error counts as unknown.
func (p *TransactionProducer) runLocal(ctx context.Context, msg *message.Message, local LocalTransaction) (st TransactionState, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = TransactionUnknown, fmt.Errorf("local transaction panicked: %v", r)
		}
	}()
	st, err = local(ctx, msg)
	if err != nil || (st != TransactionCommit && st != TransactionRollback) {
		st = TransactionUnknown
	}
	return st, err
}

// endTransaction sends END_TRANSACTION for a half message just sent.
func (p *TransactionProducer) endTransaction(ctx context.Context, msg *message.Message, res *SendResult, state TransactionState, remark string) error {
	id := res.OffsetMsgID
	if id == "" {
		id = res.MsgID
	}
	_, commitLogOffset, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return fmt.Errorf("client: offset id %q of the half message: %w", id, err)
	}
	addr := p.core.brokerAddr(res.Queue.BrokerName, false)
	if addr == "" {
		return fmt.Errorf("%w: no master for broker %s", ErrNoRoute, res.Queue.BrokerName)
	}
	ext := map[string]string{
		"producerGroup":        p.cfg.Group,
		"tranStateTableOffset": strconv.FormatInt(res.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(commitLogOffset, 10),
		"commitOrRollback":     strconv.Itoa(int(state.endTxType())),
		"fromTransactionCheck": "false",
		"msgId":                res.MsgID,
		"topic":                msg.Topic,
		"bname":                res.Queue.BrokerName,
	}
	if res.TransactionID != "" {
		ext["transactionId"] = res.TransactionID
	}
	return p.endOneway(ctx, addr, ext, remark)
}

func (p *TransactionProducer) endOneway(ctx context.Context, addr string, ext map[string]string, remark string) error {
	req := p.core.newRequest(code.EndTransaction, ext, nil)
	req.Remark = remark
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	defer cancel()
	return p.core.rc.InvokeOneway(ctx, addr, req)
}

// onCheck answers CHECK_TRANSACTION_STATE (one-way): the checker decides
// and END_TRANSACTION goes back to the broker that asked, marked as coming
// from a check. Half messages of other producer groups are ignored
// (client-go does the same).
func (p *TransactionProducer) onCheck(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	msg, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err != nil {
		p.cfg.Logger.Warn("client: undecodable transaction check", "broker", ch.RemoteAddr(), "err", err)
		return nil, nil
	}
	if g := msg.Property(message.PropertyProducerGroup); g != p.cfg.Group {
		p.cfg.Logger.Debug("client: transaction check for another group", "group", g)
		return nil, nil
	}
	if msg.SysFlag&message.FlagCompressed != 0 {
		if body, err := message.Decompress(msg.Body, msg.SysFlag, DefaultMaxBodySize); err == nil {
			msg.Body, msg.SysFlag = body, msg.SysFlag&^message.FlagCompressed
		}
	}
	if id := msg.UniqKey(); id != "" && msg.Property(message.PropertyTransactionID) == "" {
		msg.SetProperty(message.PropertyTransactionID, id)
	}
	select {
	case p.checks <- struct{}{}:
		defer func() { <-p.checks }()
	case <-ctx.Done():
		return nil, nil
	}
	state, cerr := p.runCheck(ctx, msg)
	f := req.ExtFields
	uniq := msg.UniqKey()
	if uniq == "" {
		uniq = f["msgId"]
	}
	ext := map[string]string{
		"producerGroup":        p.cfg.Group,
		"tranStateTableOffset": f["tranStateTableOffset"],
		"commitLogOffset":      f["commitLogOffset"],
		"commitOrRollback":     strconv.Itoa(int(state.endTxType())),
		"fromTransactionCheck": "true",
		"msgId":                uniq,
		"transactionId":        f["transactionId"],
	}
	if t := f["topic"]; t != "" {
		ext["topic"] = t
	}
	if b := f["bname"]; b != "" {
		ext["bname"] = b
	}
	remark := ""
	if cerr != nil {
		remark = "checkLocalTransactionState Exception: " + cerr.Error()
	}
	// Answer on the address the check came in on (the broker's address
	// as dialled), within a bound even if ctx has none.
	ectx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := p.endOneway(ectx, ch.RemoteAddr(), ext, remark); err != nil {
		p.cfg.Logger.Warn("client: answer transaction check failed", "broker", ch.RemoteAddr(), "err", err)
	}
	return nil, nil
}

func (p *TransactionProducer) runCheck(ctx context.Context, msg *message.Message) (st TransactionState, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = TransactionUnknown, fmt.Errorf("checker panicked: %v", r)
		}
	}()
	st, err = p.checker(ctx, msg)
	if err != nil || (st != TransactionCommit && st != TransactionRollback) {
		st = TransactionUnknown
	}
	return st, err
}
