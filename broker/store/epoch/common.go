package epoch

import "errors"

// ErrNoCommonPoint means the two histories share no epoch with the same
// start: the replica cannot follow this master without being wiped.
var ErrNoCommonPoint = errors.New("epoch: no common point with the master")

// CommonPoint returns the offset up to which a slave's log (local, ending
// at localMax) is a prefix of its master's (master, ending at masterMax):
// walking local epochs from the newest, the first one the master has with
// the same start was written by the same master on both, so the shorter of
// the two ranges is common. Local epochs that hold no bytes are passed
// over: a master that wrote nothing before it lost the role (a set failing
// over before its first message) left an epoch its successor never saw.
// An empty local list (a new replica), or one whose epochs all hold no
// bytes, keeps its whole log: the caller decides whether a non-empty log
// without epochs may be trusted.
func CommonPoint(local []Entry, localMax int64, master []Entry, masterMax int64) (int64, error) {
	if HoldsNothing(local, localMax) {
		return localMax, nil
	}
	lr := Ranges(local, localMax)
	mr := Ranges(master, masterMax)
	for i := len(lr) - 1; i >= 0; i-- {
		if lr[i].Start >= lr[i].End {
			continue
		}
		for _, m := range mr {
			if m.Epoch == lr[i].Epoch && m.Start == lr[i].Start {
				return min(lr[i].End, m.End), nil
			}
		}
	}
	return 0, ErrNoCommonPoint
}

// HoldsNothing reports whether no byte of a log ending at max lies in one
// of its epochs: the list is empty, or every epoch starts at the end.
func HoldsNothing(entries []Entry, max int64) bool {
	return len(entries) == 0 || entries[0].Start >= max
}
