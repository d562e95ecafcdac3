package epoch

import "errors"

// ErrNoCommonPoint means the two histories share no epoch with the same
// start: the replica cannot follow this master without being wiped.
var ErrNoCommonPoint = errors.New("epoch: no common point with the master")

// CommonPoint returns the offset up to which a slave's log (local, ending
// at localMax) is a prefix of its master's (master, ending at masterMax):
// walking local epochs from the newest, the first one the master has with
// the same start was written by the same master on both, so the shorter of
// the two ranges is common. An empty local list (a new replica) keeps its
// whole log: the caller decides whether a non-empty log without epochs may
// be trusted.
func CommonPoint(local []Entry, localMax int64, master []Entry, masterMax int64) (int64, error) {
	if len(local) == 0 {
		return localMax, nil
	}
	lr := Ranges(local, localMax)
	mr := Ranges(master, masterMax)
	for i := len(lr) - 1; i >= 0; i-- {
		for _, m := range mr {
			if m.Epoch == lr[i].Epoch && m.Start == lr[i].Start {
				return min(lr[i].End, m.End), nil
			}
		}
	}
	return 0, ErrNoCommonPoint
}
