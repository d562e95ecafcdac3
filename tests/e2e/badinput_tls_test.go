package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// clientHello is the first TLS record a crypto/tls client sends.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		_ = tls.Client(a, &tls.Config{InsecureSkipVerify: true}).Handshake() //nolint:gosec // only its first record is used
	}()
	var hdr [5]byte
	if _, err := io.ReadFull(b, hdr[:]); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, rec); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	return append(hdr[:], rec...)
}

// answerBeforeClose reads what the server sends until it closes the
// connection (false after 12 s: it did not). TLS alerts are all a refused
// handshake may carry.
func answerBeforeClose(t *testing.T, conn net.Conn) (closed bool, got []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(12 * time.Second))
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, got
	}
	return true, got
}

// onlyAlerts reports whether b is nothing or TLS alert records (0x15).
func onlyAlerts(b []byte) bool {
	for len(b) >= 5 {
		if b[0] != 0x15 {
			return false
		}
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if n > len(b) {
			return false
		}
		b = b[n:]
	}
	return len(b) == 0
}

// catalogue is the names of the malformed requests docs/badinput.md lists
// under section (the table's first column, in backquotes).
func catalogue(t *testing.T, section string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(harness.RepoRoot(t), "docs", "badinput.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|")
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimPrefix(line, "## ") == section
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("docs/badinput.md: no entries under %q", section)
	}
	return names
}

// TestBadInputTLS fires the TLS entries of docs/badinput.md at a live
// nameserver (tls.server.mode=enforcing) and broker (permissive): each is
// closed as Apache's Netty SslHandler closes it (no answer, or TLS alerts
// only), a cut handshake holds nobody else up, the servers keep serving and
// the messages stored before are all there after.
func TestBadInputTLS(t *testing.T) {
	processOnly(t, "the tls.* keys are read by the server binaries")
	t.Parallel()
	absent := filepath.Join(t.TempDir(), "absent.properties")
	nsConf := map[string]string{"tls.server.mode": "enforcing", "tls.config.file": absent}
	c := harness.StartCluster(t, harness.ClusterOptions{
		Brokers: 1, NamesrvArgs: namesrvArgs(t, nsConf),
		BrokerConf: map[string]string{"tls.server.mode": "permissive", "tls.enable": "true", "tls.config.file": absent},
		AdminTLS:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed (tls.test.mode.enable)
	})
	ns, br := c.NamesrvAddrs[0], c.Brokers[0].Addr
	if out, err := c.MQAdmin(t, "updateTopic", "--tls", "-c", "DefaultCluster", "-t", "BadTls", "-r", "1", "-w", "1"); err != nil {
		t.Fatalf("updateTopic: %v\n%s", err, out)
	}
	ccfg := remoting.DefaultClientConfig()
	ccfg.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed
	secure := remoting.NewClient(ccfg, nil)
	t.Cleanup(func() { _ = secure.Close() })
	invoke := func(addr string, req *remoting.Command) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := secure.Invoke(ctx, addr, req)
		if err != nil {
			t.Fatalf("%s to %s over TLS: %v", code.RequestName(req.Code), addr, err)
		}
		return resp
	}
	const stored = 5
	for range stored {
		if resp := invoke(br, sendV2Request("BadTls", "TBW102", 0, []byte("kept"))); resp.Code != code.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	serving := func() {
		t.Helper()
		if resp := invoke(ns, remoting.NewRequest(code.GetBrokerClusterInfo, nil, nil)); resp.Code != code.Success {
			t.Fatalf("nameserver: %d %s", resp.Code, resp.Remark)
		}
		if resp := invoke(br, remoting.NewRequest(code.GetBrokerRuntimeInfo, nil, nil)); resp.Code != code.Success {
			t.Fatalf("broker: %d %s", resp.Code, resp.Remark)
		}
	}
	hello := clientHello(t)
	plainFrame, err := remoting.Encode(remoting.NewRequest(code.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	dial := func(addr string) net.Conn {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	// cut sends half a ClientHello and waits: others are served meanwhile;
	// once the client gives up (half-close) the server closes, at most
	// with alerts.
	cut := func(addr string) func(t *testing.T) {
		return func(t *testing.T) {
			conn := dial(addr)
			if _, err := conn.Write(hello[:len(hello)/2]); err != nil {
				t.Fatal(err)
			}
			serving()
			_ = conn.(*net.TCPConn).CloseWrite()
			if closed, got := answerBeforeClose(t, conn); !closed || !onlyAlerts(got) {
				t.Fatalf("closed %v after % x", closed, got)
			}
		}
	}
	// refused writes b and wants the connection closed, with nothing
	// (alerts too) or with alerts only.
	refused := func(addr string, b []byte, nothing bool) func(t *testing.T) {
		return func(t *testing.T) {
			conn := dial(addr)
			if _, err := conn.Write(b); err != nil {
				t.Fatal(err)
			}
			closed, got := answerBeforeClose(t, conn)
			if !closed || !onlyAlerts(got) || nothing && len(got) > 0 {
				t.Fatalf("closed %v after % x", closed, got)
			}
		}
	}
	garbage := append([]byte{0x16}, []byte("\x03\x01\x00\x10this is no TLS handshake at all")...)
	cases := map[string]func(t *testing.T){
		"tls-plaintext-frame-on-enforcing":  refused(ns, plainFrame, true),
		"tls-clienthello-cut-enforcing":     cut(ns),
		"tls-clienthello-cut-permissive":    cut(br),
		"tls-garbage-after-0x16-permissive": refused(br, garbage, false),
		"tls-garbage-after-0x16-enforcing":  refused(ns, garbage, false),
		"tls-record-oversize-permissive":    refused(br, []byte{0x16, 0x03, 0x01, 0xff, 0xff, 0x01}, false),
		"tls-plaintext-frame-on-permissive": nil, // served: checked below
	}
	names := catalogue(t, "TLS")
	var have []string
	for name := range cases {
		have = append(have, name)
	}
	slices.Sort(have)
	slices.Sort(names)
	if !slices.Equal(have, names) {
		t.Fatalf("docs/badinput.md lists %v, the test fires %v", names, have)
	}
	for _, name := range names {
		if cases[name] != nil {
			t.Run(name, cases[name])
		}
	}
	// Plaintext on the permissive broker is served, as Apache's.
	plain := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = plain.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := plain.Invoke(ctx, br, remoting.NewRequest(code.GetBrokerRuntimeInfo, nil, nil)); err != nil || resp.Code != code.Success {
		t.Fatalf("plaintext on the permissive broker: %v %+v", err, resp)
	}
	serving()
	// Nothing stored is lost.
	resp := invoke(br, remoting.NewRequest(code.GetMaxOffset, map[string]string{"topic": "BadTls", "queueId": "0"}, nil))
	if resp.Code != code.Success || resp.Ext("offset") != strconv.Itoa(stored) {
		t.Fatalf("max offset after the bad input: %d %v", resp.Code, resp.ExtFields)
	}
}
