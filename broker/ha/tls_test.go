package ha

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/tlsconfig/tlstest"
	"github.com/rmqgo/rmq/remoting"
)

// TestReplicationOverTLS: a master whose HA listener enforces TLS (the
// broker wraps it with remoting.NewTLSListener for tls.server.mode)
// replicates to a slave dialling with Options.TLS (tls.enable); a slave
// without TLS gets nothing.
func TestReplicationOverTLS(t *testing.T) {
	ca, err := tlstest.NewCA("ha CA")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ca.Server("master")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := sp.TLS()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := remoting.NewTLSListener(testutil.Listen(t), remoting.ServerTLS{
		Mode: remoting.TLSEnforcing, Config: &tls.Config{Certificates: []tls.Certificate{cert}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	master := openStore(t, tempDir(t, "master"))
	m := NewMaster(master.CommitLog(), ln, fastOptions(nil))
	m.Start()
	addr := m.Addr().String()
	t.Cleanup(func() { _ = m.Close(); _ = master.Close() })

	startSlave := func(name string, cfg *tls.Config) *store.Store {
		st := openStore(t, tempDir(t, name))
		st.SetReplica(true)
		opts := fastOptions(nil)
		opts.TLS = cfg
		s := NewSlave(st.CommitLog(), func() string { return addr }, opts)
		s.Start()
		t.Cleanup(func() { s.Close(); _ = st.Close() })
		return st
	}
	put(t, master, "TopicTLS", 0, 40)

	plain := startSlave("plain", nil)
	secure := startSlave("secure", &tls.Config{RootCAs: ca.Pool()})

	testutil.WaitFor(t, 10*time.Second, "TLS slave caught up", caughtUp(master, secure))
	sameLog(t, master, secure)
	if got := plain.CommitLog().MaxOffset(); got != 0 {
		t.Fatalf("a plaintext slave replicated %d bytes from an enforcing listener", got)
	}
}
