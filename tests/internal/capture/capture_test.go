package capture

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestRecordAndAnswerRoute(t *testing.T) {
	dir := t.TempDir()
	l, err := Listen("127.0.0.1:0", Options{Dir: dir, Answer: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := remoting.NewRequest(code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	req.Opaque = 42
	req.SerializeType = remoting.SerializeRocketMQ
	raw, err := remoting.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	respRaw, err := readFrame(bufio.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := remoting.Decode(respRaw[4:])
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsResponse() || resp.Opaque != 42 || resp.Code != code.Success || resp.SerializeType != remoting.SerializeRocketMQ {
		t.Fatalf("response %+v", resp)
	}
	if !strings.Contains(string(resp.Body), `"brokerAddrs":{"0":"`+l.Addr()+`"}`) {
		t.Fatalf("route body %s", resp.Body)
	}

	frames := l.Frames()
	if len(frames) != 1 || frames[0].Cmd.Code != code.GetRouteInfoByTopic {
		t.Fatalf("frames %+v", frames)
	}
	if filepath.Base(frames[0].Path) != "0001_105_rocketmq.bin" {
		t.Fatalf("file %s", frames[0].Path)
	}
	onDisk, err := os.ReadFile(frames[0].Path)
	if err != nil || string(onDisk) != string(raw) {
		t.Fatalf("file content %x, %v; want %x", onDisk, err, raw)
	}
}

// TestClientGoProducerSends checks that client-go accepts the listener's
// route answer and sends its message to the listener as the broker: what
// scripts/capture-golden.sh relies on.
func TestClientGoProducerSends(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the client-go round trip")
	}
	l, err := Listen("127.0.0.1:0", Options{Dir: t.TempDir(), Answer: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{l.Addr()})),
		producer.WithGroupName("capture_test_group"),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	res, err := p.SendSync(context.Background(), primitive.NewMessage("CaptureTopic", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("send result %v", res)
	}
	var codes []int32
	for _, f := range l.Frames() {
		codes = append(codes, f.Cmd.Code)
	}
	if len(codes) < 2 || codes[0] != code.GetRouteInfoByTopic || codes[len(codes)-1] != code.SendMessage {
		t.Fatalf("captured codes %v, want 105 ... 10", codes)
	}
}
