package message

import (
	"net/netip"
	"strings"
)

// Message is one message with the fields of Java's MessageExt. Fields the
// store assigns (QueueOffset, CommitLogOffset, StoreTimestamp, BodyCRC,
// StoreSize) are zero on a message that has not been stored yet.
type Message struct {
	Topic      string
	Flag       int32
	Body       []byte
	Properties map[string]string
	// RawProperties, when Properties is nil, holds the properties as the
	// encoded string ("k 0x01 v 0x02" per entry, each key once, none
	// empty), stored as it is: a broker keeps a batch item's properties
	// that need no change this way (in key order, as the map's encoding
	// has them) instead of decoding them into a map (DecodeBatchRaw). Property reads it; SetProperty decodes it into
	// Properties first.
	RawProperties []byte

	SysFlag        int32
	BornTimestamp  int64 // ms
	BornHost       netip.AddrPort
	StoreTimestamp int64 // ms
	StoreHost      netip.AddrPort

	QueueID                   int32
	QueueOffset               int64
	CommitLogOffset           int64
	ReconsumeTimes            int32
	PreparedTransactionOffset int64

	BodyCRC   int32 // CRC32-IEEE(body) & 0x7FFFFFFF, set by encode/decode
	StoreSize int32 // stored record length, set by decode
}

// Property returns the value of a property ("" when absent).
func (m *Message) Property(key string) string {
	if m.Properties == nil && m.RawProperties != nil {
		v, _ := PropertyValue(m.RawProperties, key)
		return v
	}
	return m.Properties[key]
}

// SetProperty sets a property, allocating the map if needed (decoding
// RawProperties into it).
func (m *Message) SetProperty(key, value string) {
	if m.Properties == nil {
		m.Properties = DecodeProperties(m.RawProperties)
		m.RawProperties = nil
		if m.Properties == nil {
			m.Properties = make(map[string]string, 4)
		}
	}
	m.Properties[key] = value
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropertyTags) }

// Keys returns the business keys of the KEYS property (space-separated).
func (m *Message) Keys() []string {
	return strings.Fields(m.Property(PropertyKeys))
}

// UniqKey returns the UNIQ_KEY property (the client message id).
func (m *Message) UniqKey() string { return m.Property(PropertyUniqClientMessageIDKeyIdx) }

// OffsetMsgID returns the offset message id (docs/protocol.md §5.8) of a stored message.
func (m *Message) OffsetMsgID() string {
	return OffsetMsgID(m.StoreHost, m.CommitLogOffset)
}

// ClientMsgID is the id clients show: UNIQ_KEY if present, else the offset
// id.
func (m *Message) ClientMsgID() string {
	if k := m.UniqKey(); k != "" {
		return k
	}
	return m.OffsetMsgID()
}
