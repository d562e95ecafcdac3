package testutil

import (
	"net"
	"testing"
)

// FreeAddr returns a "127.0.0.1:port" that was free a moment ago (the
// kernel picked it for a listener closed again before returning), for a
// server that must be told its address before it listens.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return freeTCPAddr(t).String()
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	return freeTCPAddr(t).Port
}

func freeTCPAddr(t testing.TB) *net.TCPAddr {
	t.Helper()
	ln := Listen(t)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr)
}

// Listen returns a TCP listener on a free loopback port; the caller closes
// it (or hands it to a server that does).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: listen on a free loopback port: %v", err)
	}
	return ln
}
