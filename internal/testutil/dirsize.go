package testutil

import (
	"os"
	"path/filepath"
)

// DirSize is the total size of the regular files below dir.
func DirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
