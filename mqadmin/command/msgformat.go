package command

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// How the Java tool renders messages (MessageExt, its properties, hosts),
// for the message commands.

// javaMsgBodyDir is where the Java tool writes message bodies.
const javaMsgBodyDir = "/tmp/rocketmq/msgbodys"

// javaPropsCap is the initial capacity of the HashMap Java decodes message
// properties into (MessageDecoder.string2messageProperties).
const javaPropsCap = 128

// shownMessage is a message with what the Java tool prints it from.
type shownMessage struct {
	*message.Message
	// keys are the property keys in insertion order of Java's map: stored
	// order, then keys the client added (MIN_OFFSET, MAX_OFFSET).
	keys []string
	// brokerName is set on pulled messages (MessageExt.brokerName).
	brokerName string
}

// fromStored wraps a message read by query or view.
func fromStored(m *admin.StoredMessage) *shownMessage {
	return &shownMessage{Message: m.Message, keys: m.PropertyKeys}
}

// fromPulled wraps a message pulled with pkg/client: its stored key order
// is unknown, so sorted order is assumed (what our broker stores); the
// pull adds MIN_OFFSET then MAX_OFFSET last, as Java's client does.
func fromPulled(m *message.Message, brokerName string) *shownMessage {
	var keys []string
	for k := range m.Properties {
		if k != message.PropertyMinOffset && k != message.PropertyMaxOffset {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range []string{message.PropertyMinOffset, message.PropertyMaxOffset} {
		if _, ok := m.Properties[k]; ok {
			keys = append(keys, k)
		}
	}
	return &shownMessage{Message: m, keys: keys, brokerName: brokerName}
}

// propsString is the HashMap's toString ("{}" for a message without
// properties).
func (m *shownMessage) propsString() string {
	keys := m.keys
	for k := range m.Properties { // keys missing from the order, if any
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return javaStringMap(m.Properties, javaHashOrder(keys, javaPropsCap, false))
}

// nullableProp is a property as Java's getter returns it ("null" if absent).
func (m *shownMessage) nullableProp(key string) string {
	v, ok := m.Properties[key]
	return nullable(v, ok)
}

// javaInetAddr is InetAddress.getHostAddress: dotted IPv4, or eight
// uncompressed lower-case hex groups for IPv6.
func javaInetAddr(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	b := a.As16()
	parts := make([]string, 8)
	for i := range parts {
		parts[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
	}
	return strings.Join(parts, ":")
}

// javaHostPort is RemotingHelper.parseSocketAddressAddr of an
// InetSocketAddress: "127.0.0.1:10911", "[fd00:0:0:0:0:0:0:1]:10911".
func javaHostPort(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	a := ap.Addr().Unmap()
	host := javaInetAddr(a)
	if !a.Is4() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(ap.Port()))
}

// javaBytes is Arrays.toString(byte[]): signed values.
func javaBytes(b []byte) string {
	var s strings.Builder
	s.WriteByte('[')
	for i, c := range b {
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(strconv.Itoa(int(int8(c))))
	}
	s.WriteByte(']')
	return s.String()
}

// javaUTF8 is new String(bytes, UTF-8): malformed bytes become U+FFFD.
func javaUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.WriteRune(r) // RuneError (U+FFFD) for a malformed byte
		b = b[n:]
	}
	return s.String()
}

// decodeCharset is new String(bytes, charset) for the charsets -f
// (bodyFormat) accepts.
func decodeCharset(b []byte, charset string) (string, error) {
	switch strings.ToUpper(strings.ReplaceAll(charset, "_", "-")) {
	case "UTF-8", "UTF8":
		return javaUTF8(b), nil
	case "ISO-8859-1", "ISO8859-1", "LATIN1", "ISO-LATIN-1":
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r), nil
	case "US-ASCII", "ASCII":
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
			if c >= 0x80 {
				r[i] = utf8.RuneError
			}
		}
		return string(r), nil
	}
	return "", usagef("unsupported charset %q for -f: use UTF-8, ISO-8859-1 or US-ASCII", charset)
}

// javaMessageQueue is MessageQueue.toString.
func javaMessageQueue(mq protocol.MessageQueue) string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", mq.Topic, mq.BrokerName, mq.QueueID)
}

// messageExtString is MessageExt.toString (of a MessageClientExt: msgId is
// the offset id).
func (m *shownMessage) messageExtString() string {
	txID := "null"
	if strings.EqualFold(m.Property(message.PropertyTransactionPrepared), "true") {
		txID = m.nullableProp(message.PropertyUniqClientMessageIDKeyIdx)
	}
	props := m.propsString()
	return fmt.Sprintf("MessageExt [brokerName=%s, queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, bornHost=/%s, storeTimestamp=%d, storeHost=/%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, preparedTransactionOffset=%d, toString()=Message{topic='%s', flag=%d, properties=%s, body=%s, transactionId='%s'}]",
		nullable(m.brokerName, m.brokerName != ""), m.QueueID, m.StoreSize, m.QueueOffset, m.SysFlag, m.BornTimestamp, javaHostPort(m.BornHost),
		m.StoreTimestamp, javaHostPort(m.StoreHost), m.OffsetMsgID(), m.CommitLogOffset, m.BodyCRC, m.ReconsumeTimes, m.PreparedTransactionOffset,
		m.Topic, m.Flag, props, javaBytes(m.Body), txID)
}

// writeBodyFile writes the body to <dir>/<client msg id>[_index], as the
// Java tool's createBodyFile, and returns the path.
func (a *app) writeBodyFile(m *shownMessage, index int) (string, error) {
	dir := a.env.MsgBodyDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("message body file: %w", err)
	}
	name := m.ClientMsgID()
	if index > 0 {
		name += "_" + strconv.Itoa(index)
	}
	// The Java tool concatenates dir + "/" + id.
	path := strings.TrimSuffix(dir, "/") + "/" + name
	if filepath.Base(path) != name {
		return "", fmt.Errorf("message body file: bad message id %q", name)
	}
	if err := os.WriteFile(path, m.Body, 0o644); err != nil {
		return "", fmt.Errorf("message body file: %w", err)
	}
	return path, nil
}

// messageJSON is a message in --output json.
type messageJSON struct {
	MsgID           string               `json:"msgId"`
	OffsetMsgID     string               `json:"offsetMsgId"`
	Topic           string               `json:"topic"`
	BrokerName      string               `json:"brokerName,omitempty"`
	Tags            *string              `json:"tags"`
	Keys            *string              `json:"keys"`
	QueueID         int32                `json:"queueId"`
	QueueOffset     int64                `json:"queueOffset"`
	CommitLogOffset int64                `json:"commitLogOffset"`
	ReconsumeTimes  int32                `json:"reconsumeTimes"`
	BornTimestamp   int64                `json:"bornTimestamp"`
	StoreTimestamp  int64                `json:"storeTimestamp"`
	BornHost        string               `json:"bornHost"`
	StoreHost       string               `json:"storeHost"`
	SysFlag         int32                `json:"sysFlag"`
	Flag            int32                `json:"flag"`
	StoreSize       int32                `json:"storeSize"`
	BodyCRC         int32                `json:"bodyCRC"`
	Properties      map[string]string    `json:"properties"`
	BodyPath        string               `json:"bodyPath,omitempty"`
	Body            *string              `json:"body,omitempty"`
	Tracks          []admin.MessageTrack `json:"tracks,omitempty"`
	TrackError      string               `json:"trackError,omitempty"`
}

func optProp(m *message.Message, key string) *string {
	if v, ok := m.Properties[key]; ok {
		return &v
	}
	return nil
}

func (m *shownMessage) json() messageJSON {
	props := m.Properties
	if props == nil {
		props = map[string]string{}
	}
	return messageJSON{
		MsgID: m.ClientMsgID(), OffsetMsgID: m.OffsetMsgID(), Topic: m.Topic, BrokerName: m.brokerName,
		Tags: optProp(m.Message, message.PropertyTags), Keys: optProp(m.Message, message.PropertyKeys),
		QueueID: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, ReconsumeTimes: m.ReconsumeTimes,
		BornTimestamp: m.BornTimestamp, StoreTimestamp: m.StoreTimestamp, BornHost: javaHostPort(m.BornHost), StoreHost: javaHostPort(m.StoreHost),
		SysFlag: m.SysFlag, Flag: m.Flag, StoreSize: m.StoreSize, BodyCRC: m.BodyCRC, Properties: props,
	}
}

// javaTimestamp parses a consumeMessage time: epoch milliseconds, or
// yyyy-MM-dd#HH:mm:ss:SSS in local time (UtilAll.YYYY_MM_DD_HH_MM_SS_SSS).
func javaTimestamp(flag, s string, loc *time.Location) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	// Go layouts take fractional seconds only after '.' or ',': split off
	// the ":SSS" milliseconds.
	bad := usagef("invalid value %q for -%s: want milliseconds or yyyy-MM-dd#HH:mm:ss:SSS", s, flag)
	i := strings.LastIndexByte(s, ':')
	if i < 0 || len(s)-i-1 != 3 {
		return 0, bad
	}
	ms, err := strconv.Atoi(s[i+1:])
	if err != nil || ms < 0 {
		return 0, bad
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05", s[:i], loc)
	if err != nil {
		return 0, bad
	}
	return t.UnixMilli() + int64(ms), nil
}

// javaLong is Long.parseLong of a trimmed option value.
func javaLong(flag, s string) (int64, error) {
	return parseOptInt(flag, s, 64, "not an integer")
}

// mqHashCode is MessageQueue.hashCode.
func mqHashCode(mq protocol.MessageQueue) int32 {
	h := int32(1)
	h = 31*h + javaStringHash(mq.BrokerName)
	h = 31*h + int32(mq.QueueID)
	h = 31*h + javaStringHash(mq.Topic)
	return h
}

// javaHashSetOrder returns the queues in the iteration order of a
// java.util.HashSet<MessageQueue> they were added to in this order
// (default capacity, growing at 3/4).
func javaHashSetOrder(mqs []protocol.MessageQueue) []protocol.MessageQueue {
	n := hashMapDefault
	for len(mqs) > n*3/4 {
		n <<= 1
	}
	bucket := func(mq protocol.MessageQueue) uint32 {
		h := uint32(mqHashCode(mq))
		return (h ^ h>>16) & uint32(n-1)
	}
	out := slices.Clone(mqs)
	sort.SliceStable(out, func(i, j int) bool { return bucket(out[i]) < bucket(out[j]) })
	return out
}
