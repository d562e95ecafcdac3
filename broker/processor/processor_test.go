package processor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func handlerAnswering(c int32) remoting.Handler {
	return func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(req, c, ""), nil
	}
}

// answer runs h and returns its response code.
func answer(t *testing.T, h remoting.Handler) int32 {
	t.Helper()
	resp, err := h(context.Background(), nil, remoting.NewRequest(1, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Code
}

func TestRegisterAllAndPooled(t *testing.T) {
	type reg struct {
		pool Pool
		h    remoting.Handler
	}
	got := map[int32]reg{}
	r := RegistrarFunc(func(c int32, h remoting.Handler, pool Pool) { got[c] = reg{pool, h} })
	RegisterAll(r, map[int32]remoting.Handler{10: handlerAnswering(100), 11: handlerAnswering(110)}, PoolAdmin)
	RegisterPooled(r, map[int32]PooledHandler{
		20: {H: handlerAnswering(200), Pool: PoolSend},
		21: {H: handlerAnswering(210), Pool: PoolPull},
	})
	want := map[int32]Pool{10: PoolAdmin, 11: PoolAdmin, 20: PoolSend, 21: PoolPull}
	if len(got) != len(want) {
		t.Fatalf("registered %d codes, want %d", len(got), len(want))
	}
	for c, pool := range want {
		g, ok := got[c]
		if !ok || g.pool != pool {
			t.Errorf("code %d: registered %v on pool %d, want pool %d", c, ok, g.pool, pool)
			continue
		}
		if a := answer(t, g.h); a != c*10 {
			t.Errorf("code %d: handler answers %d, want %d", c, a, c*10)
		}
	}
}

func TestBadRequest(t *testing.T) {
	for name, err := range map[string]error{
		"BadRequest":  BadRequest(errors.New("missing topic")),
		"BadRequestf": BadRequestf("missing %s", "topic"),
	} {
		var ce *remoting.CodeError
		if !errors.As(err, &ce) || ce.Code != code.InvalidParameter || ce.Remark != "missing topic" {
			t.Errorf("%s: %#v, want INVALID_PARAMETER \"missing topic\"", name, err)
		}
	}
}

func TestStrField(t *testing.T) {
	for _, tc := range []struct {
		name string
		ext  map[string]string
		want string // "": INVALID_PARAMETER
	}{
		{"present", map[string]string{"group": "g1", "topic": "t"}, "g1"},
		{"missing", map[string]string{"topic": "t"}, ""},
		{"no header", nil, ""},
	} {
		got, err := StrField(remoting.NewRequest(1, tc.ext, nil), "group")
		var ce *remoting.CodeError
		switch {
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v, want %q", tc.name, got, err, tc.want)
		case tc.want == "" && (!errors.As(err, &ce) || ce.Code != code.InvalidParameter):
			t.Errorf("%s: %q, %v, want INVALID_PARAMETER", tc.name, got, err)
		}
	}
}

func TestKeepCode(t *testing.T) {
	coded := remoting.Errorf(code.SystemError, "disabled")
	for _, err := range []error{coded, fmt.Errorf("factory: %w", coded)} {
		if got := KeepCode(err, code.SubscriptionParseFailed, "parse failed: %v", err); got != err {
			t.Errorf("KeepCode(%v) = %v, want it unchanged", err, got)
		}
	}
	plain := errors.New("bad expression")
	got := KeepCode(plain, code.SubscriptionParseFailed, "parse failed: %v", plain)
	var ce *remoting.CodeError
	if !errors.As(got, &ce) || ce.Code != code.SubscriptionParseFailed || ce.Remark != "parse failed: bad expression" {
		t.Errorf("KeepCode(plain) = %v, want SUBSCRIPTION_PARSE_FAILED \"parse failed: bad expression\"", got)
	}
}

func TestCodeError(t *testing.T) {
	errMine := errors.New("mine")
	codeOf := func(err error) int32 {
		if errors.Is(err, errMine) {
			return code.NoPermission
		}
		return code.SystemError
	}
	hook := &remoting.CodeError{Code: code.TopicNotExist, Remark: "from a hook"}
	for _, tc := range []struct {
		name   string
		err    error
		code   int32
		remark string
	}{
		{"sentinel in the table", fmt.Errorf("%w: topic T", errMine), code.NoPermission, "mine: topic T"},
		{"unknown error", errors.New("disk on fire"), code.SystemError, "disk on fire"},
		{"shared bad header", fmt.Errorf("%w: offset", ErrBadHeader), code.InvalidParameter, "bad request header: offset"},
		{"shared no permission", fmt.Errorf("%w: topic T", ErrNoPermission), code.NoPermission, "no permission: topic T"},
		{"shared topic not exist", fmt.Errorf("%w: T", ErrTopicNotExist), code.TopicNotExist, "topic not exist: T"},
		{"shared group not exist", fmt.Errorf("%w: g", ErrGroupNotExist), code.SubscriptionGroupNotExist, "subscription group not exist: g"},
		{"code error kept", hook, code.TopicNotExist, "from a hook"},
		{"wrapped code error kept with its wrapping", fmt.Errorf("send: %w", hook), code.TopicNotExist, "send: from a hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := remoting.ResponseFromError(remoting.NewRequest(1, nil, nil), CodeError(tc.err, codeOf))
			if resp.Code != tc.code || resp.Remark != tc.remark {
				t.Fatalf("answer %d %q, want %d %q", resp.Code, resp.Remark, tc.code, tc.remark)
			}
			if c := CodeOf(tc.err, codeOf); c != tc.code {
				t.Fatalf("CodeOf = %d, want %d", c, tc.code)
			}
		})
	}
}
