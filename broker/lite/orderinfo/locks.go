package orderinfo

import (
	"sync"
	"time"
)

// DefaultLease bounds how long a (group, lmq) lock is honoured: a holder
// that never unlocks (a bug, a stuck read) cannot block the lmq forever.
const DefaultLease = time.Minute

// Locks are per-key try-locks with a lease.
type Locks struct {
	lease time.Duration
	now   func() time.Time

	mu   sync.Mutex
	held map[Key]time.Time
}

// NewLocks returns a lock table; lease ≤ 0 means DefaultLease, now nil
// means time.Now.
func NewLocks(lease time.Duration, now func() time.Time) *Locks {
	if lease <= 0 {
		lease = DefaultLease
	}
	if now == nil {
		now = time.Now
	}
	return &Locks{lease: lease, now: now, held: map[Key]time.Time{}}
}

// TryLock takes k unless someone holds it within its lease.
func (l *Locks) TryLock(k Key) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.held[k]; ok && now.Sub(at) < l.lease {
		return false
	}
	l.held[k] = now
	return true
}

// Lock spins on TryLock (acks and invisibility changes must not give up;
// holders keep the lock for microseconds).
func (l *Locks) Lock(k Key) {
	for !l.TryLock(k) {
		time.Sleep(50 * time.Microsecond)
	}
}

// Unlock releases k.
func (l *Locks) Unlock(k Key) {
	l.mu.Lock()
	delete(l.held, k)
	l.mu.Unlock()
}

// Sweep drops locks held past their lease and returns how many.
func (l *Locks) Sweep() int {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, at := range l.held {
		if now.Sub(at) >= l.lease {
			delete(l.held, k)
			n++
		}
	}
	return n
}
