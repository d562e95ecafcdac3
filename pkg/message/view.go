package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// View is a validated, zero-copy window on one stored record. It aliases the
// bytes it was parsed from; they must not change while the View is used.
type View struct {
	b        []byte
	bodyPos  int32
	bodyLen  int32
	topicPos int32
	topicLen int32
	propsPos int32
	propsLen int32
}

// ParseOptions tune ParseView.
type ParseOptions struct {
	// VerifyCRC recomputes the body CRC and rejects a mismatch.
	VerifyCRC bool
	// MaxSize, when > 0, rejects records whose totalSize exceeds it before
	// looking further (a corrupt size field must not look "truncated").
	MaxSize int
}

// RecordHeader reads totalSize and magic from the start of b; ok is false
// when fewer than 8 bytes are available.
func RecordHeader(b []byte) (size, magic int32, ok bool) {
	if len(b) < 8 {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:])), true
}

// ParseView validates the record at the start of b and returns a View of
// exactly totalSize bytes. Errors: ErrTruncated when b is shorter than a
// plausible totalSize, ErrBlank for a BLANK record, ErrCorrupt otherwise.
func ParseView(b []byte, opts ParseOptions) (View, error) {
	size, magic, ok := RecordHeader(b)
	if !ok {
		return View{}, fmt.Errorf("%w: %d bytes, need a header", ErrTruncated, len(b))
	}
	var topicLenWidth int32
	switch magic {
	case MagicV1:
		topicLenWidth = 1
	case MagicV2:
		topicLenWidth = 2
	case BlankMagic:
		return View{}, ErrBlank
	default:
		return View{}, fmt.Errorf("%w: bad magic %#x", ErrCorrupt, uint32(magic))
	}
	if size < MinRecordSize || (opts.MaxSize > 0 && int(size) > opts.MaxSize) {
		return View{}, fmt.Errorf("%w: totalSize %d out of bounds", ErrCorrupt, size)
	}
	if int(size) > len(b) {
		return View{}, fmt.Errorf("%w: totalSize %d, have %d bytes", ErrTruncated, size, len(b))
	}
	b = b[:size]
	sysFlag := int32(binary.BigEndian.Uint32(b[PosSysFlag:]))
	p := int32(PosBornHost + hostLen(sysFlag&FlagBornHostV6 != 0) + 8 +
		hostLen(sysFlag&FlagStoreHostV6 != 0) + 4 + 8)
	// Each step checks the next length field is inside the record; p stays
	// ≤ size, so int32 arithmetic cannot overflow.
	if p+4 > size {
		return View{}, fmt.Errorf("%w: totalSize %d too small for sysFlag %#x", ErrCorrupt, size, sysFlag)
	}
	v := View{b: b}
	v.bodyLen = int32(binary.BigEndian.Uint32(b[p:]))
	v.bodyPos = p + 4
	if v.bodyLen < 0 || v.bodyLen > size-v.bodyPos-topicLenWidth-2 {
		return View{}, fmt.Errorf("%w: bodyLen %d out of bounds", ErrCorrupt, v.bodyLen)
	}
	p = v.bodyPos + v.bodyLen
	if topicLenWidth == 1 {
		v.topicLen = int32(int8(b[p]))
	} else {
		v.topicLen = int32(int16(binary.BigEndian.Uint16(b[p:])))
	}
	v.topicPos = p + topicLenWidth
	if v.topicLen < 0 || v.topicLen > size-v.topicPos-2 {
		return View{}, fmt.Errorf("%w: topicLen %d out of bounds", ErrCorrupt, v.topicLen)
	}
	p = v.topicPos + v.topicLen
	v.propsLen = int32(int16(binary.BigEndian.Uint16(b[p:])))
	v.propsPos = p + 2
	if v.propsLen < 0 || v.propsPos+v.propsLen != size {
		return View{}, fmt.Errorf("%w: propsLen %d does not end the record (totalSize %d)", ErrCorrupt, v.propsLen, size)
	}
	if opts.VerifyCRC {
		if got, want := BodyCRC(v.Body()), v.BodyCRC(); got != want {
			return View{}, fmt.Errorf("%w: body CRC %d, stored %d", ErrCorrupt, got, want)
		}
	}
	return v, nil
}

// BodyCRC is the stored body checksum: CRC32-IEEE & 0x7FFFFFFF (Java
// UtilAll.crc32).
func BodyCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

func (v View) i32(pos int) int32 { return int32(binary.BigEndian.Uint32(v.b[pos:])) }
func (v View) i64(pos int) int64 { return int64(binary.BigEndian.Uint64(v.b[pos:])) }

// Bytes returns the whole record.
func (v View) Bytes() []byte { return v.b }

// TotalSize is the record length.
func (v View) TotalSize() int32 { return int32(len(v.b)) }

// Magic is MagicV1 or MagicV2.
func (v View) Magic() int32 { return v.i32(PosMagic) }

// BodyCRC is the stored body checksum.
func (v View) BodyCRC() int32 { return v.i32(PosBodyCRC) }

// QueueID is the consume queue id.
func (v View) QueueID() int32 { return v.i32(PosQueueID) }

// Flag is the user flag.
func (v View) Flag() int32 { return v.i32(PosFlag) }

// QueueOffset is the consume-queue (logical) offset.
func (v View) QueueOffset() int64 { return v.i64(PosQueueOffset) }

// PhysicalOffset is the CommitLog offset recorded in the record.
func (v View) PhysicalOffset() int64 { return v.i64(PosPhysicalOffset) }

// SysFlag is the message sysFlag (docs/protocol.md §5.7).
func (v View) SysFlag() int32 { return v.i32(PosSysFlag) }

// BornTimestamp is the producer's timestamp (ms).
func (v View) BornTimestamp() int64 { return v.i64(PosBornTimestamp) }

// BornHost is the producer address.
func (v View) BornHost() netip.AddrPort {
	return readHost(v.b[PosBornHost:], v.SysFlag()&FlagBornHostV6 != 0)
}

func (v View) storeTSPos() int { return StoreTimestampPos(v.SysFlag()) }

// StoreTimestamp is the broker's append time (ms).
func (v View) StoreTimestamp() int64 { return v.i64(v.storeTSPos()) }

// StoreHost is the broker address.
func (v View) StoreHost() netip.AddrPort {
	return readHost(v.b[v.storeTSPos()+8:], v.SysFlag()&FlagStoreHostV6 != 0)
}

// StoreHostBytes returns the raw store host field (address ‖ int32 port),
// which is exactly the prefix of an offset message id.
func (v View) StoreHostBytes() []byte {
	p := v.storeTSPos() + 8
	return v.b[p : p+hostLen(v.SysFlag()&FlagStoreHostV6 != 0)]
}

func (v View) afterStoreHost() int {
	return v.storeTSPos() + 8 + hostLen(v.SysFlag()&FlagStoreHostV6 != 0)
}

// ReconsumeTimes is the redelivery count.
func (v View) ReconsumeTimes() int32 { return v.i32(v.afterStoreHost()) }

// PreparedTransactionOffset is the half message's offset for commit records.
func (v View) PreparedTransactionOffset() int64 { return v.i64(v.afterStoreHost() + 4) }

// Body aliases the stored (possibly compressed) body.
func (v View) Body() []byte { return v.b[v.bodyPos : v.bodyPos+v.bodyLen : v.bodyPos+v.bodyLen] }

// Topic aliases the topic bytes.
func (v View) Topic() []byte { return v.b[v.topicPos : v.topicPos+v.topicLen : v.topicPos+v.topicLen] }

// Properties aliases the raw properties string.
func (v View) Properties() []byte {
	return v.b[v.propsPos : v.propsPos+v.propsLen : v.propsPos+v.propsLen]
}

// Property looks one property up without allocating a map.
func (v View) Property(key string) (string, bool) { return PropertyValue(v.Properties(), key) }

// VerifyCRC reports whether the stored body CRC matches the body.
func (v View) VerifyCRC() bool { return BodyCRC(v.Body()) == v.BodyCRC() }

// OffsetMsgID is the offset message id of this record.
func (v View) OffsetMsgID() string {
	return string(appendOffsetMsgID(nil, v.StoreHostBytes(), v.PhysicalOffset()))
}

func readHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), uint16(binary.BigEndian.Uint32(b[16:])))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(binary.BigEndian.Uint32(b[4:])))
}

// hostPortValid reports whether the int32 port of a host field fits uint16.
func hostPortValid(b []byte, v6 bool) bool {
	p := 4
	if v6 {
		p = 16
	}
	return binary.BigEndian.Uint32(b[p:]) <= 0xFFFF
}
