package figures

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Trace data separators (Java's TraceConstants).
const (
	traceContentSep = "\x01"
	traceFieldSep   = "\x02"
)

// TraceView is Java's TraceView: one trace record of the message.
type TraceView struct {
	MsgType    string `json:"msgType"` // Pub, SubBefore, SubAfter, EndTransaction, Recall
	GroupName  string `json:"groupName"`
	ClientHost string `json:"clientHost"`
	TimeStamp  int64  `json:"timeStamp"`
	CostTime   int    `json:"costTime"`
	Status     string `json:"status"` // success, failed
}

// JavaSplit is String.split with a literal separator: trailing empty
// strings are removed.
func JavaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// DecodeTraceViews is TraceView.decodeFromTraceTransData over Java's
// TraceDataEncoder format: the records of body about msgID. Fields an old
// client's record lacks keep TraceContext's defaults: group "", time now.
func DecodeTraceViews(msgID, body, bornHost string, now time.Time) ([]TraceView, error) {
	var out []TraceView
	for _, ctx := range JavaSplit(body, traceFieldSep) {
		line := JavaSplit(ctx, traceContentSep)
		if len(line) == 0 {
			continue
		}
		r := traceRecord{line: line}
		v := TraceView{MsgType: line[0], ClientHost: bornHost, Status: "success", TimeStamp: now.UnixMilli()}
		var id string
		switch line[0] {
		case "Pub":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			v.CostTime = int(r.num(10))
			switch {
			case len(line) == 13:
				v.Status = traceStatus(line[12])
			case len(line) >= 14:
				v.Status = traceStatus(line[13])
			}
		case "SubBefore":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			v.CostTime = 0
		case "SubAfter":
			id = r.field(2)
			v.CostTime = int(r.num(3))
			v.Status = traceStatus(r.field(4))
			if len(line) >= 9 {
				v.TimeStamp, v.GroupName = r.num(7), line[8]
			}
		case "EndTransaction", "Recall":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			if line[0] == "Recall" {
				v.Status = traceStatus(r.field(6))
			}
		default:
			continue
		}
		if r.err != nil {
			return nil, r.err
		}
		if id != msgID {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// traceRecord reads the fields of one trace record; the first missing or
// non-numeric field it is asked for is its err, and later reads return
// zero values.
type traceRecord struct {
	line []string
	err  error
}

func (r *traceRecord) field(i int) string {
	if r.err != nil {
		return ""
	}
	if i >= len(r.line) {
		r.err = fmt.Errorf("%s trace record has %d fields", r.line[0], len(r.line))
		return ""
	}
	return r.line[i]
}

func (r *traceRecord) num(i int) int64 {
	f := r.field(i)
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		r.err = err
	}
	return n
}

func traceStatus(s string) string {
	if strings.EqualFold(strings.TrimSpace(s), "true") {
		return "success"
	}
	return "failed"
}
