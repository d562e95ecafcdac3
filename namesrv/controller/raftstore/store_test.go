package raftstore

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	cfg := DefaultConfig(dir)
	cfg.NoSync = true
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: i / 3, Type: raft.LogCommand, Data: []byte{byte(i), 1, 2},
		Extensions: []byte("x"), AppendedAt: time.Unix(100, int64(i))}
}

func TestLogStore(t *testing.T) {
	s := openTest(t, t.TempDir())
	defer s.Close()
	if f, _ := s.FirstIndex(); f != 0 {
		t.Fatalf("empty first %d", f)
	}
	if l, _ := s.LastIndex(); l != 0 {
		t.Fatalf("empty last %d", l)
	}
	var got raft.Log
	if err := s.GetLog(1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("missing log: %v", err)
	}
	if err := s.StoreLog(entry(1)); err != nil {
		t.Fatal(err)
	}
	var batch []*raft.Log
	for i := uint64(2); i <= 300; i++ { // crosses byte boundaries of the big-endian key
		batch = append(batch, entry(i))
	}
	if err := s.StoreLogs(batch); err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint64{1, 255, 256, 300} {
		if err := s.GetLog(i, &got); err != nil {
			t.Fatal(err)
		}
		want := entry(i)
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d: %+v, want %+v", i, got, want)
		}
	}
	if f, _ := s.FirstIndex(); f != 1 {
		t.Fatalf("first %d", f)
	}
	if l, _ := s.LastIndex(); l != 300 {
		t.Fatalf("last %d", l)
	}
	// Compaction from the front, then a conflicting suffix removed.
	if err := s.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(250, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.FirstIndex(); f != 101 {
		t.Fatalf("first after delete %d", f)
	}
	if l, _ := s.LastIndex(); l != 249 {
		t.Fatalf("last after delete %d", l)
	}
	for _, i := range []uint64{100, 250, 300} {
		if err := s.GetLog(i, &got); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("deleted entry %d: %v", i, err)
		}
	}
	if err := s.GetLog(101, &got); err != nil || got.Index != 101 {
		t.Fatalf("kept entry: %v %+v", err, got)
	}
	// An empty entry (no data, zero time) survives too.
	if err := s.StoreLog(&raft.Log{Index: 250, Term: 9, Type: raft.LogNoop}); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(250, &got); err != nil || got.Type != raft.LogNoop || got.Data != nil || !got.AppendedAt.IsZero() {
		t.Fatalf("noop entry: %v %+v", err, got)
	}
}

func TestStableStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if _, err := s.Get([]byte("k")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing counter: %v", err)
	}
	if err := s.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 1<<40+7); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(entry(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	defer s.Close()
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("reopened value %q %v", v, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 1<<40+7 {
		t.Fatalf("reopened counter %d %v", v, err)
	}
	if l, _ := s.LastIndex(); l != 5 {
		t.Fatalf("reopened last %d", l)
	}
	// Stable keys never show up as log entries.
	if f, _ := s.FirstIndex(); f != 5 {
		t.Fatalf("reopened first %d", f)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("empty dir accepted")
	}
	if _, err := Open(Config{}); err == nil {
		t.Fatal("Open accepted an empty dir")
	}
}
