package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// freePortPair finds a port p with p−2 free too.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		vip, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p-2))
		_ = ln.Close()
		if err == nil {
			_ = vip.Close()
			return p
		}
	}
	t.Fatal("no free port pair")
	return 0
}

// TestVIPPort: the broker answers GET_TIMER_CHECK_POINT and
// GET_TIMER_METRICS on its listen port − 2, where Apache's
// SlaveSynchronize asks for them, and nothing else there; on the main
// port the three codes a slave copies answer too.
func TestVIPPort(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.ListenPort = freePortPair(t)
	b, err := New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	invoke := func(addr string, c int32) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := client.Invoke(ctx, addr, remoting.NewRequest(c, nil, nil))
		if err != nil {
			t.Fatalf("code %d to %s: %v", c, addr, err)
		}
		return resp
	}
	vip := "127.0.0.1:" + strconv.Itoa(cfg.ListenPort-2)
	r := invoke(vip, code.GetTimerCheckPoint)
	if r.Code != code.Success || len(r.Body) != protocol.TimerCheckpointSize {
		t.Fatalf("checkpoint on the VIP port: %d %q %d bytes", r.Code, r.Remark, len(r.Body))
	}
	if r = invoke(vip, code.GetTimerMetrics); r.Code != code.Success {
		t.Fatalf("timer metrics on the VIP port: %d %q", r.Code, r.Remark)
	}
	if _, err := protocol.DecodeTimerMetrics(r.Body); err != nil {
		t.Fatal(err)
	}
	if r = invoke(vip, code.SendMessageV2); r.Code != code.RequestCodeNotSupported {
		t.Fatalf("a send on the VIP port: %d %q, want REQUEST_CODE_NOT_SUPPORTED", r.Code, r.Remark)
	}
	for _, c := range []int32{code.GetAllDelayOffset, code.GetTimerCheckPoint, code.GetTimerMetrics} {
		if r = invoke(b.Addr(), c); r.Code != code.Success {
			t.Fatalf("code %d on the main port: %d %q", c, r.Code, r.Remark)
		}
	}
}
