package broker

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestGrpcReceiveStopsAtUndecodableBody: a remoting producer stored a
// message flagged COMPRESSED whose body does not inflate. A gRPC receive
// answers the messages before it, as the proxy's
// MessageDecoder.decodesBatch stops at the first record it cannot decode,
// instead of failing the whole receive; the broker keeps serving.
func TestGrpcReceiveStopsAtUndecodableBody(t *testing.T) {
	const topic, group = "GrpcBadBody", "GID_BAD_BODY"
	b, cli := grpcConsumeBroker(t, topic)
	invoke := invoker(t, b)
	for i, m := range []struct {
		id, flag string
		body     string
	}{{"0100000000000000000000BB01", "0", "good"}, {"0100000000000000000000BB02", "1", "not zlib at all"}, {"0100000000000000000000BB03", "0", "after"}} {
		ext := remotingtest.SendExt(t, "pg", topic, 0, message.PropertyUniqClientMessageIDKeyIdx, m.id)
		ext["sysFlag"] = m.flag
		if resp := invoke(code.SendMessage, ext, []byte(m.body)); resp.Code != code.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	c, got := receive(t, cli, receiveReq(topic, group, 5*time.Second, time.Second))
	if c != v2pb.Code_OK || len(got) != 1 || string(got[0].GetBody()) != "good" {
		t.Fatalf("receive: %v, %d messages %v", c, len(got), got)
	}
	if ms := storedN(t, b, topic, 3); len(ms) != 3 {
		t.Fatalf("%d messages stored, want all 3", len(ms))
	}
}
