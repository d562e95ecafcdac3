package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The admin requests the broker forwards to one consumer client
// (broker/processor/consumeradmin: GET_CONSUMER_RUNNING_INFO and
// CONSUME_MESSAGE_DIRECTLY) reach a 5.x client through its local channel
// (grpcClients.channel): they are asked on the client's Telemetry stream
// (grpcserver.Producers.ThreadStackTrace, VerifyMessage) and the answer is
// delivered on the channel as the client's response, as Apache's proxy
// relays them (proxy/.../service/relay/ProxyChannel.java,
// LocalProxyRelayService.java, proxy/.../grpc/v2/client/ClientActivity.java).

// grpcRelayTimeout bounds the wait for the client's answer (the proxy's
// grpcProxyRelayRequestTimeoutInSeconds, 5 s), within the broker's own
// wait for the client (consumeradmin.DefaultCallTimeout, 10 s).
const grpcRelayTimeout = 5 * time.Second

// relayAdmin answers GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY
// pushed on client id's channel ch, in the background (the push runs while
// the channel writes), and reports whether req was one of them.
func (g grpcBackend) relayAdmin(ch *remoting.Channel, id string, req *remoting.Command) bool {
	var ask func(ctx context.Context) *remoting.Command
	switch req.Code {
	case code.GetConsumerRunningInfo:
		ask = func(ctx context.Context) *remoting.Command { return g.runningInfo(ctx, id, req) }
	case code.ConsumeMessageDirectly:
		ask = func(ctx context.Context) *remoting.Command { return g.consumeDirectly(ctx, id, req) }
	default:
		return false
	}
	c := &g.b.grpcClients
	c.mu.Lock()
	if c.stop == nil {
		c.stop = make(chan struct{})
	}
	if c.stopped() {
		c.mu.Unlock()
		return true // the broker's wait ends with the channel
	}
	stop := c.stop
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), grpcRelayTimeout)
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		ch.Deliver(ask(ctx))
	}()
	return true
}

// grpcRunningInfo is the ConsumerRunningInfo body the proxy answers for a
// 5.x client (Java's ConsumerRunningInfo, fastjson field order): empty
// tables and, when asked for, the client's thread stack trace.
type grpcRunningInfo struct {
	Jstack           string            `json:"jstack,omitempty"`
	MqPopTable       map[string]any    `json:"mqPopTable"`
	MqTable          map[string]any    `json:"mqTable"`
	Properties       map[string]string `json:"properties"`
	StatusTable      map[string]any    `json:"statusTable"`
	SubscriptionSet  []any             `json:"subscriptionSet"`
	UserConsumerInfo map[string]string `json:"userConsumerInfo"`
}

// runningInfo asks the client for its thread stack trace. The proxy asks
// only when jstackEnable is set and leaves the request unanswered
// otherwise (the broker's wait times out); we ask in both cases, so that
// mqadmin consumerStatus gets a prompt answer, and leave the trace out
// when it was not asked for.
func (g grpcBackend) runningInfo(ctx context.Context, id string, req *remoting.Command) *remoting.Command {
	a := g.b.grpcProducers.ThreadStackTrace(ctx, id)
	resp := remoting.NewResponse(req, a.Code, a.Remark)
	if a.Code != code.Success {
		return resp
	}
	info := grpcRunningInfo{
		MqPopTable: map[string]any{}, MqTable: map[string]any{}, Properties: map[string]string{},
		StatusTable: map[string]any{}, SubscriptionSet: []any{}, UserConsumerInfo: map[string]string{},
	}
	if jstack, _ := strconv.ParseBool(req.Ext("jstackEnable")); jstack {
		info.Jstack = a.Jstack
	}
	body, err := json.Marshal(info)
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, fmt.Sprintf("consumer running info of %s: %v", id, err))
	}
	resp.Body = body
	return resp
}

// grpcDirectResult is the ConsumeMessageDirectlyResult body the proxy
// answers (fastjson field order; consumeResult absent when the client's
// status maps to none; the remark is always "from gRPC client").
type grpcDirectResult struct {
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult,omitempty"`
	Order          bool   `json:"order"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// consumeDirectly hands the client the message the broker attached (its
// stored record) and answers the client's verdict.
func (g grpcBackend) consumeDirectly(ctx context.Context, id string, req *remoting.Command) *remoting.Command {
	limit := g.b.cfg.Get().MaxMessageSize
	m, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err == nil && m.SysFlag&message.FlagCompressed != 0 {
		var body []byte
		if body, err = message.Decompress(m.Body, m.SysFlag, limit); err == nil {
			m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
		}
	}
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, fmt.Sprintf("consume message directly: the attached message: %v", err))
	}
	a := g.b.grpcProducers.VerifyMessage(ctx, id, m)
	resp := remoting.NewResponse(req, a.Code, a.Remark)
	if a.Code != code.Success {
		return resp
	}
	body, err := json.Marshal(grpcDirectResult{AutoCommit: true, ConsumeResult: a.ConsumeResult, Remark: "from gRPC client"})
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, fmt.Sprintf("consume message directly: %v", err))
	}
	resp.Body = body
	return resp
}
