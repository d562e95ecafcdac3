package commitlog

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
)

// backends are the file systems every basic test runs on: the OS with and
// without mmap'd reads, and the in-memory FS.
func backends(t *testing.T) map[string]func(t *testing.T) Config {
	return map[string]func(t *testing.T) Config{
		"os-mmap": func(t *testing.T) Config { return testConfig(vfs.OS(), t.TempDir()) },
		"os-readat": func(t *testing.T) Config {
			c := testConfig(vfs.OS(), t.TempDir())
			c.UseMmap = false
			return c
		},
		"mem": func(t *testing.T) Config { return testConfig(vfs.NewMem(), "/store") },
	}
}

func TestAppendRead(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			cfg := mk(t)
			cfg.Assigner = newAssigner()
			l := mustOpen(t, cfg)
			defer l.Close()
			var recs [][]byte
			var results []AppendResult
			for i := range 20 {
				rec := record(t, "T", int32(i%2), i, 100+i*10)
				recs = append(recs, rec)
				results = append(results, mustAppend(t, l, rec))
			}
			off := int64(0)
			for i, res := range results {
				if res.PhysicalOffset != off || res.Size != len(recs[i]) || res.Records != 1 {
					t.Fatalf("result %d: %+v, want offset %d", i, res, off)
				}
				if res.QueueOffset != int64(i/2) {
					t.Fatalf("result %d: queue offset %d", i, res.QueueOffset)
				}
				host, pos, err := message.ParseOffsetMsgID(res.MsgID)
				if err != nil || host != storeHost || pos != off {
					t.Fatalf("msg id %s: %v %d %v", res.MsgID, host, pos, err)
				}
				rec, err := l.ReadRecord(off)
				if err != nil {
					t.Fatal(err)
				}
				v := rec.View
				if !sameRecord(v, recs[i]) || v.PhysicalOffset() != off || v.QueueOffset() != res.QueueOffset ||
					v.StoreTimestamp() != res.StoreTimestamp || !v.VerifyCRC() {
					t.Fatalf("record %d differs", i)
				}
				rec.Release()
				off += int64(len(recs[i]))
			}
			if l.MaxOffset() != off {
				t.Fatalf("max %d, want %d", l.MaxOffset(), off)
			}
			// Raw reads return the stored bytes: what a pull body is made of.
			buf, err := l.Read(results[3].PhysicalOffset, results[3].Size)
			if err != nil {
				t.Fatal(err)
			}
			msg, _, err := message.DecodeStored(buf.Bytes(), message.DecodeOptions{VerifyCRC: true})
			buf.Release()
			if err != nil || msg.CommitLogOffset != results[3].PhysicalOffset || msg.StoreHost != storeHost {
				t.Fatalf("decode pulled bytes: %v", err)
			}
			if got := readAll(t, l); len(got) != len(recs) {
				t.Fatalf("iterated %d records", len(got))
			}
			for _, bad := range []struct{ off, size int64 }{{-1, 10}, {off - 5, 10}, {off, 1}} {
				if _, err := l.Read(bad.off, int(bad.size)); !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("read %v: %v", bad, err)
				}
			}
		})
	}
}

func TestAppendRejects(t *testing.T) {
	l := mustOpen(t, testConfig(vfs.NewMem(), "/s"))
	defer l.Close()
	ctx := context.Background()
	good := record(t, "T", 0, 0, 10)
	cases := map[string]struct {
		in   []byte
		want error
	}{
		"empty":     {nil, ErrBadRecord},
		"garbage":   {make([]byte, 200), ErrBadRecord},
		"truncated": {good[:len(good)-1], ErrBadRecord},
		"trailing":  {append(append([]byte{}, good...), 1, 2, 3), ErrBadRecord},
		"too large": {record(t, "T", 0, 0, 17<<10), ErrRecordTooLarge},
	}
	for name, c := range cases {
		if _, err := l.Append(ctx, c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if l.MaxOffset() != 0 || !l.Writable() {
		t.Fatal("rejected appends must not change the log")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Append(cctx, good); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestBatchAppend(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), "/s")
	cfg.Assigner = newAssigner()
	l := mustOpen(t, cfg)
	defer l.Close()
	mustAppend(t, l, record(t, "B", 0, 0, 10))
	var batch []byte
	for i := range 3 {
		batch = append(batch, record(t, "B", 0, i+1, 10)...)
	}
	res := mustAppend(t, l, batch)
	if res.Records != 3 || res.QueueOffset != 1 || strings.Count(res.MsgID, ",") != 2 {
		t.Fatalf("%+v", res)
	}
	recs := readAll(t, l)
	for i, r := range recs {
		if r.View.QueueOffset() != int64(i) || r.View.StoreTimestamp() != recs[len(recs)-1].View.StoreTimestamp() && i > 0 {
			t.Fatalf("record %d: queue offset %d", i, r.View.QueueOffset())
		}
	}
	ids := strings.Split(res.MsgID, ",")
	for i, id := range ids {
		if _, off, _ := message.ParseOffsetMsgID(id); off != recs[i+1].Offset {
			t.Fatalf("id %d names %d, record at %d", i, off, recs[i+1].Offset)
		}
	}
}

// TestRollingBlank checks the file layout a Java reader expects: 20-digit
// names, records never spanning files, each full file ending in a BLANK
// record whose size is the rest of the file.
func TestRollingBlank(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			cfg := mk(t)
			smallSegments(&cfg, 4096)
			l := mustOpen(t, cfg)
			var recs [][]byte
			for i := range 40 {
				rec := record(t, "Roll", 0, i, 150+(i*37)%700)
				recs = append(recs, rec)
				res := mustAppend(t, l, rec)
				if res.PhysicalOffset/4096 != (res.End()-1)/4096 {
					t.Fatalf("record %d spans files: %+v", i, res)
				}
			}
			bases := l.SegmentBases()
			if len(bases) < 5 {
				t.Fatalf("only %d segments", len(bases))
			}
			names, _ := cfg.FS.List(cfg.Dir)
			for i, b := range bases {
				if names[i] != segmentName(b) || len(names[i]) != 20 || b != int64(i)*4096 {
					t.Fatalf("segment %d: name %s base %d", i, names[i], b)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Read the files the way Java's recovery does.
			var got int
			for _, n := range names {
				f, err := cfg.FS.Open(filepath.Join(cfg.Dir, n))
				if err != nil {
					t.Fatal(err)
				}
				data := make([]byte, 4096)
				if _, err := f.ReadAt(data, 0); err != nil {
					t.Fatal(err)
				}
				f.Close()
				for pos := 0; pos+8 <= len(data); {
					size, magic, _ := message.RecordHeader(data[pos:])
					if magic == message.BlankMagic {
						if int(size) != len(data)-pos {
							t.Fatalf("%s: BLANK at %d has size %d", n, pos, size)
						}
						break
					}
					if magic == 0 {
						break // end of the last file
					}
					v, err := message.ParseView(data[pos:], message.ParseOptions{VerifyCRC: true})
					if err != nil {
						t.Fatalf("%s at %d: %v", n, pos, err)
					}
					if !sameRecord(v, recs[got]) {
						t.Fatalf("record %d differs", got)
					}
					got++
					pos += int(v.TotalSize())
				}
			}
			if got != len(recs) {
				t.Fatalf("found %d of %d records", got, len(recs))
			}
			// Reopen and keep going.
			l = mustOpen(t, cfg)
			defer l.Close()
			if r := l.Recovery(); r.Abnormal || r.Truncated || !r.CheckpointValid {
				t.Fatalf("clean reopen: %+v", r)
			}
			mustAppend(t, l, record(t, "Roll", 0, 99, 100))
			if n := len(readAll(t, l)); n != len(recs)+1 {
				t.Fatalf("after reopen: %d records", n)
			}
		})
	}
}

func TestReopenKeepsState(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), "/s")
	l := mustOpen(t, cfg)
	for i := range 10 {
		mustAppend(t, l, record(t, "T", 0, i, 500))
	}
	l.SetConfirmOffset(1234)
	max := l.MaxOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), record(t, "T", 0, 0, 1)); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotWritable) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := cfg.FS.Stat("/s/abort"); err == nil {
		t.Fatal("abort marker left after clean close")
	}
	l = mustOpen(t, cfg)
	defer l.Close()
	if l.MaxOffset() != max || l.FlushedOffset() != max || l.ConfirmOffset() != 1234 {
		t.Fatalf("max %d flushed %d confirm %d, want %d", l.MaxOffset(), l.FlushedOffset(), l.ConfirmOffset(), max)
	}
	ck := l.Checkpoint().State()
	if ck.FlushedPhyOffset != max || ck.PhysicMsgTimestamp == 0 {
		t.Fatalf("checkpoint %+v", ck)
	}
	if _, err := cfg.FS.Stat("/s/abort"); err != nil {
		t.Fatal("abort marker missing while open")
	}
}

// TestReleaseCold: the mapped pages more than MappedHotBytes below the
// write position are given back; every record still reads the same
// through the mappings afterwards.
func TestReleaseCold(t *testing.T) {
	cfg := testConfig(vfs.OS(), t.TempDir())
	cfg.MappedHotBytes = 64 << 10
	cfg.ReleaseInterval = 0 // only the explicit call below
	l := mustOpen(t, cfg)
	defer l.Close()
	for i := 0; i < 300; i++ {
		mustAppend(t, l, record(t, "T", 0, i, 900))
	}
	before := readAll(t, l) // faults every mapped page in
	keepFrom := l.MaxOffset() - cfg.MappedHotBytes
	var want int64
	for _, base := range l.SegmentBases() {
		if base < keepFrom {
			want += min(cfg.FileSize, keepFrom-base) / pageSize * pageSize
		}
	}
	if got := l.ReleaseCold(); got != want || want == 0 {
		t.Fatalf("released %d bytes of mappings, want %d", got, want)
	}
	after := readAll(t, l)
	if len(after) != len(before) {
		t.Fatalf("%d records after the release, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i].Offset != after[i].Offset || !bytes.Equal(before[i].View.Bytes(), after[i].View.Bytes()) {
			t.Fatalf("record %d differs after the release", i)
		}
	}
}
