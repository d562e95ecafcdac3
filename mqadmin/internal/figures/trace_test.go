package figures

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTraceDecoding(t *testing.T) {
	now := time.UnixMilli(1700000009999)
	rec := func(fields ...string) string { return strings.Join(fields, "\x01") + "\x02" }
	body := rec("SubAfter", "r", "ID", "9", "true", "k") + // old client: no time, no group
		rec("Pub", "1700000000000", "R", "pg", "T", "ID", "tag", "k", "h", "3", "2", "0", "false") + // 13 fields
		rec("EndTransaction", "1700000000001", "R", "pg", "T", "ID", "tag", "k", "h", "0", "tx", "COMMIT_MESSAGE", "false") +
		rec("SubAfter", "r2", "OTHER", "9", "true", "k", "0", "1", "g")
	views, err := DecodeTraceViews("ID", body, "1.2.3.4", now)
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceView{
		{MsgType: "SubAfter", GroupName: "", ClientHost: "1.2.3.4", TimeStamp: now.UnixMilli(), CostTime: 9, Status: "success"},
		{MsgType: "Pub", GroupName: "pg", ClientHost: "1.2.3.4", TimeStamp: 1700000000000, CostTime: 2, Status: "failed"},
		{MsgType: "EndTransaction", GroupName: "pg", ClientHost: "1.2.3.4", TimeStamp: 1700000000001, Status: "success"},
	}
	if !slices.Equal(views, want) {
		t.Fatalf("got %+v", views)
	}
	if _, err := DecodeTraceViews("ID", rec("Pub", "x"), "h", now); err == nil {
		t.Fatal("bad Pub accepted")
	}
	if got := JavaSplit("a\x01\x01b\x01\x01", "\x01"); !slices.Equal(got, []string{"a", "", "b"}) {
		t.Fatalf("split %q", got)
	}
}
