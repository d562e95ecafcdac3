package kv

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rmqgo/rmq/broker/internal/pace"
)

// yieldFS makes Pebble's compactions step aside for waiting goroutines. A
// compaction is CPU-bound for long stretches (merging, compressing) and,
// like any goroutine, keeps its processor for the scheduler's 10 ms slice;
// on two cores, with a GC or a lite sweep on the other, requests then wait
// that long for a processor. Its table writes (every 4 KiB through
// Pebble's buffered writer) are points where it holds no lock a request
// needs. Memtable flushes are left alone: writes (the dispatcher's) and
// the periodic durability flush wait for them.
type yieldFS struct {
	vfs.FS
}

func (fs yieldFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || category != compactionWrites || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &yieldFile{File: f}, nil
}

// compactionWrites is Pebble's write category of compaction output.
const compactionWrites vfs.DiskWriteCategory = "pebble-compaction"

// yieldCheckEvery bounds how often a table writer looks at the scheduler.
const yieldCheckEvery = 250 * time.Microsecond

type yieldFile struct {
	vfs.File
	checked atomic.Int64 // unix nanos of the last look
}

func (f *yieldFile) Write(p []byte) (int, error) {
	now := time.Now().UnixNano()
	if last := f.checked.Load(); now-last >= int64(yieldCheckEvery) && f.checked.CompareAndSwap(last, now) {
		pace.StepAside()
	}
	return f.File.Write(p)
}
