package send

import "sync/atomic"

// nameCache turns the bytes of a name that repeats on every send (topic,
// producer group) into a string without allocating when it was seen
// recently. Slots are picked by a hash of the bytes; a miss allocates the
// string and replaces the slot's, so a cache of a few hundred slots serves
// any number of names, the busy ones from memory. Safe for concurrent use.
type nameCache struct {
	slots [nameSlots]atomic.Pointer[string]
}

const (
	nameSlots  = 512
	maxNameLen = 255 // topics and groups are at most 127 and 255 bytes
)

// get returns string(b).
func (c *nameCache) get(b []byte) string {
	if c == nil || len(b) == 0 || len(b) > maxNameLen {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	slot := &c.slots[h%nameSlots]
	if p := slot.Load(); p != nil && *p == string(b) { // the comparison does not allocate
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
