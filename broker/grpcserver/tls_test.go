package grpcserver

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/pkg/tlsconfig/tlstest"
)

// TestEnforceTLSAndReload: with EnforceTLS a plaintext (h2c) client is
// refused and a TLS one served; the certificate of Config.TLS replaced on
// disk is served to new connections.
func TestEnforceTLSAndReload(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("grpc CA")
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string) (string, string) {
		p, err := ca.Server(cn)
		if err != nil {
			t.Fatal(err)
		}
		c, k, err := p.Write(dir, "server")
		if err != nil {
			t.Fatal(err)
		}
		return c, k
	}
	certPath, keyPath := issue("grpc-1")
	set := tlsconfig.Defaults()
	set.ServerCertPath, set.ServerKeyPath = certPath, keyPath
	ts, err := tlsconfig.NewServer(set, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{Messaging: queryRouteService{}, TLS: ts, EnforceTLS: true})

	query := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}})
		return err
	}
	var seen string
	secure := func() credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", VerifyConnection: func(cs tls.ConnectionState) error {
			seen = cs.PeerCertificates[0].Subject.CommonName
			return nil
		}})
	}
	if err := query(insecure.NewCredentials()); err == nil {
		t.Fatal("plaintext rpc served with EnforceTLS")
	}
	if err := query(secure()); err != nil || seen != "grpc-1" {
		t.Fatalf("TLS rpc: %v (certificate %q)", err, seen)
	}
	issue("grpc-2")
	if changed, err := ts.Reload(); err != nil || !changed {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if err := query(secure()); err != nil || seen != "grpc-2" {
		t.Fatalf("TLS rpc after the reload: %v (certificate %q)", err, seen)
	}
}
