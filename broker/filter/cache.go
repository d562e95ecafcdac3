package filter

import "sync"

// DefaultCacheSize is the default bound of a Cache, in entries.
const DefaultCacheSize = 1024

// cacheBytes bounds the expression text a Cache holds (both generations).
const cacheBytes = 4 << 20

type compiled struct {
	x   *Expression
	err error
}

// Cache compiles selectors once: it maps expression text to its compiled
// form or its parse error (Java's SelectorParser keeps both too). It holds
// at most its size entries (and about 4 MiB of expression text), in two generations: when the current one is
// full it becomes the old one and the previous old one is dropped; a hit in
// the old generation moves the entry forward. Safe for concurrent use.
type Cache struct {
	half int

	mu       sync.Mutex
	cur      map[string]compiled
	curBytes int
	old      map[string]compiled
}

// NewCache returns a cache bounded to about size entries (≤ 0: the default).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	half := max(size/2, 1)
	return &Cache{half: half, cur: make(map[string]compiled, half)}
}

// Compile returns the compiled expression for sql, parsing it on a miss.
func (c *Cache) Compile(sql string) (*Expression, error) {
	c.mu.Lock()
	if e, ok := c.cur[sql]; ok {
		c.mu.Unlock()
		return e.x, e.err
	}
	if e, ok := c.old[sql]; ok {
		c.putLocked(sql, e)
		c.mu.Unlock()
		return e.x, e.err
	}
	c.mu.Unlock()

	x, err := Parse(sql)
	e := compiled{x: x, err: err}
	c.mu.Lock()
	c.putLocked(sql, e)
	c.mu.Unlock()
	return x, err
}

func (c *Cache) putLocked(sql string, e compiled) {
	if len(c.cur) >= c.half || c.curBytes+len(sql) > cacheBytes/2 {
		c.old, c.cur, c.curBytes = c.cur, make(map[string]compiled, c.half), 0
	}
	if len(sql) > cacheBytes/2 {
		return // never cached (Parse bounds the length well below this)
	}
	c.cur[sql] = e
	c.curBytes += len(sql)
}

// Len is the number of cached entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
