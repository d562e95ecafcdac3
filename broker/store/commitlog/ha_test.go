package commitlog

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

func haConfig(fsys vfs.FS, dir string) Config {
	cfg := testConfig(fsys, dir)
	smallSegments(&cfg, 4096)
	return cfg
}

// replicate copies master bytes [from, master max) to the slave in
// frame-sized chunks that never cross a segment, as an HA master sends them.
func replicate(t *testing.T, master, slave *Log, from int64, frame int) {
	t.Helper()
	for off := from; off < master.MaxOffset(); {
		buf, err := master.ReadChunk(off, frame, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(context.Background(), off, buf.Bytes()); err != nil {
			t.Fatalf("raw append at %d: %v", off, err)
		}
		off += int64(len(buf.Bytes()))
		buf.Release()
	}
}

func TestReplicationByteIdentical(t *testing.T) {
	mfs, sfs := vfs.NewMem(), vfs.NewMem()
	master := mustOpen(t, haConfig(mfs, "/m"))
	defer master.Close()
	for i := range 30 {
		mustAppend(t, master, record(t, "H", 0, i, 100+(i*71)%900))
	}
	slave := mustOpen(t, haConfig(sfs, "/s"))
	defer slave.Close()
	replicate(t, master, slave, 0, 1000) // odd frame size: frames end mid-record
	if slave.MaxOffset() != master.MaxOffset() {
		t.Fatalf("slave %d, master %d", slave.MaxOffset(), master.MaxOffset())
	}
	for _, base := range master.SegmentBases() {
		a, _ := master.Read(base, int(min(4096, master.MaxOffset()-base)))
		b, _ := slave.Read(base, len(a.Bytes()))
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("segment %d differs", base)
		}
		a.Release()
		b.Release()
	}
	if len(readAll(t, slave)) != 30 {
		t.Fatal("slave records")
	}
	if err := slave.AppendRaw(context.Background(), 5, []byte{1}); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("wrong offset: %v", err)
	}
	if err := slave.AppendRaw(context.Background(), slave.MaxOffset(), make([]byte, 5000)); !errors.Is(err, ErrCrossesSegment) {
		t.Fatalf("crossing: %v", err)
	}
}

// TestReplicaFromLastFile starts an empty replica at the master's last
// segment (syncFromLastFile).
func TestReplicaFromLastFile(t *testing.T) {
	master := mustOpen(t, haConfig(vfs.NewMem(), "/m"))
	defer master.Close()
	for i := range 20 {
		mustAppend(t, master, record(t, "H", 0, i, 600))
	}
	bases := master.SegmentBases()
	last := bases[len(bases)-1]
	cfg := haConfig(vfs.NewMem(), "/s")
	slave := mustOpen(t, cfg)
	if err := slave.AppendRaw(context.Background(), last+1, []byte{1}); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("unaligned start: %v", err)
	}
	replicate(t, master, slave, last, 512)
	if slave.MinOffset() != last || slave.MaxOffset() != master.MaxOffset() {
		t.Fatalf("slave [%d, %d), master last file %d max %d", slave.MinOffset(), slave.MaxOffset(), last, master.MaxOffset())
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	slave = mustOpen(t, cfg)
	defer slave.Close()
	if slave.MinOffset() != last || slave.MaxOffset() != master.MaxOffset() || len(readAll(t, slave)) == 0 {
		t.Fatalf("after reopen [%d, %d)", slave.MinOffset(), slave.MaxOffset())
	}
}

func TestTruncate(t *testing.T) {
	mem := vfs.NewMem()
	cfg := haConfig(mem, "/s")
	l := mustOpen(t, cfg)
	var res []AppendResult
	for i := range 20 {
		res = append(res, mustAppend(t, l, record(t, "T", 0, i, 500)))
	}
	l.SetConfirmOffset(l.MaxOffset())
	cut := res[7].PhysicalOffset
	if err := l.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	if l.MaxOffset() != cut || l.ConfirmOffset() != cut || l.FlushedOffset() > cut {
		t.Fatalf("max %d confirm %d flushed %d, cut %d", l.MaxOffset(), l.ConfirmOffset(), l.FlushedOffset(), cut)
	}
	if n := len(readAll(t, l)); n != 7 {
		t.Fatalf("%d records after truncate", n)
	}
	if _, err := l.ReadRecord(res[8].PhysicalOffset); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past cut: %v", err)
	}
	if err := l.Truncate(l.MaxOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	// Write a short record where a long one was, then crash: the old
	// records behind the cut must stay dead.
	mustAppend(t, l, record(t, "N", 0, 0, 50))
	l = flushCrashReopen(t, l, mem, cfg)
	defer l.Close()
	recs := readAll(t, l)
	if len(recs) != 8 || string(recs[7].View.Topic()) != "N" {
		t.Fatalf("after crash: %d records", len(recs))
	}
	// Truncating to a segment boundary removes whole files.
	for i := range 10 {
		mustAppend(t, l, record(t, "M", 0, i, 500))
	}
	bases := l.SegmentBases()
	if err := l.Truncate(bases[1]); err != nil {
		t.Fatal(err)
	}
	if got := l.SegmentBases(); len(got) != 1 || l.MaxOffset() != bases[1] {
		t.Fatalf("segments %v max %d", got, l.MaxOffset())
	}
	res2 := mustAppend(t, l, record(t, "M", 0, 99, 500))
	if res2.PhysicalOffset != bases[1] {
		t.Fatalf("append after boundary truncate at %d", res2.PhysicalOffset)
	}
}

func TestReadChunk(t *testing.T) {
	l := mustOpen(t, haConfig(vfs.NewMem(), "/s"))
	defer l.Close()
	for i := range 10 {
		mustAppend(t, l, record(t, "C", 0, i, 700))
	}
	b, err := l.ReadChunk(4000, 1<<20, 0)
	if err != nil || len(b.Bytes()) != 96 {
		t.Fatalf("chunk stops at the segment end: %d %v", len(b.Bytes()), err)
	}
	b.Release()
	b, err = l.ReadChunk(4096, 1<<20, 4200)
	if err != nil || len(b.Bytes()) != 104 {
		t.Fatalf("chunk stops at the limit: %d %v", len(b.Bytes()), err)
	}
	b.Release()
	b, err = l.ReadChunk(l.MaxOffset(), 100, 0)
	if err != nil || len(b.Bytes()) != 0 {
		t.Fatalf("chunk at the end: %v", err)
	}
}
