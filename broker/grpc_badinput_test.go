package broker

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/internal/testutil/randproto"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// TestGrpcRandomRequests: requests of every rpc with random fields
// (fixed seed; topics T and F exist, receipt handles of this broker's
// shape) reach the broker's real paths (send, pop, ack, dead-lettering,
// end transaction, lite subscriptions) and never make a handler panic;
// then the broker still stores a message and delivers it.
func TestGrpcRandomRequests(t *testing.T) {
	b, cli := grpcBroker(t, func(c *config.Config) { c.GrpcClientConsumerMinLongPollingTimeoutMillis = 0 }, 2, map[string]string{"T": "", "F": "FIFO"})
	conn, err := grpcDial(b.GrpcAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	name := b.cfg.Get().BrokerName
	strs := []string{"", " ", "T", "F", "G", "a/b", "RMQ_SYS_TRANS_HALF_TOPIC", "CID_RMQ_SYS_X", "\x00", "tag|x", strings.Repeat("z", 200),
		"0 " + strconv.FormatInt(time.Now().UnixMilli(), 10) + " 60000 0 0 " + name + " 0 1 4096", "0 1 1 0 0 " + name + " 7 99 0"}
	svc := v2pb.File_rmqgo_v2_messaging_proto.Services().ByName("MessagingService")
	r := rand.New(rand.NewPCG(17, 2026))
	for round := 0; round < 150; round++ {
		for i := 0; i < svc.Methods().Len(); i++ {
			md := svc.Methods().Get(i)
			full := "/" + string(svc.FullName()) + "/" + string(md.Name())
			in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			if err != nil {
				t.Fatal(err)
			}
			out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
			if err != nil {
				t.Fatal(err)
			}
			req, resp := in.New(), out.New()
			randproto.Fill(r, req, 4, strs)
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "rnd-"+strconv.Itoa(r.IntN(5))), 300*time.Millisecond)
			if !md.IsStreamingClient() && !md.IsStreamingServer() {
				err = conn.Invoke(ctx, full, req.Interface(), resp.Interface())
			} else if cs, serr := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: md.IsStreamingClient(), ServerStreams: true}, full); serr == nil {
				_ = cs.SendMsg(req.Interface())
				_ = cs.CloseSend()
				for err = cs.RecvMsg(resp.Interface()); err == nil; err = cs.RecvMsg(resp.Interface()) {
				}
			}
			cancel()
			if err != nil && strings.Contains(err.Error(), "internal error handling") {
				t.Errorf("%s %v: a handler panicked: %v", md.Name(), req, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sendNormal(ctx, t, cli, "T", time.Now(), "01RANDOMAFTER")
	got := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); !got["01RANDOMAFTER"] && time.Now().Before(deadline); {
		_, msgs := receive(t, cli, receiveReq("T", "GID_RANDOM_AFTER", 30*time.Second, 500*time.Millisecond))
		for _, m := range msgs {
			got[m.GetSystemProperties().GetMessageId()] = true
		}
	}
	if !got["01RANDOMAFTER"] {
		t.Fatalf("the message sent after the random requests was not delivered (got %v)", got)
	}
}
