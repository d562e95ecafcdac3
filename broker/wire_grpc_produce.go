package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/transaction"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// MaxDelay is timerMaxDelaySec: how far ahead a gRPC delivery timestamp
// may be.
func (g grpcBackend) MaxDelay() time.Duration { return timerMaxDelay(g.b.cfg.Get()) }

// EndTransaction runs the END_TRANSACTION handler as registered, as a
// remoting producer's request would (broker/transaction).
func (g grpcBackend) EndTransaction(ctx context.Context, in grpcserver.EndTxInput) (grpcserver.SendResult, error) {
	h, _, ok := g.b.server.Handler(code.EndTransaction)
	if !ok {
		return grpcserver.SendResult{}, errors.New("no END_TRANSACTION handler registered")
	}
	req := remoting.NewRequest(code.EndTransaction, map[string]string{
		"producerGroup":        in.ProducerGroup,
		"tranStateTableOffset": strconv.FormatInt(in.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(in.CommitLogOffset, 10),
		"commitOrRollback":     strconv.Itoa(int(in.CommitOrRollback)),
		"fromTransactionCheck": strconv.FormatBool(in.FromTransactionCheck),
		"msgId":                in.MessageID,
		"transactionId":        in.TransactionID,
	}, nil)
	resp, err := h(ctx, nil, req)
	if err != nil {
		// What the remoting server answers for a handler's error.
		resp = remoting.ResponseFromError(req, err)
	}
	return grpcserver.SendResult{Code: resp.Code, Remark: resp.Remark}, nil
}

// txCheckTargets is where the transaction check calls a producer group
// back: a remoting producer's channel when one is online, else a gRPC
// producer publishing to the topic named by the group (5.x producers have
// no group; the proxy's convention, grpcserver/transaction.go).
type txCheckTargets struct {
	remoting transaction.ChannelProducers
	grpc     *grpcserver.Producers
}

func (t txCheckTargets) CheckTarget(group string) transaction.CheckTarget {
	if c := t.remoting.CheckTarget(group); c != nil {
		return c
	}
	if t.grpc == nil {
		return nil
	}
	if s := t.grpc.Pick(group); s != nil {
		return grpcCheckTarget{group: group, s: s}
	}
	return nil
}

// grpcCheckTarget turns CHECK_TRANSACTION_STATE into the producer's
// RecoverOrphanedTransactionCommand.
type grpcCheckTarget struct {
	group string
	s     *grpcserver.Session
}

func (t grpcCheckTarget) RemoteAddr() string { return t.s.RemoteAddr() }

func (t grpcCheckTarget) InvokeOneway(req *remoting.Command) error {
	f := protocol.FieldsOf(req.ExtFields)
	tranStateTableOffset, commitLogOffset := f.Int64("tranStateTableOffset"), f.Int64("commitLogOffset")
	txID := f.OptStr("transactionId", "")
	if err := f.Err(); err != nil {
		return fmt.Errorf("check transaction header: %w", err)
	}
	m, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err != nil {
		return fmt.Errorf("check transaction body: %w", err)
	}
	if txID == "" {
		txID = m.UniqKey()
	}
	return t.s.RecoverOrphaned(grpcserver.OrphanedTransaction{
		Group: t.group, TransactionID: txID,
		TranStateTableOffset: tranStateTableOffset, CommitLogOffset: commitLogOffset,
		Message: m,
	})
}
