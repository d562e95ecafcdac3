package message

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// UniqIDGenerator creates UNIQ_KEY values with Java's layout
// (MessageClientIDSetter): hex_upper(IP ‖ int16 pid ‖ int32 salt ‖
// int32 msSinceMonthStart ‖ int16 counter), 32 characters for IPv4 and 56
// for IPv6. Month start is the first day of the clock's month at 00:00 in the
// clock's location. Safe for concurrent use.
type UniqIDGenerator struct {
	prefix  string
	now     func() time.Time
	counter atomic.Uint32

	mu        sync.Mutex
	startMS   int64 // this month's start, ms
	nextMS    int64 // next month's start, ms
	haveStart bool
}

// NewUniqIDGenerator builds a generator for the given address (the broker's
// or producer's IP), process id and salt (Java uses its class loader's hash
// code; any per-process value works). now defaults to time.Now.
func NewUniqIDGenerator(ip netip.Addr, pid int, salt int32, now func() time.Time) *UniqIDGenerator {
	if now == nil {
		now = time.Now
	}
	ip = ip.Unmap()
	if !ip.IsValid() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	b := ip.AsSlice() // 4 bytes for IPv4, 16 for IPv6
	b = binary.BigEndian.AppendUint16(b, uint16(pid))
	b = binary.BigEndian.AppendUint32(b, uint32(salt))
	return &UniqIDGenerator{prefix: strings.ToUpper(hex.EncodeToString(b)), now: now}
}

// Next returns a new id.
func (g *UniqIDGenerator) Next() string {
	t := g.now()
	ms := t.UnixMilli()
	g.mu.Lock()
	if !g.haveStart || ms >= g.nextMS || ms < g.startMS-int64(time.Hour/time.Millisecond) {
		y, mo, _ := t.Date()
		g.startMS = time.Date(y, mo, 1, 0, 0, 0, 0, t.Location()).UnixMilli()
		g.nextMS = time.Date(y, mo+1, 1, 0, 0, 0, 0, t.Location()).UnixMilli()
		g.haveStart = true
	}
	diff := ms - g.startMS
	g.mu.Unlock()
	if diff < 0 {
		diff = 0 // clock stepped back a little across a month start (Java does the same)
	}
	var tail [6]byte
	binary.BigEndian.PutUint32(tail[:], uint32(int32(diff)))
	binary.BigEndian.PutUint16(tail[4:], uint16(g.counter.Add(1)-1))
	var sb strings.Builder
	sb.Grow(len(g.prefix) + 12)
	sb.WriteString(g.prefix)
	const digits = "0123456789ABCDEF"
	for _, c := range tail {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&0xF])
	}
	return sb.String()
}
