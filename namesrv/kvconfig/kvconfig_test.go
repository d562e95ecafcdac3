package kvconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestPersistAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "kvConfig.json")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put(NamespaceOrderTopicConfig, "T", "a:4;b:4"))
	must(s.Put("ns", "k1", "v1"))
	must(s.Put("ns", "k2", "v2"))
	must(s.Put("ns", "k1", "v1b"))
	must(s.Delete("ns", "k2"))
	must(s.Delete("none", "x"))

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"a:4;b:4"},"ns":{"k1":"v1b"}}}`
	if string(data) != want {
		t.Fatalf("file %s", data)
	}
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Get("ns", "k1"); !ok || v != "v1b" {
		t.Fatal("reload lost k1")
	}
	if tbl, ok := r.List("ns"); !ok || !reflect.DeepEqual(tbl, map[string]string{"k1": "v1b"}) {
		t.Fatalf("list %v", tbl)
	}
	if _, ok := r.List("missing"); ok {
		t.Fatal("missing namespace listed")
	}
	// Listing returns a copy.
	tbl, _ := r.List("ns")
	tbl["k1"] = "changed"
	if v, _ := r.Get("ns", "k1"); v != "v1b" {
		t.Fatal("List leaked internal map")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
}

func TestApacheFileAndBareKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	// fastjson pretty output as Apache writes it.
	os.WriteFile(path, []byte("{\n\t\"configTable\":{\n\t\t\"ORDER_TOPIC_CONFIG\":{\n\t\t\t\"T\":\"broker-a:8\"\n\t\t}\n\t}\n}"), 0o644)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get(NamespaceOrderTopicConfig, "T"); v != "broker-a:8" {
		t.Fatalf("got %q", v)
	}
	os.WriteFile(path, nil, 0o644)
	if _, err := Open(path, nil); err != nil {
		t.Fatalf("empty file: %v", err)
	}
	os.WriteFile(path, []byte(`{"configTable":`), 0o644)
	if _, err := Open(path, nil); err == nil {
		t.Fatal("corrupt file accepted")
	}
}

func TestPersistFailureRollsBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kv")
	s, err := Open(filepath.Join(dir, "kvConfig.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The kv file's directory becomes a regular file: every write fails
	// (permissions would not stop root).
	os.RemoveAll(dir)
	os.WriteFile(dir, []byte("x"), 0o644)
	if err := s.Put("ns", "k", "v"); err == nil {
		t.Fatal("put succeeded without a writable file")
	}
	if _, ok := s.Get("ns", "k"); ok {
		t.Fatal("failed put left the value in memory")
	}
	if _, ok := s.List("ns"); ok {
		t.Fatal("failed put left the namespace")
	}
	mem, _ := Open("", nil)
	if err := mem.Put("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
}
