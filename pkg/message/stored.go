package message

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
)

// ErrTooLarge reports a field or record that does not fit the stored format.
var ErrTooLarge = errors.New("message: too large")

// EncodeStored returns m as a stored record (docs/protocol.md §5.6); see
// AppendStored.
func EncodeStored(m *Message) ([]byte, error) { return AppendStored(nil, m) }

// AppendStored appends m as a stored record to dst. Properties come from
// m.Properties (keys sorted), or from m.RawProperties as they are when
// m.Properties is nil. The magic is v1 unless the topic is longer than
// 127 bytes. The host-v6 sysFlag bits are derived from the addresses (an
// IPv4-mapped IPv6 address is stored as IPv4). The body CRC is computed
// here. QueueOffset, CommitLogOffset and StoreTimestamp are written as given:
// the CommitLog overwrites them at append time (see PatchStored).
func AppendStored(dst []byte, m *Message) ([]byte, error) {
	if m.Properties == nil && m.RawProperties != nil {
		return appendStored(dst, m, m.RawProperties, false)
	}
	return appendStored(dst, m, nil, true)
}

// AppendStoredRaw is AppendStored with an already encoded properties string
// (e.g. the producer's string plus AppendProperty additions); m.Properties
// is ignored.
func AppendStoredRaw(dst []byte, m *Message, props []byte) ([]byte, error) {
	return appendStored(dst, m, props, false)
}

// appendStored writes the record up to the topic, then the properties
// (straight into dst, as they are the last field), then patches totalSize
// and the properties length.
func appendStored(dst []byte, m *Message, props []byte, fromMap bool) ([]byte, error) {
	start := len(dst)
	sysFlag := m.SysFlag &^ (FlagBornHostV6 | FlagStoreHostV6)
	born, store := m.BornHost.Addr().Unmap(), m.StoreHost.Addr().Unmap()
	if born.Is6() {
		sysFlag |= FlagBornHostV6
	}
	if store.Is6() {
		sysFlag |= FlagStoreHostV6
	}
	if len(m.Topic) > maxTopicLenV2 {
		return dst, fmt.Errorf("%w: topic of %d bytes", ErrTooLarge, len(m.Topic))
	}
	if uint64(len(m.Body)) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: body of %d bytes", ErrTooLarge, len(m.Body))
	}
	magic := MagicV1
	if len(m.Topic) > maxTopicLenV1 {
		magic = MagicV2
	}
	be := binary.BigEndian
	dst = be.AppendUint32(dst, 0) // totalSize, patched below
	dst = be.AppendUint32(dst, uint32(magic))
	dst = be.AppendUint32(dst, uint32(BodyCRC(m.Body)))
	dst = be.AppendUint32(dst, uint32(m.QueueID))
	dst = be.AppendUint32(dst, uint32(m.Flag))
	dst = be.AppendUint64(dst, uint64(m.QueueOffset))
	dst = be.AppendUint64(dst, uint64(m.CommitLogOffset))
	dst = be.AppendUint32(dst, uint32(sysFlag))
	dst = be.AppendUint64(dst, uint64(m.BornTimestamp))
	dst = appendHost(dst, born, m.BornHost.Port())
	dst = be.AppendUint64(dst, uint64(m.StoreTimestamp))
	dst = appendHost(dst, store, m.StoreHost.Port())
	dst = be.AppendUint32(dst, uint32(m.ReconsumeTimes))
	dst = be.AppendUint64(dst, uint64(m.PreparedTransactionOffset))
	dst = be.AppendUint32(dst, uint32(len(m.Body)))
	dst = append(dst, m.Body...)
	if magic == MagicV1 {
		dst = append(dst, byte(len(m.Topic)))
	} else {
		dst = be.AppendUint16(dst, uint16(len(m.Topic)))
	}
	dst = append(dst, m.Topic...)
	propLenPos := len(dst)
	dst = be.AppendUint16(dst, 0)
	if fromMap {
		var err error
		if dst, err = AppendProperties(dst, m.Properties); err != nil {
			return dst[:start], err
		}
	} else {
		dst = append(dst, props...)
	}
	propsLen := len(dst) - propLenPos - 2
	size := len(dst) - start
	switch {
	case propsLen > MaxPropertiesLength:
		return dst[:start], fmt.Errorf("%w: properties of %d bytes (max %d)", ErrTooLarge, propsLen, MaxPropertiesLength)
	case size > math.MaxInt32:
		return dst[:start], fmt.Errorf("%w: record of %d bytes", ErrTooLarge, size)
	}
	be.PutUint16(dst[propLenPos:], uint16(propsLen))
	be.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// appendHost writes address ‖ int32 port; an invalid (zero) address is
// written as 0.0.0.0.
func appendHost(dst []byte, a netip.Addr, port uint16) []byte {
	if !a.IsValid() {
		a = netip.IPv4Unspecified()
	}
	dst = append(dst, a.AsSlice()...) // 4 bytes for IPv4, 16 for IPv6
	return binary.BigEndian.AppendUint32(dst, uint32(port))
}

// PatchStored overwrites the fields the CommitLog assigns at append time in
// an encoded record: queue offset, physical offset and store timestamp.
func PatchStored(rec []byte, queueOffset, physicalOffset, storeTimestamp int64) {
	be := binary.BigEndian
	be.PutUint64(rec[PosQueueOffset:], uint64(queueOffset))
	be.PutUint64(rec[PosPhysicalOffset:], uint64(physicalOffset))
	sysFlag := int32(be.Uint32(rec[PosSysFlag:]))
	be.PutUint64(rec[StoreTimestampPos(sysFlag):], uint64(storeTimestamp))
}

// AppendBlank appends a BLANK record of n bytes (n ≥ BlankMinSize): the
// filler at the end of a CommitLog file. Only the 8-byte header is
// meaningful; the rest is zeros.
func AppendBlank(dst []byte, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, 0xCBD43194) // BlankMagic
	for range n - 8 {
		dst = append(dst, 0)
	}
	return dst
}

// RecordSizeAt reads the totalSize field of the record at the start of b.
func RecordSizeAt(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// PatchBlankSize sets the size field of a BLANK record header.
func PatchBlankSize(b []byte, size int32) { binary.BigEndian.PutUint32(b, uint32(size)) }

// AppendRecordProperty appends one "key 0x01 value 0x02" property to the
// stored record that starts at start and ends rec, and fixes the record's
// properties length and total size. The broker adds a property it learns
// only after encoding (an LMQ offset assigned under a lock) this way,
// without encoding the record again.
func AppendRecordProperty(rec []byte, start int, key, value string) ([]byte, error) {
	if start < 0 || start > len(rec) {
		return rec, fmt.Errorf("%w: record start %d of %d bytes", ErrCorrupt, start, len(rec))
	}
	v, err := ParseView(rec[start:], ParseOptions{})
	if err != nil {
		return rec, err
	}
	if start+int(v.TotalSize()) != len(rec) {
		return rec, fmt.Errorf("%w: the record does not end the buffer", ErrCorrupt)
	}
	out, err := AppendProperty(rec, key, value)
	if err != nil {
		return rec, err
	}
	propsLen := int(v.propsLen) + len(out) - len(rec)
	if propsLen > MaxPropertiesLength {
		return rec, fmt.Errorf("%w: properties of %d bytes (max %d)", ErrTooLarge, propsLen, MaxPropertiesLength)
	}
	binary.BigEndian.PutUint16(out[start+int(v.propsPos)-2:], uint16(propsLen))
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start))
	return out, nil
}
