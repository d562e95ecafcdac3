package mux

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func newMux(t *testing.T, cfg Config) *Mux {
	t.Helper()
	ln := testutil.Listen(t)
	m, err := New(ln, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestSharedPort: raft RPCs and remoting requests on one port.
func TestSharedPort(t *testing.T) {
	a, b := newMux(t, DefaultConfig()), newMux(t, DefaultConfig())

	// Remoting on b's port.
	srv, err := remoting.NewServer(remoting.ServerConfig{ListenAddr: b.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Register(1005, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(req, code.Success, "meta"), nil
	}, nil)
	if err := srv.Serve(b.Remoting()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()

	// Raft from a to b.
	ta := raft.NewNetworkTransport(NewStreamLayer(a, nil), 2, 5*time.Second, io.Discard)
	defer ta.Close()
	defer ta.CloseStreams() // pooled outbound connections
	tb := raft.NewNetworkTransport(NewStreamLayer(b, nil), 2, 5*time.Second, io.Discard)
	defer tb.Close()
	defer answerAppendEntries(tb)()
	var resp raft.AppendEntriesResponse
	err = ta.AppendEntries("b", raft.ServerAddress(b.Addr().String()), &raft.AppendEntriesRequest{Term: 7}, &resp)
	if err != nil || resp.Term != 8 || !resp.Success {
		t.Fatalf("raft RPC through the mux: %v %+v", err, resp)
	}

	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Invoke(ctx, b.Addr().String(), remoting.NewRequest(1005, nil, nil))
	if err != nil || r.Remark != "meta" {
		t.Fatalf("remoting through the mux: %v %v", err, r)
	}
	// Raft still works after remoting traffic (a fresh connection each side).
	err = ta.AppendEntries("b", raft.ServerAddress(b.Addr().String()), &raft.AppendEntriesRequest{Term: 1}, &resp)
	if err != nil || resp.Term != 2 {
		t.Fatalf("second raft RPC: %v %+v", err, resp)
	}
}

// TestSilentConnectionClosed: a connection that never sends is closed
// after ClassifyTimeout and never reaches either side.
func TestSilentConnectionClosed(t *testing.T) {
	m := newMux(t, Config{ClassifyTimeout: 100 * time.Millisecond, Backlog: 1})
	conn, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("silent connection got data")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("silent connection was not closed by the mux")
	}
	select {
	case c := <-m.raft.conns:
		t.Fatalf("silent connection classified as raft: %v", c.RemoteAddr())
	case c := <-m.remoting.conns:
		t.Fatalf("silent connection classified as remoting: %v", c.RemoteAddr())
	default:
	}
}

func TestCloseStopsAccept(t *testing.T) {
	m := newMux(t, DefaultConfig())
	errc := make(chan error, 1)
	go func() { _, err := m.Remoting().Accept(); errc <- err }()
	if err := m.Raft().Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Accept returned a connection after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
	if (Config{}).Validate() == nil {
		t.Fatal("zero config accepted")
	}
}
