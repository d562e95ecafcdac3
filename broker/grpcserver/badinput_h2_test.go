package grpcserver

import (
	"bytes"
	"encoding/binary"
	"flag"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// h2Client speaks HTTP/2 frames to the server, below any gRPC library:
// what a broken or hostile client can send.
type h2Client struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	buf  bytes.Buffer
	dec  *hpack.Decoder
	// status is the grpc-status of each ended stream; data its DATA bytes.
	status map[uint32]string
	data   map[uint32][]byte
	// What the server sent besides its streams: PINGs (not acks), its
	// SETTINGS, the WINDOW_UPDATEs of the connection (stream 0).
	pings      int
	settings   map[http2.SettingID]uint32
	connWindow uint32
}

func newH2Client(t *testing.T, addr string) *h2Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &h2Client{t: t, conn: conn, fr: http2.NewFramer(conn, conn), status: map[uint32]string{}, data: map[uint32][]byte{},
		settings: map[http2.SettingID]uint32{}}
	c.enc = hpack.NewEncoder(&c.buf)
	c.dec = hpack.NewDecoder(4096, nil)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// open starts a stream calling method with x-mq-client-id set and the
// extra metadata.
func (c *h2Client) open(id uint32, method string, extra ...[2]string) {
	c.t.Helper()
	c.buf.Reset()
	for _, f := range append([][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", c.conn.RemoteAddr().String()},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {mdClientID, "raw-h2"},
	}, extra...) {
		if err := c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
}

// grpcFrame is a gRPC length-prefixed message: the compressed flag, the
// length the prefix claims, the bytes sent.
func grpcFrame(compressed byte, length uint32, body []byte) []byte {
	b := make([]byte, 5, 5+len(body))
	b[0] = compressed
	binary.BigEndian.PutUint32(b[1:], length)
	return append(b, body...)
}

func (c *h2Client) send(id uint32, end bool, b []byte) {
	c.t.Helper()
	if err := c.fr.WriteData(id, end, b); err != nil {
		c.t.Fatal(err)
	}
}

// await reads frames until every stream of ids ended (or the connection
// did), answering the server's settings and pings.
func (c *h2Client) await(ids ...uint32) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	ended := func() bool {
		for _, id := range ids {
			if _, ok := c.status[id]; !ok {
				return false
			}
		}
		return true
	}
	for !ended() {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("reading frames (streams %v, got %v): %v", ids, c.status, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = f.ForeachSetting(func(s http2.Setting) error { c.settings[s.ID] = s.Val; return nil })
				_ = c.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.pings++
				_ = c.fr.WritePing(true, f.Data)
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				c.connWindow += f.Increment
			}
		case *http2.DataFrame:
			c.data[f.StreamID] = append(c.data[f.StreamID], f.Data()...)
			if n := len(f.Data()); n > 0 {
				_ = c.fr.WriteWindowUpdate(0, uint32(n))
			}
		case *http2.HeadersFrame:
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				c.t.Fatal(err)
			}
			for _, hf := range fields {
				if hf.Name == "grpc-status" {
					c.status[f.StreamID] = hf.Value
				}
			}
		case *http2.RSTStreamFrame:
			// After the trailers when the client had not ended its side.
			if _, ok := c.status[f.StreamID]; !ok {
				c.status[f.StreamID] = "rst " + f.ErrCode.String()
			}
		case *http2.GoAwayFrame:
			c.t.Fatalf("the server sent the connection away: %v", f.ErrCode)
		}
	}
}

func (c *h2Client) code(id uint32) codes.Code {
	n, err := strconv.Atoi(c.status[id])
	if err != nil {
		return codes.Unknown
	}
	return codes.Code(n)
}

// TestRawHTTP2BadFrames: gRPC messages broken below protobuf, on one
// connection: a length prefix over the 130 MiB request limit is
// RESOURCE_EXHAUSTED before any byte of it is read, a compressed flag
// without an encoding and a message cut short by the end of the stream
// INTERNAL, a stream reset mid-message nothing; each ends its stream
// alone: the same connection then serves a good request.
func TestRawHTTP2BadFrames(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	c := newH2Client(t, s.Addr())
	route := v2pb.MessagingService_QueryRoute_FullMethodName
	send := v2pb.MessagingService_SendMessage_FullMethodName

	c.open(1, send)
	c.send(1, false, grpcFrame(0, maxInboundMessageSize+1, nil))
	c.open(3, route)
	c.send(3, true, grpcFrame(1, 2, []byte{0x0a, 0x00}))
	c.open(5, route)
	c.send(5, true, grpcFrame(0, 10, []byte{0x0a, 0x03}))
	c.open(7, send)
	c.send(7, false, grpcFrame(0, 1000, []byte{0x0a}))
	if err := c.fr.WriteRSTStream(7, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	// Metadata over 8 KiB (grpc-java's limit behind the proxy): the
	// stream is reset before any handler sees it.
	var pad [][2]string
	for i := 0; i < 4; i++ {
		pad = append(pad, [2]string{"x-pad-" + strconv.Itoa(i), strings.Repeat("x", 3<<10)})
	}
	c.open(11, route, pad...)
	c.send(11, true, grpcFrame(0, 0, nil))
	c.await(1, 3, 5, 11)
	for id, want := range map[uint32]codes.Code{1: codes.ResourceExhausted, 3: codes.Internal, 5: codes.Internal} {
		if got := c.code(id); got != want {
			t.Errorf("stream %d: grpc-status %q, want %v", id, c.status[id], want)
		}
	}
	if c.status[11] != "rst "+http2.ErrCodeFrameSize.String() {
		t.Errorf("stream with 12 KiB of metadata: %q, want a reset (FRAME_SIZE_ERROR)", c.status[11])
	}
	good, err := proto.Marshal(&v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}})
	if err != nil {
		t.Fatal(err)
	}
	c.open(13, route)
	c.send(13, true, grpcFrame(0, uint32(len(good)), good))
	c.await(13)
	var resp v2pb.QueryRouteResponse
	if d := c.data[13]; c.code(13) != codes.OK || len(d) < 5 || proto.Unmarshal(d[5:], &resp) != nil || resp.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("good request after the bad ones: grpc-status %q, %v", c.status[13], &resp)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) != 0 {
		t.Fatalf("a broken send reached the broker")
	}
}

// TestFlowControlWindows: the server's receive windows are 1 MiB per
// stream and per connection (grpc-java's server default, the proxy's), and
// serving requests sends no PING: grpc-go's bandwidth-delay estimation,
// which keeps a PING in flight on a connection carrying requests (each
// answered by the client), is off.
func TestFlowControlWindows(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	c := newH2Client(t, s.Addr())
	good, err := proto.Marshal(&v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}})
	if err != nil {
		t.Fatal(err)
	}
	route := v2pb.MessagingService_QueryRoute_FullMethodName
	for i := uint32(0); i < 20; i++ {
		id := 2*i + 1
		c.open(id, route)
		c.send(id, true, grpcFrame(0, uint32(len(good)), good))
		c.await(id)
		if c.code(id) != codes.OK {
			t.Fatalf("stream %d: grpc-status %q", id, c.status[id])
		}
	}
	if got := c.settings[http2.SettingInitialWindowSize]; got != flowControlWindow {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE %d, want %d", got, flowControlWindow)
	}
	// The connection starts at HTTP/2's 65535 bytes; the server raises it.
	if got := 65535 + c.connWindow; got < flowControlWindow {
		t.Errorf("connection window raised to %d, want at least %d", got, flowControlWindow)
	}
	if c.pings != 0 {
		t.Errorf("the server sent %d PINGs while serving 20 requests (bandwidth-delay estimation on)", c.pings)
	}
}

// idleConns is how many idle connections TestIdleConnections holds
// (make grpc-streams runs it with 5000: both ends are in the test
// process, two descriptors a connection).
var idleConns = flag.Int("grpc.idle-conns", 1000, "HTTP/2 connections TestIdleConnections holds open")

// TestIdleConnections: *idleConns connections that send the HTTP/2
// preface and their settings, then nothing: each costs the server a
// bounded amount of memory, other clients are served at once, and their
// close releases every goroutine.
func TestIdleConnections(t *testing.T) {
	n := *idleConns
	f := badInputConsumer()
	baseG := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	start := time.Now()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		if err := http2.NewFramer(c, c).WriteSettings(); err != nil {
			t.Fatal(err)
		}
	}
	// Each connection is served once gRPC's goroutines for it run.
	waitFor(t, "the connections to be served", func() bool { return runtime.NumGoroutine()-baseG >= 3*n })
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	perConn := (int64(during.HeapInuse+during.StackInuse) - int64(before.HeapInuse+before.StackInuse)) / int64(n)
	t.Logf("%d idle connections opened in %v; %d B of heap and stacks and %.1f goroutines per connection",
		n, time.Since(start), perConn, float64(runtime.NumGoroutine()-baseG)/float64(n))
	if perConn > 48<<10 {
		t.Errorf("%d B per idle connection", perConn)
	}
	t0 := time.Now()
	serves(t, v2pb.NewMessagingServiceClient(dial(t, s, "beside-idle")), f)
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("a send and a receive took %v beside %d idle connections", d, n)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	waitFor(t, "the connections' goroutines to end", func() bool { return runtime.NumGoroutine() < baseG+50 })
}
