package grpcserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// queryRouteService answers QueryRoute with the topic it was asked, so a
// test can tell a served rpc from a transport failure.
type queryRouteService struct {
	v2pb.UnimplementedMessagingServiceServer
}

func (queryRouteService) QueryRoute(_ context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	return &v2pb.QueryRouteResponse{
		Status:        &v2pb.Status{Code: v2pb.Code_OK, Message: "OK"},
		MessageQueues: []*v2pb.MessageQueue{{Topic: req.GetTopic(), Id: 3}},
	}, nil
}

// TestPlaintextAndTLSOnOnePort: one port serves a plaintext (h2c) client
// and a TLS client (self-signed certificate, as the 5.x clients accept).
func TestPlaintextAndTLSOnOnePort(t *testing.T) {
	s := startServer(t, Config{Messaging: queryRouteService{}})
	tests := []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"tls", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(tc.creds))
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cli := v2pb.NewMessagingServiceClient(conn)
			resp, err := cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}})
			if err != nil {
				t.Fatalf("QueryRoute: %v", err)
			}
			if q := resp.GetMessageQueues(); len(q) != 1 || q[0].GetTopic().GetName() != "T" || q[0].GetId() != 3 {
				t.Fatalf("QueryRoute answered %v", resp)
			}
			// An rpc not written yet is Unimplemented, over either transport.
			_, err = cli.SendMessage(ctx, &v2pb.SendMessageRequest{})
			if status.Code(err) != codes.Unimplemented {
				t.Fatalf("SendMessage: %v, want Unimplemented", err)
			}
		})
	}
}

// TestSelfSignedCertificateCoversHosts: the certificate the server makes
// verifies for the configured host, and is used when no paths are set.
func TestSelfSignedCertificateCoversHosts(t *testing.T) {
	s := startServer(t, Config{Hosts: []string{"10.1.2.3", "broker-a.example"}})
	c, err := tls.Dial("tcp", s.Addr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	defer c.Close()
	st := c.ConnectionState()
	if st.NegotiatedProtocol != "h2" {
		t.Errorf("ALPN %q, want h2", st.NegotiatedProtocol)
	}
	leaf := st.PeerCertificates[0]
	for _, h := range []string{"10.1.2.3", "broker-a.example", "127.0.0.1", "localhost"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not cover %s: %v", h, err)
		}
	}
	if err := leaf.VerifyHostname("other.example"); err == nil {
		t.Errorf("certificate covers other.example")
	}
}

// TestBadClientsDoNotStopTheServer: a connection sending garbage, one
// sending nothing and a broken TLS handshake are closed; the server keeps
// serving.
func TestBadClientsDoNotStopTheServer(t *testing.T) {
	s := startServer(t, Config{Messaging: queryRouteService{}, HandshakeTimeout: 200 * time.Millisecond})
	for _, payload := range [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), nil, {0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5}} {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if payload != nil {
			_, _ = c.Write(payload)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 256)
		for {
			if _, err := c.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("payload %q: connection still open after 5s", payload)
				}
				break
			}
		}
		_ = c.Close()
	}
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{}); err != nil {
		t.Fatalf("QueryRoute after bad clients: %v", err)
	}
}

// TestShutdownEndsEverything: Shutdown with an open client connection
// returns, closes the port and leaves no goroutine behind.
func TestShutdownEndsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := Start(Config{Addr: "127.0.0.1:0", Messaging: queryRouteService{}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{}); err != nil {
		t.Fatalf("QueryRoute: %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("port still accepts after Shutdown")
	}
	conn.Close()
}

// TestConfiguredCertificate: tlsKeyPath/tlsCertPath are loaded and served;
// a missing file fails Start.
func TestConfiguredCertificate(t *testing.T) {
	cert, err := selfSigned([]string{"configured.example"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPath, certPath := filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{TLSKeyPath: keyPath, TLSCertPath: certPath})
	c, err := tls.Dial("tcp", s.Addr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	defer c.Close()
	if err := c.ConnectionState().PeerCertificates[0].VerifyHostname("configured.example"); err != nil {
		t.Fatalf("served certificate is not the configured one: %v", err)
	}
	if _, err := Start(Config{Addr: "127.0.0.1:0", TLSKeyPath: keyPath, TLSCertPath: filepath.Join(dir, "missing.pem")}); err == nil {
		t.Fatal("Start with a missing certificate file succeeded")
	}
}

// blockingRoute holds every QueryRoute until n of them run at once.
type blockingRoute struct {
	v2pb.UnimplementedMessagingServiceServer
	arrived chan struct{}
	release chan struct{}
}

func (b blockingRoute) QueryRoute(ctx context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	b.arrived <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &v2pb.QueryRouteResponse{Status: &v2pb.Status{Code: v2pb.Code_OK}}, nil
}

// TestStreamWorkersDoNotCapConcurrency: kept workers are only a cache of
// goroutines. With fewer workers than rpcs that block (long polls, sends
// waiting for a flush), the others still run at once instead of queueing
// behind them.
func TestStreamWorkersDoNotCapConcurrency(t *testing.T) {
	const workers, rpcs = 2, 8
	svc := blockingRoute{arrived: make(chan struct{}, rpcs), release: make(chan struct{})}
	s := startServer(t, Config{Messaging: svc, StreamWorkers: workers})
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer conn.Close()
	cli := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, rpcs)
	for range rpcs {
		go func() {
			_, err := cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}})
			errs <- err
		}()
	}
	for i := range rpcs {
		select {
		case <-svc.arrived:
		case <-ctx.Done():
			t.Fatalf("only %d of %d rpcs started with %d stream workers", i, rpcs, workers)
		}
	}
	close(svc.release)
	for range rpcs {
		if err := <-errs; err != nil {
			t.Fatalf("QueryRoute: %v", err)
		}
	}
}
