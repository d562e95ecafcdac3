package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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
	first := int(c.ns.preferred.Load())
	var errs []error
	for i := range addrs {
		idx := (first + i) % len(addrs)
		resp, err := c.invoke(ctx, addrs[idx], reqCode, ext, nil)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if idx != first {
			c.ns.preferred.Store(int32(idx))
		}
		return resp, addrs[idx], nil
	}
	return nil, "", fmt.Errorf("client: no name server reachable: %w", errors.Join(errs...))
}
