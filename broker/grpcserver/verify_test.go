package grpcserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting/code"
)

// telemetryClient opens a push consumer's Telemetry stream as client id
// and waits for the settings' answer (the session is then registered). It
// returns the stream and a function that ends it.
func telemetryClient(t *testing.T, p *Producers, id string) (v2pb.MessagingService_TelemetryClient, context.CancelFunc) {
	t.Helper()
	s := startServer(t, Config{Backend: newFakeConsumer(), Producers: p, AdvertiseHost: "127.0.0.1"})
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, stop := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", id), 10*time.Second)
	t.Cleanup(stop)
	stream, err := v2pb.NewMessagingServiceClient(conn).Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	typ := v2pb.ClientType_PUSH_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &typ, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: res("G")}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	return stream, stop
}

// answerOnce is a fake 5.x client: it reads one relayed command, answers
// first with a reply under a nonce nobody asked for, then with reply
// (given the command's nonce), and hands the command over.
func answerOnce(stream v2pb.MessagingService_TelemetryClient, reply func(nonce string) *v2pb.TelemetryCommand) <-chan *v2pb.TelemetryCommand {
	got := make(chan *v2pb.TelemetryCommand, 1)
	go func() {
		defer close(got)
		cmd, err := stream.Recv()
		if err != nil {
			return
		}
		nonce := cmd.GetPrintThreadStackTraceCommand().GetNonce() + cmd.GetVerifyMessageCommand().GetNonce()
		if stream.Send(reply("unknown-"+nonce)) != nil || stream.Send(reply(nonce)) != nil {
			return
		}
		got <- cmd
	}()
	return got
}

func codeStatus(c v2pb.Code) *v2pb.Status { return &v2pb.Status{Code: c} }

// TestThreadStackTraceRelay: the client gets a PrintThreadStackTraceCommand
// with a nonce; its ThreadStackTrace under that nonce is the answer, mapped
// as the proxy's ClientActivity maps the status; a reply under an unknown
// nonce is ignored.
func TestThreadStackTraceRelay(t *testing.T) {
	tests := []struct {
		status     v2pb.Code
		wantCode   int32
		wantRemark string
		wantJstack string
	}{
		{status: v2pb.Code_OK, wantCode: code.Success, wantJstack: "main thread"},
		{status: v2pb.Code_VERIFY_FIFO_MESSAGE_UNSUPPORTED, wantCode: code.NoPermission, wantRemark: "forbidden to verify message"},
		{status: v2pb.Code_INTERNAL_ERROR, wantCode: code.SystemError, wantRemark: "verify message failed"},
	}
	for _, tc := range tests {
		t.Run(tc.status.String(), func(t *testing.T) {
			p := NewProducers()
			stream, _ := telemetryClient(t, p, "cid")
			got := answerOnce(stream, func(nonce string) *v2pb.TelemetryCommand {
				text := "main thread"
				if strings.HasPrefix(nonce, "unknown-") {
					text = "wrong"
				}
				return &v2pb.TelemetryCommand{Status: codeStatus(tc.status), Command: &v2pb.TelemetryCommand_ThreadStackTrace{
					ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: nonce, ThreadStackTrace: &text},
				}}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			a := p.ThreadStackTrace(ctx, "cid")
			if a.Code != tc.wantCode || a.Remark != tc.wantRemark || a.Jstack != tc.wantJstack {
				t.Fatalf("answer %+v, want code %d remark %q jstack %q", a, tc.wantCode, tc.wantRemark, tc.wantJstack)
			}
			if cmd := <-got; cmd.GetPrintThreadStackTraceCommand().GetNonce() == "" {
				t.Fatalf("client got %v, want a PrintThreadStackTraceCommand with a nonce", cmd)
			}
		})
	}
}

// TestVerifyMessageRelay: the client gets a VerifyMessageCommand with a
// nonce and the message as a receive converts it (no invisible duration);
// its VerifyMessageResult status is the consume result.
func TestVerifyMessageRelay(t *testing.T) {
	tests := []struct {
		status v2pb.Code
		want   string
	}{
		{v2pb.Code_OK, "CR_SUCCESS"},
		{v2pb.Code_FAILED_TO_CONSUME_MESSAGE, "CR_LATER"},
		{v2pb.Code_MESSAGE_CORRUPTED, "CR_RETURN_NULL"},
		{v2pb.Code_INTERNAL_ERROR, ""},
	}
	for _, tc := range tests {
		t.Run(tc.status.String(), func(t *testing.T) {
			p := NewProducers()
			stream, _ := telemetryClient(t, p, "cid")
			got := answerOnce(stream, func(nonce string) *v2pb.TelemetryCommand {
				st := tc.status
				if strings.HasPrefix(nonce, "unknown-") {
					st = v2pb.Code_MESSAGE_CORRUPTED
				}
				return &v2pb.TelemetryCommand{Status: codeStatus(st), Command: &v2pb.TelemetryCommand_VerifyMessageResult{
					VerifyMessageResult: &v2pb.VerifyMessageResult{Nonce: nonce},
				}}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			m := popped("7F0000010001000000000000000000AB", "TagA", "hello", 0, "")
			delete(m.Properties, "POP_CK")
			a := p.VerifyMessage(ctx, "cid", m)
			if a.Code != code.Success || a.ConsumeResult != tc.want {
				t.Fatalf("answer %+v, want SUCCESS with consume result %q", a, tc.want)
			}
			cmd := (<-got).GetVerifyMessageCommand()
			msg := cmd.GetMessage()
			sp := msg.GetSystemProperties()
			if cmd.GetNonce() == "" || msg.GetTopic().GetName() != "T" || string(msg.GetBody()) != "hello" ||
				sp.GetMessageId() != "7F0000010001000000000000000000AB" || sp.GetTag() != "TagA" ||
				msg.GetUserProperties()["color"] != "red" || sp.GetQueueOffset() != 7 || sp.InvisibleDuration != nil || sp.ReceiptHandle != nil {
				t.Fatalf("client got %v, want the message converted as received, without invisible duration or receipt", cmd)
			}
		})
	}
}

// TestRelayWithoutAnswer: no answer is the proxy's SYSTEM_BUSY — when the
// wait times out (a later reply is ignored and the stream goes on), when
// the client has no stream, and at once when the stream ends mid-wait.
func TestRelayWithoutAnswer(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		p := NewProducers()
		stream, _ := telemetryClient(t, p, "cid")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if a := p.ThreadStackTrace(ctx, "cid"); a.Code != code.SystemBusy || a.Remark != "call remote timeout" {
			t.Fatalf("unanswered: %+v, want SYSTEM_BUSY call remote timeout", a)
		}
		cmd, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		late := "late"
		if err := stream.Send(&v2pb.TelemetryCommand{Status: codeStatus(v2pb.Code_OK), Command: &v2pb.TelemetryCommand_ThreadStackTrace{
			ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: cmd.GetPrintThreadStackTraceCommand().GetNonce(), ThreadStackTrace: &late},
		}}); err != nil {
			t.Fatal(err)
		}
		// The stream still serves: a new request is answered.
		got := answerOnce(stream, func(nonce string) *v2pb.TelemetryCommand {
			text := "fresh"
			return &v2pb.TelemetryCommand{Status: codeStatus(v2pb.Code_OK), Command: &v2pb.TelemetryCommand_ThreadStackTrace{
				ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: nonce, ThreadStackTrace: &text},
			}}
		})
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel2()
		if a := p.ThreadStackTrace(ctx2, "cid"); a.Code != code.Success || a.Jstack != "fresh" {
			t.Fatalf("after a late reply: %+v, want the new answer", a)
		}
		<-got
	})
	t.Run("no stream", func(t *testing.T) {
		p := NewProducers()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if a := p.VerifyMessage(ctx, "nobody", popped("", "", "x", 0, "")); a.Code != code.SystemBusy || time.Since(start) > time.Second {
			t.Fatalf("client without stream: %+v after %v, want SYSTEM_BUSY at once", a, time.Since(start))
		}
	})
	t.Run("stream ends mid-wait", func(t *testing.T) {
		p := NewProducers()
		stream, stop := telemetryClient(t, p, "cid")
		go func() {
			if _, err := stream.Recv(); err == nil {
				stop() // the client goes away instead of answering
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		a := p.ThreadStackTrace(ctx, "cid")
		if a.Code != code.SystemBusy || !strings.Contains(a.Remark, "ended") || time.Since(start) > 3*time.Second {
			t.Fatalf("stream ended mid-wait: %+v after %v, want SYSTEM_BUSY (stream ended) before the deadline", a, time.Since(start))
		}
	})
}
