package tlsconfig_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/pkg/tlsconfig/tlstest"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// must is v; it fails t on err.
func must[T any](t testing.TB, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustCA(t testing.TB, name string) *tlstest.CA {
	t.Helper()
	ca, err := tlstest.NewCA(name)
	return must(t, ca, err)
}

func srvPair(t testing.TB, ca *tlstest.CA, cn string) tlstest.Pair {
	t.Helper()
	p, err := ca.Server(cn)
	return must(t, p, err)
}

func cliPair(t testing.TB, ca *tlstest.CA, cn string) tlstest.Pair {
	t.Helper()
	p, err := ca.Client(cn)
	return must(t, p, err)
}

func writePair(t testing.TB, p tlstest.Pair, dir, name string) (string, string) {
	t.Helper()
	c, k, err := p.Write(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func TestLoadConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.properties")
	body := "tls.test.mode.enable=false\n" +
		"tls.server.need.client.auth=require\n" +
		"tls.server.certPath=/c.pem\ntls.server.keyPath=/c.key\n" +
		"tls.server.authClient=true\ntls.server.trustCertPath=/ca.pem\n" +
		"tls.client.authServer=true\n" +
		"tls.server.keyPassword=sp\ntls.client.keyPassword=cp\n" +
		"tls.client.certPath=/cc.pem\ntls.client.keyPath=/cc.key\ntls.client.trustCertPath=/cca.pem\n" +
		"tls.server.mode=enforcing\ntls.enable=true\ntls.config.file=/x\n" // not read from this file, as Apache
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := tlsconfig.Defaults()
	s.ConfigFile = file
	s.ServerMode = tlsconfig.ModePermissive
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.TestModeEnable = false
	want.ServerNeedClientAuth = "require"
	want.ServerCertPath, want.ServerKeyPath = "/c.pem", "/c.key"
	want.ServerAuthClient, want.ServerTrustCertPath = true, "/ca.pem"
	want.ClientAuthServer = true
	want.ServerKeyPassword, want.ClientKeyPassword = "sp", "cp"
	want.ClientCertPath, want.ClientKeyPath, want.ClientTrustCertPath = "/cc.pem", "/cc.key", "/cca.pem"
	if got != want {
		t.Fatalf("Load = %+v\nwant   %+v", got, want)
	}

	if err := os.WriteFile(file, []byte("tls.server.authClient=maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil {
		t.Fatal("a bad boolean in tls.config.file accepted")
	}

	missing := tlsconfig.Defaults()
	missing.ConfigFile = filepath.Join(dir, "absent.properties")
	if got, err := missing.Load(); err != nil || got != missing {
		t.Fatalf("missing file: %+v, %v", got, err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*tlsconfig.Settings)
		ok   bool
	}{
		{"defaults", func(*tlsconfig.Settings) {}, true},
		{"enforcing", func(s *tlsconfig.Settings) { s.ServerMode = "Enforcing" }, true},
		{"bad mode", func(s *tlsconfig.Settings) { s.ServerMode = "strict" }, false},
		{"bad client auth", func(s *tlsconfig.Settings) { s.ServerNeedClientAuth = "want" }, false},
		{"cert without key", func(s *tlsconfig.Settings) { s.ServerCertPath = "/c.pem" }, false},
		{"client key without cert", func(s *tlsconfig.Settings) { s.ClientKeyPath = "/c.key" }, false},
	}
	for _, tc := range tests {
		s := tlsconfig.Defaults()
		tc.mod(&s)
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
}

// serve runs an enforcing remoting server with srv's certificate.
func serve(t *testing.T, srv *tlsconfig.Server) string {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.TLS = remoting.ServerTLS{Mode: remoting.TLSEnforcing, Config: srv.Config()}
	s, err := remoting.NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Register(code.GetRouteInfoByTopic, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(req, code.Success, ""), nil
	}, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s.Addr()
}

// client returns a remoting client that records the CommonName of the
// server certificate of each handshake it makes.
func client(t *testing.T, roots *x509.CertPool, cert *tls.Certificate) (*remoting.Client, *atomic.Value) {
	t.Helper()
	var seen atomic.Value
	cfg := remoting.DefaultClientConfig()
	cfg.TLS = &tls.Config{RootCAs: roots, VerifyConnection: func(cs tls.ConnectionState) error {
		seen.Store(cs.PeerCertificates[0].Subject.CommonName)
		return nil
	}}
	if cert != nil {
		cfg.TLS.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	c := remoting.NewClient(cfg, nil)
	t.Cleanup(func() { _ = c.Close() })
	return c, &seen
}

func ping(c *remoting.Client, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := c.Invoke(ctx, addr, remoting.NewRequest(code.GetRouteInfoByTopic, nil, nil))
	return err
}

// A certificate replaced on disk is served to new connections; a
// connection made before keeps working.
func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := mustCA(t, "ca")
	certPath, keyPath := writePair(t, srvPair(t, ca, "first"), dir, "server")
	s := tlsconfig.Defaults()
	s.TestModeEnable = false
	s.ServerMode = tlsconfig.ModeEnforcing
	s.ServerCertPath, s.ServerKeyPath = certPath, keyPath
	srv, err := tlsconfig.NewServer(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Watch(20 * time.Millisecond)
	t.Cleanup(srv.Close)
	addr := serve(t, srv)

	old, oldSeen := client(t, ca.Pool(), nil)
	if err := ping(old, addr); err != nil {
		t.Fatal(err)
	}
	if got := oldSeen.Load(); got != "first" {
		t.Fatalf("first handshake saw %v", got)
	}

	writePair(t, srvPair(t, ca, "second"), dir, "server")
	deadline := time.Now().Add(5 * time.Second)
	for srv.Certificate().Leaf == nil || srv.Certificate().Leaf.Subject.CommonName != "second" {
		if time.Now().After(deadline) {
			t.Fatal("certificate not reloaded within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fresh, freshSeen := client(t, ca.Pool(), nil)
	if err := ping(fresh, addr); err != nil {
		t.Fatal(err)
	}
	if got := freshSeen.Load(); got != "second" {
		t.Fatalf("new connection saw %v, want the new certificate", got)
	}
	if err := ping(old, addr); err != nil {
		t.Fatalf("old connection after reload: %v", err)
	}
	if got := oldSeen.Load(); got != "first" {
		t.Fatalf("old client handshook again (saw %v): its connection was dropped", got)
	}
}

// A broken replacement (a key that does not match) leaves the served
// certificate in place.
func TestReloadKeepsCertificateOnBadPair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := mustCA(t, "ca")
	first := srvPair(t, ca, "first")
	certPath, keyPath := writePair(t, first, dir, "server")
	s := tlsconfig.Defaults()
	s.ServerCertPath, s.ServerKeyPath = certPath, keyPath
	srv, err := tlsconfig.NewServer(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := srvPair(t, ca, "second")
	if err := tlstest.WriteFile(certPath, other.CertPEM); err != nil { // key not yet replaced
		t.Fatal(err)
	}
	if _, err := srv.Reload(); err == nil {
		t.Fatal("mismatched pair loaded")
	}
	if cn := srv.Certificate().Leaf.Subject.CommonName; cn != "first" {
		t.Fatalf("serving %q after a failed reload", cn)
	}
	if err := tlstest.WriteFile(keyPath, other.KeyPEM); err != nil {
		t.Fatal(err)
	}
	if changed, err := srv.Reload(); err != nil || !changed {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if cn := srv.Certificate().Leaf.Subject.CommonName; cn != "second" {
		t.Fatalf("serving %q after the pair was completed", cn)
	}
}

// Reloading does not accumulate memory (Apache's reload keeps every past
// SSL context).
func TestReloadDoesNotLeak(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, "ca")
	pairs := []tlstest.Pair{srvPair(t, ca, "a"), srvPair(t, ca, "b")}
	certPath, keyPath := writePair(t, pairs[0], dir, "server")
	s := tlsconfig.Defaults()
	s.ServerCertPath, s.ServerKeyPath = certPath, keyPath
	srv, err := tlsconfig.NewServer(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.Config() // a config handed out before the reloads, as a listener keeps one
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	reload := func(n int) {
		for i := range n {
			writePair(t, pairs[(i+1)%2], dir, "server")
			if changed, err := srv.Reload(); err != nil || !changed {
				t.Fatalf("reload %d: %v, %v", i, changed, err)
			}
		}
	}
	reload(50)
	before := heap()
	reload(300)
	after := heap()
	if srv.Reloads() < 350 {
		t.Fatalf("%d reloads counted", srv.Reloads())
	}
	// One certificate with its key and parsed leaf is several KB: 300 kept
	// would be well over the bound.
	if after > before+512<<10 {
		t.Fatalf("heap grew from %d to %d bytes over 300 reloads", before, after)
	}
}

// tls.server.need.client.auth with tls.server.authClient: the client's
// certificate is verified against tls.server.trustCertPath, reloaded too.
func TestClientAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, other := mustCA(t, "ca"), mustCA(t, "other")
	certPath, keyPath := writePair(t, srvPair(t, ca, "server"), dir, "server")
	trustPath := filepath.Join(dir, "trust.pem")
	if err := tlstest.WriteFile(trustPath, ca.PEM); err != nil {
		t.Fatal(err)
	}
	good, err := cliPair(t, ca, "good").TLS()
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := cliPair(t, other, "rogue").TLS()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		need       string
		authClient bool
		cert       *tls.Certificate
		ok         bool
	}{
		{"require", true, &good, true},
		{"require", true, nil, false},
		{"require", true, &rogue, false},
		{"optional", true, nil, true},
		{"optional", true, &rogue, false},
		{"require", false, &rogue, true}, // Apache: requested, not verified
		{"none", true, nil, true},
	}
	for _, tc := range tests {
		s := tlsconfig.Defaults()
		s.TestModeEnable = false
		s.ServerCertPath, s.ServerKeyPath = certPath, keyPath
		s.ServerNeedClientAuth, s.ServerAuthClient, s.ServerTrustCertPath = tc.need, tc.authClient, trustPath
		srv, err := tlsconfig.NewServer(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := serve(t, srv)
		c, _ := client(t, ca.Pool(), tc.cert)
		err = ping(c, addr)
		if (err == nil) != tc.ok {
			name := "none"
			if tc.cert != nil {
				name = tc.cert.Leaf.Subject.CommonName
			}
			t.Errorf("need=%s authClient=%v cert=%s: err = %v", tc.need, tc.authClient, name, err)
		}
	}

	// Trusting the other CA instead (reloaded) admits its clients.
	s := tlsconfig.Defaults()
	s.ServerCertPath, s.ServerKeyPath = certPath, keyPath
	s.ServerNeedClientAuth, s.ServerAuthClient, s.ServerTrustCertPath = "require", true, trustPath
	srv, err := tlsconfig.NewServer(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	c, _ := client(t, ca.Pool(), &rogue)
	if ping(c, addr) == nil {
		t.Fatal("rogue client admitted before the trust file changed")
	}
	if err := tlstest.WriteFile(trustPath, other.PEM); err != nil {
		t.Fatal(err)
	}
	if changed, err := srv.Reload(); err != nil || !changed {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	c2, _ := client(t, ca.Pool(), &rogue)
	if err := ping(c2, addr); err != nil {
		t.Fatalf("client of the newly trusted CA: %v", err)
	}
}

func TestClientConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := mustCA(t, "ca")
	caPath := filepath.Join(dir, "ca.pem")
	if err := tlstest.WriteFile(caPath, ca.PEM); err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := writePair(t, cliPair(t, ca, "c"), dir, "client")

	s := tlsconfig.Defaults()
	c, err := s.ClientConfig()
	if err != nil || !c.InsecureSkipVerify {
		t.Fatalf("test mode: %+v, %v (Apache trusts any server)", c, err)
	}
	s.TestModeEnable = false
	if c, _ = s.ClientConfig(); !c.InsecureSkipVerify {
		t.Fatal("authServer=false: want no verification, as Apache")
	}
	s.ClientAuthServer, s.ClientTrustCertPath = true, caPath
	s.ClientCertPath, s.ClientKeyPath = certPath, keyPath
	c, err = s.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.InsecureSkipVerify || c.RootCAs == nil || len(c.Certificates) != 1 {
		t.Fatalf("verifying client with certificate: %+v", c)
	}
}

// A self-signed server (test mode, no paths) and an encrypted-PKCS#8 key.
func TestServerSources(t *testing.T) {
	t.Parallel()
	srv, err := tlsconfig.NewServer(tlsconfig.Defaults(), []string{"broker.example"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(srv.Certificate().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("broker.example"); err != nil {
		t.Fatal(err)
	}
	s := tlsconfig.Defaults()
	s.TestModeEnable = false
	if _, err := tlsconfig.NewServer(s, nil, nil); err == nil {
		t.Fatal("no certificate and no test mode accepted")
	}
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "enc.key")
	if err := os.WriteFile(keyPath, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	certPath, _ := writePair(t, srvPair(t, mustCA(t, "x"), "s"), dir, "s")
	if _, err := tlsconfig.LoadKeyPair(certPath, keyPath, "pw"); err == nil {
		t.Fatal("encrypted PKCS#8 key accepted")
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	broken := filepath.Join(t.TempDir(), "tls.properties")
	if err := os.WriteFile(broken, []byte("tls.test.mode.enable=perhaps\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := tlsconfig.Defaults()
	s.ConfigFile = broken
	st, err := tlsconfig.Start(s, nil, nil)
	if err != nil || st.Server != nil || st.ClientTLS() != nil || st.Remoting().Mode != remoting.TLSDisabled {
		t.Fatalf("TLS off: %+v, %v (the file must not be read)", st, err)
	}
	if _, err := s.Load(); err == nil {
		t.Fatal("the broken file loads")
	}

	s.ConfigFile = filepath.Join(t.TempDir(), "absent.properties")
	s.ServerMode, s.Enable = tlsconfig.ModePermissive, true
	st, err = tlsconfig.Start(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := st.Remoting(); r.Mode != remoting.TLSPermissive || r.Config == nil || st.ClientTLS() == nil {
		t.Fatalf("permissive with tls.enable: %+v", st)
	}
}

// tls.server.keyPassword decrypts a key in the legacy PEM encryption.
func TestEncryptedKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := srvPair(t, mustCA(t, "ca"), "s")
	certPath, _ := writePair(t, p, dir, "s")
	block, _ := pem.Decode(p.KeyPEM)
	//nolint:staticcheck // the legacy encryption is what is tested
	enc, err := x509.EncryptPEMBlock(rand.Reader, block.Type, block.Bytes, []byte("pw"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "enc.key")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(enc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconfig.LoadKeyPair(certPath, keyPath, "pw"); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	for _, pw := range []string{"", "wrong"} {
		if _, err := tlsconfig.LoadKeyPair(certPath, keyPath, pw); err == nil {
			t.Fatalf("password %q accepted", pw)
		}
	}
}
