//go:build !linux

package vfs

import "os"

func syncData(f *os.File) error { return f.Sync() }

func allocate(f *os.File, size int64) error { return growTo(f, size) }
