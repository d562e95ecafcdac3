package message

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
)

// ErrBadMsgID reports an offset message id that cannot be parsed.
var ErrBadMsgID = errors.New("message: bad offset message id")

// Offset message id lengths in hex characters (docs/protocol.md §5.8).
const (
	OffsetMsgIDLenV4 = 2 * (4 + 4 + 8)
	OffsetMsgIDLenV6 = 2 * (16 + 4 + 8)
)

// OffsetMsgID returns the offset ("server") message id:
// hex_upper(storeIP ‖ int32 port ‖ int64 commitLogOffset), 32 characters for
// IPv4 and 56 for IPv6.
func OffsetMsgID(storeHost netip.AddrPort, commitLogOffset int64) string {
	var host [hostLenV6]byte
	h := appendHost(host[:0], storeHost.Addr().Unmap(), storeHost.Port())
	return string(appendOffsetMsgID(make([]byte, 0, OffsetMsgIDLenV6), h, commitLogOffset))
}

// AppendOffsetMsgID appends the offset message id to dst.
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, commitLogOffset int64) []byte {
	var host [hostLenV6]byte
	h := appendHost(host[:0], storeHost.Addr().Unmap(), storeHost.Port())
	return appendOffsetMsgID(dst, h, commitLogOffset)
}

// AppendOffsetMsgIDRaw appends the offset message id for a raw store host
// field (address ‖ int32 port, as View.StoreHostBytes returns it).
func AppendOffsetMsgIDRaw(dst, storeHostField []byte, commitLogOffset int64) []byte {
	return appendOffsetMsgID(dst, storeHostField, commitLogOffset)
}

// appendOffsetMsgID hex-encodes a raw store host field and the offset.
func appendOffsetMsgID(dst, host []byte, offset int64) []byte {
	const digits = "0123456789ABCDEF"
	var raw [hostLenV6 + 8]byte
	n := copy(raw[:], host)
	binary.BigEndian.PutUint64(raw[n:], uint64(offset))
	for _, c := range raw[:n+8] {
		dst = append(dst, digits[c>>4], digits[c&0xF])
	}
	return dst
}

// ParseOffsetMsgID splits an offset message id into store host and
// commit-log offset. The address width follows from the length (32 → IPv4,
// 56 → IPv6); hex digits of either case are accepted.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var raw [hostLenV6 + 8]byte
	var ipLen int
	switch len(id) {
	case OffsetMsgIDLenV4:
		ipLen = 4
	case OffsetMsgIDLenV6:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d", ErrBadMsgID, len(id))
	}
	n, err := hex.Decode(raw[:], []byte(id))
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", ErrBadMsgID, err)
	}
	port := binary.BigEndian.Uint32(raw[ipLen:])
	if port > 0xFFFF {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: port %d", ErrBadMsgID, port)
	}
	var addr netip.Addr
	if ipLen == 4 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(raw[:16]))
	}
	off := int64(binary.BigEndian.Uint64(raw[ipLen+4 : n]))
	return netip.AddrPortFrom(addr, uint16(port)), off, nil
}
