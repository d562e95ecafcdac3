package filter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func newFactory(t *testing.T, enabled bool) (*Factory, *atomic.Pointer[config.Config]) {
	t.Helper()
	var cfg atomic.Pointer[config.Config]
	c := config.Default(config.Host{Hostname: "h", IP: "10.0.0.1", Home: t.TempDir()})
	c.EnablePropertyFilter = enabled
	cfg.Store(c)
	f, err := New(Options{Config: cfg.Load, CacheSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	return f, &cfg
}

func sql92(expr string) client.SubscriptionData {
	return client.SubscriptionData{Topic: "T", SubString: expr, ExpressionType: client.ExpressionSQL92}
}

func TestNewRequiresConfig(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Config")
	}
}

func TestFactoryNewFilter(t *testing.T) {
	f, cfg := newFactory(t, true)
	mf, err := f.NewFilter("g", sql92("a > 5 AND b = 'x'"))
	if err != nil {
		t.Fatal(err)
	}
	if !mf.MatchTagsCode(12345) || !mf.MatchTagsCode(0) {
		t.Fatal("SQL92 filters do not use tag codes")
	}
	enc := func(kv ...string) []byte {
		b, err := message.EncodeProperties(kv2map(kv))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		props []byte
		want  bool
	}{
		{enc("a", "6", "b", "x"), true},
		{enc("a", "6", "b", "y"), false},
		{enc("a", "5", "b", "x"), false},
		{enc("b", "x"), false},           // UNKNOWN
		{enc("a", "x", "b", "x"), false}, // evaluation error
		{nil, false},
	} {
		if got := mf.MatchProperties(tc.props); got != tc.want {
			t.Errorf("MatchProperties(%q) = %v", tc.props, got)
		}
	}
	// Compiled once: the same expression text hits the cache.
	mf2, _ := f.NewFilter("g2", sql92("a > 5 AND b = 'x'"))
	if mf.(*SQLFilter).Expression() != mf2.(*SQLFilter).Expression() {
		t.Fatal("expression compiled twice")
	}

	if _, err := f.NewFilter("g", sql92("a >")); err == nil || !strings.Contains(err.Error(), "Invalid MessageSelector") {
		t.Fatalf("bad expression: %v", err)
	}
	if _, err := f.NewFilter("g", client.SubscriptionData{Topic: "T", SubString: "a > 1", ExpressionType: "sql92"}); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("lower-case type (Java's FilterFactory is case-sensitive): %v", err)
	}
	// Class filter mode matches everything, as Java's filter does.
	cf := sql92("a >")
	cf.ClassFilterMode = true
	if mf, err := f.NewFilter("g", cf); err != nil || !mf.MatchProperties(nil) {
		t.Fatalf("class filter mode: %v", err)
	}

	// enablePropertyFilter is read live.
	c := cfg.Load().Clone()
	c.EnablePropertyFilter = false
	cfg.Store(c)
	if _, err := f.NewFilter("g", sql92("a > 5")); !errors.Is(err, ErrPropertyFilterDisabled) ||
		err.Error() != "The broker does not support consumer to filter message by SQL92" {
		t.Fatalf("disabled: %v", err)
	}
}

func kv2map(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestCheckClientConfig(t *testing.T) {
	f, cfg := newFactory(t, true)
	call := func(body string) *remoting.Command {
		t.Helper()
		req := remoting.NewRequest(code.CheckClientConfig, nil, []byte(body))
		resp, err := f.HandleCheckClientConfig(context.Background(), nil, req)
		if err != nil {
			resp = remoting.ResponseFromError(req, err)
		}
		return resp
	}
	// A Java client's body (fastjson; Java sends codeSet/tagsSet and more).
	javaBody := func(typ, expr string) string {
		return `{"clientId":"127.0.0.1@1#123","group":"cg","subscriptionData":{"classFilterMode":false,"codeSet":[],` +
			`"expressionType":"` + typ + `","subString":"` + expr + `","subVersion":1700000000000,"tagsSet":[],"topic":"T"}}`
	}
	for _, tc := range []struct {
		name, body string
		code       int32
		remark     string
	}{
		{"good SQL92", javaBody("SQL92", "a > 5 AND b = 'x'"), code.Success, ""},
		{"bad SQL92", javaBody("SQL92", "a > 'x'"), code.SubscriptionParseFailed, "Invalid MessageSelector. value ''x'' cannot be compared"},
		{"empty SQL92", javaBody("SQL92", ""), code.SubscriptionParseFailed, "Invalid MessageSelector"},
		{"unknown type", javaBody("XPATH", "/a"), code.SubscriptionParseFailed, "unsupported expression type"},
		{"TAG is not checked", javaBody("TAG", "a ||"), code.Success, ""},
		{"no type is TAG", `{"subscriptionData":{"subString":"((("}}`, code.Success, ""},
		{"no subscription", `{"clientId":"c","group":"g"}`, code.Success, ""},
		{"empty body", ``, code.Success, ""},
		{"malformed", `{"subscriptionData":`, code.SystemError, "CheckClientRequestBody"},
	} {
		resp := call(tc.body)
		if resp.Code != tc.code || !strings.Contains(resp.Remark, tc.remark) {
			t.Errorf("%s: %d %q; want %d with %q", tc.name, resp.Code, resp.Remark, tc.code, tc.remark)
		}
	}
	c := cfg.Load().Clone()
	c.EnablePropertyFilter = false
	cfg.Store(c)
	if resp := call(javaBody("SQL92", "a > 5")); resp.Code != code.SystemError ||
		resp.Remark != "The broker does not support consumer to filter message by SQL92" {
		t.Errorf("disabled: %d %q", resp.Code, resp.Remark)
	}
	if resp := call(javaBody("TAG", "*")); resp.Code != code.Success {
		t.Errorf("disabled, TAG: %d", resp.Code)
	}
}

func TestFactoryConcurrent(t *testing.T) {
	f, _ := newFactory(t, true)
	props, _ := message.EncodeProperties(map[string]string{"a": "7"})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				mf, err := f.NewFilter("g", sql92("a > "+string(rune('0'+(g+i)%10))))
				if err != nil {
					t.Error(err)
					return
				}
				mf.MatchProperties(props)
			}
		}()
	}
	wg.Wait()
	if n := f.Cache().Len(); n > 8 {
		t.Fatalf("cache grew to %d", n)
	}
}
