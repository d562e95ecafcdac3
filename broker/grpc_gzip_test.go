package broker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestGrpcGzipBody: a message sent over gRPC with a GZIP body
// (SystemProperties.body_encoding) reaches both protocols' consumers with
// its original body. It is stored decompressed without the COMPRESSED
// flag, so a remoting consumer (pull or pop) reads the body as sent, and a
// gRPC receive answers it IDENTITY with the original body's MD5. (Apache's
// proxy stores the gzip bytes under a COMPRESSED flag whose compression
// type bits say ZLIB, which remoting consumers cannot inflate;
// docs/compatibility.md.)
func TestGrpcGzipBody(t *testing.T) {
	const topic, group = "GrpcGzip", "GID_GZIP"
	b, cli := grpcConsumeBroker(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	original := []byte(strings.Repeat("a gzip body, ", 200))
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(original); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	const id = "01000000000000000000000GZ1"
	r, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: topic},
		SystemProperties: &v2pb.SystemProperties{MessageId: id, MessageType: v2pb.MessageType_NORMAL,
			BodyEncoding: v2pb.Encoding_GZIP},
		Body: zipped.Bytes(),
	}}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("send: %v %v", r, err)
	}

	// What remoting consumers read: the stored record.
	ms := storedN(t, b, topic, 1)
	if len(ms) != 1 || ms[0].UniqKey() != id {
		t.Fatalf("stored %d messages, want %s", len(ms), id)
	}
	if ms[0].SysFlag&message.FlagCompressed != 0 || !bytes.Equal(ms[0].Body, original) {
		t.Fatalf("stored sysFlag %#x, body %d bytes (want the %d original bytes, not flagged compressed)", ms[0].SysFlag, len(ms[0].Body), len(original))
	}

	// A remoting consumer's pull (PULL_MESSAGE with its subscription).
	pull, _, _ := b.server.Handler(code.PullMessage)
	resp, err := pull(ctx, nil, remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": group + "_pull", "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("pull: %v %v", resp, err)
	}
	pulled, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
	if err != nil || len(pulled) != 1 {
		t.Fatalf("pulled %d messages: %v", len(pulled), err)
	}
	if body, err := message.Decompress(pulled[0].Body, pulled[0].SysFlag, 0); err != nil || !bytes.Equal(body, original) {
		t.Fatalf("pulled body %d bytes (sysFlag %#x, %v), want the original %d bytes", len(body), pulled[0].SysFlag, err, len(original))
	}

	// A gRPC consumer.
	c, got := receive(t, cli, receiveReq(topic, group, 5*time.Second, 2*time.Second))
	if c != v2pb.Code_OK || len(got) != 1 {
		t.Fatalf("receive: %v, %d messages", c, len(got))
	}
	sp := got[0].GetSystemProperties()
	sum := md5.Sum(original)
	if sp.GetMessageId() != id || !bytes.Equal(got[0].GetBody(), original) || sp.GetBodyEncoding() != v2pb.Encoding_IDENTITY ||
		sp.GetBodyDigest().GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])) {
		t.Fatalf("received %s, %d bytes, encoding %v, digest %v; want the original body IDENTITY", sp.GetMessageId(), len(got[0].GetBody()),
			sp.GetBodyEncoding(), sp.GetBodyDigest())
	}
}
