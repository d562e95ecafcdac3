package remoting

import (
	"math/bits"
	"sync"
)

// Write buffers larger than a connection keeps (maxKeptWriteBuf) come from
// size classes of powers of two, 128 KiB to 4 MiB, shared by an endpoint's
// connections: a consumer's connection queues several pull answers of
// tens of KiB at once, and growing a fresh queue for each batch cost a
// catch-up read an eighth of the broker's CPU. Larger buffers are not
// kept.
const (
	minPooledWriteBuf = 128 << 10
	maxPooledWriteBuf = minPooledWriteBuf << (writeBufClasses - 1) // 4 MiB
	writeBufClasses   = 6
)

// writeBufs recycles large write buffers; the zero value is not usable,
// newWriteBufs builds it. A nil *writeBufs allocates and keeps nothing.
type writeBufs struct {
	classes []sync.Pool // class i holds buffers of cap minPooledWriteBuf<<i
}

func newWriteBufs() *writeBufs {
	return &writeBufs{classes: make([]sync.Pool, writeBufClasses)}
}

// class is the index of the smallest class holding n bytes, or -1.
func writeBufClass(n int) int {
	if n > maxPooledWriteBuf {
		return -1
	}
	if n <= minPooledWriteBuf {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(minPooledWriteBuf-1)
}

// get returns an empty buffer with room for n bytes.
func (p *writeBufs) get(n int) []byte {
	c := writeBufClass(n)
	if p == nil || c < 0 {
		return make([]byte, 0, n)
	}
	if v, ok := p.classes[c].Get().(*[]byte); ok {
		return (*v)[:0]
	}
	return make([]byte, 0, minPooledWriteBuf<<c)
}

// put gives back a buffer nothing refers to any more; one not of a class's
// exact size is dropped.
func (p *writeBufs) put(b []byte) {
	c := writeBufClass(cap(b))
	if p == nil || c < 0 || cap(b) != minPooledWriteBuf<<c {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
