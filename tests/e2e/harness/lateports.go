package harness

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// LatePort's ports come from blocks of [lateLow, lateHigh), below the
// kernel's ephemeral range (Linux's default starts at 32768). Several test
// processes run at once (go test runs packages in parallel: tests/e2e
// beside tests/interop), so a counter from a random base per process is
// not enough: two processes whose counters overlapped handed out the same
// port, both saw it free, and the second server to bind it failed (seen
// in CI: Apache's DLedger controller of tests/interop found its port taken
// and exited). Each process therefore claims whole blocks with a
// non-blocking flock on a file per block in the temporary folder; the lock
// goes with the process, however it ends.
const (
	lateLow   = 20000
	lateHigh  = 32000
	lateBlock = 500
)

// lateBlocks hands out the ports of the blocks this process holds. Test
// support only.
var lateBlocks portBlocks

type portBlocks struct {
	mu        sync.Mutex
	next, end int
	owned     []int // block indexes, in the order they were claimed
	files     []*os.File
	reuse     int // the next owned block to cycle through when no block is free
}

// take returns the next candidate port.
func (b *portBlocks) take() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next >= b.end {
		b.claim()
	}
	p := b.next
	b.next++
	return p
}

// claim moves to a block no other process holds, or, when every block is
// held, cycles through this process's own blocks again (their ports were
// handed out long ago; LatePort still checks each is free).
func (b *portBlocks) claim() {
	n := (lateHigh - lateLow) / lateBlock
	dir := filepath.Join(os.TempDir(), "rmq-test-ports")
	_ = os.MkdirAll(dir, 0o777)
	start := rand.IntN(n)
	for i := range n {
		k := (start + i) % n
		if b.holds(k) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("block-%d.lock", k)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue
		}
		b.files = append(b.files, f) // held open (and locked) until the process exits
		b.owned = append(b.owned, k)
		b.next, b.end = lateLow+k*lateBlock, lateLow+(k+1)*lateBlock
		return
	}
	k := start // nothing could be locked at all: an unlocked block
	if len(b.owned) > 0 {
		k = b.owned[b.reuse%len(b.owned)]
		b.reuse++
	}
	b.next, b.end = lateLow+k*lateBlock, lateLow+(k+1)*lateBlock
}

func (b *portBlocks) holds(k int) bool {
	for _, o := range b.owned {
		if o == k {
			return true
		}
	}
	return false
}
