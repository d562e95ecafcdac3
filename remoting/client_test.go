package remoting

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestClientReconnectAfterServerRestart(t *testing.T) {
	s1 := startServer(t, nil, nil)
	addr := s1.Addr()
	c := newClient(t, nil)
	mustInvoke(t, c, addr, echoReq(SerializeJSON, "one"))

	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	if err := s1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, addr, echoReq(SerializeJSON, "down")); err == nil {
		t.Fatal("invoke succeeded while the server is down")
	}

	s2 := startServer(t, func(cfg *ServerConfig) { cfg.ListenAddr = addr }, nil)
	resp := mustInvoke(t, c, s2.Addr(), echoReq(SerializeRocketMQ, "two"))
	if string(resp.Body) != "two" {
		t.Fatalf("after restart: %s", describe(resp))
	}
}

// Requests waiting for a response fail as soon as their connection dies.
func TestPendingFailsWhenConnectionCloses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(t *testing.T, c *Client, server *Channel)
	}{
		{"server-closes", func(_ *testing.T, _ *Client, ch *Channel) { _ = ch.Close() }},
		{"client-closeconn", func(_ *testing.T, c *Client, ch *Channel) { c.CloseConn(ch.LocalAddr()) }},
		{"client-close", func(_ *testing.T, c *Client, _ *Channel) { _ = c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil, nil)
			parked := make(chan *Channel, 2)
			s.Register(code.PullMessage, func(_ context.Context, ch *Channel, _ *Command) (*Command, error) {
				parked <- ch
				return nil, nil // never answered
			}, nil)
			c := newClient(t, func(cfg *ClientConfig) { cfg.RequestTimeout = time.Minute })

			syncErr := make(chan error, 1)
			go func() {
				_, err := c.Invoke(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil))
				syncErr <- err
			}()
			ch := recv(t, parked, "sync request parked")
			asyncErr := make(chan error, 1)
			if err := c.InvokeAsync(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil), func(r *Command, err error) {
				asyncErr <- err
			}); err != nil {
				t.Fatal(err)
			}
			recv(t, parked, "async request parked")

			start := time.Now()
			tc.close(t, c, ch)
			for _, errc := range []chan error{syncErr, asyncErr} {
				if err := recv(t, errc, "pending failure"); !errors.Is(err, ErrConnClosed) {
					t.Fatalf("pending request ended with %v, want ErrConnClosed", err)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("pending requests failed after %v", d)
			}
		})
	}
}

func TestClientTimeoutsAndCancel(t *testing.T) {
	s := startServer(t, nil, nil)
	s.Register(code.PullMessage, func(context.Context, *Channel, *Command) (*Command, error) {
		return nil, nil // never answered
	}, nil)
	c := newClient(t, func(cfg *ClientConfig) { cfg.RequestTimeout = 80 * time.Millisecond })

	t.Run("default-timeout", func(t *testing.T) {
		start := time.Now()
		_, err := c.Invoke(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil))
		if !errors.Is(err, ErrTimeout) || time.Since(start) < 70*time.Millisecond {
			t.Fatalf("got %v after %v", err, time.Since(start))
		}
	})
	t.Run("ctx-deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if _, err := c.Invoke(ctx, s.Addr(), NewRequest(code.PullMessage, nil, nil)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ctx-cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := c.Invoke(ctx, s.Addr(), NewRequest(code.PullMessage, nil, nil)); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("async-timeout", func(t *testing.T) {
		errc := make(chan error, 1)
		if err := c.InvokeAsync(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil), func(_ *Command, err error) { errc <- err }); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, errc, "async timeout"); !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("late-response-dropped", func(t *testing.T) {
		// The connection survives timeouts and keeps serving.
		mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "alive"))
	})
}

func TestClientOneConnectionPerAddress(t *testing.T) {
	s := startServer(t, nil, nil)
	var connects atomic.Int32
	s.OnConnect(func(*Channel) { connects.Add(1) })
	c := newClient(t, nil)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			mustInvoke(t, c, s.Addr(), echoReq(SerializeType(i%2), "concurrent"))
		})
	}
	wg.Wait()
	if n := connects.Load(); n != 1 {
		t.Fatalf("%d connections for one address, want 1", n)
	}
}

func TestClientDialErrors(t *testing.T) {
	addr := testutil.FreeAddr(t) // nothing listens there now
	c := newClient(t, func(cfg *ClientConfig) { cfg.ConnectTimeout = time.Second })
	_, err := c.Invoke(context.Background(), addr, echoReq(SerializeJSON, "x"))
	if err == nil || !strings.Contains(err.Error(), "connect to "+addr) {
		t.Fatalf("got %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(context.Background(), addr, echoReq(SerializeJSON, "x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestClientRejectsOversizeResponse(t *testing.T) {
	s := startServer(t, nil, nil)
	c := newClient(t, func(cfg *ClientConfig) { cfg.MaxFrameSize = 1024 })
	_, err := c.Invoke(context.Background(), s.Addr(), echoReq(SerializeJSON, strings.Repeat("x", 850)))
	if err != nil {
		t.Fatalf("request under the limit: %v", err)
	}
	_, err = c.Invoke(context.Background(), s.Addr(), echoReq(SerializeJSON, strings.Repeat("x", 2000)))
	if !errors.Is(err, ErrConnClosed) {
		t.Fatalf("oversize response: %v, want the connection closed", err)
	}
	mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "redialled"))
}

type signHook struct{}

func (signHook) BeforeRequest(_ *Channel, req *Command) *Command {
	if req.Ext("reject") != "" {
		return NewResponse(req, code.NoPermission, "rejected locally")
	}
	req.SetExt("AccessKey", "ak")
	return nil
}
func (signHook) AfterResponse(_ *Channel, _ *Command, resp *Command) { resp.SetExt("seenByHook", "1") }

func TestClientHooks(t *testing.T) {
	s := startServer(t, nil, nil)
	c := newClient(t, nil)
	c.AddHook(signHook{})
	resp := mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "x"))
	if resp.Ext("AccessKey") != "ak" || resp.Ext("seenByHook") != "1" {
		t.Fatalf("hooks not applied: %v", resp.ExtFields)
	}
	req := echoReq(SerializeJSON, "x")
	req.SetExt("reject", "1")
	if resp := mustInvoke(t, c, s.Addr(), req); resp.Code != code.NoPermission {
		t.Fatalf("got %s", describe(resp))
	}
}

// Close must leave no goroutine behind: readers, handlers, callbacks, idle
// scanners, executors, servers.
func TestNoGoroutineLeak(t *testing.T) {
	warm := func() {
		// netpoll starts its pollers once per process; start them first.
		s := startServer(t, nil, nil)
		c := NewClient(DefaultClientConfig(), nil)
		mustInvoke(t, c, s.Addr(), echoReq(SerializeJSON, "warm"))
		_ = c.Close()
		_ = s.Shutdown(context.Background())
	}
	warm()
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()

	s, err := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0", IdleTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Register(codeEcho, echo, nil)
	chans := make(chan *Channel, 1)
	s.Register(code.HeartBeat, func(_ context.Context, ch *Channel, req *Command) (*Command, error) {
		select {
		case chans <- ch:
		default:
		}
		return NewResponse(req, code.Success, ""), nil
	}, nil)
	s.Register(code.PullMessage, func(context.Context, *Channel, *Command) (*Command, error) { return nil, nil }, nil)
	ex := NewExecutor("extra", 2, 8)
	s.Register(code.SendMessage, echo, ex)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientConfig{IdleTimeout: time.Second}, nil)
	c.RegisterHandler(code.GetConsumerRunningInfo, echo)
	for i := range 20 {
		mustInvoke(t, c, s.Addr(), echoReq(SerializeType(i%2), "x"))
	}
	mustInvoke(t, c, s.Addr(), NewRequest(code.SendMessage, nil, nil))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		if err := c.InvokeAsync(context.Background(), s.Addr(), echoReq(SerializeJSON, "a"), func(*Command, error) { wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	mustInvoke(t, c, s.Addr(), NewRequest(code.HeartBeat, nil, nil))
	ch := <-chans
	if _, err := ch.Invoke(context.Background(), NewRequest(code.GetConsumerRunningInfo, nil, nil)); err != nil {
		t.Fatal(err)
	}
	pendingErr := make(chan error, 1)
	if err := c.InvokeAsync(context.Background(), s.Addr(), NewRequest(code.PullMessage, nil, nil), func(_ *Command, err error) { pendingErr <- err }); err != nil {
		t.Fatal(err)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, pendingErr, "pending failure"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("pending: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ex.Close()

	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
