package ha

import (
	"sync"
	"time"
)

// rate counts bytes per wall-clock second (transferredByteInSecond): the
// figure reported is the last complete second's.
type rate struct {
	mu        sync.Mutex
	sec       int64
	cur, last int64
}

func (r *rate) add(n int, now time.Time) {
	s := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	if s != r.sec {
		if s == r.sec+1 {
			r.last = r.cur
		} else {
			r.last = 0
		}
		r.sec, r.cur = s, 0
	}
	r.cur += int64(n)
}

func (r *rate) perSecond(now time.Time) int64 {
	s := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch s {
	case r.sec:
		return r.last
	case r.sec + 1:
		return r.cur
	}
	return 0
}

// inSecond is what was counted in now's second so far.
func (r *rate) inSecond(now time.Time) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Unix() == r.sec {
		return r.cur
	}
	return 0
}
