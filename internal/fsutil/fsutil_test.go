package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicKeepsBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "topics.json")
	if err := WriteFileAtomic(path, []byte("v1"), true); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("v2"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "v2" {
		t.Errorf("file %q", b)
	}
	if b, _ := os.ReadFile(path + BackupSuffix); string(b) != "v1" {
		t.Errorf("backup %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestReadWithBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	valid := func(b []byte) error {
		if string(b) != "good" {
			return errors.New("corrupt")
		}
		return nil
	}
	if b, from, err := ReadWithBackup(path, valid); b != nil || from != "" || err != nil {
		t.Errorf("missing files: %q %q %v", b, from, err)
	}
	_ = os.WriteFile(path, []byte("torn"), 0o644)
	if _, _, err := ReadWithBackup(path, valid); err == nil {
		t.Error("corrupt file without backup must fail")
	}
	_ = os.WriteFile(path+BackupSuffix, []byte("good"), 0o644)
	if b, from, err := ReadWithBackup(path, valid); string(b) != "good" || from != path+BackupSuffix || err != nil {
		t.Errorf("fallback: %q %q %v", b, from, err)
	}
}
