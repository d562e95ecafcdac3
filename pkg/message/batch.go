package message

import (
	"encoding/binary"
	"fmt"
)

// batchFixed is the fixed part of one batch item: totalSize, magic,
// bodyCRC, flag, bodyLen (int32 each) and propLen (int16).
const batchFixed = 4 + 4 + 4 + 4 + 4 + 2

// DecodeBatch splits a SEND_BATCH_MESSAGE body (docs/protocol.md §5.3) into
// messages carrying Flag, Body and Properties; topic, queue, sysFlag and born
// fields come from the request header and are left for the caller. Each
// item's totalSize must equal 22 + bodyLen + propLen, as both clients write
// it. Bodies alias b.
func DecodeBatch(b []byte) ([]*Message, error) { return decodeBatch(b, false) }

// DecodeBatchRaw is DecodeBatch leaving each item's properties undecoded:
// RawProperties aliases b and Properties is nil. The caller decodes those
// it must change or check (DecodeProperties) and may store the others as
// they are, provided they are well formed (see Message.RawProperties).
func DecodeBatchRaw(b []byte) ([]*Message, error) { return decodeBatch(b, true) }

func decodeBatch(b []byte, raw bool) ([]*Message, error) {
	be := binary.BigEndian
	// One allocation for the items: count them by their totalSize fields
	// first (checked properly below).
	n := 0
	for off := 0; off+4 <= len(b) && n < len(b)/batchFixed; n++ {
		t := int(int32(be.Uint32(b[off:])))
		if t < batchFixed {
			n++
			break
		}
		off += t
	}
	items := make([]Message, 0, n)
	out := make([]*Message, 0, n)
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < batchFixed {
			return nil, fmt.Errorf("%w: batch item at byte %d: %d bytes left", ErrCorrupt, off, len(rest))
		}
		total := int64(int32(be.Uint32(rest)))
		bodyLen := int64(int32(be.Uint32(rest[16:])))
		if bodyLen < 0 || bodyLen > int64(len(rest))-batchFixed {
			return nil, fmt.Errorf("%w: batch item at byte %d: bodyLen %d", ErrCorrupt, off, bodyLen)
		}
		p := 20 + int(bodyLen)
		propLen := int64(int16(be.Uint16(rest[p:])))
		if propLen < 0 || propLen > int64(len(rest)-p-2) {
			return nil, fmt.Errorf("%w: batch item at byte %d: propLen %d", ErrCorrupt, off, propLen)
		}
		if total != batchFixed+bodyLen+propLen {
			return nil, fmt.Errorf("%w: batch item at byte %d: totalSize %d, fields need %d",
				ErrCorrupt, off, total, batchFixed+bodyLen+propLen)
		}
		props := rest[p+2 : p+2+int(propLen) : p+2+int(propLen)]
		m := Message{Flag: int32(be.Uint32(rest[12:])), Body: rest[20:p:p]}
		if raw {
			m.RawProperties = props
		} else {
			m.Properties = DecodeProperties(props)
		}
		items = append(items, m)
		out = append(out, &items[len(items)-1])
		off += int(total)
	}
	return out, nil
}

// AppendBatchItem appends one batch item (what a producer sends) to dst.
func AppendBatchItem(dst []byte, flag int32, body []byte, props map[string]string) ([]byte, error) {
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0) // magic: unused in batches
	dst = be.AppendUint32(dst, 0) // bodyCRC: computed by the broker
	dst = be.AppendUint32(dst, uint32(flag))
	dst = be.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	pl := len(dst)
	dst = be.AppendUint16(dst, 0)
	dst, err := AppendProperties(dst, props)
	if err != nil {
		return dst[:start], err
	}
	n := len(dst) - pl - 2
	if n > MaxPropertiesLength {
		return dst[:start], fmt.Errorf("%w: properties of %d bytes", ErrTooLarge, n)
	}
	be.PutUint16(dst[pl:], uint16(n))
	be.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst, nil
}
