// Package remoting implements RocketMQ's remoting protocol: the frame codec
// with both header serializations (JSON and ROCKETMQ binary), and the server
// and client that carry RemotingCommands over TCP.
package remoting

import (
	"iter"
	"strconv"
	"time"
)

// SerializeType is the header serialization of one frame (top byte of the
// second int32 of a frame).
type SerializeType uint8

const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

// LanguageCode identifies the sender's implementation language.
type LanguageCode uint8

const (
	LangJava   LanguageCode = 0
	LangCPP    LanguageCode = 1
	LangDotNet LanguageCode = 2
	LangPython LanguageCode = 3
	LangDelphi LanguageCode = 4
	LangErlang LanguageCode = 5
	LangRuby   LanguageCode = 6
	LangOther  LanguageCode = 7
	LangHTTP   LanguageCode = 8
	LangGo     LanguageCode = 9
	LangPHP    LanguageCode = 10
	LangOMS    LanguageCode = 11
	LangRust   LanguageCode = 12
	LangNodeJS LanguageCode = 13
)

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"}

func (l LanguageCode) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return "OTHER"
}

// ParseLanguage maps an enum name to its code; unknown names are OTHER.
func ParseLanguage(s string) LanguageCode {
	for i, n := range languageNames {
		if n == s {
			return LanguageCode(i)
		}
	}
	return LangOther
}

// Flag bits.
const (
	FlagResponse int32 = 1 << 0
	FlagOneway   int32 = 1 << 1
)

// CurrentVersion is the MQVersion ordinal we announce (V5_5_0).
const CurrentVersion int32 = 513

// Command is one RocketMQ RemotingCommand: a request or a response.
//
// Code is int32 in memory: codes above 32767 (pop 200050+, lite 200070+) only
// survive the JSON serialization; the ROCKETMQ binary header truncates to int16.
type Command struct {
	Code      int32
	Language  LanguageCode
	Version   int32
	Opaque    int32
	Flag      int32
	Remark    string
	ExtFields map[string]string
	Body      []byte

	// rawExt is the undecoded extFields block of a ROCKETMQ header (it
	// aliases the frame) when the server read the request with its fields
	// deferred (Server.DeferExtFields): Ext and ExtBytes read it in place
	// and Fields builds ExtFields from it. A non-nil ExtFields wins.
	rawExt []byte

	// SerializeType is the serialization the frame arrived in, or will be
	// written in. A response mirrors its request's.
	SerializeType SerializeType

	// Arrival numbers the requests a Server reads, in the order it read
	// them, across all connections (0: not read by a Server). Handlers run
	// on executors with several workers, so requests sent back to back may
	// run in either order; a handler for which the order matters compares
	// Arrival. Not on the wire.
	Arrival uint64
	// Received is when a Server read the request (zero otherwise): the
	// start of its processing time, as Java's RemotingCommand processTimer
	// (the broker's rpc latency metric). Not on the wire.
	Received time.Time

	// Written, when set, runs once a Channel has handed the command's
	// frame to its transport (which copied it) or failed to: Body may be
	// reused from then on (a pooled buffer). A command that is never
	// written to a Channel never calls it. Not on the wire.
	Written func()
}

// IsResponse reports whether flag bit 0 is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether flag bit 1 is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// MarkOneway sets the one-way bit.
func (c *Command) MarkOneway() { c.Flag |= FlagOneway }

// Ext returns an extFields value ("" when absent).
func (c *Command) Ext(key string) string {
	if c.ExtFields == nil {
		if c.rawExt != nil {
			v, _ := lookupRawExt(c.rawExt, key)
			return string(v)
		}
		return ""
	}
	return c.ExtFields[key]
}

// Deferred reports whether c's extFields are still undecoded: a request
// read by a server with its fields deferred (Server.DeferExtFields), whose
// ExtFields stays nil until Fields is called. Handlers of deferred codes
// read fields with Ext, ExtBytes or Fields, never ExtFields directly.
func (c *Command) Deferred() bool { return c.ExtFields == nil && c.rawExt != nil }

// ExtBytes returns a deferred command's extFields value in place (it
// aliases the frame: read it, never write it) and whether the key is
// present; the last of repeated keys wins, as in the map. On a command that
// is not deferred it is []byte(Ext(key)).
func (c *Command) ExtBytes(key string) ([]byte, bool) {
	if c.Deferred() {
		return lookupRawExt(c.rawExt, key)
	}
	v, ok := c.ExtFields[key]
	if !ok {
		return nil, false
	}
	return []byte(v), true
}

// ExtPairs yields the extFields of c in wire order for a deferred command
// (values alias the frame: read them, never write them; a repeated key
// comes again, the last one being the map's), else the map's pairs.
func (c *Command) ExtPairs() iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		if c.Deferred() {
			for q := 0; q < len(c.rawExt); {
				k, v, next := nextRawExt(c.rawExt, q)
				if !yield(k, v) {
					return
				}
				q = next
			}
			return
		}
		for k, v := range c.ExtFields {
			if !yield([]byte(k), []byte(v)) {
				return
			}
		}
	}
}

// Fields returns ExtFields, decoding a deferred command's fields into it
// first.
func (c *Command) Fields() map[string]string {
	if c.Deferred() {
		c.ExtFields = rawExtMap(c.rawExt)
		c.rawExt = nil
	}
	return c.ExtFields
}

// SetExt sets an extFields value, allocating the map on first use.
func (c *Command) SetExt(key, value string) {
	c.Fields()
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	c.ExtFields[key] = value
}

// NewRequest builds a request with language GO and JSON serialization. The
// opaque is assigned by the endpoint that sends it (Client, Channel), which
// keeps one counter per endpoint as RocketMQ does.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      code,
		Language:  LangGo,
		Version:   CurrentVersion,
		ExtFields: ext,
		Body:      body,
	}
}

// NewResponse builds the response to req with the given code and remark:
// same opaque, response flag, same serialization as the request.
func NewResponse(req *Command, code int32, remark string) *Command {
	return &Command{
		Code:          code,
		Language:      LangGo,
		Version:       CurrentVersion,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
}
