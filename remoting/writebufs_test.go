package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting/code"
)

func TestWriteBufClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {minPooledWriteBuf, 0}, {minPooledWriteBuf + 1, 1},
		{2 * minPooledWriteBuf, 1}, {2*minPooledWriteBuf + 1, 2},
		{maxPooledWriteBuf, writeBufClasses - 1}, {maxPooledWriteBuf + 1, -1},
	} {
		if got := writeBufClass(tc.n); got != tc.class {
			t.Errorf("writeBufClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		if tc.class >= 0 && minPooledWriteBuf<<tc.class < tc.n {
			t.Errorf("class %d holds %d bytes, not %d", tc.class, minPooledWriteBuf<<tc.class, tc.n)
		}
	}
	p := newWriteBufs()
	b := p.get(300 << 10)
	if cap(b) != 512<<10 || len(b) != 0 {
		t.Fatalf("get(300 KiB): len %d cap %d", len(b), cap(b))
	}
	p.put(append(b, 1))
	p.put(make([]byte, 0, 300<<10)) // not a class's size: dropped
	for range 3 {
		if b := p.get(257 << 10); cap(b) != 512<<10 || len(b) != 0 {
			t.Fatalf("get after put: len %d cap %d", len(b), cap(b))
		}
	}
	if b := p.get(maxPooledWriteBuf + 1); cap(b) != maxPooledWriteBuf+1 {
		t.Fatalf("get above the classes: cap %d", cap(b))
	}
	var none *writeBufs
	none.put(make([]byte, 0, minPooledWriteBuf)) // no pool: kept nowhere
	if b := none.get(10); cap(b) != 10 {
		t.Fatalf("nil pool get: cap %d", cap(b))
	}
}

// Answers of many sizes, built in buffers the handler reuses (and scribbles
// over) as soon as the connection calls Written, reach clients on several
// connections intact: the queue buffers shared by the server's
// connections never hand out bytes still being sent.
func TestLargeAnswersIntactWhileBuffersAreReused(t *testing.T) {
	t.Parallel()
	const codeBig = code.PullMessage
	bodies := sync.Pool{}
	s := startServer(t, nil, nil)
	ex := NewExecutor("big", 8, 1024)
	t.Cleanup(ex.Close)
	s.Register(codeBig, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
		seed := binary.BigEndian.Uint64(req.Body)
		size := int(binary.BigEndian.Uint32(req.Body[8:]))
		var buf []byte
		if v, ok := bodies.Get().(*[]byte); ok && cap(*v) >= size {
			buf = (*v)[:size]
		} else {
			buf = make([]byte, size)
		}
		fill(buf, seed)
		resp := NewResponse(req, code.Success, "")
		resp.Body = buf
		resp.Written = func() {
			for i := range buf {
				buf[i] = 0xEE
			}
			bodies.Put(&buf)
		}
		return resp, nil
	}, ex)
	const conns, each, rounds = 4, 6, 15
	var wg sync.WaitGroup
	for c := range conns {
		cl := newClient(t, nil)
		for g := range each {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(c), uint64(g)))
				for i := range rounds {
					size := 1 + r.IntN(600<<10)
					if i%5 == 0 {
						size = 1 + r.IntN(2<<20) // past maxPendingWrite
					}
					seed := r.Uint64()
					body := binary.BigEndian.AppendUint64(nil, seed)
					body = binary.BigEndian.AppendUint32(body, uint32(size))
					// Integrity, not latency, is checked: under -race
					// beside other packages' tests an answer queued
					// behind 23 others of up to 2 MiB has taken longer
					// than the default 3 s.
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					resp, err := cl.Invoke(ctx, s.Addr(), NewRequest(codeBig, nil, body))
					cancel()
					if err != nil {
						t.Errorf("invoke: %v", err)
						return
					}
					if err := check(resp.Body, seed, size); err != nil {
						t.Errorf("answer %d of connection %d: %v", i, c, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

// fill writes seed's byte pattern: each 8 bytes the seed plus their index.
func fill(b []byte, seed uint64) {
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.BigEndian.PutUint64(w[:], seed+uint64(i))
		copy(b[i:], w[:])
	}
}

func check(b []byte, seed uint64, size int) error {
	if len(b) != size {
		return fmt.Errorf("%d bytes, want %d", len(b), size)
	}
	want := make([]byte, size)
	fill(want, seed)
	for i := range b {
		if b[i] != want[i] {
			return fmt.Errorf("byte %d is %#x, want %#x", i, b[i], want[i])
		}
	}
	return nil
}
