package send

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestGoldenFrames runs send frames captured from real clients
// (remoting/testdata/golden) through the handler and checks what is stored.
func TestGoldenFrames(t *testing.T) {
	for _, tc := range []struct {
		file     string
		code     int32
		propKeys []string
		queueKey string
		bornKey  string
	}{
		{"go_10_json.bin", code.SendMessage, []string{"TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "MSG_REGION", "TRACE_ON"}, "queueId", "bornTimestamp"},
		{"java_310_json.bin", code.SendMessageV2, []string{"TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "MSG_REGION", "TRACE_ON"}, "e", "g"},
		{"java_310_rocketmq.bin", code.SendMessageV2, []string{"TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "MSG_REGION", "TRACE_ON"}, "e", "g"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "remoting", "testdata", "golden", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			req, err := remoting.Decode(raw[4:])
			if err != nil {
				t.Fatal(err)
			}
			if req.Code != tc.code {
				t.Fatalf("frame code %d", req.Code)
			}
			sent := message.DecodeProperties([]byte(firstNonEmpty(req.Ext("properties"), req.Ext("i"))))

			f := newFixture(t)
			resp := f.call(t, req)
			wantCode(t, resp, code.Success)
			m := f.store.last(t)
			if m.Topic != "TopicTest" || m.Tags() != "TagA" || !slices.Equal(m.Keys(), []string{"key1"}) || string(m.Body) != "hello golden" {
				t.Errorf("stored %s tags %q keys %v body %q", m.Topic, m.Tags(), m.Keys(), m.Body)
			}
			if got := slices.Sorted(maps.Keys(m.Properties)); !slices.Equal(got, slices.Sorted(slices.Values(tc.propKeys))) {
				t.Errorf("stored property keys %v, want %v", got, tc.propKeys)
			}
			for k, v := range sent {
				if m.Properties[k] != v {
					t.Errorf("property %s = %q, sent %q", k, m.Properties[k], v)
				}
			}
			if m.Property("CLUSTER") != "C1" {
				t.Errorf("CLUSTER %q", m.Property("CLUSTER"))
			}
			if q, _ := strconv.Atoi(req.Ext(tc.queueKey)); m.QueueID != int32(q) {
				t.Errorf("queue %d, sent %d", m.QueueID, q)
			}
			if b, _ := strconv.ParseInt(req.Ext(tc.bornKey), 10, 64); m.BornTimestamp != b {
				t.Errorf("bornTimestamp %d, sent %d", m.BornTimestamp, b)
			}
			if m.SysFlag != 0 || m.Flag != 0 || m.ReconsumeTimes != 0 {
				t.Errorf("sysFlag %#x flag %d reconsume %d", m.SysFlag, m.Flag, m.ReconsumeTimes)
			}
			if resp.Ext("transactionId") != sent["UNIQ_KEY"] || resp.Ext("msgId") != message.OffsetMsgID(testStoreHost, m.CommitLogOffset) {
				t.Errorf("response %v", resp.ExtFields)
			}
			if resp.SerializeType != req.SerializeType || resp.Opaque != req.Opaque {
				t.Errorf("response mirrors %v/%d, request %v/%d", resp.SerializeType, resp.Opaque, req.SerializeType, req.Opaque)
			}
		})
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
