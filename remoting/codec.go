package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxFrameSize is the largest frame length field accepted (16 MiB), as
// the Java decoder's com.rocketmq.remoting.frameMaxLength.
const DefaultMaxFrameSize = 16 << 20

// rocketMQFixedHeader is the size of the fixed part of a ROCKETMQ header.
const rocketMQFixedHeader = 21

// Errors returned by the decoder. A frame that fails to decode cannot be
// answered (its opaque is unknown), so servers close the connection.
var (
	ErrFrameTooLarge    = errors.New("remoting: frame length exceeds the maximum")
	ErrFrameTooShort    = errors.New("remoting: frame shorter than its header")
	ErrHeaderLength     = errors.New("remoting: header length larger than the frame")
	ErrUnknownSerialize = errors.New("remoting: unknown header serialization type")
	ErrBadHeader        = errors.New("remoting: malformed header")
)

// FrameLength returns the total size of the frame starting at buf (including
// its own 4-byte length field), or 0 if fewer than 4 bytes are available.
// A length over max or under 4 is an error.
func FrameLength(buf []byte, max int) (int, error) {
	if len(buf) < 4 {
		return 0, nil
	}
	l := int(int32(binary.BigEndian.Uint32(buf)))
	if l < 4 {
		return 0, fmt.Errorf("%w: length field %d", ErrFrameTooShort, l)
	}
	if max > 0 && l > max {
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, l, max)
	}
	return l + 4, nil
}

// Decode decodes one frame body: the bytes after the 4-byte length field
// (so len(frame) == length field). The returned command's Body aliases frame.
func Decode(frame []byte) (*Command, error) { return DecodeDeferring(frame, nil) }

// DecodeDeferring is Decode leaving the extFields of a request whose code
// is in deferred undecoded (Command.Deferred) when its header is ROCKETMQ.
// A malformed extFields block is an error all the same.
func DecodeDeferring(frame []byte, deferred []int32) (*Command, error) {
	if len(frame) < 4 {
		return nil, ErrFrameTooShort
	}
	mark := binary.BigEndian.Uint32(frame)
	st := SerializeType(mark >> 24)
	hl := int(mark & 0xFFFFFF)
	if hl > len(frame)-4 {
		return nil, fmt.Errorf("%w: header %d, frame %d", ErrHeaderLength, hl, len(frame))
	}
	header := frame[4 : 4+hl]
	var (
		cmd *Command
		err error
	)
	switch st {
	case SerializeJSON:
		cmd, err = decodeJSONHeader(header)
	case SerializeRocketMQ:
		cmd, err = decodeRocketMQHeader(header, deferred)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownSerialize, st)
	}
	if err != nil {
		return nil, err
	}
	cmd.SerializeType = st
	if body := frame[4+hl:]; len(body) > 0 {
		cmd.Body = body
	}
	return cmd, nil
}

// Encode returns the whole frame for cmd, length field included, in the
// command's SerializeType.
func Encode(cmd *Command) ([]byte, error) {
	return AppendFrame(nil, cmd)
}

// AppendFrame appends the frame for cmd to dst.
func AppendFrame(dst []byte, cmd *Command) ([]byte, error) {
	dst, err := appendFrameHead(dst, cmd)
	if err != nil {
		return dst, err
	}
	return append(dst, cmd.Body...), nil
}

// appendFrameHead appends the frame for cmd up to its body: the length
// field counts the body, which the writer sends after it without copying
// it here first (a pull's answer is tens of KiB).
func appendFrameHead(dst []byte, cmd *Command) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	hstart := len(dst)
	st := cmd.SerializeType
	if st == SerializeRocketMQ && int32(int16(cmd.Code)) != cmd.Code {
		// The binary header holds a 16-bit code: pop and lite codes
		// (200050 and up) and ours (890000–890999) would be truncated, so
		// such a frame goes out with a JSON header, which every peer
		// decodes.
		st = SerializeJSON
	}
	ext := cmd.ExtFields
	if cmd.Deferred() {
		ext = rawExtMap(cmd.rawExt)
	}
	switch st {
	case SerializeJSON:
		dst = appendJSONHeader(dst, cmd, ext)
	case SerializeRocketMQ:
		dst = appendRocketMQHeader(dst, cmd, ext)
	default:
		return dst[:start], fmt.Errorf("%w: %d", ErrUnknownSerialize, cmd.SerializeType)
	}
	hl := len(dst) - hstart
	if hl > 0xFFFFFF {
		return dst[:start], fmt.Errorf("remoting: header of %d bytes exceeds 24 bits", hl)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+len(cmd.Body)))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(st)<<24|uint32(hl))
	return dst, nil
}

// ---- JSON header ----

// jsonHeaderOf is the JSON header with extFields decoded as an E.
type jsonHeaderOf[E any] struct {
	Code      int32        `json:"code"`
	Language  jsonLanguage `json:"language"`
	Version   int32        `json:"version"`
	Opaque    int32        `json:"opaque"`
	Flag      int32        `json:"flag"`
	Remark    *string      `json:"remark"`
	ExtFields E            `json:"extFields"`
}

// jsonHeader decodes the common case, every extFields value a JSON string,
// in one pass. Anything else (numbers, booleans from lenient peers) fails
// with a type error and goes through jsonHeaderLoose.
type jsonHeader = jsonHeaderOf[map[string]string]

type jsonHeaderLoose = jsonHeaderOf[json.RawMessage]

// jsonLanguage accepts the enum name (every known peer) or its ordinal;
// anything else is OTHER, never an error.
type jsonLanguage LanguageCode

func (l *jsonLanguage) UnmarshalJSON(b []byte) error {
	*l = jsonLanguage(LangOther)
	if len(b) >= 2 && b[0] == '"' {
		if bytes.IndexByte(b, '\\') < 0 { // no escapes: skip the string decoder
			*l = jsonLanguage(ParseLanguage(string(b[1 : len(b)-1])))
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err == nil {
			*l = jsonLanguage(ParseLanguage(s))
		}
	} else if n, err := strconv.Atoi(string(b)); err == nil && n >= 0 && n < 256 {
		*l = jsonLanguage(n)
	}
	return nil
}

func decodeJSONHeader(b []byte) (*Command, error) {
	h := jsonHeader{Language: jsonLanguage(LangOther)}
	if err := json.Unmarshal(b, &h); err == nil {
		return h.command(h.ExtFields), nil
	}
	l := jsonHeaderLoose{Language: jsonLanguage(LangOther)}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	var ext map[string]string
	if len(l.ExtFields) > 0 && string(l.ExtFields) != "null" {
		var err error
		if ext, err = decodeExtFields(l.ExtFields); err != nil {
			return nil, err
		}
	}
	return l.command(ext), nil
}

func (h jsonHeaderOf[E]) command(ext map[string]string) *Command {
	cmd := &Command{Code: h.Code, Language: LanguageCode(h.Language), Version: h.Version, Opaque: h.Opaque, Flag: h.Flag, ExtFields: ext}
	if h.Remark != nil {
		cmd.Remark = *h.Remark
	}
	return cmd
}

// decodeExtFields decodes the extFields object. Values are strings on the
// wire; other JSON values are tolerated and kept as their JSON text (numbers,
// booleans) so a lenient peer is still understood.
func decodeExtFields(raw json.RawMessage) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err == nil {
		return m, nil
	}
	var loose map[string]json.RawMessage
	if err := json.Unmarshal(raw, &loose); err != nil {
		return nil, fmt.Errorf("%w: extFields: %v", ErrBadHeader, err)
	}
	m = make(map[string]string, len(loose))
	for k, v := range loose {
		if len(v) > 0 && v[0] == '"' {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%w: extFields[%q]: %v", ErrBadHeader, k, err)
			}
			m[k] = s
			continue
		}
		if string(v) == "null" {
			continue
		}
		m[k] = validUTF8(v)
	}
	return m, nil
}

// validUTF8 returns b as a string with each invalid byte replaced by U+FFFD,
// as encoding/json does for string values. Raw (non-string) JSON values kept
// as text may carry invalid bytes inside nested strings; without this they
// would change when re-encoded (fuzzing found it).
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return string(out)
}

// appendJSONHeader writes the header the way client-go and fastjson both
// accept: fixed key order, remark omitted when empty, extFields values always
// JSON strings (client-go drops frames otherwise), keys sorted so the bytes
// are deterministic. It ends with the serializeTypeCurrentRPC key Java's
// headers carry: the Rust client (rocketmq-client-rust) drops a response
// without it, its header type requiring the key.
func appendJSONHeader(dst []byte, cmd *Command, ext map[string]string) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Code), 10)
	dst = append(dst, `,"language":"`...)
	dst = append(dst, cmd.Language.String()...)
	dst = append(dst, `","version":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Flag), 10)
	if cmd.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, cmd.Remark)
	}
	dst = append(dst, `,"extFields":{`...)
	if len(ext) > 0 {
		var small [24]string
		keys := small[:0]
		for k := range ext {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, ext[k])
		}
	}
	dst = append(dst, `},"serializeTypeCurrentRPC":"JSON"}`...)
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ---- ROCKETMQ binary header ----

func appendRocketMQHeader(dst []byte, cmd *Command, ext map[string]string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(cmd.Code)))
	dst = append(dst, byte(cmd.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(cmd.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(cmd.Remark)))
	dst = append(dst, cmd.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for k, v := range ext {
		// Java skips null keys and values; an empty string decodes as null there.
		if k == "" || v == "" {
			continue
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// internKey is string(b) without an allocation for the keys a signed
// request carries besides its header's (docs/protocol.md §7); one-byte
// keys (SEND_MESSAGE_V2's) never allocate.
func internKey(b []byte) string {
	switch string(b) {
	case "AccessKey":
		return "AccessKey"
	case "Signature":
		return "Signature"
	case "SecurityToken":
		return "SecurityToken"
	}
	return string(b)
}

// countExtFields counts the key/value pairs of a ROCKETMQ-encoded extFields
// block, stopping where the block is malformed (the decoder reports it).
func countExtFields(ext []byte) int {
	n := 0
	for q := 0; len(ext)-q >= 2; n++ {
		q += 2 + int(binary.BigEndian.Uint16(ext[q:]))
		if len(ext)-q < 4 {
			break
		}
		vl := int(int32(binary.BigEndian.Uint32(ext[q:])))
		if vl < 0 {
			break
		}
		q += 4 + vl
	}
	return n + 1
}

func decodeRocketMQHeader(b []byte, deferred []int32) (*Command, error) {
	if len(b) < rocketMQFixedHeader {
		return nil, fmt.Errorf("%w: ROCKETMQ header of %d bytes", ErrBadHeader, len(b))
	}
	cmd := &Command{
		Code:     int32(int16(binary.BigEndian.Uint16(b[0:]))),
		Language: LanguageCode(b[2]),
		Version:  int32(int16(binary.BigEndian.Uint16(b[3:]))),
		Opaque:   int32(binary.BigEndian.Uint32(b[5:])),
		Flag:     int32(binary.BigEndian.Uint32(b[9:])),
	}
	p := 13
	rl := int(int32(binary.BigEndian.Uint32(b[p:])))
	p += 4
	if rl < 0 || rl > len(b)-p-4 {
		return nil, fmt.Errorf("%w: remark length %d", ErrBadHeader, rl)
	}
	if rl > 0 {
		cmd.Remark = string(b[p : p+rl])
	}
	p += rl
	el := int(int32(binary.BigEndian.Uint32(b[p:])))
	p += 4
	if el < 0 || el > len(b)-p {
		return nil, fmt.Errorf("%w: extFields length %d", ErrBadHeader, el)
	}
	if el > 0 {
		ext := b[p : p+el]
		if err := checkRawExt(ext); err != nil {
			return nil, err
		}
		if !cmd.IsResponse() && slices.Contains(deferred, cmd.Code) {
			cmd.rawExt = ext
		} else {
			cmd.ExtFields = rawExtMap(ext)
		}
	}
	return cmd, nil
}

// checkRawExt reports the first flaw of a ROCKETMQ-encoded extFields block;
// nextRawExt and the functions built on it read only checked blocks.
func checkRawExt(ext []byte) error {
	for q := 0; q < len(ext); {
		if len(ext)-q < 2 {
			return fmt.Errorf("%w: truncated extFields key length", ErrBadHeader)
		}
		kl := int(binary.BigEndian.Uint16(ext[q:]))
		q += 2
		if kl > len(ext)-q {
			return fmt.Errorf("%w: extFields key length %d", ErrBadHeader, kl)
		}
		q += kl
		if len(ext)-q < 4 {
			return fmt.Errorf("%w: truncated extFields value length", ErrBadHeader)
		}
		vl := int(int32(binary.BigEndian.Uint32(ext[q:])))
		q += 4
		if vl < 0 || vl > len(ext)-q {
			return fmt.Errorf("%w: extFields value length %d", ErrBadHeader, vl)
		}
		q += vl
	}
	return nil
}

// nextRawExt returns the pair at offset q of a checked block and the offset
// of the next one.
func nextRawExt(ext []byte, q int) (k, v []byte, next int) {
	kl := int(binary.BigEndian.Uint16(ext[q:]))
	q += 2
	k = ext[q : q+kl : q+kl]
	q += kl
	vl := int(binary.BigEndian.Uint32(ext[q:]))
	q += 4
	return k, ext[q : q+vl : q+vl], q + vl
}

// lookupRawExt finds key in a checked block; the last of repeated keys
// wins, as when the block is decoded into a map.
func lookupRawExt(ext []byte, key string) (v []byte, ok bool) {
	for q := 0; q < len(ext); {
		k, val, next := nextRawExt(ext, q)
		if string(k) == key {
			v, ok = val, true
		}
		q = next
	}
	return v, ok
}

// rawExtMap decodes a checked block into a map.
func rawExtMap(ext []byte) map[string]string {
	// Sized for its fields: a SEND_MESSAGE_V2 header has more than a
	// small map's 8, and growing it cost more than this count.
	m := make(map[string]string, countExtFields(ext))
	for q := 0; q < len(ext); {
		k, v, next := nextRawExt(ext, q)
		m[internKey(k)] = string(v)
		q = next
	}
	return m
}
