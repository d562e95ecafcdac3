package pull

import (
	"bytes"
	"testing"

	"github.com/rmqgo/rmq/broker/store"
)

// An answer's body is built in a buffer that comes back for the next
// answer once the first was written, and holds exactly the records.
func TestAnswerBodyRecycled(t *testing.T) {
	p := &Processor{}
	recs := func(sizes ...int) *store.GetResult {
		r := &store.GetResult{}
		for i, n := range sizes {
			r.Records = append(r.Records, bytes.Repeat([]byte{byte('a' + i)}, n))
		}
		return r
	}
	first, written := p.concatRecords(recs(3, 5))
	if string(first) != "aaabbbbb" || written == nil {
		t.Fatalf("body %q, written %v", first, written != nil)
	}
	// sync.Pool may drop what it is given (a quarter of it under the
	// race detector): a few tries.
	var second []byte
	reused := false
	for range 20 {
		written()
		var w func()
		second, w = p.concatRecords(recs(2, 1))
		if string(second) != "aab" || w == nil {
			t.Fatalf("body %q", second)
		}
		if &second[0] == &first[0] {
			reused = true
			break
		}
		first, written = second, w
	}
	if !reused {
		t.Error("no answer reused the previous one's buffer")
	}
	// One that does not fit the recycled buffer gets a new one.
	big, written3 := p.concatRecords(recs(40 << 10))
	if len(big) != 40<<10 || &big[0] == &second[0] || written3 == nil {
		t.Fatalf("a larger body: %d bytes, same buffer %v", len(big), &big[0] == &second[0])
	}
	// Beyond maxPooledBody nothing is kept.
	if huge, w := p.concatRecords(recs(maxPooledBody + 1)); len(huge) != maxPooledBody+1 || w != nil {
		t.Fatalf("a body above the pooled bound: %d bytes, written %v", len(huge), w != nil)
	}
}
