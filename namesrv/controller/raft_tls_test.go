package controller

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/namesrv/controller/mux"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// TestRaftTLSEnforcing: three controllers on real ports with
// tls.server.mode=enforcing (self-signed, test mode) elect a leader over
// raft-over-TLS and replicate to every node; a raft peer speaking plaintext
// on the shared port is refused while one speaking TLS is answered.
func TestRaftTLSEnforcing(t *testing.T) {
	const n = 3
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf("n%d-%s", i, testutil.FreeAddr(t)))
	}
	peers := strings.Join(items, ";")
	nodes := make([]*Controller, n)
	for i := range n {
		cfg := testConfig(t, peers, fmt.Sprintf("n%d", i))
		cfg.ServerMode = tlsconfig.ModeEnforcing
		cfg.ConfigFile = filepath.Join(t.TempDir(), "absent.properties")
		c, err := New(cfg, Deps{Raft: fastRaft}, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = c
		t.Cleanup(func() { _ = c.Close() })
	}
	var leader *Controller
	testutil.Eventually(t, waitFor, func() error {
		count := 0
		for _, c := range nodes {
			if c.IsLeader() {
				leader, count = c, count+1
			}
		}
		if count != 1 {
			return fmt.Errorf("%d serving leaders", count)
		}
		return nil
	})
	// A write reaches every node: AppendEntries over TLS both ways.
	if err := leader.Raft().Barrier(waitFor).Error(); err != nil {
		t.Fatal(err)
	}
	want := leader.Raft().LastIndex()
	testutil.Eventually(t, waitFor, func() error {
		for i, c := range nodes {
			if got := c.Raft().AppliedIndex(); got < want {
				return fmt.Errorf("node %d applied %d of %d", i, got, want)
			}
		}
		return nil
	})

	target := raft.ServerAddress(nodes[0].self.Addr)
	vote := func(clientTLS *tls.Config) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, err := mux.New(ln, mux.DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		sl, err := mux.NewStreamLayer(m, nil).WithTLS(mux.TLS{Client: clientTLS})
		if err != nil {
			t.Fatal(err)
		}
		tr := raft.NewNetworkTransport(sl, 1, 3*time.Second, io.Discard)
		defer func() { tr.CloseStreams(); _ = tr.Close() }()
		var resp raft.RequestVoteResponse
		// Term 0: an outdated candidate, refused without disturbing the
		// cluster; only whether an answer comes matters.
		return tr.RequestVote("n0", target, &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("stranger"), Addr: []byte("127.0.0.1:1")}}, &resp)
	}
	if err := vote(nil); err == nil {
		t.Fatal("a plaintext raft peer was answered by an enforcing controller")
	}
	if err := vote(&tls.Config{InsecureSkipVerify: true}); err != nil { //nolint:gosec // self-signed test certificate
		t.Fatalf("a raft peer over TLS: %v", err)
	}
	if !leader.IsLeader() {
		t.Fatal("the leader lost its leadership to the strangers")
	}
}
