package kv

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestYieldFSWrapsOnlyTables: the tables a compaction writes step aside
// on writes; flushed tables and the manifest do not.
func TestYieldFSWrapsOnlyCompactions(t *testing.T) {
	fs := yieldFS{vfs.Default}
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		category vfs.DiskWriteCategory
		want     bool
	}{
		{"000012.sst", compactionWrites, true},
		{"000013.sst", "pebble-memtable-flush", false},
		{"MANIFEST-000001", vfs.WriteCategoryUnspecified, false},
	} {
		name, want := c.name, c.want
		f, err := fs.Create(filepath.Join(dir, name), c.category)
		if err != nil {
			t.Fatal(err)
		}
		_, wrapped := f.(*yieldFile)
		if wrapped != want {
			t.Errorf("%s: wrapped %v, want %v", name, wrapped, want)
		}
		if _, err := f.Write([]byte("data")); err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
