package send

import (
	"maps"
	"testing"

	"github.com/rmqgo/rmq/remoting"
)

// deferred is req as the broker's remoting server reads it off the wire:
// a ROCKETMQ frame whose extFields stay undecoded (Server.DeferExtFields).
func deferred(t testing.TB, req *remoting.Command) *remoting.Command {
	t.Helper()
	c := *req
	c.SerializeType = remoting.SerializeRocketMQ
	frame, err := remoting.Encode(&c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := remoting.DecodeDeferring(frame[4:], []int32{req.Code})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Deferred() {
		t.Fatalf("request %d was decoded eagerly", req.Code)
	}
	return out
}

// TestDeferredHeaderAnswersAsTheMap: the send handlers answer a request
// whose header is read in place exactly as the same request with its
// header decoded into a map, for good headers and for each kind of bad
// field.
func TestDeferredHeaderAnswersAsTheMap(t *testing.T) {
	body := batchBody(t, 3, func(int) map[string]string { return map[string]string{"TAGS": "t"} })
	for _, tc := range []struct {
		name string
		req  func() *remoting.Command
	}{
		{"v2", func() *remoting.Command { return sendV2("TopicTest", 1, props("KEYS", "k", "TAGS", "a"), "hello") }},
		{"v2-any-queue", func() *remoting.Command { return sendV2("TopicTest", -1, "", "hello") }},
		{"batch", func() *remoting.Command { return batchReq("TopicTest", 2, body) }},
		{"batch-flag-True", func() *remoting.Command { return with(batchReq("TopicTest", 2, body), "m", "True") }},
		{"batch-flag-spaces", func() *remoting.Command { return with(batchReq("TopicTest", 2, body), "m", " true ") }},
		{"v2-number-with-spaces", func() *remoting.Command { return with(sendV2("TopicTest", 1, "", "x"), "e", " 2 ") }},
		{"v2-not-a-number", func() *remoting.Command { return with(sendV2("TopicTest", 1, "", "x"), "f", "zero") }},
		{"v2-out-of-int-range", func() *remoting.Command { return with(sendV2("TopicTest", 1, "", "x"), "d", "4294967296") }},
		{"v2-no-topic", func() *remoting.Command { return with(sendV2("TopicTest", 1, "", "x"), "b", "") }},
		{"v2-no-born-timestamp", func() *remoting.Command { return with(sendV2("TopicTest", 1, "", "x"), "g", "") }},
		{"v2-max-reconsume", func() *remoting.Command {
			return with(sendV2("%RETRY%g1", 0, "", "x"), "j", "3", "l", "2")
		}},
		{"v2-unknown-topic", func() *remoting.Command { return sendV2("NoSuchTopic", 0, "", "x") }},
		{"v2-read-only", func() *remoting.Command { return sendV2("ReadOnly", 0, "", "x") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fm, fd := newFixture(t), newFixture(t)
			want := fm.call(t, tc.req())
			got := fd.call(t, deferred(t, tc.req()))
			// A transaction id is new for every message.
			delete(want.ExtFields, "transactionId")
			delete(got.ExtFields, "transactionId")
			if got.Code != want.Code || got.Remark != want.Remark || !maps.Equal(got.ExtFields, want.ExtFields) {
				t.Fatalf("deferred header answered %d %q %v\nthe map answered %d %q %v",
					got.Code, got.Remark, got.ExtFields, want.Code, want.Remark, want.ExtFields)
			}
			wm, gm := fm.store.stored(t), fd.store.stored(t)
			if len(wm) != len(gm) {
				t.Fatalf("stored %d messages, the map %d", len(gm), len(wm))
			}
			for i, w := range wm {
				g := gm[i]
				if g.Topic != w.Topic || g.QueueID != w.QueueID || g.Flag != w.Flag || g.SysFlag != w.SysFlag ||
					g.BornTimestamp != w.BornTimestamp || g.ReconsumeTimes != w.ReconsumeTimes ||
					string(g.Body) != string(w.Body) || len(g.Properties) != len(w.Properties) {
					t.Fatalf("stored message %d differs:\n%+v\n%+v", i, g, w)
				}
			}
		})
	}
}
