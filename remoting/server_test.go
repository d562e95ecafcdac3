package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestInvokeBothSerializations(t *testing.T) {
	s := startServer(t, nil, nil)
	c := newClient(t, nil)
	for _, tc := range []struct {
		name string
		st   SerializeType
		body string
	}{
		{"json", SerializeJSON, "hello"},
		{"rocketmq", SerializeRocketMQ, "hello"},
		{"json-empty-body", SerializeJSON, ""},
		{"rocketmq-large-body", SerializeRocketMQ, strings.Repeat("x", 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := echoReq(tc.st, tc.body)
			resp := mustInvoke(t, c, s.Addr(), req)
			if resp.Code != code.Success || resp.Remark != "echo" || !resp.IsResponse() || resp.Opaque != req.Opaque {
				t.Fatalf("response %s", describe(resp))
			}
			if resp.SerializeType != tc.st {
				t.Fatalf("response serialization %v, want the request's %v", resp.SerializeType, tc.st)
			}
			if string(resp.Body) != tc.body || resp.Ext("topic") != "TopicTest" || resp.Ext("k") != "v" {
				t.Fatalf("echo mismatch: ext %v, body %d bytes", resp.ExtFields, len(resp.Body))
			}
		})
	}
}

func TestUnknownAndDefaultHandler(t *testing.T) {
	for _, tc := range []struct {
		name       string
		register   func(*Server)
		wantCode   int32
		wantRemark string
	}{
		{"no-default", func(*Server) {}, code.RequestCodeNotSupported, " request type 9999 not supported"},
		{"default", func(s *Server) {
			s.RegisterDefault(func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
				return NewResponse(req, code.Success, fmt.Sprintf("default %d", req.Code)), nil
			}, nil)
		}, code.Success, "default 9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil, nil)
			tc.register(s)
			resp := mustInvoke(t, newClient(t, nil), s.Addr(), NewRequest(codeUnknown, nil, nil))
			if resp.Code != tc.wantCode || resp.Remark != tc.wantRemark {
				t.Fatalf("got %s, want code %d remark %q", describe(resp), tc.wantCode, tc.wantRemark)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	s := startServer(t, nil, nil)
	c := newClient(t, nil)
	for i, tc := range []struct {
		name       string
		h          Handler
		wantCode   int32
		wantRemark string
	}{
		{"code-error", func(context.Context, *Channel, *Command) (*Command, error) {
			return nil, Errorf(code.TopicNotExist, "No topic route info in name server for the topic: %s", "T")
		}, code.TopicNotExist, "No topic route info in name server for the topic: T"},
		{"wrapped-code-error", func(context.Context, *Channel, *Command) (*Command, error) {
			return nil, fmt.Errorf("lookup: %w", &CodeError{Code: code.NoPermission, Remark: "denied"})
		}, code.NoPermission, "lookup: denied"},
		{"plain-error", func(context.Context, *Channel, *Command) (*Command, error) {
			return nil, errors.New("disk on fire")
		}, code.SystemError, "disk on fire"},
		{"panic", func(context.Context, *Channel, *Command) (*Command, error) {
			panic("boom")
		}, code.SystemError, "internal error handling request 3003: boom"},
		{"response-built-by-hand", func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
			return &Command{Code: code.PullNotFound}, nil // no opaque, flag or serialization set
		}, code.PullNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqCode := int32(3000 + i)
			s.Register(reqCode, tc.h, nil)
			req := NewRequest(reqCode, nil, nil)
			req.SerializeType = SerializeRocketMQ
			resp := mustInvoke(t, c, s.Addr(), req)
			if resp.Code != tc.wantCode || resp.Remark != tc.wantRemark || resp.SerializeType != SerializeRocketMQ {
				t.Fatalf("got %s, want code %d remark %q", describe(resp), tc.wantCode, tc.wantRemark)
			}
		})
	}
}

type testHook struct {
	mu    sync.Mutex
	after []int32
}

func (h *testHook) BeforeRequest(_ *Channel, req *Command) *Command {
	if req.Ext("AccessKey") == "bad" {
		return NewResponse(req, code.NoPermission, "ACL denied")
	}
	return nil
}

func (h *testHook) AfterResponse(_ *Channel, req, resp *Command) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.after = append(h.after, resp.Code)
}

func TestServerHooks(t *testing.T) {
	s := startServer(t, nil, nil)
	hook := &testHook{}
	s.AddHook(hook)
	c := newClient(t, nil)
	for _, tc := range []struct {
		ak       string
		wantCode int32
	}{{"good", code.Success}, {"bad", code.NoPermission}} {
		resp := mustInvoke(t, c, s.Addr(), NewRequest(codeEcho, map[string]string{"AccessKey": tc.ak}, nil))
		if resp.Code != tc.wantCode {
			t.Fatalf("AccessKey %s: got %s", tc.ak, describe(resp))
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.after) != 1 || hook.after[0] != code.Success {
		t.Fatalf("AfterResponse calls %v, want [0] (rejected requests skip it)", hook.after)
	}
}

// A handler returning (nil, nil) answers later through ch.WriteResponse.
func TestLongPollAnswerLater(t *testing.T) {
	s := startServer(t, nil, nil)
	type parked struct {
		ch  *Channel
		req *Command
	}
	parkedc := make(chan parked, 4)
	s.Register(code.PullMessage, func(_ context.Context, ch *Channel, req *Command) (*Command, error) {
		parkedc <- parked{ch, req}
		return nil, nil
	}, nil)
	go func() {
		for range 2 {
			p := <-parkedc
			time.Sleep(50 * time.Millisecond)
			resp := NewResponse(p.req, code.PullNotFound, "no new message")
			resp.SetExt("nextBeginOffset", "42")
			_ = p.ch.WriteResponse(resp)
		}
	}()
	c := newClient(t, nil)

	start := time.Now()
	resp := mustInvoke(t, c, s.Addr(), NewRequest(code.PullMessage, nil, nil))
	if resp.Code != code.PullNotFound || resp.Ext("nextBeginOffset") != "42" || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("sync: %s after %v", describe(resp), time.Since(start))
	}

	done := make(chan *Command, 1)
	mustInvokeAsync(t, c, s.Addr(), NewRequest(code.PullMessage, nil, nil), done)
	if r := recv(t, done, "async long-poll response"); r == nil || r.Code != code.PullNotFound {
		t.Fatalf("async: %s", describe(r))
	}
}

// One-way requests (flag bit 1) run their handler but are never answered,
// not even for unknown codes or errors.
func TestOnewayGetsNoAnswer(t *testing.T) {
	s := startServer(t, nil, nil)
	seen := make(chan *Command, 4)
	s.Register(code.UpdateConsumerOffset, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		seen <- req
		return nil, errors.New("fails, but nobody is told")
	}, nil)

	conn := dialRaw(t, s.Addr())
	var buf []byte
	for i, c := range []int32{codeUnknown, code.UpdateConsumerOffset} {
		req := NewRequest(c, nil, nil)
		req.Opaque = int32(i + 1)
		req.MarkOneway()
		buf = append(buf, mustEncode(t, req)...)
	}
	probe := echoReq(SerializeJSON, "probe")
	probe.Opaque = 3
	buf = append(buf, mustEncode(t, probe)...)
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, seen, "oneway handler call"); !got.IsOneway() {
		t.Fatalf("handler saw %s", describe(got))
	}
	resp, err := readCmd(conn, waitDeadline)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Opaque != 3 {
		t.Fatalf("first answer on the wire is %s; one-way requests must not be answered", describe(resp))
	}

	// Through the client API too.
	c := newClient(t, nil)
	if err := c.InvokeOneway(context.Background(), s.Addr(), NewRequest(code.UpdateConsumerOffset, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, seen, "client oneway"); !got.IsOneway() {
		t.Fatalf("handler saw %s", describe(got))
	}
}

// The broker sends requests to clients on the connection they opened.
func TestServerInvokesClient(t *testing.T) {
	s := startServer(t, nil, nil)
	chans := make(chan *Channel, 1)
	s.Register(code.HeartBeat, func(_ context.Context, ch *Channel, req *Command) (*Command, error) {
		ch.SetValue("clientID", req.Ext("clientID"))
		chans <- ch
		return NewResponse(req, code.Success, ""), nil
	}, nil)

	c := newClient(t, nil)
	c.RegisterHandler(code.GetConsumerRunningInfo, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		resp := NewResponse(req, code.Success, "")
		resp.Body = []byte(`{"running":"` + req.Ext("consumerGroup") + `"}`)
		return resp, nil
	})
	notified := make(chan *Command, 1)
	c.RegisterHandler(code.NotifyConsumerIdsChanged, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		notified <- req
		return nil, nil
	})
	release := make(chan struct{})
	c.RegisterHandler(code.GetConsumerStatusFromClient, func(ctx context.Context, _ *Channel, req *Command) (*Command, error) {
		<-release
		return NewResponse(req, code.Success, ""), nil
	})
	defer close(release)

	mustInvoke(t, c, s.Addr(), NewRequest(code.HeartBeat, map[string]string{"clientID": "cid-1"}, nil))
	ch := recv(t, chans, "heartbeat channel")
	if ch.Value("clientID") != "cid-1" || !ch.IsActive() {
		t.Fatalf("channel attributes: %v active=%v", ch.Value("clientID"), ch.IsActive())
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "g1"}, nil)
		req.SerializeType = st
		resp, err := ch.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != code.Success || string(resp.Body) != `{"running":"g1"}` || resp.SerializeType != st {
			t.Fatalf("%v: %s body %q", st, describe(resp), resp.Body)
		}
	}

	resp, err := ch.Invoke(ctx, NewRequest(codeUnknown, nil, nil))
	if err != nil || resp.Code != code.RequestCodeNotSupported {
		t.Fatalf("unknown code on client: %s, %v", describe(resp), err)
	}

	if err := ch.InvokeOneway(NewRequest(code.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": "g1"}, nil)); err != nil {
		t.Fatal(err)
	}
	if n := recv(t, notified, "notify"); !n.IsOneway() || n.Ext("consumerGroup") != "g1" {
		t.Fatalf("notify: %s", describe(n))
	}

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	_, err = ch.Invoke(short, NewRequest(code.GetConsumerStatusFromClient, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expected timeout, got %v", err)
	}
}

// busyExecutor starts a server whose SEND_MESSAGE_V2 runs on an executor
// of one worker and capacity queue slots, the handler holding the worker
// until release is closed; it sends one request, waits until it holds the
// worker, then a second, and waits until that one is queued. send sends one
// more; every answer comes on results.
func busyExecutor(t *testing.T, capacity int) (ex *Executor, send func(), results chan *Command, release chan struct{}) {
	t.Helper()
	s := startServer(t, nil, nil)
	ex = NewExecutor("send", 1, capacity)
	t.Cleanup(ex.Close)
	started := make(chan struct{}, 4)
	release = make(chan struct{})
	registerBlocking(s, code.SendMessageV2, ex, started, release)
	c := newClient(t, nil)

	results = make(chan *Command, 3)
	send = func() { mustInvokeAsync(t, c, s.Addr(), NewRequest(code.SendMessageV2, nil, nil), results) }
	send()
	recv(t, started, "first request running") // occupies the only worker
	send()
	testutil.WaitFor(t, waitDeadline, "second request queued", func() bool { return ex.QueueLen() == 1 })
	return ex, send, results, release
}

func TestExecutorFullAnswersSystemBusy(t *testing.T) {
	_, send, results, release := busyExecutor(t, 1)
	send() // queue full
	busy := recv(t, results, "busy response")
	if busy.Code != code.SystemBusy || busy.Remark != "[OVERLOAD]system busy, start flow control for a while" {
		t.Fatalf("got %s", describe(busy))
	}
	close(release)
	for range 2 {
		if r := recv(t, results, "served response"); r.Code != code.Success {
			t.Fatalf("got %s", describe(r))
		}
	}
}

// TestExpiredRequestAnswersSystemBusy: a request that waited in a stuck
// executor's queue longer than allowed is answered SYSTEM_BUSY with the
// Java broker's TIMEOUT_CLEAN_QUEUE remark, without waiting for a worker;
// the request behind it still runs once the worker is free.
func TestExpiredRequestAnswersSystemBusy(t *testing.T) {
	ex, send, results, release := busyExecutor(t, 8)
	time.Sleep(30 * time.Millisecond)
	send()
	testutil.WaitFor(t, waitDeadline, "third request queued", func() bool { return ex.QueueLen() == 2 })
	if n := ex.DropExpired(25 * time.Millisecond); n != 1 {
		t.Fatalf("DropExpired dropped %d requests, want 1", n)
	}
	busy := recv(t, results, "busy response")
	if busy.Code != code.SystemBusy || !strings.HasPrefix(busy.Remark, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") ||
		!strings.HasSuffix(busy.Remark, "ms, size of queue: 1") {
		t.Fatalf("got %s", describe(busy))
	}
	// Shedding the queue (the disk cannot keep up) answers what is queued
	// with the page-cache remark, however young.
	send()
	testutil.WaitFor(t, waitDeadline, "fourth request queued", func() bool { return ex.QueueLen() == 2 })
	if n := ex.DropQueued(); n != 2 {
		t.Fatalf("DropQueued dropped %d requests, want 2", n)
	}
	for range 2 {
		busy = recv(t, results, "busy response")
		if busy.Code != code.SystemBusy || !strings.HasPrefix(busy.Remark, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
			t.Fatalf("got %s", describe(busy))
		}
	}
	close(release)
	if r := recv(t, results, "served response"); r.Code != code.Success {
		t.Fatalf("got %s", describe(r))
	}
}

// Malformed frames close only their own connection.
func TestBadFrameClosesOnlyThatConnection(t *testing.T) {
	logs := &logBuffer{}
	s := startServer(t, func(c *ServerConfig) { c.MaxFrameSize = 4096 }, logs.logger())
	closedRemotes := make(chan string, 16)
	s.OnClose(func(ch *Channel) { closedRemotes <- ch.RemoteAddr() })
	c := newClient(t, nil)
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "before"))

	rocketHeader := mustEncode(t, &Command{Code: 10, SerializeType: SerializeRocketMQ})[8:]
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"oversize-frame", frameWithHeader(SerializeJSON, []byte(`{"code":1}`), make([]byte, 5000))},
		{"oversize-length-only", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"negative-length", []byte{0xff, 0xff, 0xff, 0xfe}},
		{"length-below-4", []byte{0, 0, 0, 2, 0, 0}},
		{"header-longer-than-frame", []byte{0, 0, 0, 8, 0, 0, 0, 50, '{', '}', ' ', ' '}},
		{"truncated-rocketmq-header", frameWithHeader(SerializeRocketMQ, rocketHeader[:12], nil)},
		{"rocketmq-bad-remark-length", frameWithHeader(SerializeRocketMQ, append(append([]byte{}, rocketHeader[:13]...), 0x7f, 0, 0, 0, 0, 0, 0, 0), nil)},
		{"non-json-header", frameWithHeader(SerializeJSON, []byte("hello"), nil)},
		{"json-wrong-types", frameWithHeader(SerializeJSON, []byte(`{"code":"ten","extFields":[1]}`), nil)},
		{"unknown-serialize-type", frameWithHeader(SerializeType(7), []byte("{}"), nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialRaw(t, s.Addr())
			// A good request first proves the connection worked until the bad frame.
			if _, err := conn.Write(mustEncode(t, echoReq(SerializeJSON, "ok"))); err != nil {
				t.Fatal(err)
			}
			if _, err := readCmd(conn, waitDeadline); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, conn, waitDeadline)
			if got := recv(t, closedRemotes, "OnClose"); got != conn.LocalAddr().String() {
				t.Fatalf("closed %s, want the bad connection %s", got, conn.LocalAddr())
			}
			mustInvoke(t, c, s.Addr(), echoReq(SerializeRocketMQ, "other connection still served"))
		})
	}
	if !strings.Contains(logs.String(), "bad frame") {
		t.Fatalf("bad frames were not logged:\n%s", logs.String())
	}
	if n := len(s.Channels()); n != 1 {
		t.Fatalf("%d open connections, want only the client's", n)
	}
}

// Frames split across reads, and many frames in one read.
func TestFraming(t *testing.T) {
	s := startServer(t, nil, nil)
	t.Run("byte-by-byte", func(t *testing.T) {
		conn := dialRaw(t, s.Addr())
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		for i, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			req := echoReq(st, "split")
			req.Opaque = int32(100 + i)
			for _, b := range mustEncode(t, req) {
				if _, err := conn.Write([]byte{b}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Microsecond)
			}
			resp, err := readCmd(conn, waitDeadline)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Opaque != req.Opaque || string(resp.Body) != "split" || resp.SerializeType != st {
				t.Fatalf("got %s body %q", describe(resp), resp.Body)
			}
		}
	})
	t.Run("many-per-write", func(t *testing.T) {
		conn := dialRaw(t, s.Addr())
		const n = 300
		var buf []byte
		for i := range n {
			req := echoReq(SerializeType(i%2), fmt.Sprint(i))
			req.Opaque = int32(i)
			buf = append(buf, mustEncode(t, req)...)
		}
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		seen := make(map[int32]bool, n)
		for range n {
			resp, err := readCmd(conn, waitDeadline)
			if err != nil {
				t.Fatalf("after %d responses: %v", len(seen), err)
			}
			if string(resp.Body) != fmt.Sprint(resp.Opaque) || seen[resp.Opaque] {
				t.Fatalf("bad or duplicate response %s", describe(resp))
			}
			seen[resp.Opaque] = true
		}
	})
}

func TestIdleConnectionClosed(t *testing.T) {
	s := startServer(t, func(c *ServerConfig) { c.IdleTimeout = 150 * time.Millisecond }, nil)
	t.Run("server-closes-idle", func(t *testing.T) {
		conn := dialRaw(t, s.Addr())
		start := time.Now()
		expectClosed(t, conn, waitDeadline)
		if d := time.Since(start); d < 140*time.Millisecond {
			t.Fatalf("closed after %v, before the idle timeout", d)
		}
	})
	t.Run("active-connection-kept", func(t *testing.T) {
		c := newClient(t, func(c *ClientConfig) { c.IdleTimeout = -1 })
		for range 6 {
			mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "keepalive"))
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(s.Channels()); n != 1 {
			t.Fatalf("%d connections, want the one kept alive", n)
		}
	})
}

func TestClientClosesIdleConnection(t *testing.T) {
	s := startServer(t, nil, nil)
	closed := make(chan struct{}, 1)
	s.OnClose(func(*Channel) { closed <- struct{}{} })
	c := newClient(t, func(c *ClientConfig) { c.IdleTimeout = 100 * time.Millisecond })
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "x"))
	recv(t, closed, "client closing its idle connection")
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "redialled"))
}

func TestGracefulShutdownDrains(t *testing.T) {
	s := startServer(t, nil, nil)
	started := make(chan struct{}, 1)
	s.Register(code.SendMessage, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		return NewResponse(req, code.Success, "stored"), nil
	}, nil)
	c := newClient(t, nil)
	result := make(chan *Command, 1)
	mustInvokeAsync(t, c, s.Addr(), NewRequest(code.SendMessage, nil, nil), result)
	recv(t, started, "handler start")
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("Shutdown returned after %v without waiting for the handler", d)
	}
	if r := recv(t, result, "drained response"); r == nil || r.Code != code.Success || r.Remark != "stored" {
		t.Fatalf("in-flight request got %s", describe(r))
	}
	if _, err := c.Invoke(ctx, s.Addr(), echoReq(SerializeJSON, "after")); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
}

func TestHardShutdownCancelsHandlers(t *testing.T) {
	s := startServer(t, nil, nil)
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	s.Register(code.PullMessage, func(ctx context.Context, _ *Channel, req *Command) (*Command, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	}, nil)
	c := newClient(t, nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := c.Invoke(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil))
		if err == nil && resp.Code == code.Success {
			err = errors.New("success")
		}
		errc <- err
	}()
	recv(t, started, "handler start")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	recv(t, cancelled, "handler ctx cancelled")
	// The cancelled handler's error may still reach the client before its
	// connection is closed; what must not happen is a success.
	if err := recv(t, errc, "client result"); err != nil && err.Error() == "success" {
		t.Fatal("client got SUCCESS from a handler cut short by a hard shutdown")
	}
}

func TestGoAwayWhileDraining(t *testing.T) {
	s := startServer(t, nil, nil)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	registerBlocking(s, code.SendMessage, nil, started, release)
	c := newClient(t, nil)
	if err := c.InvokeAsync(context.Background(), s.Addr(), NewRequest(code.SendMessage, nil, nil), func(*Command, error) {}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "handler start")
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	testutil.WaitFor(t, waitDeadline, "draining", func() bool { return s.state.Load() == stateDraining })

	newPeer := echoReq(SerializeJSON, "x") // version 513 > 475
	if resp := mustInvoke(t, c, s.Addr(), newPeer); resp.Code != code.GoAway {
		t.Fatalf("new client while draining: %s", describe(resp))
	}
	oldPeer := echoReq(SerializeJSON, "x")
	oldPeer.Version = 317 // client-go does not know GO_AWAY: still served
	if resp := mustInvoke(t, c, s.Addr(), oldPeer); resp.Code != code.Success {
		t.Fatalf("old client while draining: %s", describe(resp))
	}
	close(release)
	if err := recv(t, done, "shutdown"); err != nil {
		t.Fatal(err)
	}
}

func TestServerLifecycleErrors(t *testing.T) {
	if _, err := NewServer(ServerConfig{}, nil); err == nil {
		t.Fatal("empty ListenAddr accepted")
	}
	s := startServer(t, nil, nil)
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	other, err := NewServer(ServerConfig{ListenAddr: s.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err == nil {
		t.Fatal("listening twice on the same port succeeded")
	}
	// Shutdown of a never-started server is a no-op.
	if err := other.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestServerConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		ok   bool
	}{
		{"default", DefaultServerConfig(), true},
		{"zero-but-addr", ServerConfig{ListenAddr: ":0"}, true},
		{"no-addr", ServerConfig{}, false},
		{"bad-addr", ServerConfig{ListenAddr: "localhost"}, false},
		{"negative-frame", ServerConfig{ListenAddr: ":0", MaxFrameSize: -1}, false},
		{"huge-frame", ServerConfig{ListenAddr: ":0", MaxFrameSize: 2 << 30}, false},
		{"negative-workers", ServerConfig{ListenAddr: ":0", Workers: -1}, false},
		{"negative-write-timeout", ServerConfig{ListenAddr: ":0", WriteTimeout: -1}, false},
		{"idle-disabled", ServerConfig{ListenAddr: ":0", IdleTimeout: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestConnectCloseCallbacks(t *testing.T) {
	s := startServer(t, nil, nil)
	var connects, closes atomic.Int32
	var connected sync.Map
	s.OnConnect(func(ch *Channel) {
		connects.Add(1)
		connected.Store(ch.ID(), ch.RemoteAddr())
	})
	s.OnClose(func(ch *Channel) {
		if _, ok := connected.Load(ch.ID()); !ok {
			t.Error("OnClose for a channel without OnConnect")
		}
		if ch.IsActive() {
			t.Error("channel active in OnClose")
		}
		closes.Add(1)
	})
	c := newClient(t, nil)
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "x"))
	c.CloseConn(s.Addr())
	testutil.WaitFor(t, waitDeadline, "close callback", func() bool { return closes.Load() == 1 })
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "x"))
	if connects.Load() != 2 {
		t.Fatalf("%d connects, want 2", connects.Load())
	}
}

// Requests are numbered in the order the server reads them, across
// connections, whatever order the executor then runs them in.
func TestRequestArrivalOrder(t *testing.T) {
	fx := newTLSFixture(t)
	for _, tc := range []struct {
		name   string
		server func(*ServerConfig)
		client func(*ClientConfig)
	}{
		{"plaintext, netpoll", nil, nil},
		// TLS connections are read on a goroutine each (serve.go): their
		// requests were not stamped, so offset commits on them were not
		// kept in arrival order.
		{"tls, goroutine per connection",
			func(c *ServerConfig) {
				c.TLS = ServerTLS{Mode: TLSEnforcing, Config: &tls.Config{Certificates: []tls.Certificate{fx.server}}}
			},
			func(c *ClientConfig) { c.TLS = &tls.Config{RootCAs: fx.ca.Pool()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.server, nil)
			var mu sync.Mutex
			var seen []uint64
			var received []time.Time
			s.Register(codeUnknown, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
				mu.Lock()
				seen = append(seen, req.Arrival)
				received = append(received, req.Received)
				mu.Unlock()
				return NewResponse(req, code.Success, ""), nil
			}, nil)
			for _, c := range []*Client{newClient(t, tc.client), newClient(t, tc.client)} {
				for range 3 {
					mustInvoke(t, c, s.Addr(), NewRequest(codeUnknown, nil, nil))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 6 || seen[0] == 0 {
				t.Fatalf("arrivals %v", seen)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] <= seen[i-1] {
					t.Fatalf("arrivals %v: not increasing in the order the requests were sent one after another", seen)
				}
			}
			for i, r := range received {
				if r.IsZero() {
					t.Fatalf("request %d has no Received time", i)
				}
			}
		})
	}
}
