package statictopic

import (
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestRewritePull runs the response rewrite of docs/static-topics.md §7.2 on a three-segment
// logic queue: a (earliest, logic 0), b (middle, 10000), c (leader, 20000).
func TestRewritePull(t *testing.T) {
	items := []item{it("a", 0, 0, 0), it("b", 1, 0, 10000), it("c", 2, 0, 20000)}
	qc := queueCtx{topic: tpc, items: items, leader: &items[2]}
	type out struct {
		code                  int32
		next, min, max, delta int64
	}
	for _, tc := range []struct {
		name           string
		cur            int
		code           int32
		req            int64
		next, min, max int64
		want           out
	}{
		{"leader success", 2, code.Success, 3, 8, 0, 8, out{code.Success, 20008, 20000, 20008, 20000}},
		{"leader caught up", 2, code.PullNotFound, 8, 8, 0, 8, out{code.PullNotFound, 20008, 20000, 20008, 20000}},
		{"leader overflow badly: offset moved trusted", 2, code.PullOffsetMoved, 50, 8, 0, 8, out{code.PullOffsetMoved, 20008, 20000, 20008, 20000}},
		{"leader below min: retry", 2, code.PullOffsetMoved, 1, 4, 4, 8, out{code.PullRetryImmediately, 20004, 20004, 20008, 20000}},
		{"earliest below min: offset moved", 0, code.PullOffsetMoved, 1, 4, 4, 9, out{code.PullOffsetMoved, 4, 4, 20000, 0}},
		{"earliest exhausted: next segment", 0, code.PullNotFound, 9, 9, 0, 9, out{code.PullRetryImmediately, 10000, 10000, 20000, 10000}},
		{"middle below min: retry, never reset", 1, code.PullOffsetMoved, 0, 2, 2, 7, out{code.PullRetryImmediately, 10002, 10002, 20000, 10000}},
		{"middle exhausted: next segment", 1, code.PullOffsetMoved, 9, 7, 0, 7, out{code.PullRetryImmediately, 20000, 20000, 20000, 20000}},
		{"middle success", 1, code.Success, 2, 5, 0, 7, out{code.Success, 10005, 10000, 20000, 10000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := remoting.NewRequest(code.PullMessage, nil, nil)
			resp := remoting.NewResponse(req, tc.code, "x")
			resp.SetExt("nextBeginOffset", strconv.FormatInt(tc.next, 10))
			resp.SetExt("minOffset", strconv.FormatInt(tc.min, 10))
			resp.SetExt("maxOffset", strconv.FormatInt(tc.max, 10))
			resp.Body = []byte("body")
			r, _ := rewritePull(req, resp, qc, &items[tc.cur], tc.req)
			got := out{r.Code, remotingtest.ExtInt(t, r, "nextBeginOffset"), remotingtest.ExtInt(t, r, "minOffset"), remotingtest.ExtInt(t, r, "maxOffset"), remotingtest.ExtInt(t, r, "offsetDelta")}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if (r.Body != nil) != (r.Code == code.Success) {
				t.Errorf("body kept %v for code %d", r.Body != nil, r.Code)
			}
		})
	}
	// An undecided leader is never entered: the last decided segment ends
	// with "not found".
	items[2].LogicOffset = -1
	req := remoting.NewRequest(code.PullMessage, nil, nil)
	resp := remoting.NewResponse(req, code.PullNotFound, "")
	resp.SetExt("nextBeginOffset", "7")
	resp.SetExt("maxOffset", "7")
	if r, cur := rewritePull(req, resp, qc, &items[1], 7); r.Code != code.PullNotFound || cur.Gen != 1 || r.Ext("nextBeginOffset") != "10007" {
		t.Errorf("undecided leader entered: %d gen %d next %s", r.Code, cur.Gen, r.Ext("nextBeginOffset"))
	}
}

// TestEndDecidedSegment: a closed segment caps next at its end.
func TestEndDecidedSegment(t *testing.T) {
	items := []item{it("a", 0, 0, 0), it("b", 1, 0, 10000)}
	items[0].EndOffset = 5
	qc := queueCtx{topic: tpc, items: items, leader: &items[1]}
	req := remoting.NewRequest(code.PullMessage, nil, nil)
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("nextBeginOffset", "8")
	resp.SetExt("minOffset", "0")
	resp.SetExt("maxOffset", "9")
	if r, _ := rewritePull(req, resp, qc, &items[0], 3); r.Ext("nextBeginOffset") != "5" {
		t.Errorf("next %s, want the end 5", r.Ext("nextBeginOffset"))
	}
}
