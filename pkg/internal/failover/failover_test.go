package failover

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/remoting"
)

func TestInvokeMovesPreferredToTheServerThatAnswered(t *testing.T) {
	addrs := []string{"a", "b", "c"}
	var preferred atomic.Int32
	preferred.Store(1)
	var tried []string
	resp, addr, err := Invoke(context.Background(), addrs, &preferred, func(a string) (*remoting.Command, error) {
		tried = append(tried, a)
		if a == "b" {
			return nil, errors.New("b down")
		}
		return &remoting.Command{Remark: a}, nil
	})
	if err != nil || addr != "c" || resp.Remark != "c" {
		t.Fatalf("Invoke = %v, %q, %v; want c's answer", resp, addr, err)
	}
	if len(tried) != 2 || tried[0] != "b" {
		t.Fatalf("tried %v, want b then c", tried)
	}
	if preferred.Load() != 2 {
		t.Fatalf("preferred = %d, want 2", preferred.Load())
	}
}

func TestInvokeJoinsErrorsAndStopsWhenCtxEnds(t *testing.T) {
	addrs := []string{"a", "b"}
	var preferred atomic.Int32
	_, _, err := Invoke(context.Background(), addrs, &preferred, func(a string) (*remoting.Command, error) {
		return nil, errors.New(a + " down")
	})
	if err == nil || err.Error() != "a down\nb down" {
		t.Fatalf("err = %v, want both failures", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, _, err = Invoke(ctx, addrs, &preferred, func(string) (*remoting.Command, error) {
		calls++
		cancel()
		return nil, errors.New("down")
	})
	if err == nil || calls != 1 {
		t.Fatalf("after ctx ended: %d calls, err %v; want 1 call and an error", calls, err)
	}
	if preferred.Load() != 0 {
		t.Fatalf("preferred moved to %d without an answer", preferred.Load())
	}
}
