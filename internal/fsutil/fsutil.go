// Package fsutil writes small metadata files (topics.json, broker.properties)
// so that a crash never leaves a torn file behind.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// BackupSuffix names the previous version kept next to a file, as Java's
// ConfigManager keeps "<file>.bak" and falls back to it on a bad load.
const BackupSuffix = ".bak"

// WriteFileAtomic replaces path with data: it writes a temporary file in the
// same directory, fsyncs it, keeps the previous content as path+".bak" when
// backup is set, renames the temporary file over path and fsyncs the
// directory so the rename itself is durable.
func WriteFileAtomic(path string, data []byte, backup bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if err := os.Chmod(tmpName, 0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", tmpName, err)
	}
	if backup {
		// A hard link keeps the old content under .bak without a window in
		// which path is missing; fall back to copying where links fail.
		bak := path + BackupSuffix
		_ = os.Remove(bak)
		if err := os.Link(path, bak); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if old, rerr := os.ReadFile(path); rerr == nil {
				_ = os.WriteFile(bak, old, 0o644)
			}
		}
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmpName, path, err)
	}
	ok = true
	return syncDir(dir)
}

// ReadWithBackup reads path, or path+".bak" when path is missing or valid
// rejects its content. It returns (nil, "", nil) when neither exists.
func ReadWithBackup(path string, valid func([]byte) error) (data []byte, from string, err error) {
	var firstErr error
	for _, p := range []string{path, path + BackupSuffix} {
		b, rerr := os.ReadFile(p)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue
		}
		if rerr == nil && valid != nil {
			rerr = valid(b)
		}
		if rerr != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("load %s: %w", p, rerr)
			}
			continue
		}
		return b, p, nil
	}
	return nil, "", firstErr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	// Some filesystems refuse to fsync directories (EINVAL); the rename has
	// happened anyway, so only real I/O errors are reported.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
