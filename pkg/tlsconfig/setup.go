package tlsconfig

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/rmqgo/rmq/remoting"
)

// Setup is what a program makes of its Settings at start: the server side
// (nil when tls.server.mode is disabled) watching its files, and the client
// side (nil unless tls.enable).
type Setup struct {
	Settings Settings    // with tls.config.file applied
	Server   *Server     // nil: servers are plaintext
	Client   *tls.Config // nil: outgoing connections are plaintext
}

// Start reads tls.config.file over s (when TLS is used at all) and builds
// both sides; hosts are the
// names a self-signed certificate covers. Close stops the file watch.
func Start(s Settings, hosts []string, log *slog.Logger) (*Setup, error) {
	if !s.ServerEnabled() && !s.Enable {
		// No TLS at all: tls.config.file is not read (a broken one does
		// not stop a plaintext server).
		return &Setup{Settings: s}, s.Validate()
	}
	s, err := s.Load()
	if err != nil {
		return nil, err
	}
	st := &Setup{Settings: s}
	if s.ServerEnabled() {
		if st.Server, err = NewServer(s, hosts, log); err != nil {
			return nil, err
		}
		st.Server.Watch(0)
		if log != nil {
			log.Info("tls: servers accept TLS", "tls.server.mode", s.Mode(),
				"tls.server.certPath", s.ServerCertPath, "tls.server.need.client.auth", s.ServerNeedClientAuth)
		}
	}
	if s.Enable {
		if st.Client, err = s.ClientConfig(); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// Close stops watching the certificate files. A nil Setup is fine.
func (st *Setup) Close() {
	if st != nil && st.Server != nil {
		st.Server.Close()
	}
}

// Remoting is the remoting listener's TLS: disabled without a server side.
func (st *Setup) Remoting() remoting.ServerTLS {
	if st == nil || st.Server == nil {
		return remoting.ServerTLS{}
	}
	return st.Server.Remoting()
}

// ClientTLS is the client side (nil: plaintext). A nil Setup is fine.
func (st *Setup) ClientTLS() *tls.Config {
	if st == nil {
		return nil
	}
	return st.Client
}

// Remoting is the remoting listener's TLS for s's mode.
func (s *Server) Remoting() remoting.ServerTLS {
	mode, err := remoting.ParseTLSMode(s.set.Mode())
	if err != nil { // Validate ran in NewServer
		panic(fmt.Sprintf("tlsconfig: %v", err))
	}
	return remoting.ServerTLS{Mode: mode, Config: s.Config()}
}

// Mode is tls.server.mode.
func (s *Server) Mode() string { return s.set.Mode() }
