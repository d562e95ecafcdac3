package kv

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestYieldFSWrapsOnlyTables: Pebble's table files step aside on writes;
// the manifest, options and lock files are Pebble's own.
func TestYieldFSWrapsOnlyTables(t *testing.T) {
	fs := yieldFS{vfs.Default}
	dir := t.TempDir()
	for name, want := range map[string]bool{"000012.sst": true, "MANIFEST-000001": false, "OPTIONS-000003": false} {
		f, err := fs.Create(filepath.Join(dir, name), vfs.WriteCategoryUnspecified)
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
