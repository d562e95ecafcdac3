package broker

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/broker/auth"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// signedCtx adds the 5.x clients' signature metadata: HMAC-SHA1 of
// x-mq-date-time with the secret, hex, in the authorization header.
func signedCtx(ctx context.Context, ak, sk string) context.Context {
	dt := time.Now().UTC().Format("20060102T150405Z")
	mac := hmac.New(sha1.New, []byte(sk))
	mac.Write([]byte(dt))
	return metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", dt,
		"authorization", "MQv2-HMAC-SHA1 Credential="+ak+", SignedHeaders=x-mq-date-time, Signature="+strings.ToUpper(hex.EncodeToString(mac.Sum(nil))))
}

// TestGrpcAuth: with authentication and authorization on, the gRPC
// endpoint refuses as the proxy does (UNAUTHORIZED 40100 with Apache's
// text in the rpc's own response) an unsigned, forged or unknown-user
// request and a denied one, on unary rpcs, a server stream and the
// Telemetry stream; a signed, allowed request is served.
func TestGrpcAuth(t *testing.T) {
	b, cli := grpcBroker(t, func(cfg *config.Config) {
		cfg.AuthenticationEnabled, cfg.AuthorizationEnabled = true, true
		cfg.InitAuthenticationUser = `{"username":"root","password":"rootpw"}`
	}, 2, map[string]string{"GrpcAuthT1": "", "GrpcAuthT2": ""})
	if err := b.auth.CreateUser(auth.User{Username: "alice", Password: "alicepw"}); err != nil {
		t.Fatal(err)
	}
	r, _ := auth.ParseResource("Topic:GrpcAuthT1")
	if err := b.auth.PutACL(&auth.ACL{Subject: "User:alice", Policies: []auth.Policy{{Type: auth.PolicyCustom, Entries: []auth.Entry{
		{Resource: r, Actions: []auth.Action{auth.ActPub}, Decision: auth.Allow}}}}}); err != nil {
		t.Fatal(err)
	}
	base, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	route := func(ctx context.Context, topic string) *v2pb.Status {
		t.Helper()
		resp, err := cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
		if err != nil {
			t.Fatalf("QueryRoute: %v", err)
		}
		return resp.GetStatus()
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		topic string
		code  v2pb.Code
		msg   string
	}{
		{"unsigned", base, "GrpcAuthT1", v2pb.Code_UNAUTHORIZED, "username cannot be null."},
		{"wrong secret", signedCtx(base, "alice", "nope"), "GrpcAuthT1", v2pb.Code_UNAUTHORIZED, "check signature failed."},
		{"unknown user", signedCtx(base, "mallory", "x"), "GrpcAuthT1", v2pb.Code_UNAUTHORIZED, "User:mallory is not found."},
		{"no date", metadata.AppendToOutgoingContext(base, "authorization", "MQv2-HMAC-SHA1 Credential=alice, Signature=00"), "GrpcAuthT1", v2pb.Code_UNAUTHORIZED, "datetime is null."},
		{"denied", signedCtx(base, "alice", "alicepw"), "GrpcAuthT2", v2pb.Code_UNAUTHORIZED, "User:alice has no permission to access Topic:GrpcAuthT2 from 127.0.0.1, no matched policies."},
		{"allowed", signedCtx(base, "alice", "alicepw"), "GrpcAuthT1", v2pb.Code_OK, ""},
		{"super user", signedCtx(base, "root", "rootpw"), "GrpcAuthT2", v2pb.Code_OK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := route(tc.ctx, tc.topic)
			if st.GetCode() != tc.code || (tc.msg != "" && st.GetMessage() != tc.msg) {
				t.Fatalf("status %v %q, want %v %q", st.GetCode(), st.GetMessage(), tc.code, tc.msg)
			}
		})
	}

	// A server stream: one refusal and the end.
	ctx := signedCtx(base, "alice", "alicepw")
	rs, err := cli.ReceiveMessage(ctx, &v2pb.ReceiveMessageRequest{Group: &v2pb.Resource{Name: "G"},
		MessageQueue: &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: "GrpcAuthT1"}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := rs.Recv()
	if err != nil || first.GetStatus().GetCode() != v2pb.Code_UNAUTHORIZED ||
		first.GetStatus().GetMessage() != "User:alice has no permission to access Group:G from 127.0.0.1, no matched policies." {
		t.Fatalf("ReceiveMessage: %v %v", first, err)
	}
	if _, err := rs.Recv(); err == nil {
		t.Fatal("ReceiveMessage stream goes on after the refusal")
	}

	// Telemetry: the settings naming a denied topic are answered with the
	// refusal, and the stream ends.
	ts, err := cli.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	producer := v2pb.ClientType_PRODUCER
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &producer,
		PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "GrpcAuthT2"}}}}}}}); err != nil {
		t.Fatal(err)
	}
	cmd, err := ts.Recv()
	if err != nil || cmd.GetStatus().GetCode() != v2pb.Code_UNAUTHORIZED || !strings.Contains(cmd.GetStatus().GetMessage(), "Topic:GrpcAuthT2") {
		t.Fatalf("Telemetry: %v %v", cmd, err)
	}
	if _, err := ts.Recv(); err == nil {
		t.Fatal("Telemetry stream goes on after the refusal")
	}
}
