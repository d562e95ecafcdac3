package broker

import (
	"context"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// 5.x producers in the broker's producer table (broker/grpcserver/
// producers.go): registered with HEART_BEAT and unregistered with
// UNREGISTER_CLIENT on the client's local channel (grpcClients), as the
// proxy registers them with its broker. The table then lists them
// (GET_PRODUCER_CONNECTION_LIST) and expires them when their heartbeats
// stop; the transaction check finds their channel there, and the channel
// turns CHECK_TRANSACTION_STATE into the producer's
// RecoverOrphanedTransactionCommand (producerCheck).

var _ grpcserver.ProducerRegistry = grpcBackend{}

// ProducerHeartbeat registers the client as a producer of each group.
func (g grpcBackend) ProducerHeartbeat(ctx context.Context, c grpcserver.ClientInfo, groups []string) error {
	hb := client.HeartbeatData{ClientID: c.ID, ConsumerDataSet: []client.ConsumerData{}}
	for _, group := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, client.ProducerData{GroupName: group})
	}
	return g.heartbeat(ctx, c, hb)
}

// ProducerGone unregisters the client from each group and closes its
// channel.
func (g grpcBackend) ProducerGone(c grpcserver.ClientInfo, groups []string) {
	ch := g.b.grpcClients.drop(c.ID)
	if ch == nil {
		return
	}
	defer ch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, group := range groups {
		req := remoting.NewRequest(code.UnregisterClient, map[string]string{"clientID": c.ID, "producerGroup": group}, nil)
		if _, err := g.handle(ctx, ch, req); err != nil {
			g.b.log.Debug("grpc: unregister producer", "group", group, "clientId", c.ID, "err", err)
		}
	}
}

// producerCheck passes the transaction check's CHECK_TRANSACTION_STATE,
// sent to a 5.x producer's channel, to the producer's Telemetry stream.
// The group is the half message's producer group (its topic, as 5.x
// producers send it).
func (g grpcBackend) producerCheck(clientID string, req *remoting.Command) {
	s := g.b.grpcProducers.Client(clientID)
	if s == nil {
		g.b.log.Debug("grpc: transaction check not delivered: no telemetry stream", "clientId", clientID)
		return
	}
	m, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err != nil {
		g.b.log.Debug("grpc: transaction check body", "clientId", clientID, "err", err)
		return
	}
	t := grpcCheckTarget{group: m.Properties[message.PropertyProducerGroup], s: s}
	if err := t.InvokeOneway(req); err != nil {
		g.b.log.Debug("grpc: transaction check not delivered", "clientId", clientID, "err", err)
	}
}
