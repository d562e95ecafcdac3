package clienttest

import (
	"context"
	"testing"
)

// Runner is the lifecycle every client of package client shares.
type Runner interface {
	Start() error
	Shutdown(ctx context.Context) error
}

// Subscriber is a Runner that takes its subscriptions before it starts
// (push and simple consumers).
type Subscriber interface {
	Runner
	Subscribe(topic, expression, expressionType string) error
}

// Started takes what a client constructor returned, fails t on its error,
// starts the client and shuts it down when t ends. Meant as
// `x, err := client.NewX(cfg); return clienttest.Started(t, x, err)`.
func Started[T Runner](t testing.TB, x T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Shutdown(context.Background()) })
	return x
}

// Subscribed is Started for a consumer that first subscribes to topic with
// the tag expression expr.
func Subscribed[T Subscriber](t testing.TB, x T, err error, topic, expr string) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Subscribe(topic, expr, ""); err != nil {
		t.Fatal(err)
	}
	return Started(t, x, nil)
}
