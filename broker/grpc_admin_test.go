package broker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestGrpcConsumerAdminRelay: the admin requests the broker forwards to a
// consumer client reach a 5.x push consumer on its Telemetry stream, as
// the proxy relays them: GET_CONSUMER_RUNNING_INFO is a
// PrintThreadStackTraceCommand whose ThreadStackTrace becomes the running
// info (its jstack when asked for, no properties), CONSUME_MESSAGE_DIRECTLY
// a VerifyMessageCommand with the stored message whose VerifyMessageResult
// becomes the ConsumeMessageDirectlyResult.
func TestGrpcConsumerAdminRelay(t *testing.T) {
	const topic, group, id = "GrpcAdminRelay", "GID_GRPC_ADMIN", "admin-client-1"
	b, cli := grpcConsumeBroker(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "JAVA", "x-mq-client-version", "5.2.0")
	stream, err := cli.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	push := v2pb.ClientType_PUSH_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &push,
		PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: &v2pb.Resource{Name: group},
			Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: topic}, Expression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"}}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if hb, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: group}, ClientType: push}); err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", hb, err)
	}
	// The fake client: a stack trace for every request, and a failed
	// consumption of every message it is asked to verify.
	verified := make(chan *v2pb.Message, 4)
	go func() {
		for {
			cmd, err := stream.Recv()
			if err != nil {
				return
			}
			var reply *v2pb.TelemetryCommand
			switch {
			case cmd.GetPrintThreadStackTraceCommand() != nil:
				text := "\"main\" RUNNABLE"
				reply = &v2pb.TelemetryCommand{Status: &v2pb.Status{Code: v2pb.Code_OK}, Command: &v2pb.TelemetryCommand_ThreadStackTrace{
					ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: cmd.GetPrintThreadStackTraceCommand().GetNonce(), ThreadStackTrace: &text}}}
			case cmd.GetVerifyMessageCommand() != nil:
				verified <- cmd.GetVerifyMessageCommand().GetMessage()
				reply = &v2pb.TelemetryCommand{Status: &v2pb.Status{Code: v2pb.Code_FAILED_TO_CONSUME_MESSAGE}, Command: &v2pb.TelemetryCommand_VerifyMessageResult{
					VerifyMessageResult: &v2pb.VerifyMessageResult{Nonce: cmd.GetVerifyMessageCommand().GetNonce()}}}
			default:
				continue
			}
			if stream.Send(reply) != nil {
				return
			}
		}
	}()

	rc := remotingtest.NewClient(t)
	for _, jstack := range []string{"true", "false"} {
		resp := remotingtest.Invoke(t, rc, b.Addr(), code.GetConsumerRunningInfo,
			map[string]string{"consumerGroup": group, "clientId": id, "jstackEnable": jstack}, nil)
		remotingtest.Want(t, "GET_CONSUMER_RUNNING_INFO jstackEnable="+jstack, resp, code.Success, "")
		var info struct {
			Jstack     *string           `json:"jstack"`
			Properties map[string]string `json:"properties"`
			MqTable    map[string]any    `json:"mqTable"`
		}
		if err := json.Unmarshal(resp.Body, &info); err != nil {
			t.Fatalf("running info %s: %v", resp.Body, err)
		}
		wantJstack := jstack == "true"
		if (info.Jstack != nil) != wantJstack || (wantJstack && *info.Jstack != "\"main\" RUNNABLE") || info.Properties == nil || len(info.Properties) != 0 || info.MqTable == nil {
			t.Fatalf("running info (jstackEnable=%s): %s", jstack, resp.Body)
		}
	}

	ids := []string{"01000000000000000000000A01"}
	sendNormal(ctx, t, cli, topic, time.UnixMilli(1700000000123), ids...)
	msgs := storedN(t, b, topic, 1) // consume queues are built asynchronously
	if len(msgs) != 1 {
		t.Fatalf("stored %d messages, want 1", len(msgs))
	}
	resp := remotingtest.Invoke(t, rc, b.Addr(), code.ConsumeMessageDirectly,
		map[string]string{"consumerGroup": group, "clientId": id, "msgId": msgs[0].OffsetMsgID(), "topic": topic}, nil)
	remotingtest.Want(t, "CONSUME_MESSAGE_DIRECTLY", resp, code.Success, "")
	if string(resp.Body) != `{"autoCommit":true,"consumeResult":"CR_LATER","order":false,"remark":"from gRPC client","spentTimeMills":0}` {
		t.Fatalf("consume directly answered %s", resp.Body)
	}
	select {
	case m := <-verified:
		if m.GetSystemProperties().GetMessageId() != ids[0] || string(m.GetBody()) != "body-"+ids[0] || m.GetTopic().GetName() != topic ||
			m.GetSystemProperties().GetTag() != "TagA" || m.GetUserProperties()["color"] != "red" {
			t.Fatalf("the client verified %v, want the stored message", m)
		}
	default:
		t.Fatal("the client got no VerifyMessageCommand")
	}

	// Another client of the group is not online: the broker's own answer.
	resp = remotingtest.Invoke(t, rc, b.Addr(), code.GetConsumerRunningInfo,
		map[string]string{"consumerGroup": group, "clientId": "nobody", "jstackEnable": "true"}, nil)
	remotingtest.Want(t, "GET_CONSUMER_RUNNING_INFO of an unknown client", resp, code.SystemError, "The Consumer <"+group+"> <nobody> not online")
}
