package grpcserver

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/rmqgo/rmq/internal/testutil/randproto"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// randomStrings are the strings random requests are made of: the test
// topics and groups, blanks, control characters, system names, a receipt
// handle's shape.
var randomStrings = []string{"", " ", "T", "F", "G", "a/b", "RMQ_SYS_TRANS_HALF_TOPIC", "CID_RMQ_SYS_X", "\x00", "tag|x",
	strings.Repeat("z", 200), "1 2 3 4 5 6 7 8 9", "0 1700000000000 60000 0 0 broker-a 0 1 4096"}

// panicLog records the handler panics the server logs.
type panicLog struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panicked") {
		var b strings.Builder
		r.Attrs(func(a slog.Attr) bool { b.WriteString(a.Key + "=" + a.Value.String() + " "); return true })
		p.mu.Lock()
		p.panics = append(p.panics, b.String())
		p.mu.Unlock()
	}
	return nil
}
func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicLog) WithGroup(string) slog.Handler      { return p }

// TestRandomRequestsDoNotPanic: requests of every rpc with random fields
// (fixed seed) get answers, never a handler panic, and the server goes on
// serving.
func TestRandomRequestsDoNotPanic(t *testing.T) {
	f := badInputConsumer()
	f.limits.MinLongPolling = 0
	logs := &panicLog{}
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1", Logger: slog.New(logs)})
	conn := dial(t, s, "random")
	svc := v2pb.File_rmqgo_v2_messaging_proto.Services().ByName("MessagingService")
	r := rand.New(rand.NewPCG(17, 2026))
	for round := 0; round < 40; round++ {
		for i := 0; i < svc.Methods().Len(); i++ {
			md := svc.Methods().Get(i)
			full := "/" + string(svc.FullName()) + "/" + string(md.Name())
			req, err := newMessage(md.Input())
			if err != nil {
				t.Fatal(err)
			}
			randproto.Fill(r, req, 4, randomStrings)
			resp, err := newMessage(md.Output())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if !md.IsStreamingClient() && !md.IsStreamingServer() {
				_ = conn.Invoke(ctx, full, req.Interface(), resp.Interface())
			} else if cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: md.IsStreamingClient(), ServerStreams: true}, full); err == nil {
				_ = cs.SendMsg(req.Interface())
				_ = cs.CloseSend()
				for cs.RecvMsg(resp.Interface()) == nil {
				}
			}
			cancel()
		}
	}
	logs.mu.Lock()
	if len(logs.panics) > 0 {
		t.Fatalf("%d handler panics, first: %s", len(logs.panics), logs.panics[0])
	}
	logs.mu.Unlock()
	serves(t, v2pb.NewMessagingServiceClient(conn), f)
}
