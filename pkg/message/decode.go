package message

import (
	"fmt"
)

// DecodeOptions tune DecodeStored and DecodeAll.
type DecodeOptions struct {
	// VerifyCRC rejects records whose body CRC does not match.
	VerifyCRC bool
	// AliasBody makes Message.Body alias the input instead of copying it.
	AliasBody bool
	// MaxSize, when > 0, bounds totalSize.
	MaxSize int
}

// DecodeStored decodes the record at the start of b and returns it with the
// number of bytes it occupies.
func DecodeStored(b []byte, opts DecodeOptions) (*Message, int, error) {
	v, err := ParseView(b, ParseOptions{VerifyCRC: opts.VerifyCRC, MaxSize: opts.MaxSize})
	if err != nil {
		return nil, 0, err
	}
	m, err := v.Message(opts.AliasBody)
	if err != nil {
		return nil, 0, err
	}
	return m, len(v.b), nil
}

// Message decodes the view into an allocated Message. Ports outside 0–65535
// are rejected (Java only ever writes real ports).
func (v View) Message(aliasBody bool) (*Message, error) {
	sf := v.SysFlag()
	if !hostPortValid(v.b[PosBornHost:], sf&FlagBornHostV6 != 0) ||
		!hostPortValid(v.b[v.storeTSPos()+8:], sf&FlagStoreHostV6 != 0) {
		return nil, fmt.Errorf("%w: host port out of range", ErrCorrupt)
	}
	m := &Message{
		Topic:                     string(v.Topic()),
		Flag:                      v.Flag(),
		Properties:                DecodeProperties(v.Properties()),
		SysFlag:                   sf,
		BornTimestamp:             v.BornTimestamp(),
		BornHost:                  v.BornHost(),
		StoreTimestamp:            v.StoreTimestamp(),
		StoreHost:                 v.StoreHost(),
		QueueID:                   v.QueueID(),
		QueueOffset:               v.QueueOffset(),
		CommitLogOffset:           v.PhysicalOffset(),
		ReconsumeTimes:            v.ReconsumeTimes(),
		PreparedTransactionOffset: v.PreparedTransactionOffset(),
		BodyCRC:                   v.BodyCRC(),
		StoreSize:                 v.TotalSize(),
	}
	if aliasBody {
		m.Body = v.Body()
	} else {
		m.Body = append([]byte(nil), v.Body()...)
	}
	return m, nil
}

// DecodeAll decodes every record of a pull (or query, view, pop) body. Like
// Java's client it stops at the first record it cannot decode; the messages
// before it are returned together with the error.
func DecodeAll(b []byte, opts DecodeOptions) ([]*Message, error) {
	var out []*Message
	for off := 0; off < len(b); {
		m, n, err := DecodeStored(b[off:], opts)
		if err != nil {
			return out, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, m)
		off += n
	}
	return out, nil
}
