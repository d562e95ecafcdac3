package statictopic

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/mapping"
	"github.com/rmqgo/rmq/pkg/protocol"
)

var _ mapping.Source = (*Manager)(nil)

func newMgr(t *testing.T, path string) *Manager {
	t.Helper()
	m, err := OpenManager(ManagerOptions{Path: path, BrokerName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type hosted = map[int][]protocol.LogicQueueMappingItem

func TestManagerUpdateRules(t *testing.T) {
	base := detail("a", 100, 2, hosted{0: {it("a", 0, 0, 0)}, 1: {it("b", 0, 0, 0), it("a", 1, 1, -1)}})
	for _, tc := range []struct {
		name    string
		next    protocol.TopicQueueMappingDetail
		force   bool
		wantErr error
		check   func(t *testing.T, d protocol.TopicQueueMappingDetail)
	}{
		{name: "same epoch, leader decided", next: detail("a", 100, 2, hosted{0: {it("a", 0, 0, 0)}, 1: {it("b", 0, 0, 0), it("a", 1, 1, 10000)}})},
		{name: "stale epoch", next: detail("a", 99, 2, base.HostedQueues), wantErr: ErrStaleEpoch},
		{name: "other broker's detail", next: detail("b", 200, 2, nil), wantErr: ErrInvalidMapping},
		{name: "scope changed", next: func() protocol.TopicQueueMappingDetail {
			d := detail("a", 200, 2, base.HostedQueues)
			d.Scope = "other"
			return d
		}(), wantErr: ErrConflict},
		{name: "list missing under the same epoch", next: detail("a", 100, 2, hosted{0: {it("a", 0, 0, 0)}}), wantErr: ErrConflict},
		{name: "list missing under a newer epoch is kept as backup", next: detail("a", 200, 2, hosted{0: {it("a", 0, 0, 0)}}),
			check: func(t *testing.T, d protocol.TopicQueueMappingDetail) {
				if len(d.HostedQueues[1]) != 2 || d.Epoch != 200 {
					t.Errorf("backup not kept: %+v", d)
				}
			}},
		{name: "remapped away keeps the list", next: detail("a", 200, 2, hosted{0: {it("a", 0, 0, 0), it("c", 1, 0, -1)}, 1: base.HostedQueues[1]})},
		{name: "decided offset rewritten", next: detail("a", 200, 2, hosted{0: {it("a", 0, 0, 5)}, 1: base.HostedQueues[1]}), wantErr: ErrConflict},
		{name: "physical queue mapped twice", next: detail("a", 200, 2, hosted{0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 0, 0)}}), wantErr: ErrInvalidMapping},
		{name: "new list reuses a backup's queue", next: detail("a", 200, 3, hosted{0: {it("a", 0, 0, 0)}, 2: {it("b", 0, 0, 0)}}), wantErr: ErrInvalidMapping},
		{name: "bad list", next: detail("a", 200, 2, hosted{0: {it("a", 1, 0, 0), it("c", 1, 0, 10)}}), wantErr: ErrInvalidMapping},
		{name: "logic id beyond totalQueues", next: detail("a", 200, 2, hosted{5: {it("a", 0, 9, 0)}}), wantErr: ErrInvalidMapping},
		{name: "leader changed under the same epoch", next: detail("a", 100, 2, hosted{0: {it("a", 0, 0, 0), it("c", 1, 0, -1)}, 1: base.HostedQueues[1]}), wantErr: ErrConflict},
		{name: "force ignores the epoch and keeps missing lists", next: detail("a", 1, 2, hosted{0: {it("a", 0, 3, 0)}}), force: true,
			check: func(t *testing.T, d protocol.TopicQueueMappingDetail) {
				if d.Epoch != 1 || d.HostedQueues[0][0].QueueID != 3 || len(d.HostedQueues[1]) != 2 {
					t.Errorf("forced: %+v", d)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMgr(t, "")
			if err := m.Update(base, UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, v0 := m.All()
			err := m.Update(tc.next, UpdateOptions{Force: tc.force, Flush: true})
			got, _ := m.Get(tpc)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, normalize(base)) || !m.DataVersion().Equal(v0) {
					t.Fatalf("a refused update changed the table: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.DataVersion().Counter != v0.Counter+1 {
				t.Errorf("flush did not bump the version")
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestManagerBeforeAborts(t *testing.T) {
	m := newMgr(t, "")
	boom := errors.New("topic config refused")
	err := m.Update(detail("a", 1, 1, hosted{0: {it("a", 0, 0, 0)}}), UpdateOptions{Before: func() error { return boom }})
	if !errors.Is(err, boom) || m.Len() != 0 {
		t.Fatalf("err %v, len %d", err, m.Len())
	}
	called := false
	err = m.Update(detail("a", 1, 1, hosted{0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 0, 0)}}), UpdateOptions{Before: func() error { called = true; return nil }})
	if err == nil || called {
		t.Fatalf("Before ran for an invalid detail (err %v)", err)
	}
}

// javaFile is topicQueueMapping.json as a Java broker writes it: fastjson
// with bare integer map keys.
const javaFile = `{
	"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
	"topicQueueMappingInfoMap":{
		"ST":{"bname":"a","currIdMap":{},"dirty":false,"epoch":1700000001000,
			"hostedQueues":{0:[{"bname":"a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}],
				1:[{"bname":"b","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1},
				   {"bname":"a","endOffset":-1,"gen":1,"logicOffset":10000,"queueId":1,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},
			"scope":"__global__","topic":"ST","totalQueues":2}}}`

func TestManagerPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "topicQueueMapping.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(javaFile), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newMgr(t, path)
	d, ok := m.Get(tpc)
	if !ok || d.Epoch != 1700000001000 || len(d.HostedQueues[1]) != 2 || d.HostedQueues[1][1].LogicOffset != 10000 {
		t.Fatalf("Java file not loaded: %+v", d)
	}
	if m.DataVersion().Counter != 3 {
		t.Fatalf("version %+v", m.DataVersion())
	}
	if info := mapping.Infos(map[string]protocol.TopicQueueMappingDetail{tpc: d})[tpc]; !reflect.DeepEqual(info.CurrIDMap, map[int]int{0: 0, 1: 1}) {
		t.Fatalf("registered currIdMap %v", info.CurrIDMap)
	}
	// An update persists; a new manager reads it back.
	d.Epoch += 1000
	d.HostedQueues[0][0].LogicOffset = 0
	if err := m.Update(d, UpdateOptions{Flush: true}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"topicQueueMappingInfoMap"`, `"dataVersion"`, `"hostedQueues"`, `"counter": 4`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("file lacks %s:\n%s", key, raw)
		}
	}
	m2 := newMgr(t, path)
	d2, _ := m2.Get(tpc)
	if !reflect.DeepEqual(d2, d) || m2.DataVersion().Counter != 4 {
		t.Fatalf("reloaded %+v, want %+v", d2, d)
	}
	// Delete bumps, persists, and survives a reload.
	if ok, err := m2.Delete(tpc); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if m3 := newMgr(t, path); m3.Len() != 0 {
		t.Fatal("deleted mapping came back")
	}
	// A torn file falls back to the backup.
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m4 := newMgr(t, path); m4.Len() != 1 {
		t.Fatalf("backup not used: %d topics", m4.Len())
	}
}

// TestManagerCopies: callers cannot change the stored table through the
// values they get.
func TestManagerCopies(t *testing.T) {
	m := newMgr(t, "")
	if err := m.Update(detail("a", 1, 1, hosted{0: {it("a", 0, 0, 0)}}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _ := m.Get(tpc)
	d.HostedQueues[0][0].QueueID = 7
	all, _ := m.All()
	all[tpc].HostedQueues[0][0].Bname = "zz"
	if got, _ := m.Get(tpc); got.HostedQueues[0][0].QueueID != 0 || got.HostedQueues[0][0].Bname != "a" {
		t.Fatalf("stored detail modified: %+v", got)
	}
}

// TestManagerLed: the logic queues this broker leads (lists ending with
// it), ascending; a topic without a mapping is not static; a broker that
// leads nothing any more (its lists end elsewhere) leads none.
func TestManagerLed(t *testing.T) {
	m := newMgr(t, filepath.Join(t.TempDir(), "m.json"))
	if err := m.Update(detail("a", 100, 4, hosted{
		3: {it("a", 0, 2, 0)},
		0: {it("a", 0, 0, 0)},
		1: {it("b", 0, 0, 0), it("a", 1, 1, 10000)},
		2: {it("a", 0, 3, 0), it("c", 1, 0, -1)},
	}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ids, static := m.Led(tpc); !static || !reflect.DeepEqual(ids, []int32{0, 1, 3}) {
		t.Errorf("Led(ST) = %v %v, want [0 1 3] true", ids, static)
	}
	if ids, static := m.Led("Other"); static || ids != nil {
		t.Errorf("Led(Other) = %v %v, want none", ids, static)
	}
}
