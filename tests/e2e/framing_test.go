package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// hangUpAfter writes chunks to addr on a fresh connection, pausing between
// them so they arrive in separate reads, then closes it without reading.
func hangUpAfter(t *testing.T, addr string, chunks ...[]byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, c := range chunks {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := conn.Write(c); err != nil {
			t.Fatal(err)
		}
	}
}

// cutEveryWay sends frame cut at every byte (a connection per cut), and
// wrapped inside a frame whose length field promises 100,000 bytes that never
// come: nothing of it may run.
func cutEveryWay(t *testing.T, addr string, req *remoting.Command) {
	t.Helper()
	frame, err := remoting.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(frame); cut++ {
		hangUpAfter(t, addr, frame[:cut])
	}
	for _, filler := range [][]byte{nil, {1, 2, 3, 4}, frame[:4]} {
		outer := append(binary.BigEndian.AppendUint32(nil, 100_000), filler...)
		hangUpAfter(t, addr, outer, frame)
		hangUpAfter(t, addr, append(outer, frame...))
	}
}

// TestCutFramesNotExecuted: a connection that ends before a frame is whole
// executes nothing of it, on the nameserver and on the broker (real
// processes). Before the fix, a complete request after the 4 bytes of a
// 100,000-byte length field ran: a SEND_MESSAGE created a topic and stored a
// message, a PUT_KV_CONFIG changed the KV table. The same request sent whole
// and hung up on does run, which shows the checks can see it.
func TestCutFramesNotExecuted(t *testing.T) {
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	broker := c.Brokers()[0].Addr()

	putKV := remoting.NewRequest(code.PutKVConfig, map[string]string{"namespace": "CUT_FRAMES", "key": "k", "value": "v"}, nil)
	getKV := func() int32 {
		return roundTrip(t, c.NamesrvAddr(), remoting.NewRequest(code.GetKVConfig, map[string]string{"namespace": "CUT_FRAMES", "key": "k"}, nil)).Code
	}
	const topic = "CutFrameTopic"
	send := sendV2Request(topic, "TBW102", 0, []byte("cut"))
	maxOffset := func() *remoting.Command {
		return roundTrip(t, broker, remoting.NewRequest(code.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
	}

	cutEveryWay(t, c.NamesrvAddr(), putKV)
	cutEveryWay(t, broker, send)
	time.Sleep(200 * time.Millisecond) // a wrongly dispatched request would have run by now
	if got := getKV(); got != code.QueryNotFound {
		t.Fatalf("GET_KV_CONFIG after cut PUT_KV_CONFIG frames: code %d, want QUERY_NOT_FOUND (%d): a cut frame ran", got, code.QueryNotFound)
	}
	if resp := maxOffset(); resp.Code != code.Success || resp.ExtFields["offset"] != "0" {
		t.Fatalf("GET_MAX_OFFSET after cut SEND_MESSAGE_V2 frames: code %d offset %q, want offset 0: a cut frame ran", resp.Code, resp.ExtFields["offset"])
	}

	whole := func(req *remoting.Command) []byte {
		b, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hangUpAfter(t, c.NamesrvAddr(), whole(putKV))
	hangUpAfter(t, broker, whole(send))
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := getKV(); got != code.Success {
			return fmt.Errorf("whole PUT_KV_CONFIG not applied: code %d", got)
		}
		if resp := maxOffset(); resp.Code != code.Success || resp.ExtFields["offset"] != "1" {
			return fmt.Errorf("whole SEND_MESSAGE_V2 not stored: code %d offset %q", resp.Code, resp.ExtFields["offset"])
		}
		return nil
	})
}
