package auth

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

func TestGRPCCredentials(t *testing.T) {
	for _, tc := range []struct {
		name      string
		md        GRPCMeta
		user, sig string
		err       string
	}{
		{"none", GRPCMeta{}, "", "", ""},
		{"full", GRPCMeta{Authorization: "MQv2-HMAC-SHA1 Credential=alice/x, SignedHeaders=x-mq-date-time, Signature=0aFF", DateTime: "d"}, "alice", "Cv8=", ""},
		{"no date", GRPCMeta{Authorization: "MQv2-HMAC-SHA1 Credential=alice"}, "", "", "datetime is null."},
		{"no space", GRPCMeta{Authorization: "MQv2-HMAC-SHA1", DateTime: "d"}, "", "", "authentication header is incorrect."},
		{"item without =", GRPCMeta{Authorization: "MQv2-HMAC-SHA1 Credential", DateTime: "d"}, "", "", "authentication keyValues length is incorrect, actual length=1."},
		{"empty credential", GRPCMeta{Authorization: "MQv2-HMAC-SHA1 Credential=/", DateTime: "d"}, "", "", "authentication credential length is incorrect, actual length=0."},
		{"bad hex", GRPCMeta{Authorization: "MQv2-HMAC-SHA1 Credential=a, Signature=xyz", DateTime: "d"}, "", "", "create authentication context error."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, sig, err := grpcCredentials(tc.md)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || user != tc.user || sig != tc.sig {
				t.Fatalf("got %q %q %v; want %q %q %q", user, sig, err, tc.user, tc.sig, tc.err)
			}
		})
	}
}

func TestGRPCChecks(t *testing.T) {
	res := func(n string) *v2pb.Resource { return &v2pb.Resource{Name: n} }
	consumer, producer := v2pb.ClientType_SIMPLE_CONSUMER, v2pb.ClientType_PRODUCER
	for _, tc := range []struct {
		name string
		req  proto.Message
		want []Check
		err  string
	}{
		{"send", &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{Topic: res("T")}}}, []Check{{TopicResource("T"), []Action{ActPub}}}, ""},
		{"send nothing", &v2pb.SendMessageRequest{}, nil, "message is null."},
		{"route", &v2pb.QueryRouteRequest{Topic: res("T")}, []Check{{TopicResource("T"), []Action{ActPub, ActSub}}}, ""},
		{"route without topic", &v2pb.QueryRouteRequest{}, nil, "topic is null."},
		{"receive", &v2pb.ReceiveMessageRequest{Group: res("G"), MessageQueue: &v2pb.MessageQueue{Topic: res("T")}}, []Check{{GroupResource("G"), []Action{ActSub}}, {TopicResource("T"), []Action{ActSub}}}, ""},
		{"receive without queue", &v2pb.ReceiveMessageRequest{Group: res("G")}, nil, "messageQueue is null."},
		{"consumer heartbeat", &v2pb.HeartbeatRequest{Group: res("G"), ClientType: consumer}, []Check{{GroupResource("G"), []Action{ActSub}}}, ""},
		{"producer heartbeat", &v2pb.HeartbeatRequest{ClientType: producer}, nil, ""},
		{"ack", &v2pb.AckMessageRequest{Group: res("G"), Topic: res("T")}, []Check{{GroupResource("G"), []Action{ActSub}}, {TopicResource("T"), []Action{ActSub}}}, ""},
		{"pull (not mapped)", &v2pb.PullMessageRequest{Group: res("G")}, nil, ""},
		{"settings", &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: res("G"), Subscriptions: []*v2pb.SubscriptionEntry{{Topic: res("T")}}}}}}}, []Check{{GroupResource("G"), []Action{ActSub}}, {TopicResource("T"), []Action{ActSub}}}, ""},
		{"settings without pub/sub", &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{}}}, nil, "settings command doesn't have publishing or subscription."},
		{"lite sync without topics", &v2pb.SyncLiteSubscriptionRequest{Group: res("G"), Topic: res("T")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GRPCChecks(tc.req)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v %v; want %+v %q", got, err, tc.want, tc.err)
			}
		})
	}
}
