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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: free address: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr)
}
