package pop

import (
	"maps"
	"slices"
	"testing"

	"github.com/rmqgo/rmq/broker/pop/popcodec"
)

func TestOffsetInfo(t *testing.T) {
	var o offsetInfo
	o.addQueue("T", 0, 10, []int64{10, 11, 13})
	o.addQueue("%RETRY%g_T", 0, 4, []int64{4})
	o.addOffsetCount("T", 1, 20, 2)
	o.addQueueCount("T", 1, 0)
	if got := o.start.String(); got != "0 0 10;1 0 4" {
		t.Errorf("startOffsetInfo %q", got)
	}
	if got := o.msg.String(); got != "0 0 10,11,13;1 0 4" {
		t.Errorf("msgOffsetInfo %q", got)
	}
	if got := o.count.String(); got != "0 qo1%20 2;0 1 0" {
		t.Errorf("orderCountInfo %q", got)
	}
	starts, err := popcodec.ParseStartOffsetInfo(o.start.String())
	if err != nil || !maps.Equal(starts, map[string]int64{"0@0": 10, "1@0": 4}) {
		t.Errorf("parse start %v %v", starts, err)
	}
	msgs, err := popcodec.ParseMsgOffsetInfo(o.msg.String())
	if err != nil || !slices.Equal(msgs["0@0"], []int64{10, 11, 13}) || !slices.Equal(msgs["1@0"], []int64{4}) {
		t.Errorf("parse msg %v %v", msgs, err)
	}
	counts, err := popcodec.ParseOrderCountInfo(o.count.String())
	if err != nil || counts["0@qo1%20"] != 2 || counts["0@1"] != 0 {
		t.Errorf("parse counts %v %v", counts, err)
	}
	for _, bad := range []string{"0 0", "0 0 x", "0 0 1;0 0 2", "0 0 1 2"} {
		if _, err := popcodec.ParseStartOffsetInfo(bad); err == nil {
			t.Errorf("start info %q accepted", bad)
		}
	}
	if m, err := popcodec.ParseStartOffsetInfo(""); m != nil || err != nil {
		t.Errorf("empty info: %v %v", m, err)
	}
}
