package send

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/remoting"
)

// sendHeader is SendMessageRequestHeader (docs/protocol.md §5.1), read from either
// the long names (SEND_MESSAGE, SEND_REPLY_MESSAGE) or the short names a…n
// (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE_V2).
type sendHeader struct {
	producerGroup         string
	topic                 string
	defaultTopic          string
	defaultTopicQueueNums int32
	queueID               int32
	sysFlag               int32
	bornTimestamp         int64
	flag                  int32
	properties            string
	reconsumeTimes        int32
	unitMode              bool
	maxReconsumeTimes     int32
	hasMaxReconsumeTimes  bool
	batch                 bool
}

// Header field names: short (V2) and long (V1). Java requires a…h.
const (
	fProducerGroup         = "a\x00producerGroup"
	fTopic                 = "b\x00topic"
	fDefaultTopic          = "c\x00defaultTopic"
	fDefaultTopicQueueNums = "d\x00defaultTopicQueueNums"
	fQueueID               = "e\x00queueId"
	fSysFlag               = "f\x00sysFlag"
	fBornTimestamp         = "g\x00bornTimestamp"
	fFlag                  = "h\x00flag"
	fProperties            = "i\x00properties"
	fReconsumeTimes        = "j\x00reconsumeTimes"
	fUnitMode              = "k\x00unitMode"
	fMaxReconsumeTimes     = "l\x00maxReconsumeTimes"
	fBatch                 = "m\x00batch"
)

// headerReader reads extFields by short or long name and keeps the first
// problem, so a handler reports one readable error naming the field. It
// lives on the caller's stack: no allocation unless a field is bad. It reads
// the map ext, or a deferred request's fields in place (req, when
// remoting.Command.Deferred): numbers are then parsed without a string.
type headerReader struct {
	ext   map[string]string
	raw   bool            // read vals, not ext
	vals  [nFields][]byte // raw: each field's value, by fieldIndex
	short bool
	err   error
	names *nameCache // raw: the strings of repeating names (nil: allocate each)
}

// nFields is the number of send header fields (a…m).
const nFields = 13

// fieldIndex is the index of a field constant in headerReader.vals.
func fieldIndex(f string) int { return int(f[0] - 'a') }

var fieldNames = [nFields]string{fProducerGroup, fTopic, fDefaultTopic, fDefaultTopicQueueNums, fQueueID,
	fSysFlag, fBornTimestamp, fFlag, fProperties, fReconsumeTimes, fUnitMode, fMaxReconsumeTimes, fBatch}

// collect reads a deferred request's fields in one pass over its header.
func (r *headerReader) collect(req *remoting.Command) {
	r.raw = true
	for k, v := range req.ExtPairs() {
		if r.short {
			if len(k) == 1 && k[0] >= 'a' && int(k[0]-'a') < nFields {
				r.vals[k[0]-'a'] = v
			}
			continue
		}
		for i, f := range fieldNames {
			if string(k) == f[2:] {
				r.vals[i] = v
			}
		}
	}
}

// get returns the field's value ("" when absent).
func (r *headerReader) get(f string) string {
	if r.raw {
		switch f {
		case fProducerGroup, fTopic, fDefaultTopic:
			return r.names.get(r.vals[fieldIndex(f)])
		}
		return string(r.vals[fieldIndex(f)])
	}
	return r.ext[r.key(f)]
}

// key picks the short or long half of a field constant (both halves are
// constant substrings, so this does not allocate).
func (r *headerReader) key(f string) string {
	if r.short {
		return f[:1]
	}
	return f[2:]
}

// describe names a field for remarks: "topic", or "b (topic)" for V2.
func describe(f string, short bool) string {
	if short {
		return f[:1] + " (" + f[2:] + ")"
	}
	return f[2:]
}

func (r *headerReader) fail(f, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: the custom field <%s> %s", processor.ErrBadHeader, describe(f, r.short), fmt.Sprintf(format, args...))
	}
}

func (r *headerReader) str(f string, required bool) string {
	v := r.get(f)
	if v == "" && required {
		r.fail(f, "is null")
	}
	return v
}

func (r *headerReader) int64(f string, required bool) (int64, bool) {
	if r.raw {
		if b := r.vals[fieldIndex(f)]; len(b) > 0 {
			// string(b) does not escape ParseInt: no allocation.
			if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
				return n, true
			}
		}
	}
	v := r.get(f)
	if v == "" {
		if required {
			r.fail(f, "is null")
		}
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// Java's Long.parseLong rejects blanks too; trim only as a fallback.
		if n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			r.fail(f, "is not a number: %q", v)
			return 0, false
		}
	}
	return n, true
}

func (r *headerReader) int32(f string, required bool) (int32, bool) {
	n, ok := r.int64(f, required)
	if n < -1<<31 || n > 1<<31-1 {
		r.fail(f, "is out of int range: %d", n)
		return 0, false
	}
	return int32(n), ok
}

func (r *headerReader) bool(f string) bool {
	if r.raw {
		// The common values without a string.
		switch string(r.vals[fieldIndex(f)]) {
		case "", "false":
			return false
		case "true":
			return true
		}
	}
	switch v := r.get(f); v {
	case "", "false", "False", "FALSE":
		return false
	case "true", "True", "TRUE":
		return true
	default:
		// Java's Boolean.parseBoolean: anything but "true" (any case) is false.
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
}

// parseSendHeader decodes the send header; short selects the V2 names.
func parseSendHeader(ext map[string]string, short bool) (sendHeader, error) {
	return readSendHeader(headerReader{ext: ext, short: short})
}

// parseSendRequest decodes req's send header, in place when its fields
// are deferred (remoting.Server.DeferExtFields); names, when not nil,
// holds the strings of recent topic and group names.
func parseSendRequest(req *remoting.Command, short bool, names *nameCache) (sendHeader, error) {
	if req.Deferred() {
		r := headerReader{short: short, names: names}
		r.collect(req)
		return readSendHeader(r)
	}
	return parseSendHeader(req.ExtFields, short)
}

func readSendHeader(r headerReader) (sendHeader, error) {
	var h sendHeader
	h.producerGroup = r.str(fProducerGroup, true)
	h.topic = r.str(fTopic, true)
	h.defaultTopic = r.str(fDefaultTopic, true)
	h.defaultTopicQueueNums, _ = r.int32(fDefaultTopicQueueNums, true)
	h.queueID, _ = r.int32(fQueueID, true)
	h.sysFlag, _ = r.int32(fSysFlag, true)
	h.bornTimestamp, _ = r.int64(fBornTimestamp, true)
	h.flag, _ = r.int32(fFlag, true)
	h.properties = r.str(fProperties, false)
	h.reconsumeTimes, _ = r.int32(fReconsumeTimes, false)
	h.unitMode = r.bool(fUnitMode)
	h.maxReconsumeTimes, h.hasMaxReconsumeTimes = r.int32(fMaxReconsumeTimes, false)
	h.batch = r.bool(fBatch)
	if r.err != nil {
		return sendHeader{}, r.err
	}
	return h, nil
}
