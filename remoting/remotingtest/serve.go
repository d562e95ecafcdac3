package remotingtest

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
)

// Serve starts a server on a free loopback port, without idle timeout,
// with the handlers register installs on it (before it starts), and shuts
// it down when t ends (a failed shutdown is logged).
func Serve(t testing.TB, register func(*remoting.Server)) *remoting.Server {
	t.Helper()
	srv, err := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", IdleTimeout: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	register(srv)
	testutil.StartWithShutdown(t, srv, 5*time.Second, t.Logf)
	return srv
}

// NewClient is a client without idle timeout, closed when t ends.
func NewClient(t testing.TB) *remoting.Client {
	c := remoting.NewClient(remoting.ClientConfig{IdleTimeout: -1}, nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
