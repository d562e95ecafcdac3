//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package vfs

import "errors"

func diskUsage(path string) (DiskUsage, error) {
	return DiskUsage{}, errors.New("vfs: disk usage not supported on this platform")
}
