package commitlog

import (
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

func TestCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	_ = mem.MkdirAll("/s", 0o755)
	c, valid, err := OpenCheckpoint(mem, "/s/checkpoint")
	if err != nil || valid {
		t.Fatalf("fresh: %v %v", valid, err)
	}
	want := CheckpointState{1, 2, 3, 4, 5, 6, 7}
	c.Update(func(s *CheckpointState) { *s = want })
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c, valid, err = OpenCheckpoint(mem, "/s/checkpoint")
	if err != nil || !valid || c.State() != want {
		t.Fatalf("reopen: %+v %v %v", c.State(), valid, err)
	}
	c.Close()
	// Java's fields sit where StoreCheckpoint keeps them.
	f, _ := mem.Open("/s/checkpoint")
	b := make([]byte, 40)
	f.ReadAt(b, 0)
	f.Close()
	if b[7] != 1 || b[15] != 2 || b[23] != 3 || b[31] != 4 || b[39] != 5 {
		t.Fatalf("layout %x", b)
	}
	// A damaged checkpoint is reported invalid, not trusted.
	_ = mem.Corrupt("/s/checkpoint", 50, []byte{0xFF})
	c, valid, err = OpenCheckpoint(mem, "/s/checkpoint")
	if err != nil || valid || c.State() != (CheckpointState{}) {
		t.Fatalf("corrupt: %+v %v %v", c.State(), valid, err)
	}
	c.Close()
}

// TestRecoveryWithoutCheckpoint: a lost checkpoint after a crash means a
// full scan, still ending at the right place.
func TestRecoveryWithoutCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	cfg := haConfig(mem, "/s")
	l := mustOpen(t, cfg)
	for i := range 20 {
		mustAppend(t, l, record(t, "P", 0, i, 500))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	max := l.MaxOffset()
	l.abandon()
	_ = mem.Corrupt("/s/checkpoint", 0, make([]byte, 100))
	l = mustOpen(t, cfg)
	defer l.Close()
	r := l.Recovery()
	if r.CheckpointValid || !r.Abnormal || r.ScanFrom != 0 || l.MaxOffset() != max {
		t.Fatalf("%+v max %d want %d", r, l.MaxOffset(), max)
	}
}
