package ha

import "time"

// deadline keeps a connection's read or write deadline about d ahead
// without setting it for every frame: setting a deadline updates a runtime
// timer, once per frame and side on both ends of a busy connection. It is
// set only when the current one is less than d away, and then to d + d/8
// from now, so it moves at most every d/8 and a read or write still fails
// after between d and 9d/8 without progress (Apache checks
// haHousekeepingInterval once a second, so it too closes late).
type deadline struct {
	set func(time.Time) error
	d   time.Duration
	at  time.Time
}

// refresh moves the deadline when it is less than d after now.
func (x *deadline) refresh(now time.Time) {
	if x.at.Sub(now) >= x.d {
		return
	}
	x.at = now.Add(x.d + x.d/8)
	_ = x.set(x.at)
}
