// Package remotingtest holds the request helpers of tests that talk to a
// server over a remoting.Client.
package remotingtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting"
)

// Invoke sends a request to addr and waits up to 10 s for the answer,
// failing t when none comes.
func Invoke(t testing.TB, c *remoting.Client, addr string, reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(reqCode, ext, body))
	if err != nil {
		t.Fatalf("request %d to %s: %v", reqCode, addr, err)
	}
	return resp
}

// Want fails t unless resp has code want and a remark containing remark.
func Want(t testing.TB, what string, resp *remoting.Command, want int32, remark string) {
	t.Helper()
	if resp.Code != want || !strings.Contains(resp.Remark, remark) {
		t.Fatalf("%s: code %d remark %q; want %d with %q", what, resp.Code, resp.Remark, want, remark)
	}
}
