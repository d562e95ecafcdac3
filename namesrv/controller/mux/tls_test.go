package mux

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/remoting"
)

// TestRaftOverTLS: raft RPCs between stream layers, on a shared port and on
// a port of their own, for each server mode and client kind: permissive
// takes TLS and plaintext, enforcing only TLS; a TLS client cannot talk to a
// plaintext-only server.
func TestRaftOverTLS(t *testing.T) {
	cert, err := tlsconfig.SelfSigned([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	client := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // self-signed test certificate
	servers := map[string]TLS{
		"plaintext":  {},
		"permissive": {Server: remoting.ServerTLS{Mode: remoting.TLSPermissive, Config: server, HandshakeTimeout: 2 * time.Second}},
		"enforcing":  {Server: remoting.ServerTLS{Mode: remoting.TLSEnforcing, Config: server, HandshakeTimeout: 2 * time.Second}},
	}
	cases := []struct {
		server    string
		clientTLS bool
		ok        bool
	}{
		{"plaintext", false, true},
		{"plaintext", true, false},
		{"permissive", false, true},
		{"permissive", true, true},
		{"enforcing", false, false},
		{"enforcing", true, true},
	}
	for _, shared := range []bool{true, false} {
		for _, tc := range cases {
			name := tc.server + "/tls=" + map[bool]string{true: "on", false: "off"}[tc.clientTLS]
			if !shared {
				name = "own port/" + name
			}
			t.Run(name, func(t *testing.T) {
				st := servers[tc.server]
				var srvLayer, cliLayer *StreamLayer
				if shared {
					srvLayer = NewStreamLayer(newMux(t, DefaultConfig()), nil)
					cliLayer = NewStreamLayer(newMux(t, DefaultConfig()), nil)
				} else {
					srvLayer = NewListenerStreamLayer(listen(t), nil)
					cliLayer = NewListenerStreamLayer(listen(t), nil)
				}
				var ct TLS
				if tc.clientTLS {
					ct.Client = client
				}
				err := appendEntries(t, withTLS(t, srvLayer, st), withTLS(t, cliLayer, ct))
				if tc.ok && err != nil {
					t.Fatalf("raft RPC refused: %v", err)
				}
				if !tc.ok && err == nil {
					t.Fatal("raft RPC served")
				}
			})
		}
	}
}

func withTLS(t *testing.T, s *StreamLayer, tt TLS) *StreamLayer {
	t.Helper()
	s, err := s.WithTLS(tt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// answerAppendEntries answers every AppendEntries tr receives with the
// next term, until stop is called (stop waits for it to end).
func answerAppendEntries(tr *raft.NetworkTransport) (stop func()) {
	quit := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			select {
			case rpc := <-tr.Consumer():
				req := rpc.Command.(*raft.AppendEntriesRequest)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term + 1, Success: true}, nil)
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit); <-served }
}

// appendEntries sends one AppendEntries from cli's transport to srv's,
// which answers it.
func appendEntries(t *testing.T, srv, cli *StreamLayer) error {
	t.Helper()
	ts := raft.NewNetworkTransport(srv, 2, 3*time.Second, io.Discard)
	tc := raft.NewNetworkTransport(cli, 2, 3*time.Second, io.Discard)
	stop := answerAppendEntries(ts)
	defer func() {
		stop()
		tc.CloseStreams()
		_ = tc.Close()
		_ = ts.Close()
	}()
	var resp raft.AppendEntriesResponse
	err := tc.AppendEntries("srv", raft.ServerAddress(srv.Addr().String()), &raft.AppendEntriesRequest{Term: 7}, &resp)
	if err == nil && (resp.Term != 8 || !resp.Success) {
		t.Fatalf("answer %+v", resp)
	}
	return err
}
