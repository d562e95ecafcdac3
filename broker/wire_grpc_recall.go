package broker

import (
	"context"
	"fmt"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

var _ grpcserver.Recaller = grpcBackend{}

// Recall runs RECALL_MESSAGE (broker/processor/recall) for a gRPC
// RecallMessage. As the proxy (Apache proxy/.../processor/
// ProducerProcessor.java recallMessage), the request carries the topic,
// the handle and the handle's broker name, and goes to that broker: here
// when the handle names this broker (or cannot be read: the processor
// then refuses it), else to the named broker's master from the topic's
// nameserver route. A broker the route does not know gets the request
// here too, and the processor refuses the foreign broker name.
func (g grpcBackend) Recall(ctx context.Context, topic, handle string) (grpcserver.RecallResult, error) {
	brokerName := ""
	if h, err := schedule.DecodeRecallHandle(handle); err == nil {
		brokerName = h.BrokerName
	}
	req := remoting.NewRequest(code.RecallMessage, map[string]string{
		"topic": topic, "recallHandle": handle, "bname": brokerName,
	}, nil)
	var resp *remoting.Command
	var err error
	if addr := g.recallPeer(ctx, topic, brokerName); addr != "" {
		if resp, err = g.b.client.Invoke(ctx, addr, req); err != nil {
			return grpcserver.RecallResult{}, fmt.Errorf("recall on %s (%s): %w", brokerName, addr, err)
		}
	} else if resp, err = g.handle(ctx, nil, req); err != nil {
		return grpcserver.RecallResult{}, err
	}
	res := grpcserver.RecallResult{Code: resp.Code, Remark: resp.Remark}
	if resp.Code == code.Success {
		res.MessageID = resp.Ext("msgId")
	}
	return res, nil
}

// recallPeer is the remoting address of the master of brokerName when it
// is another broker of the topic's route, "" otherwise.
func (g grpcBackend) recallPeer(ctx context.Context, topic, brokerName string) string {
	if brokerName == "" || brokerName == g.b.cfg.Get().BrokerName {
		return ""
	}
	rd, err := g.b.topicRoute(ctx, topic)
	if err != nil {
		return ""
	}
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs[protocol.MasterID]
		}
	}
	return ""
}
