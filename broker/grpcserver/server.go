// Package grpcserver is the broker's gRPC endpoint for the RocketMQ 5.x
// clients (apache.rocketmq.v2.MessagingService, pkg/grpcapi/v2pb), which
// Apache serves from its separate rocketmq-proxy. In development (issue 17):
// the endpoint listens and serves TLS and plaintext on one port; the rpcs
// answer Unimplemented until they are written (docs/compatibility.md).
//
// One port, two transports, as the proxy (Apache
// proxy/src/main/java/org/apache/rocketmq/proxy/grpc/ProtocolNegotiationHandler.java):
// the first byte of a connection tells them apart, 0x16 being a TLS
// handshake record; anything else is HTTP/2 with prior knowledge (h2c).
package grpcserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// maxInboundMessageSize bounds one request (Apache ProxyConfig
// grpcMaxInboundMessageSize).
const maxInboundMessageSize = 130 << 20

// tlsRecordHandshake is the content type of a TLS handshake record, the
// first byte a TLS client sends.
const tlsRecordHandshake = 0x16

// defaultIdleTimeout is the proxy's grpcClientIdleTimeMills.
const defaultIdleTimeout = 120 * time.Second

// maxHeaderListSize bounds a request's metadata: grpc-java's default
// (NettyServerBuilder maxInboundMetadataSize), which the proxy keeps. A
// request over it is reset; the 5.x clients' metadata is far smaller, and
// a client id of megabytes is not kept in the client tables.
const maxHeaderListSize = 8 << 10

// readBufferSize is each connection's read buffer. grpc-go's 32 KiB made
// an idle connection cost about 54 KB (with its three goroutines), 8 KiB
// about 28 KB; reads of a frame larger than the buffer bypass it, so
// large messages read as fast.
const readBufferSize = 8 << 10

// flowControlWindow is each stream's and each connection's HTTP/2 receive
// window: grpc-java's NettyServerBuilder default (DEFAULT_FLOW_CONTROL_WINDOW,
// 1 MiB, no automatic tuning), which the proxy keeps (Apache proxy/src/main/
// java/org/apache/rocketmq/proxy/grpc/GrpcServerBuilder.java sets none).
// A window given turns off grpc-go's bandwidth-delay estimation, which
// otherwise keeps a PING in flight on every connection carrying requests
// (one per round trip, each answered by the client) while its estimate is
// under 16 MiB, as it stays on a loopback with small messages. The
// connection window also bounds what a client can have buffered unread in
// the broker per connection (the estimation could raise it to 16 MiB).
const flowControlWindow = 1 << 20

// Config configures a Server.
type Config struct {
	// Addr is the host:port to listen on (port 0: a free port).
	Addr string
	// TLS, when set, is where the certificate comes from (reloaded when
	// its files change) with the client-certificate policy
	// (tls.server.need.client.auth); TLSKeyPath and TLSCertPath are then
	// ignored. Without it TLSKeyPath and TLSCertPath name a PEM key and
	// certificate; both empty makes a self-signed certificate for Hosts at
	// start.
	TLS                     *tlsconfig.Server
	TLSKeyPath, TLSCertPath string
	// EnforceTLS closes plaintext (h2c) connections at once
	// (tls.server.mode=enforcing); otherwise both are served on the port.
	EnforceTLS bool
	// Hosts are the names and addresses the self-signed certificate covers.
	Hosts []string
	// HandshakeTimeout bounds the first byte and the TLS handshake of a
	// new connection (0: 10s).
	HandshakeTimeout time.Duration
	// Backend serves the rpcs written so far (messaging.go), routes naming
	// AdvertiseHost and the listening port.
	Backend       Backend
	AdvertiseHost string
	// Producers is the registry of gRPC producers the broker's transaction
	// check calls back through (nil: a private one).
	Producers *Producers
	// Messaging, when set, replaces the Backend's service and its request
	// checks (interceptor.go) (tests); with neither every rpc answers
	// Unimplemented.
	Messaging v2pb.MessagingServiceServer
	// IdleTimeout closes a connection that has had no rpc for that long
	// (0: 120s, the proxy's grpcClientIdleTimeMills).
	IdleTimeout time.Duration
	// StreamWorkers is grpc-go's NumStreamWorkers (0: a goroutine per
	// request): kept goroutines do not grow a fresh stack per rpc.
	StreamWorkers int
	// Check, when set, authenticates and authorizes every request before
	// its rpc (auth.go); nil runs no check.
	Check  RequestCheck
	Logger *slog.Logger
}

// Server is a running gRPC endpoint.
type Server struct {
	cfg  Config
	log  *slog.Logger
	tls  *tls.Config
	grpc *grpc.Server
	ln   net.Listener
	conn *connListener
	wg   sync.WaitGroup
	// inFlight counts the rpcs being served other than Telemetry streams,
	// which Shutdown waits for before it closes the connections.
	inFlight *rpcCounter
}

// Start loads or makes the certificate, listens on cfg.Addr and serves.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	var tlsCfg *tls.Config
	if cfg.TLS != nil {
		// gRPC clients require HTTP/2 negotiated by ALPN over TLS.
		tlsCfg = cfg.TLS.Config("h2")
	} else {
		cert, err := loadOrMakeCert(cfg.TLSKeyPath, cfg.TLSCertPath, cfg.Hosts)
		if err != nil {
			return nil, fmt.Errorf("grpcserver: certificate: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("grpcserver: listen %s: %w", cfg.Addr, err)
	}
	// arr numbers the rpcs as they are read (arrival.go).
	arr := &arrivals{}
	s := &Server{
		cfg: cfg,
		log: cfg.Logger,
		tls: tlsCfg,
		// ConnectionTimeout bounds the HTTP/2 preface of a connection that
		// never sends one (and Shutdown, which waits for it).
		// MaxRecvMsgSize is the proxy's grpcMaxInboundMessageSize (4 MiB
		// × 32 messages + 2 MiB of properties): gRPC's 4 MiB default would
		// refuse a message of maxMessageSize.
		ln:       ln,
		conn:     newConnListener(ln.Addr()),
		inFlight: &rpcCounter{},
	}
	// MaxConnectionIdle is the proxy's maxConnectionIdle: a connection
	// without a stream (an open Telemetry stream counts) goes after
	// IdleTimeout, so connections that carry nothing do not pile up.
	opts := []grpc.ServerOption{
		grpc.ConnectionTimeout(cfg.HandshakeTimeout), grpc.MaxRecvMsgSize(maxInboundMessageSize), grpc.InTapHandle(arr.tap),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout}), grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.ReadBufferSize(readBufferSize),
		grpc.InitialWindowSize(flowControlWindow), grpc.InitialConnWindowSize(flowControlWindow),
	}
	if cfg.StreamWorkers > 0 {
		opts = append(opts, grpc.NumStreamWorkers(uint32(cfg.StreamWorkers)))
	}
	// A handler's panic fails its rpc, not the broker (as the proxy's
	// GlobalExceptionInterceptor and our remoting handlers).
	unary := []grpc.UnaryServerInterceptor{s.inFlight.unary, recoverUnary(s.log)}
	stream := []grpc.StreamServerInterceptor{s.inFlight.stream, recoverStream(s.log)}
	// The proxy authenticates and authorizes before it checks the client
	// id (GrpcMessagingApplication.addExecutor).
	if cfg.Check != nil {
		unary, stream = append(unary, unaryCheck(cfg.Check)), append(stream, streamCheck(cfg.Check))
	}
	if cfg.Messaging == nil {
		unary, stream = append(unary, unaryClientID), append(stream, streamClientID)
	}
	opts = append(opts, grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	s.grpc = grpc.NewServer(opts...)
	messaging := cfg.Messaging
	if messaging == nil && cfg.Backend != nil {
		host, port, err := hostPort(ln.Addr().String())
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("grpcserver: listener address: %w", err)
		}
		if cfg.AdvertiseHost != "" {
			host = cfg.AdvertiseHost
		}
		m := newMessaging(cfg.Backend, host, port)
		if cfg.Producers != nil {
			m.producers = cfg.Producers
		}
		messaging = m
	}
	if messaging == nil {
		messaging = v2pb.UnimplementedMessagingServiceServer{}
	}
	v2pb.RegisterMessagingServiceServer(s.grpc, messaging)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.acceptLoop()
	}()
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(s.conn); err != nil {
			s.log.Warn("grpc serve ended", "err", err)
		}
	}()
	s.log.Info("grpc server started", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the listening address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops accepting, lets running rpcs finish until ctx ends, then
// closes every connection.
//
// A Telemetry stream lasts as long as its client: Shutdown does not wait
// for it, but it does not end it with a status either. As the proxy, whose
// graceful stop ends in grpc-java's shutdownNow (Apache proxy/.../grpc/
// GrpcServer.java), the streams end with their connections: once the other
// rpcs are done, every connection is closed. A status would reach the
// client as trailers followed by RST_STREAM(NO_ERROR) (its request side is
// still open), which the Rust 5.x client (crate rocketmq 5.0.0) reads as an
// error that repeats forever: its telemetry loop spins and starves the
// client (docs/interop.md, Rust). A closed connection is an error it reads
// once; every 5.x client reconnects and opens a new stream.
func (s *Server) Shutdown(ctx context.Context) error {
	_ = s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	var err error
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
drain:
	for s.inFlight.n.Load() > 0 {
		select {
		case <-done:
			break drain
		case <-ctx.Done():
			err = fmt.Errorf("grpcserver: graceful stop: %w", ctx.Err())
			break drain
		case <-tick.C:
		}
	}
	select {
	case <-done:
	default:
		// The last answers are with the transport, written in the
		// background: a moment for them before the connections close.
		select {
		case <-done:
		case <-time.After(shutdownFlushGrace):
		}
		s.grpc.Stop()
		<-done
	}
	s.conn.close()
	s.wg.Wait()
	return err
}

// shutdownFlushGrace is how long Shutdown lets the answers of the last rpcs
// reach the socket before it closes the connections.
const shutdownFlushGrace = 100 * time.Millisecond

// rpcCounter counts the rpcs being served, Telemetry streams aside, from
// the moment their handler (the first interceptor) starts until it
// returns. Interceptors rather than a gRPC stats handler: with a stats
// handler grpc-go copies every request's metadata and peer and allocates an
// event for each header, payload and trailer, about a tenth of a send's
// allocations. The status is written right after the handler returns;
// Shutdown gives it shutdownFlushGrace.
type rpcCounter struct{ n atomic.Int64 }

// telemetryMethod is the suffix of the one rpc the counter leaves out.
const telemetryMethod = "/Telemetry"

func (c *rpcCounter) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c.n.Add(1)
	defer c.n.Add(-1)
	return handler(ctx, req)
}

func (c *rpcCounter) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasSuffix(info.FullMethod, telemetryMethod) {
		return handler(srv, ss)
	}
	c.n.Add(1)
	defer c.n.Add(-1)
	return handler(srv, ss)
}

// InFlight is the number of rpcs running, Telemetry streams left out
// (long-polling receives included).
func (s *Server) InFlight() int64 { return s.inFlight.n.Load() }

func (s *Server) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("grpc accept", "err", err)
			}
			s.conn.close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.negotiate(c)
		}()
	}
}

// negotiate reads the first byte and hands the connection to gRPC, over
// TLS when it starts a TLS handshake.
func (s *Server) negotiate(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		_ = c.Close()
		return
	}
	var conn net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == tlsRecordHandshake {
		tc := tls.Server(conn, s.tls)
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.log.Debug("grpc tls handshake", "remote", c.RemoteAddr().String(), "err", err)
			_ = c.Close()
			return
		}
		conn = tc
	} else if s.cfg.EnforceTLS {
		s.log.Info("grpc plaintext connection closed, this server runs TLS enforcing mode", "remote", c.RemoteAddr().String())
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if !s.conn.push(conn) {
		_ = conn.Close()
	}
}

// peekedConn reads first what the sniffing buffered.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connListener is the net.Listener gRPC serves: it yields the connections
// negotiate classified.
type connListener struct {
	addr   net.Addr
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) close() { l.closed.Do(func() { close(l.done) }) }

func (l *connListener) Close() error { l.close(); return nil }

func (l *connListener) Addr() net.Addr { return l.addr }
