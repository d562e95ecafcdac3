// Package failover sends a request to one of several equivalent servers
// (the nameservers): the preferred one first, then the next ones in turn
// while they cannot be reached. The admin and the producer/consumer
// clients share it.
package failover

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/rmqgo/rmq/remoting"
)

// Invoke calls call with the addresses of addrs in turn, starting at index
// *preferred, until one answers (whatever its response code); that one
// becomes preferred. It stops early when ctx ends. Without an answer it
// returns the errors joined. addrs must not be empty.
func Invoke(ctx context.Context, addrs []string, preferred *atomic.Int32, call func(addr string) (*remoting.Command, error)) (*remoting.Command, string, error) {
	first := int(preferred.Load())
	var errs []error
	for i := range addrs {
		idx := (first + i) % len(addrs)
		resp, err := call(addrs[idx])
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if idx != first {
			preferred.Store(int32(idx))
		}
		return resp, addrs[idx], nil
	}
	return nil, "", errors.Join(errs...)
}
