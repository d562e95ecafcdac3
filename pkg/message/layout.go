package message

// Stored record magic codes (Java MessageDecoder / CommitLog).
const (
	MagicV1 int32 = -626843481 // 0xDAA320A7: 1-byte topic length
	MagicV2 int32 = -626843477 // 0xDAA320AB: 2-byte topic length
	// BlankMagic marks the unused tail of a CommitLog file; the int32 before
	// it is the tail's length. Java: 0xBBCCDDEE ^ 1880681586 + 8.
	BlankMagic int32 = -875286124 // 0xCBD43194
)

// Fixed byte positions in a stored record (docs/protocol.md §5.6). Fields after
// the born host move by 12 bytes when it is IPv6.
const (
	PosTotalSize      = 0
	PosMagic          = 4
	PosBodyCRC        = 8
	PosQueueID        = 12
	PosFlag           = 16
	PosQueueOffset    = 20
	PosPhysicalOffset = 28
	PosSysFlag        = 36
	PosBornTimestamp  = 40
	PosBornHost       = 48
)

// Host field widths: address plus an int32 port.
const (
	hostLenV4 = 4 + 4
	hostLenV6 = 16 + 4
)

// MinRecordSize is the smallest valid record: IPv4 hosts, v1 magic, empty
// body, topic and properties (91 + body + topic + properties in general).
const MinRecordSize = 91

// BlankMinSize is the space a BLANK record needs (totalSize + magic). Java
// puts a message into a file only if it leaves at least this much behind, so
// every full file ends with a BLANK record.
const BlankMinSize = 8

// StoredSize is the record length for the given field sizes; the topic
// length selects the magic (v2 when longer than 127 bytes).
func StoredSize(sysFlag int32, bodyLen, topicLen, propsLen int) int {
	n := 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(sysFlag&FlagBornHostV6 != 0) +
		8 + hostLen(sysFlag&FlagStoreHostV6 != 0) + 4 + 8 +
		4 + bodyLen + 2 + propsLen + topicLen + 1
	if topicLen > maxTopicLenV1 {
		n++
	}
	return n
}

// StoredCap is an upper bound of m's record length (AppendStored's output),
// exact but for the hosts, counted as IPv6: encoders size their buffer with
// it instead of growing it field by field.
func StoredCap(m *Message) int {
	props := 0
	for k, v := range m.Properties {
		props += len(k) + len(v) + 2
	}
	if m.Properties == nil {
		props = len(m.RawProperties)
	}
	return StoredSize(FlagBornHostV6|FlagStoreHostV6, len(m.Body), len(m.Topic), props)
}

// maxTopicLenV1 is the largest topic a v1 record holds: Java reads its
// length as a signed byte.
const maxTopicLenV1 = 127

// maxTopicLenV2 is the largest topic a v2 record holds (signed int16).
const maxTopicLenV2 = 32767

func hostLen(v6 bool) int {
	if v6 {
		return hostLenV6
	}
	return hostLenV4
}

// StoreTimestampPos returns the position of storeTimestamp for sysFlag.
func StoreTimestampPos(sysFlag int32) int {
	return PosBornHost + hostLen(sysFlag&FlagBornHostV6 != 0)
}
