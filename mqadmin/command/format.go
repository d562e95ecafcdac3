package command

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/internal/javaorder"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Helpers that reproduce how the Java tool renders values.

// javaDouble is Java's Double.toString (what "%s" prints for a double):
// "0.0", "12.5", "1.0E7", "1.0E-4".
func javaDouble(d float64) string {
	switch {
	case math.IsNaN(d):
		return "NaN"
	case math.IsInf(d, 1):
		return "Infinity"
	case math.IsInf(d, -1):
		return "-Infinity"
	case d == 0:
		if math.Signbit(d) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(d)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(d, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(d, 'e', -1, 64) // 1.2345e+07
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaFixed is Java's "%.<prec>f": it rounds the shortest decimal
// representation of v half-up (Go's fmt rounds the exact binary value
// half-even, so 0.125 gives "0.12" in Go and "0.13" in Java).
func javaFixed(v float64, prec int) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	if math.IsInf(v, 0) {
		if v > 0 {
			return "Infinity"
		}
		return "-Infinity"
	}
	neg := math.Signbit(v)
	s := strconv.FormatFloat(math.Abs(v), 'f', -1, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= prec {
		frac += strings.Repeat("0", prec-len(frac))
	} else {
		roundUp := frac[prec] >= '5'
		frac = frac[:prec]
		if roundUp {
			digits := []byte(intPart + frac)
			i := len(digits) - 1
			for ; i >= 0; i-- {
				if digits[i] == '9' {
					digits[i] = '0'
					continue
				}
				digits[i]++
				break
			}
			if i < 0 {
				digits = append([]byte{'1'}, digits...)
			}
			intPart, frac = string(digits[:len(digits)-prec]), string(digits[len(digits)-prec:])
		}
	}
	out := intPart
	if prec > 0 {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// humanTime2 is UtilAll.timeMillisToHumanString2: "2023-11-14 22:13:20,000".
func humanTime2(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("2006-01-02 15:04:05,000")
}

// frontStringAtLeast is UtilAll.frontStringAtLeast: at most size characters.
func frontStringAtLeast(s string, size int) string {
	r := []rune(s)
	if len(r) > size {
		return string(r[:size])
	}
	return s
}

// nullable renders a Java String that may be null.
func nullable(s string, ok bool) string {
	if !ok {
		return "null"
	}
	return s
}

// javaStringMap is AbstractMap.toString of a string map, "{a=1, b=2}", in
// the given key order (sorted when nil).
func javaStringMap(m map[string]string, keys []string) string {
	if keys == nil {
		keys = sortedKeys(m)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// javaAddrMap is HashMap<Long,String>.toString: "{0=10.0.0.1:10911, 1=...}".
func javaAddrMap(m map[int64]string) string {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(id, 10) + "=" + m[id])
	}
	b.WriteByte('}')
	return b.String()
}

// topicConfigString is TopicConfig.toString; attrOrder lists the attribute
// keys in print order.
func topicConfigString(tc protocol.TopicConfig, attrOrder []string) string {
	filter := tc.TopicFilterType
	if filter == "" {
		filter = protocol.SingleTag
	}
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%t, attributes=%s]",
		tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, protocol.PermString(tc.Perm), filter, tc.TopicSysFlag, tc.Order, javaStringMap(tc.Attributes, attrOrder))
}

// writeJSON prints v as indented JSON (--output json).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// writeJSONField writes {"key": v}, the shape of most list outputs.
func writeJSONField(w io.Writer, key string, v any) error {
	return writeJSON(w, map[string]any{key: v})
}

func javaStringHash(s string) int32 { return javaorder.StringHash(s) }

// Java collection kinds whose iteration order javaHashOrder reproduces.
const (
	hashMapDefault = javaorder.HashMapDefault
	hashMapCap4    = javaorder.HashMapCap4
)

// javaHashOrder is javaorder.HashOrder: keys in the iteration order of a
// Java HashMap/HashSet (or ConcurrentHashMap when concurrent), which the
// Java tool prints many collections in.
func javaHashOrder(keys []string, initialCap int, concurrent bool) []string {
	return javaorder.HashOrder(keys, initialCap, concurrent)
}
