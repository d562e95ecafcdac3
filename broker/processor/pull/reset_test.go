package pull

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestResetTable(t *testing.T) {
	rt := NewResetTable()
	for _, bad := range []struct {
		group, topic string
		qid          int32
		off          int64
	}{{"", "T", 0, 1}, {"g", "", 0, 1}, {"g", "T", -1, 1}, {"g", "T", 0, -1}} {
		rt.Assign(bad.group, bad.topic, bad.qid, bad.off)
	}
	if len(rt.m) != 0 {
		t.Fatalf("invalid assignments kept: %v", rt.m)
	}
	rt.Assign("g", "T", 1, 5)
	rt.Assign("g", "T", 1, 7) // the later reset wins
	rt.Assign("g", "U", 0, 1)
	rt.Assign("h", "T", 0, 2)
	if off, ok := rt.Pending("g", "T", 1); !ok || off != 7 {
		t.Fatalf("pending %d %v", off, ok)
	}
	if off, ok := rt.Take("g", "T", 1); !ok || off != 7 {
		t.Fatalf("take %d %v", off, ok)
	}
	if _, ok := rt.Take("g", "T", 1); ok {
		t.Fatal("taken twice")
	}
	rt.ForgetTopic("U")
	rt.ForgetGroup("h")
	if len(rt.m) != 0 {
		t.Fatalf("left after forgetting: %v", rt.m)
	}
}

// TestPullAfterServerSideReset: the first pull of a reset queue answers
// PULL_OFFSET_MOVED (Java's OFFSET_RESET) with the reset offset and does not
// store the client's stale commit offset; the next pull reads normally.
// With useServerSideResetOffset off the table is not consulted.
func TestPullAfterServerSideReset(t *testing.T) {
	for _, serverSide := range []bool{true, false} {
		t.Run("serverSide="+strconv.FormatBool(serverSide), func(t *testing.T) {
			rt := NewResetTable()
			f := newFixture(t, fixtureOpt{resets: rt, mutate: func(c *config.Config) { c.UseServerSideResetOffset = serverSide }})
			f.put("T", 2, "a", "b", "c", "d")
			f.store.CommitOffset("g", "T", 2, 1)
			rt.Assign("g", "T", 2, 1)
			flags := strconv.Itoa(FlagSubscription | FlagCommitOffset)
			r := f.pull(t, pullReq("T", 2, 3, "*", "sysFlag", flags, "commitOffset", "3"))
			if !serverSide {
				if r.Code != code.Success || extInt(t, r, "nextBeginOffset") != 4 {
					t.Fatalf("pull with the feature off: %d %s next %v", r.Code, r.Remark, r.ExtFields["nextBeginOffset"])
				}
				if _, ok := rt.Pending("g", "T", 2); !ok {
					t.Fatal("entry taken with the feature off")
				}
				return
			}
			if r.Code != code.PullOffsetMoved || r.Remark != "OFFSET_RESET" || extInt(t, r, "nextBeginOffset") != 1 ||
				extInt(t, r, "minOffset") != 0 || extInt(t, r, "maxOffset") != 4 || len(r.Body) != 0 {
				t.Fatalf("pull after reset: %d %q %v", r.Code, r.Remark, r.ExtFields)
			}
			if off, _ := f.store.QueryOffset("g", "T", 2); off != 1 {
				t.Fatalf("stale commit offset stored: %d", off)
			}
			if po, ok := f.p.PullOffset("g", "T", 2); !ok || po != 1 {
				t.Fatalf("pull offset %d %v", po, ok)
			}
			r = f.pull(t, pullReq("T", 2, 1, "*"))
			if r.Code != code.Success || extInt(t, r, "nextBeginOffset") != 4 {
				t.Fatalf("pull after the move: %d %s", r.Code, r.Remark)
			}
			// Other queues and groups are untouched; a deleted group's
			// pending reset goes.
			rt.Assign("g", "T", 0, 0)
			f.p.ForgetGroup("g")
			if _, ok := rt.Pending("g", "T", 0); ok {
				t.Fatal("reset kept after the group was forgotten")
			}
		})
	}
}

// TestResetWakesParkedPull: a pull parked on the queue is answered at once
// with the reset, not at its deadline.
func TestResetWakesParkedPull(t *testing.T) {
	rt := NewResetTable()
	e := newNetEnv(t, fixtureOpt{resets: rt})
	e.put("T", 0, "a", "a")
	res := e.pullAsync(suspendReq("T", 0, 2, "*", 15000))
	waitParked(t, e, 1)
	rt.Assign("g", "T", 0, 0)
	r := wait(t, res)
	if r.resp.Code != code.PullOffsetMoved || extInt(t, r.resp, "nextBeginOffset") != 0 || r.took > 5*time.Second {
		t.Fatalf("parked pull after a reset: %d %v after %v", r.resp.Code, r.resp.ExtFields, r.took)
	}
}
