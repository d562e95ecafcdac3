package statictopic

import (
	"context"
	"strconv"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// send rewrites SEND_MESSAGE (long names) and SEND_MESSAGE_V2 /
// SEND_BATCH_MESSAGE (short names) (docs/static-topics.md §7.1): the logic queue id becomes the
// leader item's physical queue id, and the answer carries the logic queue
// id and the logic offset of the stored message.
func (s *Service) send(inner remoting.Handler, short bool) remoting.Handler {
	topicKey, queueKey := "topic", "queueId"
	if short {
		topicKey, queueKey = "b", "e"
	}
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		d := s.mapped(req, topicKey)
		if d == nil {
			return inner(ctx, ch, req)
		}
		logicID, err := strconv.ParseInt(req.Ext(queueKey), 10, 32)
		if err != nil {
			return inner(ctx, ch, req) // the send processor reports the bad field
		}
		if logicID < 0 {
			logicID = int64(s.ledQueue(d))
		}
		qc, err := s.queue(d, int32(logicID))
		if err != nil {
			return nil, err
		}
		resp, err := inner(ctx, ch, rewritten(req, map[string]string{queueKey: strconv.Itoa(qc.leader.QueueID)}))
		if err != nil || resp == nil {
			return resp, err
		}
		switch resp.Code {
		case code.Success, code.FlushDiskTimeout, code.FlushSlaveTimeout, code.SlaveNotAvailable:
			// Stored: translate the position. An undecided leader (in the
			// middle of a remapping) answers -1.
			if p, err := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64); err == nil {
				resp.SetExt("queueOffset", strconv.FormatInt(looseLogic(qc.leader, p), 10))
			}
			resp.SetExt("queueId", strconv.Itoa(int(qc.logicID)))
		}
		return resp, nil
	}
}
