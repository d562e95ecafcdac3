package epoch

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// Entry is one epoch: the master of Epoch wrote the log from Start on.
type Entry struct {
	Epoch int32
	Start int64
}

// Range is an entry with its end: the next entry's start, or End for the
// last one (math.MaxInt64 in GET_BROKER_EPOCH_CACHE answers, the log end
// when comparing with a master).
type Range struct {
	Epoch      int32
	Start, End int64
}

// ErrStale refuses an append that would not extend the list.
var ErrStale = errors.New("epoch: not newer than the last entry")

// Cache is the epoch list of one replica, persisted on every change before
// the change is visible. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	fs      vfs.FS
	path    string
	entries []Entry
}

// Open loads the list at path and drops the entries that start beyond
// maxOffset, the CommitLog end found by recovery (a crash between a log
// truncation and the epoch-file update leaves them).
func Open(fsys vfs.FS, path string, maxOffset int64) (*Cache, error) {
	entries, err := load(fsys, path)
	if err != nil {
		return nil, err
	}
	c := &Cache{fs: fsys, path: path, entries: entries}
	keep := len(entries)
	for keep > 0 && entries[keep-1].Start > maxOffset {
		keep--
	}
	if keep < len(entries) {
		if err := c.persistLocked(entries[:keep]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Entries returns a copy of the list, oldest first.
func (c *Cache) Entries() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.entries)
}

// Last returns the newest entry.
func (c *Cache) Last() (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return Entry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// LastEpoch is the newest epoch, 0 for an empty list.
func (c *Cache) LastEpoch() int32 {
	e, _ := c.Last()
	return e.Epoch
}

// Ranges returns the entries with their ends; the last one ends at last.
func (c *Cache) Ranges(last int64) []Range {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Ranges(c.entries, last)
}

// Ranges turns entries into ranges; the last one ends at last.
func Ranges(entries []Entry, last int64) []Range {
	out := make([]Range, len(entries))
	for i, e := range entries {
		end := last
		if i+1 < len(entries) {
			end = entries[i+1].Start
		}
		out[i] = Range{Epoch: e.Epoch, Start: e.Start, End: end}
	}
	return out
}

// Append records that epoch starts at start. The epoch must be newer than
// the last one and start must not precede the last start (equal is a
// zero-length epoch).
func (c *Cache) Append(epoch int32, start int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch <= last.Epoch {
			return fmt.Errorf("%w: epoch %d after %d", ErrStale, epoch, last.Epoch)
		}
		if start < last.Start {
			return fmt.Errorf("%w: epoch %d starts at %d, before epoch %d at %d", ErrStale, epoch, start, last.Epoch, last.Start)
		}
	}
	if start < 0 {
		return fmt.Errorf("epoch: negative start %d", start)
	}
	return c.persistLocked(append(slices.Clone(c.entries), Entry{Epoch: epoch, Start: start}))
}

// TruncateSuffixByOffset drops the entries that start at or after x (the
// log was cut to x).
func (c *Cache) TruncateSuffixByOffset(x int64) error {
	return c.keepWhile(func(e Entry) bool { return e.Start < x })
}

// TruncateSuffixByEpoch drops the entries of epoch e and later.
func (c *Cache) TruncateSuffixByEpoch(e int32) error {
	return c.keepWhile(func(en Entry) bool { return en.Epoch < e })
}

func (c *Cache) keepWhile(keep func(Entry) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(c.entries) && keep(c.entries[n]) {
		n++
	}
	if n == len(c.entries) {
		return nil
	}
	return c.persistLocked(slices.Clone(c.entries[:n]))
}

// TruncatePrefixByOffset drops the entries that end at or before x (the
// log's first files were deleted up to x). The last entry always stays.
func (c *Cache) TruncatePrefixByOffset(x int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop := 0
	for drop+1 < len(c.entries) && c.entries[drop+1].Start <= x {
		drop++
	}
	if drop == 0 {
		return nil
	}
	return c.persistLocked(slices.Clone(c.entries[drop:]))
}

// Find returns the range holding offset o (start ≤ o < end; the last range
// is open-ended). Zero-length ranges never match.
func (c *Cache) Find(o int64) (Range, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range Ranges(c.entries, math.MaxInt64) {
		if r.Start <= o && o < r.End {
			return r, true
		}
	}
	return Range{}, false
}

func (c *Cache) persistLocked(entries []Entry) error {
	if err := store(c.fs, c.path, Encode(entries)); err != nil {
		return fmt.Errorf("persist epoch file: %w", err)
	}
	c.entries = entries
	return nil
}
