// Package harness helps end-to-end tests run the project's real processes:
// it builds the nameserver, broker and mqadmin binaries once per test
// binary, starts and stops processes with their output captured in a log
// file, waits for TCP ports, and runs our mqadmin and the real Java mqadmin.
//
// Typical use:
//
//	bin := harness.BuildBinaries(t)
//	port := harness.FreePort(t)
//	ns := harness.StartProcess(t, filepath.Join(bin, "namesrv"), "-listen", fmt.Sprintf("127.0.0.1:%d", port))
//	ns.WaitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second)
//	out, err := harness.RunMQAdmin(t, filepath.Join(bin, "mqadmin"), "clusterList", "-n", addr)
//	jout, err := harness.RunJavaMQAdmin(t, "clusterList", "-n", addr) // skips without java/mvn
//
// Everything listens on and dials 127.0.0.1 only. The "build once" cache
// lives in a directory named after the test process (see BuildBinaries);
// the one package-level state is LatePort's blocks of ports, which belong
// to the process (lateports.go).
package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

// Binary names produced by BuildBinaries, and their main packages.
const (
	Namesrv = "namesrv"
	Broker  = "broker"
	MQAdmin = "mqadmin"
)

// ModulePrefix is the import-path prefix of the project's modules.
const ModulePrefix = "github.com/rmqgo/rmq/"

// mainPackages maps a binary name to its main package's folder, relative to
// the repository root (the import path is ModulePrefix + folder).
func mainPackages() map[string]string {
	return map[string]string{
		Namesrv: "namesrv/cmd/namesrv",
		Broker:  "broker/cmd/broker",
		MQAdmin: "mqadmin/cmd/mqadmin",
	}
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory that holds go.work.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return root
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found in the working directory or above it")
		}
		dir = parent
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (the
// kernel picked it for a listener that is closed again before returning).
func FreePort(t testing.TB) int {
	t.Helper()
	return testutil.FreePort(t)
}

// LatePort returns a free TCP port on 127.0.0.1 for a server that binds it
// a while after the test picked it (a broker started after its peers,
// restarted, or behind a proxy started first). FreePort's ports come from
// the ephemeral range, where any later listener on port 0 (a proxy) or
// outgoing connection may take them meanwhile ("bind: address already in
// use"); LatePort's never do. Its ports come from blocks this process
// holds (lateports.go), so no other test process hands them out, and it
// returns a port twice only after cycling through all its blocks.
func LatePort(t testing.TB) int {
	t.Helper()
	for range 2000 {
		if port := lateBlocks.take(); portFree(port) {
			return port
		}
	}
	t.Fatalf("harness: LatePort: no free port in [%d, %d)", lateLow, lateHigh)
	return 0
}

// portFree reports whether a listener on the loopback can take port now.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// LatePortWithVIP is a LatePort p whose p−2 is this caller's too: a broker
// with its VIP listener on (Apache's listenPort − 2) must not listen on a
// port in the ephemeral range, which FreePort may have handed another
// test's process (seen in CI: a broker of tests/e2e found its port taken).
// p−2, p−1 and p all come from this process's counter in one go, so p−2
// was handed to no other server of this process: checking only that p−2
// was free let an in-process broker take the port of an Apache JVM of a
// parallel test that had not bound it yet (seen in CI: that JVM then failed
// with "Address already in use").
func LatePortWithVIP(t testing.TB) int {
	t.Helper()
	for range 2000 {
		vip := lateBlocks.take()
		_ = lateBlocks.take()
		p := lateBlocks.take()
		if p == vip+2 && portFree(vip) && portFree(p) {
			return p
		}
	}
	t.Fatalf("harness: LatePortWithVIP: no free pair in [%d, %d)", lateLow, lateHigh)
	return 0
}

// LateAddr is LatePort as "127.0.0.1:port".
func LateAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", LatePort(t))
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return testutil.FreeAddr(t)
}

// WaitTCP waits until a TCP connection to addr succeeds, failing the test
// after timeout.
func WaitTCP(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	if err := waitTCP(addr, timeout, nil); err != nil {
		t.Fatalf("harness: %v", err)
	}
}

// waitTCP polls addr; it gives up early when exited is closed.
func waitTCP(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting connections after %v: %v", addr, timeout, last)
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited while waiting for %s: %v", addr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
