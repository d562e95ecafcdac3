package client

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestLocalOffsetStore(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	mqA := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	mqB := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	ctx := context.Background()

	s := newLocalOffsetStore(dir, "10.0.0.1@x", "g", log)
	if err := s.load(); err != nil {
		t.Fatalf("first load: %v", err)
	}
	if _, err := s.readStored(ctx, mqA); !errors.Is(err, ErrOffsetNotFound) {
		t.Fatalf("readStored of an empty store: %v", err)
	}
	s.update(mqA, 5, false)
	s.update(mqA, 3, true) // smaller: ignored
	s.update(mqB, 7, false)
	s.persist(ctx, nil)
	path := filepath.Join(dir, "10.0.0.1@x", "g", "offsets.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:7}}`
	if string(raw) != want {
		t.Fatalf("file = %s\nwant   %s", raw, want)
	}
	s.update(mqA, 9, true)
	s.persist(ctx, nil)
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Fatalf("no backup after the second write: %v", err)
	}

	// A new store reads the file back; a broken file falls back to the
	// backup (one write older).
	s2 := newLocalOffsetStore(dir, "10.0.0.1@x", "g", log)
	if err := s2.load(); err != nil {
		t.Fatal(err)
	}
	if off, err := s2.readStored(ctx, mqA); err != nil || off != 9 {
		t.Fatalf("reloaded offset = %d, %v", off, err)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	s3 := newLocalOffsetStore(dir, "10.0.0.1@x", "g", log)
	if err := s3.load(); err != nil {
		t.Fatal(err)
	}
	if off := s3.read(mqA); off != 5 {
		t.Fatalf("offset from the backup = %d, want 5", off)
	}
	// Both unreadable: an error, not a silent restart from scratch.
	if err := os.WriteFile(path+".bak", []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := newLocalOffsetStore(dir, "10.0.0.1@x", "g", log).load(); err == nil || !strings.Contains(err.Error(), "offsets.json") {
		t.Fatalf("load of two broken files: %v", err)
	}
}
