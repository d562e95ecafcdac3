// Package checkmsg defines the message format and the JSON result shared by
// the real-client check programs:
//
//   - tests/cmd/gocheck                            (Go, rocketmq-client-go v2)
//   - scripts/java/src/main/java/rmqgo/ClientCheck.java (Java, rocketmq-client)
//   - scripts/node/client-check.js                 (Node, ali-ons)
//
// so that any of them can verify messages produced by any other. Message seq
// (0-based) of a run carries:
//
//	tag         tags[seq % len(tags)]
//	keys        "chk-RUN-SEQ seq-SEQ" (two keys, space separated)
//	body        Body(seq, size): size hex characters of an LCG stream seeded by seq
//	properties  check_run=RUN, check_seq=SEQ, check_len=len(body),
//	            check_crc=CRC-32/IEEE of the body (decimal),
//	            check_tag=the tag, check_client=java|go|node,
//	            check_utf8=UTF8Value
//
// The Java and Node programs implement the same functions; keep them in step
// (TestBodyGolden pins the generator).
package checkmsg

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// UTF8Value is the value of the check_utf8 property: non-ASCII text that must
// survive the property encoding unchanged.
const UTF8Value = "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c"

// DefaultSizes are the body sizes cycled by sequence number: around the
// clients' 4 KiB compression threshold, and up to 64 KiB.
const DefaultSizes = "16,128,1000,4095,4096,4097,20000,65536"

// Property names.
const (
	PropRun    = "check_run"
	PropSeq    = "check_seq"
	PropLen    = "check_len"
	PropCRC    = "check_crc"
	PropTag    = "check_tag"
	PropClient = "check_client"
	PropUTF8   = "check_utf8"
)

const hexDigits = "0123456789abcdef"

// Body returns the body of message seq with n bytes.
func Body(seq, n int) []byte {
	b := make([]byte, n)
	x := uint32(seq)*0x9E3779B1 + 0x7F4A7C15
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = hexDigits[x>>28]
	}
	return b
}

// CRC is the check_crc value of body.
func CRC(body []byte) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}

// Keys is the keys string of message seq of run, as the client joins it.
func Keys(run string, seq int) string {
	return KeyList(run, seq)[0] + " " + KeyList(run, seq)[1]
}

// KeyList is Keys as the list given to a client's WithKeys/setKeys.
func KeyList(run string, seq int) []string {
	return []string{fmt.Sprintf("chk-%s-%d", run, seq), fmt.Sprintf("seq-%d", seq)}
}

// Props returns the check properties of message seq.
func Props(run string, seq int, body []byte, tag, client string) map[string]string {
	return map[string]string{
		PropRun:    run,
		PropSeq:    strconv.Itoa(seq),
		PropLen:    strconv.Itoa(len(body)),
		PropCRC:    CRC(body),
		PropTag:    tag,
		PropClient: client,
		PropUTF8:   UTF8Value,
	}
}

// ParseSizes parses a comma separated list of body sizes.
func ParseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		sizes = append(sizes, n)
	}
	if len(sizes) == 0 {
		return nil, errors.New("no sizes")
	}
	return sizes, nil
}

// MatchExpr reports whether tag matches a tag subscription expression: "*"
// or "" match everything, otherwise "A || B || ...".
func MatchExpr(expr, tag string) bool {
	e := strings.TrimSpace(expr)
	if e == "" || e == "*" {
		return true
	}
	for _, t := range strings.Split(e, "||") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}

// Expected counts the messages 0..count-1 whose tag matches expr.
func Expected(count int, tags []string, expr string) int {
	n := 0
	for seq := 0; seq < count; seq++ {
		if MatchExpr(expr, tags[seq%len(tags)]) {
			n++
		}
	}
	return n
}

// Received is what a consumer got, in client-neutral form.
type Received struct {
	Topic string
	Tags  string
	Keys  string
	Body  []byte
	Props map[string]string
}

// ID returns the run and sequence number of a check message; ok is false
// for a message without check properties (a foreign message).
func (r Received) ID() (run string, seq int, ok bool) {
	run, okRun := r.Props[PropRun]
	seq, err := strconv.Atoi(r.Props[PropSeq])
	return run, seq, okRun && err == nil
}

// Verify checks a received message against its check properties, the topic
// and the subscription expression; nil means it is exactly what was sent.
func Verify(r Received, topic, expr string) error {
	run, seq, ok := r.ID()
	if !ok {
		return fmt.Errorf("no check properties: %v", r.Props)
	}
	n, err := strconv.Atoi(r.Props[PropLen])
	if err != nil {
		return fmt.Errorf("seq %d: bad %s %q", seq, PropLen, r.Props[PropLen])
	}
	if r.Topic != topic {
		return fmt.Errorf("seq %d: topic %q != %q", seq, r.Topic, topic)
	}
	if len(r.Body) != n {
		return fmt.Errorf("seq %d: body length %d != %d", seq, len(r.Body), n)
	}
	if c := CRC(r.Body); c != r.Props[PropCRC] {
		return fmt.Errorf("seq %d: body crc %s != %s", seq, c, r.Props[PropCRC])
	}
	if string(r.Body) != string(Body(seq, n)) {
		return fmt.Errorf("seq %d: body differs from the generated one", seq)
	}
	tag := r.Props[PropTag]
	if tag == "" || r.Tags != tag {
		return fmt.Errorf("seq %d: tags %q != %q", seq, r.Tags, tag)
	}
	if !MatchExpr(expr, tag) {
		return fmt.Errorf("seq %d: tag %q does not match the subscription %q", seq, tag, expr)
	}
	if want := Keys(run, seq); r.Keys != want {
		return fmt.Errorf("seq %d: keys %q != %q", seq, r.Keys, want)
	}
	if r.Props[PropUTF8] != UTF8Value {
		return fmt.Errorf("seq %d: %s %q != %q", seq, PropUTF8, r.Props[PropUTF8], UTF8Value)
	}
	if r.Props[PropClient] == "" {
		return fmt.Errorf("seq %d: no %s", seq, PropClient)
	}
	return nil
}

// Result is the JSON object every check program prints as its last line on
// stdout. Fields that do not apply to a mode are zero.
type Result struct {
	Client            string `json:"client"`
	ClientVersion     string `json:"client_version,omitempty"`
	ClientVersionCode int    `json:"client_version_code,omitempty"`
	Mode              string `json:"mode"`
	Namesrv           string `json:"namesrv"`
	Topic             string `json:"topic"`
	Group             string `json:"group"`
	Run               string `json:"run"`

	SendMode   string `json:"send_mode,omitempty"`
	Sent       int64  `json:"sent"`
	Failed     int64  `json:"failed"`
	SendMs     int64  `json:"send_ms"`
	SendPerSec int64  `json:"send_per_sec"`

	Expected int64 `json:"expected"`
	Consumed
	ConsumePerSec int64 `json:"consume_per_sec"`

	// Groups has one entry per consumer group (gocheck -groups N).
	Groups []GroupResult `json:"groups,omitempty"`

	TotalMs int64    `json:"total_ms"`
	OK      bool     `json:"ok"`
	Errors  []string `json:"errors"`
}

// GroupResult is the consume side of one consumer group.
type GroupResult struct {
	Group     string `json:"group"`
	Consumers int    `json:"consumers"`
	Consumed
}

// Consumed is what a consume side counted: messages received, distinct
// ones, duplicates, ones that failed verification, ones of another run,
// and how long it took.
type Consumed struct {
	Received   int64 `json:"received"`
	Distinct   int64 `json:"distinct"`
	Duplicates int64 `json:"duplicates"`
	Mismatched int64 `json:"mismatched"`
	Foreign    int64 `json:"foreign"`
	ConsumeMs  int64 `json:"consume_ms"`
}
