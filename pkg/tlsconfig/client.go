package tlsconfig

import (
	"crypto/tls"
	"fmt"
)

// ClientConfig is the client side of Settings, as Apache's TlsHelper builds
// it: in test mode, or without tls.client.authServer, the server's
// certificate is not verified (Apache trusts any); otherwise it is verified
// against tls.client.trustCertPath (the system's CAs when empty). A client
// certificate (tls.client.certPath / keyPath) is presented when configured.
// The remoting client names the server it dials (ServerName) itself.
func (s Settings) ClientConfig() (*tls.Config, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("tlsconfig: %w", err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TestModeEnable || !s.ClientAuthServer {
		c.InsecureSkipVerify = true //nolint:gosec // Apache's client semantics (TlsHelper: InsecureTrustManagerFactory)
	} else if s.ClientTrustCertPath != "" {
		pool, err := LoadPool(s.ClientTrustCertPath)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if s.ClientCertPath != "" {
		cert, err := LoadKeyPair(s.ClientCertPath, s.ClientKeyPath, s.ClientKeyPassword)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
