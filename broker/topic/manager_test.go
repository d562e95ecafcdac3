package topic

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func testConfig(t *testing.T, mutate ...func(*config.Config)) *config.Config {
	t.Helper()
	c := configtest.New(t, append([]func(*config.Config){configtest.InCluster("C1")}, mutate...)...)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func newManager(t *testing.T, c *config.Config, path string) *Manager {
	t.Helper()
	m, err := New(Options{Config: func() *config.Config { return c }, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSystemTopicsAtBoot(t *testing.T) {
	c := testConfig(t, func(c *config.Config) { c.TraceTopicEnable = true })
	m := newManager(t, c, "")
	want := map[string]struct{ queues, perm int }{
		"SELF_TEST_TOPIC":                     {1, 6},
		"TBW102":                              {8, 7},
		"BenchmarkTest":                       {1024, 6},
		"C1":                                  {16, 7},
		"broker-a":                            {1, 7},
		"OFFSET_MOVED_EVENT":                  {1, 6},
		"SCHEDULE_TOPIC_XXXX":                 {18, 6},
		"RMQ_SYS_TRACE_TOPIC":                 {1, 6},
		"C1_REPLY_TOPIC":                      {1, 6},
		"rmq_sys_REVIVE_LOG_C1":               {8, 6},
		"rmq_sys_SYNC_BROKER_MEMBER_broker-a": {1, 1},
		"RMQ_SYS_TRANS_HALF_TOPIC":            {1, 6},
		"RMQ_SYS_TRANS_OP_HALF_TOPIC":         {1, 6},
		"rmq_sys_wheel_timer":                 {1, 6},
	}
	if got := m.Names(); len(got) != len(want) {
		t.Errorf("topics %v, want %d", got, len(want))
	}
	for name, w := range want {
		tc, ok := m.Get(name)
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		if tc.ReadQueueNums != w.queues || tc.WriteQueueNums != w.queues || tc.Perm != w.perm {
			t.Errorf("%s: queues %d/%d perm %d, want %d perm %d", name, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, w.queues, w.perm)
		}
		if !m.IsSystemTopic(name) {
			t.Errorf("%s should be a system topic", name)
		}
	}
	if m.IsSystemTopic("MyTopic") {
		t.Error("MyTopic is not a system topic")
	}

	// Switches: no TBW102 without auto-create; cluster/broker topics lose RW.
	c2 := testConfig(t, func(c *config.Config) {
		c.AutoCreateTopicEnable, c.ClusterTopicEnable, c.BrokerTopicEnable, c.TimerWheelEnable = false, false, false, false
	})
	m2 := newManager(t, c2, "")
	if m2.Contains("TBW102") || m2.Contains("rmq_sys_wheel_timer") || m2.Contains("RMQ_SYS_TRACE_TOPIC") {
		t.Error("switched-off topics exist")
	}
	if tc, _ := m2.Get("C1"); tc.Perm != protocol.PermInherit {
		t.Errorf("cluster topic perm %d", tc.Perm)
	}
	if tc, _ := m2.Get("broker-a"); tc.Perm != protocol.PermInherit {
		t.Errorf("broker topic perm %d", tc.Perm)
	}
}

func TestPersistAndReload(t *testing.T) {
	c := testConfig(t)
	path := filepath.Join(c.ConfigDir(), "topics.json")
	m := newManager(t, c, path)
	tc := protocol.NewTopicConfig("Orders")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Order = 4, 4, true
	tc.Attributes = map[string]string{"+message.type": "FIFO"}
	if _, err := m.Update(tc); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Delete("SELF_TEST_TOPIC"); err != nil {
		t.Fatal(err)
	}
	v := m.DataVersion()

	// Java's format: {"dataVersion":{...},"topicConfigTable":{...}}, stored
	// attribute keys without the "+".
	var raw struct {
		DataVersion      protocol.DataVersion            `json:"dataVersion"`
		TopicConfigTable map[string]protocol.TopicConfig `json:"topicConfigTable"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("topics.json is not JSON: %v", err)
	}
	if !raw.DataVersion.Equal(v) || raw.TopicConfigTable["Orders"].Attributes["message.type"] != "FIFO" {
		t.Errorf("file: version %v (want %v), Orders %+v", raw.DataVersion, v, raw.TopicConfigTable["Orders"])
	}
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Errorf("no backup kept: %v", err)
	}

	// Reload: same table, same version (nothing changed at boot). The deleted
	// system topic comes back because boot creates it, which bumps the version.
	m2 := newManager(t, c, path)
	got, _ := m2.Get("Orders")
	if !got.Order || got.ReadQueueNums != 4 || got.Attributes["message.type"] != "FIFO" {
		t.Errorf("reloaded Orders = %+v", got)
	}
	if !m2.Contains("SELF_TEST_TOPIC") {
		t.Error("system topic not recreated")
	}
	if v2 := m2.DataVersion(); v2.Counter != v.Counter+1 {
		t.Errorf("version after reload %v, want counter %d", v2, v.Counter+1)
	}
	v2 := m2.DataVersion()
	m3 := newManager(t, c, path)
	if !m3.DataVersion().Equal(v2) {
		t.Errorf("an unchanged reload moved the version: %v → %v", v2, m3.DataVersion())
	}
}

func TestLoadJavaFileAndBackup(t *testing.T) {
	c := testConfig(t)
	path := filepath.Join(c.ConfigDir(), "topics.json")
	// A Java-written file: fields missing on purpose take Java's defaults;
	// a stored TBW102 with 4 queues overrides the boot one.
	java := `{
	"dataVersion":{"counter":41,"stateVersion":0,"timestamp":1700000000000},
	"topicConfigTable":{
		"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},
		"Sparse":{"topicName":"Sparse"},
		"TBW102":{"perm":7,"readQueueNums":4,"writeQueueNums":4,"topicName":"TBW102"}
	}}`
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, c, path)
	if tc, _ := m.Get("Sparse"); tc.ReadQueueNums != 16 || tc.WriteQueueNums != 16 || tc.Perm != 6 || tc.TopicFilterType != "SINGLE_TAG" {
		t.Errorf("Sparse = %+v, want Java defaults", tc)
	}
	if tc, _ := m.Get("TBW102"); tc.WriteQueueNums != 4 {
		t.Errorf("file TBW102 should win: %+v", tc)
	}
	if v := m.DataVersion(); v.Counter != 42 {
		t.Errorf("version %v: boot added system topics, counter must move from 41 to 42", v)
	}

	// A torn main file falls back to the backup.
	if err := os.WriteFile(path, []byte(`{"dataVersion":`), 0o644); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, c, path)
	if !m2.Contains("TopicTest") {
		t.Error("backup not used")
	}

	// Auto-create off drops a TBW102 left in the file.
	c3 := testConfig(t, func(cc *config.Config) { cc.AutoCreateTopicEnable = false; cc.StorePathRootDir = c.StorePathRootDir })
	if m3 := newManager(t, c3, path); m3.Contains("TBW102") {
		t.Error("TBW102 kept with autoCreateTopicEnable=false")
	}
}

func TestCreateFromDefault(t *testing.T) {
	live := atomic.Pointer[config.Config]{}
	live.Store(testConfig(t))
	m, err := New(Options{Config: live.Load})
	if err != nil {
		t.Fatal(err)
	}
	var notified [][]string
	var mu sync.Mutex
	m.OnChange(func(ch []string) { mu.Lock(); notified = append(notified, ch); mu.Unlock() })

	v0 := m.DataVersion()
	tc, created, err := m.CreateFromDefault("NewTopic", "TBW102", 4, 0)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if tc.ReadQueueNums != 4 || tc.WriteQueueNums != 4 || tc.Perm != 6 || tc.TopicFilterType != "SINGLE_TAG" {
		t.Errorf("created %+v: want 4 queues, perm RW without inherit", tc)
	}
	if v := m.DataVersion(); v.Counter != v0.Counter+1 || v.Timestamp <= v0.Timestamp {
		t.Errorf("version %v after create from %v", v, v0)
	}
	if len(notified) != 1 || !slices.Equal(notified[0], []string{"NewTopic"}) {
		t.Errorf("notifications %v", notified)
	}
	// Existing topic: returned, not recreated.
	if _, created, err := m.CreateFromDefault("NewTopic", "TBW102", 2, 0); created || err != nil {
		t.Errorf("second create: %v %v", created, err)
	}
	// Client asks for more queues than the default has: capped at 8.
	if tc, _, _ := m.CreateFromDefault("Big", "TBW102", 100, 0); tc.WriteQueueNums != 8 {
		t.Errorf("queues %d, want min(100, 8)", tc.WriteQueueNums)
	}
	// A default topic without INHERIT cannot serve as template.
	if _, _, err := m.CreateFromDefault("X", "SELF_TEST_TOPIC", 4, 0); !errors.Is(err, ErrNotInheritable) {
		t.Errorf("non-inheritable default: %v", err)
	}
	if _, _, err := m.CreateFromDefault("X", "NoSuchDefault", 4, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing default: %v", err)
	}
	if _, _, err := m.CreateFromDefault("bad name", "TBW102", 4, 0); !errors.Is(err, ErrInvalidTopic) {
		t.Errorf("bad name: %v", err)
	}
	// Auto-create switched off at runtime: TBW102 no longer works as template…
	off := live.Load().Clone()
	off.AutoCreateTopicEnable = false
	live.Store(off)
	if _, _, err := m.CreateFromDefault("Y", "TBW102", 4, 0); !errors.Is(err, ErrNotInheritable) {
		t.Errorf("auto-create off: %v", err)
	}
	// …and EnsureAutoCreateTopic removes it.
	if err := m.EnsureAutoCreateTopic(); err != nil || m.Contains("TBW102") {
		t.Errorf("EnsureAutoCreateTopic: %v, still there %v", err, m.Contains("TBW102"))
	}
}

func TestUpdateRules(t *testing.T) {
	m := newManager(t, testConfig(t), "")
	mk := func(name string, attrs map[string]string) protocol.TopicConfig {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		tc.Attributes = attrs
		return tc
	}
	if _, err := m.Update(mk("T", map[string]string{"+message.type": "NORMAL", "+queue.type": "SimpleCQ"})); err != nil {
		t.Fatal(err)
	}
	v := m.DataVersion()
	// Same config again: idempotent, no version bump.
	if ch, err := m.Update(mk("T", nil)); err != nil || len(ch) != 0 || !m.DataVersion().Equal(v) {
		t.Errorf("idempotent update changed %v %v", ch, err)
	}
	cases := []struct {
		name  string
		tc    protocol.TopicConfig
		want  error
		check func(protocol.TopicConfig) bool
	}{
		{"change changeable", mk("T", map[string]string{"+message.type": "FIFO"}), nil,
			func(tc protocol.TopicConfig) bool {
				return tc.Attributes["message.type"] == "FIFO" && tc.Attributes["queue.type"] == "SimpleCQ"
			}},
		{"delete", mk("T", map[string]string{"-message.type": ""}), nil,
			func(tc protocol.TopicConfig) bool { _, ok := tc.Attributes["message.type"]; return !ok }},
		{"delete absent", mk("T", map[string]string{"-message.type": ""}), ErrInvalidConfig, nil},
		{"unchangeable", mk("T", map[string]string{"+queue.type": "BatchCQ"}), ErrInvalidConfig, nil},
		{"unsupported", mk("T", map[string]string{"+colour": "red"}), ErrInvalidConfig, nil},
		{"bad enum", mk("T", map[string]string{"+message.type": "WEIRD"}), ErrInvalidConfig, nil},
		{"delete on create", mk("New", map[string]string{"-message.type": ""}), ErrInvalidConfig, nil},
		{"reserve time", mk("New", map[string]string{"+reserve.time": "10"}), ErrInvalidConfig, nil},
		{"lite expiration range", mk("New", map[string]string{"+lite.topic.expiration": "50000"}), ErrInvalidConfig, nil},
		{"perm 9", func() protocol.TopicConfig { tc := mk("P", nil); tc.Perm = 9; return tc }(), ErrInvalidConfig, nil},
		{"queues 2000", func() protocol.TopicConfig { tc := mk("P", nil); tc.WriteQueueNums = 2000; return tc }(), ErrInvalidConfig, nil},
		{"filter", func() protocol.TopicConfig { tc := mk("P", nil); tc.TopicFilterType = "SQL"; return tc }(), ErrInvalidConfig, nil},
		{"name", mk("a/b", nil), ErrInvalidTopic, nil},
		{"static topic zero queues", func() protocol.TopicConfig { tc := mk("Z", nil); tc.ReadQueueNums, tc.WriteQueueNums = 0, 0; return tc }(), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Update(tc.tc)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Update = %v, want %v", err, tc.want)
			}
			if tc.check != nil {
				got, _ := m.Get(tc.tc.TopicName)
				if !tc.check(got) {
					t.Errorf("after update: %+v", got)
				}
			}
		})
	}
	// A list is validated as a whole.
	before := m.DataVersion()
	if _, err := m.Update(mk("L1", nil), mk("L2", map[string]string{"+nope": "1"})); err == nil || m.Contains("L1") || !m.DataVersion().Equal(before) {
		t.Errorf("partial list applied: err %v, L1 %v", err, m.Contains("L1"))
	}
}

func TestParseAttributeMods(t *testing.T) {
	got, err := ParseAttributeMods("+message.type=FIFO,-cleanup.policy")
	if err != nil || got["+message.type"] != "FIFO" || got["-cleanup.policy"] != "" || len(got) != 2 {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"message.type=FIFO", "+a", "+a=1,+a=2", "x"} {
		if _, err := ParseAttributeMods(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConcurrentChanges(t *testing.T) {
	c := testConfig(t)
	m := newManager(t, c, filepath.Join(c.ConfigDir(), "topics.json"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				name := "T" + string(rune('a'+i)) + string(rune('a'+j))
				if _, _, err := m.CreateFromDefault(name, "TBW102", 4, 0); err != nil {
					t.Error(err)
				}
				m.Snapshot()
				_ = m.IsSystemTopic(name)
			}
		})
	}
	wg.Wait()
	if n := m.Len(); n != 13+160 { // 13 system topics (no trace topic)
		t.Errorf("topics %d, want 173", n)
	}
	m2 := newManager(t, c, filepath.Join(c.ConfigDir(), "topics.json"))
	if m2.Len() != m.Len() || !m2.DataVersion().Equal(m.DataVersion()) {
		t.Errorf("reload after concurrent creates: %d topics %v, want %d %v", m2.Len(), m2.DataVersion(), m.Len(), m.DataVersion())
	}
}

// TestGetSharedStaysUnchanged: GetShared hands out the table's attribute
// map without a copy, which is safe only while no change writes into a
// stored map: an update, a removal of an attribute, a delete and a
// replacement of the whole table each leave a map handed out before as it
// was.
func TestGetSharedStaysUnchanged(t *testing.T) {
	mk := func(attrs map[string]string) protocol.TopicConfig {
		tc := protocol.NewTopicConfig("T")
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		tc.Attributes = attrs
		return tc
	}
	tests := []struct {
		name   string
		change func(m *Manager) error
	}{
		{"update", func(m *Manager) error {
			_, err := m.Update(mk(map[string]string{"+message.type": "FIFO"}))
			return err
		}},
		{"remove attribute", func(m *Manager) error {
			_, err := m.Update(mk(map[string]string{"-message.type": ""}))
			return err
		}},
		{"delete", func(m *Manager) error {
			_, err := m.Delete("T")
			return err
		}},
		{"replace all", func(m *Manager) error {
			table, dv := m.Snapshot()
			tc := table["T"]
			tc.Attributes = map[string]string{"message.type": "DELAY"}
			table["T"] = tc
			dv.Counter++
			_, err := m.ReplaceAll(table, dv)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, testConfig(t), "")
			if _, err := m.Update(mk(map[string]string{"+message.type": "NORMAL"})); err != nil {
				t.Fatal(err)
			}
			shared, ok := m.GetShared("T")
			copied, _ := m.Get("T")
			if !ok || !maps.Equal(shared.Attributes, copied.Attributes) || shared.Attributes["message.type"] != "NORMAL" {
				t.Fatalf("GetShared %v %v, Get %v", shared, ok, copied)
			}
			if err := tt.change(m); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(shared.Attributes, map[string]string{"message.type": "NORMAL"}) {
				t.Errorf("the shared map changed to %v", shared.Attributes)
			}
		})
	}
}
