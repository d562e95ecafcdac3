package grpcserver

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/tap"
)

// arrivalKey carries a request's arrival number in its context.
type arrivalKey struct{}

// arrivals numbers the rpcs the server reads, in the order it read them.
// grpc-go runs each rpc on a goroutine of its own, so two requests a client
// sends back to back may be handled the other way round; the number lets a
// handler tell (lite subscriptions, liteorder.go). Its tap runs on the
// connection's reader as each stream opens, before the rpc is dispatched.
type arrivals struct{ n atomic.Uint64 }

func (a *arrivals) tap(ctx context.Context, _ *tap.Info) (context.Context, error) {
	return context.WithValue(ctx, arrivalKey{}, a.n.Add(1)), nil
}

// arrivalOf is ctx's arrival number, 0 when the request was not numbered
// (a handler called directly, as in tests).
func arrivalOf(ctx context.Context) uint64 {
	n, _ := ctx.Value(arrivalKey{}).(uint64)
	return n
}
