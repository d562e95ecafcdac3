package subscribe

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type fixture struct {
	p   *Processor
	reg *registry.Registry
	cfg *config.Config
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	c.MaxLiteSubscriptionCount = 100
	get := func() *config.Config { return c }
	topics, err := topic.New(topic.Options{Config: get})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, attrs map[string]string) {
		tc := protocol.NewTopicConfig(name)
		tc.Attributes = attrs
		if _, err := topics.Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	mk("P", map[string]string{"+message.type": "LITE"})
	mk("Plain", nil)
	groups, err := subscription.New(subscription.Options{Config: get})
	if err != nil {
		t.Fatal(err)
	}
	mg := func(name string, consume bool, attrs map[string]string) {
		g := subscription.NewGroupConfig(name)
		g.ConsumeEnable, g.Attributes = consume, attrs
		if err := groups.Update(g); err != nil {
			t.Fatal(err)
		}
	}
	mg("lg", true, map[string]string{"+lite.bind.topic": "P", "+lite.sub.client.quota": "2"})
	mg("off_cg", false, map[string]string{"+lite.bind.topic": "P"})
	mg("plain_cg", true, nil)
	mg("on_plain", true, map[string]string{"+lite.bind.topic": "Plain"})
	mg("wc", true, map[string]string{"+lite.bind.topic": "P", "+lite.sub.wildcard": ""})
	src := meta.NewSource(topics, groups)
	reg, err := registry.New(registry.Options{Group: src.Group, MaxSubscriptions: func() int64 { return c.MaxLiteSubscriptionCount }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Deps{Config: get, Meta: src, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{p: p, reg: reg, cfg: c}
}

func (f *fixture) call(body []byte) *remoting.Command {
	req := remoting.NewRequest(code.LiteSubscriptionCtl, nil, body)
	resp, err := f.p.handle(context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	return resp
}

func body(dtos ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"subscriptionSet": dtos})
	return b
}

func dto(action, client, group, topic string, lites ...string) map[string]any {
	return map[string]any{"action": action, "clientId": client, "group": group, "topic": topic, "liteTopicSet": lites, "version": 1}
}

// TestValidation: LITE_SUBSCRIPTION_CTL bodies and entries that are refused,
// and the code each gets (docs/lite-topics.md §5.1).
func TestValidation(t *testing.T) {
	tests := []struct {
		name   string
		body   []byte
		code   int32
		remark string
	}{
		{"no body", nil, code.IllegalOperation, "null"},
		{"not JSON", []byte("{"), code.IllegalOperation, "LiteSubscriptionCtlRequestBody"},
		{"empty set", []byte(`{"subscriptionSet":[]}`), code.IllegalOperation, "empty"},
		{"no set", []byte(`{}`), code.IllegalOperation, "empty"},
		{"unknown action", body(dto("PARTIAL_SWAP", "c1", "lg", "P", "a")), code.IllegalOperation, "unknown lite subscription action"},
		{"illegal lite name", body(dto(PartialAdd, "c1", "lg", "P", "a$b")), code.InvalidParameter, "illegal lite topic"},
		{"too long lite name", body(dto(PartialAdd, "c1", "lg", "P", strings.Repeat("x", 65))), code.InvalidParameter, "illegal lite topic"},
		{"illegal name on remove", body(dto(PartialRemove, "c1", "lg", "P", "a,b")), code.InvalidParameter, "illegal lite topic"},
		{"unknown group", body(dto(PartialAdd, "c1", "nope", "P", "a")), code.IllegalOperation, "does not exist"},
		{"consume disabled", body(dto(CompleteAdd, "c1", "off_cg", "P", "a")), code.IllegalOperation, "not allowed to consume"},
		{"group not lite", body(dto(PartialAdd, "c1", "plain_cg", "P", "a")), code.IllegalOperation, "not bound"},
		{"other bind topic", body(dto(PartialAdd, "c1", "lg", "Plain", "a")), code.IllegalOperation, "not bound"},
		{"bound to a non-LITE topic", body(dto(PartialAdd, "c1", "on_plain", "Plain", "a")), code.IllegalOperation, "not a LITE topic"},
		{"client quota", body(dto(PartialAdd, "c1", "lg", "P", "a", "b", "c")), code.LiteSubscriptionQuotaExceeded, "quota"},
		{"client quota on full sync", body(dto(CompleteAdd, "c1", "lg", "P", "a", "b", "c")), code.LiteSubscriptionQuotaExceeded, "quota"},
		{"partial add on a wildcard group", body(dto(PartialAdd, "c1", "wc", "P", "a")), code.IllegalOperation, "wildcard"},
		{"second entry fails", body(dto(PartialAdd, "c1", "lg", "P", "a"), dto(PartialAdd, "c1", "nope", "P", "a")), code.IllegalOperation, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.call(tt.body)
			if resp.Code != tt.code || !strings.Contains(resp.Remark, tt.remark) {
				t.Fatalf("code %d %q, want %d with %q", resp.Code, resp.Remark, tt.code, tt.remark)
			}
		})
	}
	// The broker-wide cap answers 2018 too.
	f := newFixture(t)
	f.cfg.MaxLiteSubscriptionCount = 1
	if resp := f.call(body(dto(PartialAdd, "c1", "lg", "P", "a", "b"))); resp.Code != code.LiteSubscriptionQuotaExceeded {
		t.Fatalf("broker quota: code %d %q", resp.Code, resp.Remark)
	}
}

// TestHappyPath: entries without clientId, group or topic are skipped; the
// four actions change the registry (bare names become lmq names).
func TestHappyPath(t *testing.T) {
	f := newFixture(t)
	k := registry.ClientKey{ClientID: "c1", Group: "lg"}
	held := func() []string { l := f.reg.LMQs(k); slices.Sort(l); return l }
	steps := []struct {
		name string
		body []byte
		want []string
	}{
		{"blank ids skipped", body(dto(PartialAdd, " ", "lg", "P", "a"), dto(PartialAdd, "c1", "", "P", "a"), dto(PartialAdd, "c1", "lg", "", "a")), nil},
		{"partial add", body(dto(PartialAdd, "c1", "lg", "P", "a")), []string{"%LMQ%$P$a"}},
		{"partial add with an offset option", body(map[string]any{"action": PartialAdd, "clientId": "c1", "group": "lg", "topic": "P",
			"liteTopicSet": []string{"b"}, "offsetOption": map[string]any{"type": "POLICY", "value": 1}}), []string{"%LMQ%$P$a", "%LMQ%$P$b"}},
		{"partial remove", body(dto(PartialRemove, "c1", "lg", "P", "a")), []string{"%LMQ%$P$b"}},
		{"complete add replaces", body(dto(CompleteAdd, "c1", "lg", "P", "x", "y")), []string{"%LMQ%$P$x", "%LMQ%$P$y"}},
		{"complete remove", body(dto(CompleteRemove, "c1", "lg", "P")), nil},
	}
	for _, s := range steps {
		resp := f.call(s.body)
		if resp.Code != code.Success {
			t.Fatalf("%s: code %d %q", s.name, resp.Code, resp.Remark)
		}
		if got := held(); !slices.Equal(got, s.want) {
			t.Fatalf("%s: client holds %v, want %v", s.name, got, s.want)
		}
	}
	// Expire drops a client not refreshed in time.
	if resp := f.call(body(dto(PartialAdd, "c2", "lg", "P", "a"))); resp.Code != code.Success {
		t.Fatal(resp.Remark)
	}
	f.cfg.LiteSubscriptionCheckTimeoutMills = time.Nanosecond
	time.Sleep(2 * time.Millisecond)
	if n := f.p.Expire(); n != 1 || len(f.reg.Clients("lg")) != 0 {
		t.Fatalf("expired %d, clients left %v", n, f.reg.Clients("lg"))
	}
}
