package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// LoadKeyPair reads a PEM certificate chain and its PEM private key. A key
// encrypted in the legacy PEM form (Proc-Type: 4,ENCRYPTED) is decrypted
// with password; an encrypted PKCS#8 key (what Apache's documentation makes
// with openssl pkcs8 -topk8 -v1 PBE-SHA1-RC4-128) is not supported: store
// it decrypted (openssl pkcs8 -in server.key -out server-plain.key).
func LoadKeyPair(certPath, keyPath, password string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: read key: %w", err)
	}
	return keyPair(certPEM, keyPEM, password)
}

func keyPair(certPEM, keyPEM []byte, password string) (tls.Certificate, error) {
	keyPEM, err := decryptKey(keyPEM, password)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: key pair: %w", err)
	}
	return cert, nil
}

// decryptKey returns the first private key block of keyPEM in clear PEM.
func decryptKey(keyPEM []byte, password string) ([]byte, error) {
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return keyPEM, nil // let X509KeyPair report it
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("tlsconfig: encrypted PKCS#8 private keys are not supported; decrypt it (openssl pkcs8 -in KEY -out PLAIN_KEY)")
		//nolint:staticcheck // legacy PEM encryption is what keyPassword can mean here
		case x509.IsEncryptedPEMBlock(b):
			if password == "" {
				return nil, errors.New("tlsconfig: the private key is encrypted and no keyPassword is set")
			}
			//nolint:staticcheck // see above
			der, err := x509.DecryptPEMBlock(b, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("tlsconfig: decrypt private key: %w", err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der}), nil
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			return keyPEM, nil
		}
	}
}

// LoadPool reads PEM certificates into a pool.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: read trusted certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tlsconfig: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// SelfSigned makes an ECDSA P-256 certificate valid for a year for
// localhost, 127.0.0.1 and hosts (names or IP addresses): Apache's
// tls.test.mode.enable, and the proxy's for the gRPC endpoint.
func SelfSigned(hosts []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rmq (self-signed)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range append([]string{"localhost", "127.0.0.1"}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconfig: create certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
