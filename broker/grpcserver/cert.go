package grpcserver

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// loadOrMakeCert loads the PEM key pair, or with both paths empty makes a
// self-signed certificate for hosts (the proxy's tlsTestModeEnable: the
// 5.x clients connect over TLS by default and do not verify the server).
// It serves a Config without TLS (tests); the broker passes Config.TLS.
func loadOrMakeCert(keyPath, certPath string, hosts []string) (tls.Certificate, error) {
	if keyPath != "" || certPath != "" {
		cert, err := tlsconfig.LoadKeyPair(certPath, keyPath, "")
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("load %s / %s: %w", certPath, keyPath, err)
		}
		return cert, nil
	}
	return selfSigned(hosts, time.Now())
}

func selfSigned(hosts []string, now time.Time) (tls.Certificate, error) {
	return tlsconfig.SelfSigned(hosts, now)
}
