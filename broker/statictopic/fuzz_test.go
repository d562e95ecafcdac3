package statictopic

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

// FuzzUpdateAndCreateStaticTopic feeds arbitrary 513 bodies (the one
// place Java-produced mapping JSON enters the broker): the handler never
// panics, refuses with INVALID_PARAMETER or SYSTEM_ERROR, and whatever it
// accepts satisfies the list invariants.
func FuzzUpdateAndCreateStaticTopic(f *testing.F) {
	f.Add([]byte(javaBody), "2")
	f.Add([]byte(`{"bname":"a","hostedQueues":{0:[{"bname":"a","gen":0,"queueId":0,"logicOffset":-1}]},"topic":"ST","totalQueues":1}`), "1")
	f.Add([]byte(`{"bname":"a","hostedQueues":{"-1":[]},"topic":"ST"}`), "0")
	n := newNode(f, "a", testutil.NewFakeClock(time.UnixMilli(0)), nil)
	f.Fuzz(func(t *testing.T, body []byte, queues string) {
		r := n.do(t, rawStaticReq(queues, string(body)))
		switch r.Code {
		case code.Success:
			d, ok := n.mgr.Get(tpc)
			if !ok {
				t.Fatal("accepted but not stored")
			}
			for g, items := range d.HostedQueues {
				if err := checkItems(items); err != nil {
					t.Fatalf("stored an invalid list %d: %v", g, err)
				}
			}
		case code.InvalidParameter, code.SystemError:
			if r.Remark == "" {
				t.Fatal("refusal without a remark")
			}
		default:
			t.Fatalf("unexpected code %d %s", r.Code, r.Remark)
		}
	})
}
