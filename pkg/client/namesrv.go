package client

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/rmqgo/rmq/pkg/internal/failover"
	"github.com/rmqgo/rmq/remoting"
)

// nameServers remembers which nameserver answered last so requests stick to
// it, moving on only when it cannot be reached (Java's chosen namesrv).
type nameServers struct {
	addrs     []string
	preferred atomic.Int32
}

// invokeNamesrv sends one request to the preferred nameserver, then to the
// next ones while they cannot be reached. Any response code is returned as
// is.
func (c *core) invokeNamesrv(ctx context.Context, reqCode int32, ext map[string]string) (*remoting.Command, string, error) {
	addrs := c.ns.addrs
	if len(addrs) == 0 {
		return nil, "", ErrNoNameServer
	}
	resp, addr, err := failover.Invoke(ctx, addrs, &c.ns.preferred, func(addr string) (*remoting.Command, error) {
		return c.invoke(ctx, addr, reqCode, ext, nil)
	})
	if err != nil {
		return nil, "", fmt.Errorf("client: no name server reachable: %w", err)
	}
	return resp, addr, nil
}
