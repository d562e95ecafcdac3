package tlsconfig

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWatchInterval is how often Server.Watch looks at the files (Apache
// broker's FileWatchService checks every 500 ms).
const DefaultWatchInterval = 500 * time.Millisecond

// Server is the server side of Settings: the certificate (from
// tls.server.certPath / keyPath, or self-signed in test mode) and the
// client-certificate policy. Its tls.Configs never change; the certificate
// and the trusted client CAs they use are swapped when the files change, so
// new handshakes get the new certificate while established connections keep
// theirs. A reload allocates only the new certificate and pool; the old ones
// are garbage once the last connection using them is gone (nothing keeps a
// list of past certificates, unlike Apache's reload, which leaks).
type Server struct {
	set Settings
	log *slog.Logger

	cert  atomic.Pointer[tls.Certificate]
	trust atomic.Pointer[x509.CertPool] // nil: client certificates not verified

	mu       sync.Mutex // guards sums, reloads
	sums     [3][sha256.Size]byte
	reloads  int
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// NewServer loads the certificate (or makes a self-signed one for hosts in
// test mode when no certificate path is set). log may be nil.
func NewServer(s Settings, hosts []string, log *slog.Logger) (*Server, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("tlsconfig: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &Server{set: s, log: log}
	if s.ServerCertPath == "" {
		if !s.TestModeEnable {
			return nil, errors.New("tlsconfig: tls.server.certPath and tls.server.keyPath are required when tls.test.mode.enable is false")
		}
		cert, err := SelfSigned(hosts, time.Now())
		if err != nil {
			return nil, err
		}
		srv.cert.Store(&cert)
		log.Info("tls: serving a self-signed certificate (tls.test.mode.enable)")
	}
	if _, err := srv.Reload(); err != nil {
		return nil, err
	}
	if s.ServerAuthClient && s.ServerTrustCertPath == "" {
		// Apache then trusts the JVM's default CAs; ours are the system's.
		pool, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: system certificates: %w", err)
		}
		srv.trust.Store(pool)
	}
	if s.ClientAuth() != tls.NoClientCert && !s.ServerAuthClient {
		log.Warn("tls: client certificates are requested but not verified (tls.server.authClient=false, as Apache)")
	}
	return srv, nil
}

// ClientAuth is tls.server.need.client.auth as crypto/tls asks for it; the
// verification itself is Server.verifyClient's (so the trusted CAs can be
// reloaded).
func (s Settings) ClientAuth() tls.ClientAuthType {
	switch strings.ToLower(strings.TrimSpace(s.ServerNeedClientAuth)) {
	case ClientAuthOptional:
		return tls.RequestClientCert
	case ClientAuthRequire:
		return tls.RequireAnyClientCert
	}
	return tls.NoClientCert
}

// Config returns a server tls.Config using the current certificate; each
// call makes a new one (callers keep theirs). nextProtos is the ALPN list
// (gRPC: "h2").
func (s *Server) Config(nextProtos ...string) *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		ClientAuth: s.set.ClientAuth(),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cert.Load(), nil
		},
	}
	if s.set.ServerAuthClient && c.ClientAuth != tls.NoClientCert {
		c.VerifyPeerCertificate = s.verifyClient
	}
	return c
}

// verifyClient checks a client's chain against the trusted CAs of the
// moment (tls.server.authClient). No certificate is accepted here: whether
// one is required is ClientAuth's business.
func (s *Server) verifyClient(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return nil
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("tls: bad client certificate: %w", err)
		}
		certs = append(certs, c)
	}
	opts := x509.VerifyOptions{
		Roots:         s.trust.Load(),
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: client certificate: %w", err)
	}
	return nil
}

// Certificate is the certificate served to new connections.
func (s *Server) Certificate() *tls.Certificate { return s.cert.Load() }

// Reloads counts the reloads that changed something.
func (s *Server) Reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloads
}

// Reload reads the certificate, key and trusted-CA files and swaps in what
// changed. A half-written pair (certificate and key that do not match) is
// an error and leaves the served certificate as it was; the next Reload
// tries again. It reports whether anything was swapped.
func (s *Server) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := [3]string{s.set.ServerCertPath, s.set.ServerKeyPath, s.set.ServerTrustCertPath}
	var data [3][]byte
	var sums [3][sha256.Size]byte
	for i, p := range paths {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return false, fmt.Errorf("tlsconfig: reload: %w", err)
		}
		data[i], sums[i] = b, sha256.Sum256(b)
	}
	changed := false
	if paths[0] != "" && (sums[0] != s.sums[0] || sums[1] != s.sums[1] || s.cert.Load() == nil) {
		cert, err := keyPair(data[0], data[1], s.set.ServerKeyPassword)
		if err != nil {
			return false, fmt.Errorf("tlsconfig: reload %s: %w", paths[0], err)
		}
		s.cert.Store(&cert)
		s.sums[0], s.sums[1] = sums[0], sums[1]
		changed = true
	}
	if paths[2] != "" && (sums[2] != s.sums[2] || s.trust.Load() == nil) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bytes.TrimSpace(data[2])) {
			return changed, fmt.Errorf("tlsconfig: reload: %s holds no PEM certificate", paths[2])
		}
		s.trust.Store(pool)
		s.sums[2] = sums[2]
		changed = true
	}
	if changed {
		s.reloads++
	}
	return changed, nil
}

// Watch reloads the files every interval (≤ 0: DefaultWatchInterval) until
// Close; failures are logged and retried. Without certificate files there is
// nothing to watch and it returns at once.
func (s *Server) Watch(interval time.Duration) {
	if s.set.ServerCertPath == "" && s.set.ServerTrustCertPath == "" {
		return
	}
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	s.mu.Lock()
	if s.stop != nil {
		s.mu.Unlock()
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	stop, done := s.stop, s.done
	s.mu.Unlock()
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		var lastErr string
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			changed, err := s.Reload()
			switch {
			case err != nil:
				if err.Error() != lastErr { // once per distinct failure
					s.log.Warn("tls: certificate reload failed; still serving the previous one", "err", err)
				}
				lastErr = err.Error()
			case changed:
				lastErr = ""
				s.log.Info("tls: certificate files changed; new connections get the new certificate",
					"certPath", s.set.ServerCertPath, "trustCertPath", s.set.ServerTrustCertPath)
			}
		}
	}()
}

// Close stops Watch.
func (s *Server) Close() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if stop == nil {
		return
	}
	s.stopOnce.Do(func() { close(stop) })
	<-done
}
