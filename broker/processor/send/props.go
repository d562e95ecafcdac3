package send

import (
	"fmt"
	"strings"

	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// decodeProps parses a producer's properties string with Java's tolerance
// (MessageDecoder.string2messageProperties: split on 0x02, first 0x01
// separates, items with an empty key or value dropped) and drops what must
// never be stored: transient properties (__RMQ.TRANSIENT.*) and POP_CK (a
// pop receipt handle copied from a consumed message). Keys and values are
// substrings of s, so the only allocation is the map; extra reserves room for
// the properties the broker adds.
func decodeProps(s string, extra int) map[string]string {
	m := make(map[string]string, strings.Count(s, "\x02")+1+extra)
	for len(s) > 0 {
		item := s
		if i := strings.IndexByte(s, message.PropertySeparator); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		sep := strings.IndexByte(item, message.NameValueSeparator)
		if sep <= 0 || sep >= len(item)-1 {
			continue
		}
		k := item[:sep]
		if k == message.PropertyPopCK || strings.HasPrefix(k, message.TransientPrefix) {
			continue
		}
		m[k] = item[sep+1:]
	}
	return m
}

// stripReserved applies decodeProps' filter to an already decoded map (batch
// items come decoded from message.DecodeBatch).
func stripReserved(m map[string]string) {
	for k := range m {
		if k == message.PropertyPopCK || strings.HasPrefix(k, message.TransientPrefix) {
			delete(m, k)
		}
	}
}

// plainProps reports whether a batch item's properties string holds only
// what Java and Go producers put on a plain message, each once and well
// formed: UNIQ_KEY (required), WAIT, KEYS, TAGS, every entry "k 0x01 v
// 0x02" with a non-empty value free of 0x01. Such an item needs nothing
// stripped or added, is a NORMAL message and not lite, and is stored
// with these entries put in key order (sortPlainInPlace): the bytes that
// decoding it into a map and encoding that would write.
func plainProps(b []byte) bool {
	_, _, ok := scanPlain(b)
	return ok
}

// scanPlain is plainProps, also returning the UNIQ_KEY and WAIT values
// (WAIT "" when absent).
func scanPlain[S string | []byte](b S) (uniq, wait S, ok bool) {
	var seen uint8
	for len(b) > 0 {
		end := indexByte(b, message.PropertySeparator)
		if end < 0 {
			return uniq, wait, false
		}
		item := b[:end]
		b = b[end+1:]
		sep := indexByte(item, message.NameValueSeparator)
		if sep <= 0 || sep == len(item)-1 || indexByte(item[sep+1:], message.NameValueSeparator) >= 0 {
			return uniq, wait, false
		}
		var bit uint8
		switch string(item[:sep]) {
		case message.PropertyUniqClientMessageIDKeyIdx:
			bit, uniq = 1, item[sep+1:]
		case message.PropertyWaitStoreMsgOK:
			bit, wait = 2, item[sep+1:]
		case message.PropertyKeys:
			bit = 4
		case message.PropertyTags:
			bit = 8
		default:
			return uniq, wait, false
		}
		if seen&bit != 0 {
			return uniq, wait, false
		}
		seen |= bit
	}
	return uniq, wait, seen&1 != 0
}

func indexByte[S string | []byte](s S, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// propsLen is the length of the properties string the store will write for
// m: "k 0x01 v 0x02" per entry.
func propsLen(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 2
	}
	return n
}

// checkPropsLen rejects properties that do not fit the record's int16
// length (Java: PROPERTIES_SIZE_EXCEEDED → MESSAGE_ILLEGAL).
func checkPropsLen(m map[string]string) error { return checkPropsBytes(propsLen(m)) }

// checkPropsBytes is checkPropsLen for an encoded length n.
func checkPropsBytes(n int) error {
	if n > message.MaxPropertiesLength {
		return fmt.Errorf("%w: properties of %d bytes exceed %d bytes", ErrMessageIllegal, n, message.MaxPropertiesLength)
	}
	return nil
}

// ApplyLite is the lite-topic hook of the send path (docs/lite-topics.md §3.1):
// a message carrying __LITE_TOPIC sent to a parent topic whose message.type
// is LITE is dispatched to the LMQ %LMQ%$<parent>$<lite>, named in
// INNER_MULTI_DISPATCH (overriding whatever the client put there). The lite
// name is validated here too [our choice, §1.4], with the rules and the
// byte limit of the lite package (maxSize is the broker's maxLiteTopicSize;
// ≤ 0: 64), because a '$' or ',' would corrupt LMQ name parsing and
// multi-dispatch. Whether the store may dispatch at all (enableLmq,
// enableMultiDispatch) is vetted earlier by the lite send checker; the quota
// is the store's business.
func ApplyLite(tc *protocol.TopicConfig, props map[string]string, maxSize int) error {
	lite, ok := props[message.PropertyLiteTopic]
	if !ok {
		return nil
	}
	if t, _ := tc.Attribute(topic.AttrMessageType); t != topic.MessageTypeLite {
		return nil
	}
	if err := naming.ValidateLite(lite, maxSize); err != nil {
		return fmt.Errorf("%w: %s %q: %v", ErrMessageIllegal, message.PropertyLiteTopic, lite, err)
	}
	lmq, _ := naming.LMQName(tc.TopicName, lite)
	props[message.PropertyInnerMultiDispatch] = lmq
	return nil
}
