package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

// Test request codes (values are arbitrary but realistic).
const (
	codeEcho     = code.GetRouteInfoByTopic // echoes ext and body
	codeUnknown  = int32(9999)
	waitDeadline = 5 * time.Second // upper bound for anything a test waits on
)

// logBuffer collects log output from background goroutines safely (t.Log
// would panic after the test ends).
type logBuffer struct{ testutil.SyncBuffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func echo(_ context.Context, _ *Channel, req *Command) (*Command, error) {
	resp := NewResponse(req, code.Success, "echo")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp, nil
}

// startServer starts a loopback server with an echo handler on codeEcho; it
// is shut down when the test ends.
func startServer(t testing.TB, mutate func(*ServerConfig), log *slog.Logger) *Server {
	t.Helper()
	cfg := DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewServer(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	s.Register(codeEcho, echo, nil)
	testutil.StartWithShutdown(t, s, waitDeadline, t.Logf)
	return s
}

func newClient(t testing.TB, mutate func(*ClientConfig)) *Client {
	t.Helper()
	cfg := DefaultClientConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	c := NewClient(cfg, nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func mustEncode(t testing.TB, cmd *Command) []byte {
	t.Helper()
	b, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readCmd reads one frame from a raw connection.
func readCmd(conn net.Conn, timeout time.Duration) (*Command, error) {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(head[:]))
	if _, err := io.ReadFull(conn, frame); err != nil {
		return nil, err
	}
	return Decode(frame)
}

// expectClosed asserts that the peer closes conn (read gets EOF or reset,
// not a timeout) within the deadline.
func expectClosed(t testing.TB, conn net.Conn, within time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 256)
	for {
		_, err := conn.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection not closed within %v", within)
		}
		return
	}
}

func echoReq(st SerializeType, body string) *Command {
	req := NewRequest(codeEcho, map[string]string{"topic": "TopicTest", "k": "v"}, []byte(body))
	req.SerializeType = st
	return req
}

// registerBlocking serves reqCode on ex with a handler that signals started,
// waits until release is closed and answers SUCCESS.
func registerBlocking(s *Server, reqCode int32, ex *Executor, started chan<- struct{}, release <-chan struct{}) {
	s.Register(reqCode, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		started <- struct{}{}
		<-release
		return NewResponse(req, code.Success, ""), nil
	}, ex)
}

// mustInvokeAsync sends req with InvokeAsync; its callback reports an
// error on t and hands the response (nil after an error) to results.
func mustInvokeAsync(t testing.TB, c *Client, addr string, req *Command, results chan<- *Command) {
	t.Helper()
	err := c.InvokeAsync(context.Background(), addr, req, func(r *Command, err error) {
		if err != nil {
			t.Error(err)
		}
		results <- r
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustInvoke(t testing.TB, c *Client, addr string, req *Command) *Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitDeadline):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func expectNone[T any](t testing.TB, c <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(d):
	}
}

func frameWithHeader(st SerializeType, header []byte, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

func describe(cmd *Command) string {
	if cmd == nil {
		return "<nil>"
	}
	return fmt.Sprintf("code=%d opaque=%d flag=%d remark=%q st=%v", cmd.Code, cmd.Opaque, cmd.Flag, cmd.Remark, cmd.SerializeType)
}
