package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Invoker sends remoting requests; *remoting.Client is one.
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
	InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error
}

// ErrNoLeader: no controller named a leader.
var ErrNoLeader = errors.New("replica: no controller leader")

// CodeError is a controller answer other than SUCCESS.
type CodeError struct {
	Code   int32
	Remark string
}

func (e *CodeError) Error() string {
	return fmt.Sprintf("controller answered %s (%d): %s", code.ResponseName(e.Code), e.Code, e.Remark)
}

// IsCode reports whether err is a controller answer with code c.
func IsCode(err error, c int32) bool {
	var ce *CodeError
	return errors.As(err, &ce) && ce.Code == c
}

// controllers tracks the configured controller addresses and the leader
// among them. Leader-only requests go to the cached leader; an I/O error
// or CONTROLLER_NOT_LEADER refreshes it at once (upstream waits for its
// 10 s refresh) and the request is retried once.
type controllers struct {
	inv     Invoker
	addrs   func() []string
	timeout time.Duration

	mu     sync.Mutex
	leader string
}

func (c *controllers) cachedLeader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// refresh asks every controller, in parallel, who leads; the first answer
// naming a leader wins.
func (c *controllers) refresh(ctx context.Context) (string, error) {
	addrs := c.addrs()
	if len(addrs) == 0 {
		return "", errors.New("replica: no controller address configured")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	found := make(chan string, len(addrs))
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.inv.Invoke(ctx, a, remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
			if err != nil || resp.Code != code.Success {
				return
			}
			if l := resp.Ext(protocol.HdrControllerLeaderAddress); l != "" {
				found <- l
			}
		}()
	}
	go func() { wg.Wait(); close(found) }()
	leader, ok := <-found
	if !ok {
		return "", ErrNoLeader
	}
	c.mu.Lock()
	c.leader = leader
	c.mu.Unlock()
	return leader, nil
}

// call sends a leader-only request built by req (a fresh command per
// attempt: opaque numbers are per send) and returns a SUCCESS answer; any
// other code is a *CodeError with the response attached.
func (c *controllers) call(ctx context.Context, req func() *remoting.Command) (*remoting.Command, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		leader := c.cachedLeader()
		if leader == "" || attempt > 0 {
			l, err := c.refresh(ctx)
			if err != nil {
				if lastErr != nil {
					return nil, fmt.Errorf("%w (after %v)", err, lastErr)
				}
				return nil, err
			}
			leader = l
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		resp, err := c.inv.Invoke(cctx, leader, req())
		cancel()
		switch {
		case err != nil:
			lastErr = err
			continue
		case resp.Code == code.ControllerNotLeader:
			lastErr = &CodeError{Code: resp.Code, Remark: resp.Remark}
			continue
		case resp.Code != code.Success:
			return resp, &CodeError{Code: resp.Code, Remark: resp.Remark}
		}
		return resp, nil
	}
	return nil, lastErr
}

// each sends a one-way request to every controller (heartbeats: each node
// keeps its own liveness table warm).
func (c *controllers) each(ctx context.Context, req func() *remoting.Command) {
	for _, a := range c.addrs() {
		_ = c.inv.InvokeOneway(ctx, a, req())
	}
}
