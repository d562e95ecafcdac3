package subscription

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type fixture struct {
	cfg     atomic.Pointer[config.Config]
	m       *Manager
	path    string
	cleaned []string
}

func newFixture(t *testing.T, mutate ...func(*config.Config)) *fixture {
	t.Helper()
	c := configtest.New(t, mutate...)
	f := &fixture{path: DefaultPath(c)}
	f.cfg.Store(c)
	f.m = f.open(t)
	return f
}

func (f *fixture) open(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Options{Config: f.cfg.Load, Path: f.path, CleanOffsets: func(g string) { f.cleaned = append(f.cleaned, g) }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) call(t *testing.T, c int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(c, ext, body)
	resp, err := f.m.Handlers()[c](context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	return resp
}

func TestDefaultConfigJSON(t *testing.T) {
	got := string(protocol.MustMarshal(NewGroupConfig("g1")))
	want := `{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,` +
		`"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"g1","groupRetryPolicy":{"type":"CUSTOMIZED"},` +
		`"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeKeepsDefaults(t *testing.T) {
	c, err := DecodeGroupConfig([]byte(`{"groupName":"g","retryQueueNums":3,"consumeEnable":false,"groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.RetryQueueNums != 3 || c.ConsumeEnable || !c.ConsumeBroadcastEnable || c.RetryMaxTimes != 16 || c.GroupRetryPolicy.Type != "EXPONENTIAL" {
		t.Fatalf("decoded %+v", c)
	}
	if !strings.Contains(string(protocol.MustMarshal(c)), `"groupRetryPolicy":{"exponentialRetryPolicy":{"initial":1000},"type":"EXPONENTIAL"}`) {
		t.Fatalf("policy not round-tripped: %s", protocol.MustMarshal(c))
	}
}

func TestFindOrCreate(t *testing.T) {
	tests := []struct {
		name       string
		auto, sys  bool
		group      string
		wantCreate bool
	}{
		{"auto on", true, false, "g1", true},
		{"auto off", false, false, "g1", false},
		{"invalid name", true, false, "bad group!", false},
		{"too long", true, false, strings.Repeat("x", 121), false},
		{"sys group with enableCreateSysGroup", false, true, "CID_RMQ_SYS_X", true},
		{"sys group without", false, false, "CID_RMQ_SYS_X", false},
		{"reserved name is usable", true, false, "CLIENT_INNER_PRODUCER", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup, c.EnableCreateSysGroup = tt.auto, tt.sys })
			v0 := f.m.DataVersion()
			c, ok := f.m.FindOrCreate(tt.group)
			if ok != tt.wantCreate {
				t.Fatalf("FindOrCreate ok=%v, want %v", ok, tt.wantCreate)
			}
			if ok && (c.GroupName != tt.group || !c.ConsumeEnable || f.m.DataVersion().Counter != v0.Counter+1) {
				t.Fatalf("created %+v, version %v → %v", c, v0, f.m.DataVersion())
			}
			if ok != f.m.Contains(tt.group) {
				t.Fatalf("Contains disagrees")
			}
		})
	}
}

func TestSystemGroupsExist(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = false })
	for _, g := range []string{"TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS", "SELF_TEST_C_GROUP"} {
		if !f.m.Contains(g) {
			t.Errorf("missing system group %s", g)
		}
	}
}

func TestPersistenceAndReload(t *testing.T) {
	f := newFixture(t)
	c := NewGroupConfig("g-persist")
	c.RetryQueueNums, c.ConsumeBroadcastEnable = 4, false
	c.Attributes = map[string]string{"+k": "v"}
	if err := f.m.Update(c); err != nil {
		t.Fatal(err)
	}
	f.m.FindOrCreate("g-auto")
	if err := f.m.Update(NewGroupConfig("g-gone")); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.m.Delete("g-gone"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("file is not JSON: %v", err)
	}
	for _, k := range []string{"dataVersion", "forbiddenTable", "subscriptionGroupTable"} {
		if _, ok := top[k]; !ok {
			t.Errorf("file lacks %q: %s", k, raw)
		}
	}

	m2 := f.open(t)
	got, ok := m2.Find("g-persist")
	if !ok || got.RetryQueueNums != 4 || got.ConsumeBroadcastEnable || got.Attributes["k"] != "v" {
		t.Fatalf("reloaded %+v %v", got, ok)
	}
	if !m2.Contains("g-auto") || m2.Contains("g-gone") {
		t.Fatal("auto-created group lost or deleted group back")
	}
	if !m2.DataVersion().Equal(f.m.DataVersion()) {
		t.Fatalf("data version %v, want %v", m2.DataVersion(), f.m.DataVersion())
	}
}

// A file written by the Java broker loads: pretty, with forbiddenTable and
// fields we do not know.
func TestLoadJavaFile(t *testing.T) {
	f := newFixture(t)
	java := `{
	"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},
	"forbiddenTable":{"gj":{"T":4}},
	"subscriptionGroupTable":{
		"gj":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":false,"consumeFromMinEnable":true,
			"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"gj","groupRetryPolicy":{"type":"CUSTOMIZED"},
			"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":2,
			"whichBrokerWhenConsumeSlowly":1,"attributes":{},"unknownField":1}
	}
}`
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	m := f.open(t)
	c, ok := m.Find("gj")
	if !ok || c.ConsumeEnable || c.RetryQueueNums != 2 {
		t.Fatalf("loaded %+v %v", c, ok)
	}
	if m.DataVersion().Counter != 7 || m.Forbidden("gj", "T") != 4 {
		t.Fatalf("version %v forbidden %d", m.DataVersion(), m.Forbidden("gj", "T"))
	}
}

func TestCorruptFileFallsBackToBackup(t *testing.T) {
	f := newFixture(t)
	if err := f.m.Update(NewGroupConfig("g1")); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Update(NewGroupConfig("g2")); err != nil { // the .bak now holds g1
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := f.open(t)
	if !m.Contains("g1") {
		t.Fatal("backup not used")
	}
}

func TestAdminHandlers(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = false })
	body := []byte(`{"groupName":"g-admin","retryQueueNums":2,"consumeEnable":true}`)
	tests := []struct {
		name     string
		code     int32
		ext      map[string]string
		body     []byte
		wantCode int32
		remark   string
	}{
		{"create", code.UpdateAndCreateSubscriptionGroup, nil, body, code.Success, ""},
		{"invalid name", code.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"bad name"}`), code.InvalidParameter, "illegal characters"},
		{"blank name", code.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"retryQueueNums":2}`), code.InvalidParameter, "blank"},
		{"empty body", code.UpdateAndCreateSubscriptionGroup, nil, nil, code.InvalidParameter, "empty"},
		{"malformed body", code.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":`), code.InvalidParameter, "decode"},
		{"get known", code.GetSubscriptionGroupConfig, map[string]string{"group": "g-admin"}, nil, code.Success, ""},
		{"get unknown", code.GetSubscriptionGroupConfig, map[string]string{"group": "nope"}, nil, code.SubscriptionGroupNotExist, "No group"},
		{"get missing field", code.GetSubscriptionGroupConfig, nil, nil, code.InvalidParameter, "<group>"},
		{"delete missing field", code.DeleteSubscriptionGroup, nil, nil, code.InvalidParameter, "<groupName>"},
		{"delete unknown is ok", code.DeleteSubscriptionGroup, map[string]string{"groupName": "nope"}, nil, code.Success, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.call(t, tt.code, tt.ext, tt.body)
			if resp.Code != tt.wantCode || !strings.Contains(resp.Remark, tt.remark) {
				t.Fatalf("code %d remark %q, want %d containing %q", resp.Code, resp.Remark, tt.wantCode, tt.remark)
			}
		})
	}

	resp := f.call(t, code.GetSubscriptionGroupConfig, map[string]string{"group": "g-admin"}, nil)
	got, err := DecodeGroupConfig(resp.Body)
	if err != nil || got.RetryQueueNums != 2 || got.GroupName != "g-admin" {
		t.Fatalf("352 body %s: %+v %v", resp.Body, got, err)
	}

	// 201: strict JSON, as client-go's admin decodes it with encoding/json
	// into typed fields.
	resp = f.call(t, code.GetAllSubscriptionGroupConfig, nil, nil)
	var wrapper struct {
		SubscriptionGroupTable map[string]struct {
			GroupName      string `json:"groupName"`
			BrokerID       int64  `json:"brokerId"`
			RetryMaxTimes  int    `json:"retryMaxTimes"`
			RetryQueueNums int    `json:"retryQueueNums"`
			ConsumeEnable  bool   `json:"consumeEnable"`
		} `json:"subscriptionGroupTable"`
		DataVersion struct {
			Counter int64 `json:"counter"`
		} `json:"dataVersion"`
	}
	if resp.Code != code.Success || !json.Valid(resp.Body) {
		t.Fatalf("201: %d %s", resp.Code, resp.Body)
	}
	if err := json.Unmarshal(resp.Body, &wrapper); err != nil {
		t.Fatalf("201 body not decodable: %v", err)
	}
	if g := wrapper.SubscriptionGroupTable["g-admin"]; g.RetryQueueNums != 2 || g.RetryMaxTimes != 16 {
		t.Fatalf("201 entry %+v", g)
	}
	if resp.Ext("totalGroupNum") == "" {
		t.Fatal("201 lacks totalGroupNum")
	}

	resp = f.call(t, code.DeleteSubscriptionGroup, map[string]string{"groupName": "g-admin", "cleanOffset": "true"}, nil)
	if resp.Code != code.Success || f.m.Contains("g-admin") || len(f.cleaned) != 1 || f.cleaned[0] != "g-admin" {
		t.Fatalf("delete: %d, exists %v, cleaned %v", resp.Code, f.m.Contains("g-admin"), f.cleaned)
	}
}

func TestUpdateAttributes(t *testing.T) {
	f := newFixture(t)
	c := NewGroupConfig("g")
	c.Attributes = map[string]string{"+a": "1", "+b": "2"}
	if err := f.m.Update(c); err != nil {
		t.Fatal(err)
	}
	c.Attributes = map[string]string{"-a": "", "+c": "3"}
	if err := f.m.Update(c); err != nil {
		t.Fatal(err)
	}
	got, _ := f.m.Find("g")
	if len(got.Attributes) != 2 || got.Attributes["b"] != "2" || got.Attributes["c"] != "3" {
		t.Fatalf("attributes %v", got.Attributes)
	}
}

// TestCheckGroup: the hook sees the merged attributes; a refusal keeps the
// stored group and answers INVALID_PARAMETER.
func TestCheckGroup(t *testing.T) {
	c0 := config.Default(config.Host{Hostname: "b", IP: "127.0.0.1", Home: t.TempDir()})
	var seen []map[string]string
	m, err := New(Options{Config: func() *config.Config { return c0 }, CheckGroup: func(c GroupConfig) error {
		seen = append(seen, c.Attributes)
		if c.Attributes["bad"] != "" {
			return errors.New("bad is set")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{m: m}
	c := NewGroupConfig("g")
	c.Attributes = map[string]string{"+a": "1"}
	if err := m.Update(c); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"groupName":"g","attributes":{"+bad":"x"}}`)
	resp := f.call(t, code.UpdateAndCreateSubscriptionGroup, nil, body)
	if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "bad is set") {
		t.Fatalf("refused update: code %d %q", resp.Code, resp.Remark)
	}
	if len(seen) != 2 || seen[1]["a"] != "1" || seen[1]["bad"] != "x" {
		t.Fatalf("hook saw %v, want the merged attributes", seen)
	}
	if got, _ := m.Find("g"); got.Attributes["bad"] != "" || got.Attributes["a"] != "1" {
		t.Fatalf("stored %v after a refused update", got.Attributes)
	}
}

func TestVersionStrictlyIncreases(t *testing.T) {
	c := config.Default(config.Host{Hostname: "b", IP: "127.0.0.1", Home: t.TempDir()})
	fixed := time.UnixMilli(1_700_000_000_000)
	m, err := New(Options{Config: func() *config.Config { return c }, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	v1 := m.DataVersion()
	_ = m.Update(NewGroupConfig("a"))
	v2 := m.DataVersion()
	_ = m.Update(NewGroupConfig("b"))
	v3 := m.DataVersion()
	if !(v1.Timestamp < v2.Timestamp && v2.Timestamp < v3.Timestamp && v3.Counter == v1.Counter+2) {
		t.Fatalf("versions %v %v %v", v1, v2, v3)
	}
}

func TestRetryMaxTimes(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = false })
	c := NewGroupConfig("g")
	c.RetryMaxTimes = 3
	if err := f.m.Update(c); err != nil {
		t.Fatal(err)
	}
	if n, ok := f.m.RetryMaxTimes("g"); !ok || n != 3 {
		t.Fatalf("%d %v", n, ok)
	}
	if _, ok := f.m.RetryMaxTimes("other"); ok {
		t.Fatal("unknown group without auto-create")
	}
}

// TestUpdateAndCreateList: 225 creates or updates every group of the
// list; one bad name refuses the whole list before any group is stored.
func TestUpdateAndCreateList(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = false })
	tests := []struct {
		name     string
		body     string
		wantCode int32
		remark   string
	}{
		{"two groups", `{"groupConfigList":[{"groupName":"gl1","retryQueueNums":3},{"groupName":"gl2","consumeEnable":false}]}`, code.Success, ""},
		{"update one", `{"groupConfigList":[{"groupName":"gl1","retryMaxTimes":5}]}`, code.Success, ""},
		{"bad name refuses all", `{"groupConfigList":[{"groupName":"gl3"},{"groupName":"bad name"}]}`, code.InvalidParameter, "illegal characters"},
		{"malformed", `{"groupConfigList":[`, code.InvalidParameter, "decode"},
		{"empty list", `{"groupConfigList":[]}`, code.Success, ""},
	}
	for _, tt := range tests {
		resp := f.call(t, code.UpdateAndCreateSubscriptionGroupList, nil, []byte(tt.body))
		if resp.Code != tt.wantCode || !strings.Contains(resp.Remark, tt.remark) {
			t.Fatalf("%s: code %d remark %q, want %d containing %q", tt.name, resp.Code, resp.Remark, tt.wantCode, tt.remark)
		}
	}
	g1, ok1 := f.m.Find("gl1")
	g2, ok2 := f.m.Find("gl2")
	if !ok1 || !ok2 || g1.RetryMaxTimes != 5 || g1.RetryQueueNums != 1 || g2.ConsumeEnable {
		t.Fatalf("gl1 %+v (%v), gl2 %+v (%v)", g1, ok1, g2, ok2)
	}
	if f.m.Contains("gl3") {
		t.Fatal("gl3 stored although its list had a bad group name")
	}
}
