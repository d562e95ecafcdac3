package remoting

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestServeListener: a server on a caller's listener answers requests,
// reports connect/close and server-initiated invokes, and Shutdown closes
// the listener and every connection.
func TestServeListener(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Register(codeEcho, echo, nil)
	connected := make(chan *Channel, 1)
	closed := make(chan *Channel, 1)
	s.OnConnect(func(ch *Channel) { connected <- ch })
	s.OnClose(func(ch *Channel) { closed <- ch })
	ln := testutil.Listen(t)
	if err := s.Serve(ln); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err == nil {
		t.Fatal("second Serve accepted")
	}
	c := newClient(t, nil)
	c.RegisterHandler(codeEcho, echo)
	resp := mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "hi"))
	if resp.Code != code.Success || string(resp.Body) != "hi" {
		t.Fatalf("response %s", describe(resp))
	}
	ch := recv(t, connected, "connect")
	// The server end can invoke the client on the same connection.
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	back, err := ch.Invoke(ctx, echoReq(SerializeRocketMQ, "back"))
	if err != nil || string(back.Body) != "back" {
		t.Fatalf("server invoke: %v %v", back, err)
	}
	c.CloseConn(s.Addr())
	if got := recv(t, closed, "close"); got.ID() != ch.ID() {
		t.Fatalf("closed channel %d, want %d", got.ID(), ch.ID())
	}
	// A second connection stays open until Shutdown closes it.
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "again"))
	recv(t, connected, "second connect")
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	recv(t, closed, "close on shutdown")
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("listener still accepts after Shutdown")
	}
}
