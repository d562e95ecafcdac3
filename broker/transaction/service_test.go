package transaction

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

func TestCommitAndRollback(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.sendHalf("a"), f.sendHalf("b")
	if a.queueOffset != 0 || b.queueOffset != 1 || a.uniq == "" {
		t.Fatalf("half offsets %+v %+v", a, b)
	}
	if got := f.delivered(); len(got) != 0 {
		t.Fatalf("half messages delivered before commit: %v", got)
	}
	wantCode(t, "commit a", f.end(f.svc, a, message.TransactionCommitType, false), code.Success)
	wantCode(t, "rollback b", f.end(f.svc, b, message.TransactionRollbackType, false), code.Success)

	got := f.delivered()
	if len(got) != 1 || got["a"] != 1 {
		t.Fatalf("delivered %v, want a once", got)
	}
	m := f.messages(testTopic, 2)[0]
	if message.TransactionType(m.SysFlag) != message.TransactionCommitType || m.PreparedTransactionOffset != a.phy {
		t.Fatalf("committed sysFlag %#x preparedTransactionOffset %d (half at %d)", m.SysFlag, m.PreparedTransactionOffset, a.phy)
	}
	for _, k := range []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared} {
		if _, ok := m.Properties[k]; ok {
			t.Fatalf("committed message keeps %s: %v", k, m.Properties)
		}
	}
	if m.UniqKey() != a.uniq || m.Property(message.PropertyProducerGroup) != testGroup || m.Keys()[0] != "a" {
		t.Fatalf("committed properties %v", m.Properties)
	}
	// One op record per END (or one for both, grouped), naming 0 and 1.
	named := map[int64]bool{}
	for _, op := range f.messages(protocol.TransOpHalfTopic, 0) {
		if op.Tags() != "d" {
			t.Fatalf("op tag %q", op.Tags())
		}
		for _, o := range parseOpBody(op.Body) {
			named[o] = true
		}
	}
	if !named[0] || !named[1] || len(named) != 2 {
		t.Fatalf("op records name %v", named)
	}
	// Repeats are answered without storing anything again.
	wantCode(t, "commit a again", f.end(f.svc, a, message.TransactionCommitType, false), code.Success)
	wantCode(t, "rollback a after commit", f.end(f.svc, a, message.TransactionRollbackType, false), code.TransactionFailed)
	wantCode(t, "commit b after rollback", f.end(f.svc, b, message.TransactionCommitType, false), code.TransactionFailed)
	if got := f.delivered(); got["a"] != 1 || got["b"] != 0 {
		t.Fatalf("after repeats: %v", got)
	}
	// Nothing left to check, even long after.
	f.clk.Advance(time.Hour)
	if reqs := f.check(f.svc); len(reqs) != 0 {
		t.Fatalf("%d checks for ended transactions", len(reqs))
	}
	if off, _ := f.store.QueryOffset(Group, protocol.TransHalfTopic, 0); off != 2 {
		t.Fatalf("half position %d, want 2", off)
	}
	if off, _ := f.store.QueryOffset(Group, protocol.TransOpHalfTopic, 0); off != f.store.MaxOffset(protocol.TransOpHalfTopic, 0) {
		t.Fatalf("op position %d, want %d", off, f.store.MaxOffset(protocol.TransOpHalfTopic, 0))
	}
	if st := f.svc.Stats(); st.Commits != 1 || st.Rollbacks != 1 || st.Checks != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnknownState(t *testing.T) {
	f := newFixture(t, nil)
	h := f.sendHalf("u")
	wantCode(t, "unknown", f.end(f.svc, h, message.TransactionNotType, false), code.Success)
	if got := f.delivered(); len(got) != 0 || f.store.MaxOffset(protocol.TransOpHalfTopic, 0) != 0 {
		t.Fatalf("UNKNOW stored something: %v", got)
	}
}

// TestCheckBack: a half message nobody ends is checked after
// transactionTimeOut; the producer's answer to the check commits it; a late
// answer of the producer's own is then a no-op.
func TestCheckBack(t *testing.T) {
	f := newFixture(t, nil)
	h := f.sendHalf("x")
	f.clk.Advance(5 * time.Second)
	if reqs := f.check(f.svc); len(reqs) != 0 {
		t.Fatalf("checked before transactionTimeOut: %d", len(reqs))
	}
	f.clk.Advance(2 * time.Second)
	reqs := f.check(f.svc)
	if len(reqs) != 1 {
		t.Fatalf("%d checks, want 1", len(reqs))
	}
	req := reqs[0]
	c, m := checkedHalf(t, req)
	if c.queueOffset != 1 || c.uniq != h.uniq || c.phy <= h.phy {
		t.Fatalf("check names %+v (original %+v)", c, h)
	}
	wantExt := map[string]string{"topic": protocol.TransHalfTopic, "msgId": h.uniq, "bname": "broker-a",
		"offsetMsgId": message.OffsetMsgID(testHost, c.phy)}
	for k, v := range wantExt {
		if req.ExtFields[k] != v {
			t.Fatalf("check header %s = %q, want %q", k, req.ExtFields[k], v)
		}
	}
	if m.Topic != testTopic || m.QueueID != 2 || m.Property(message.PropertyProducerGroup) != testGroup ||
		m.Property(message.PropertyTransactionCheckTimes) != "1" || string(m.Body) != "x" ||
		m.QueueOffset != c.queueOffset || m.CommitLogOffset != c.phy || m.UniqKey() != h.uniq {
		t.Fatalf("check body: topic %s queue %d offsets %d/%d props %v", m.Topic, m.QueueID, m.QueueOffset, m.CommitLogOffset, m.Properties)
	}
	// Within the interval nothing is checked twice.
	if n := len(f.check(f.svc)); n != 0 {
		t.Fatalf("copy checked in the round after: %d", n)
	}
	wantCode(t, "commit from check", f.end(f.svc, c, message.TransactionCommitType, true), code.Success)
	wantCode(t, "late own commit", f.end(f.svc, h, message.TransactionCommitType, false), code.Success)
	if got := f.delivered(); len(got) != 1 || got["x"] != 1 {
		t.Fatalf("delivered %v", got)
	}
	f.clk.Advance(time.Minute)
	if n := len(f.check(f.svc)); n != 0 {
		t.Fatalf("%d checks after the commit", n)
	}
}

// TestLateOwnCommitRacingCheck: the producer's own commit arrives after the
// check re-appended the half message; it is honoured and the copy's check
// answer is a no-op: delivered once.
func TestLateOwnCommitRacingCheck(t *testing.T) {
	f := newFixture(t, nil)
	h := f.sendHalf("late")
	f.clk.Advance(7 * time.Second)
	c, _ := checkedHalf(t, f.check(f.svc)[0])
	wantCode(t, "late own commit", f.end(f.svc, h, message.TransactionCommitType, false), code.Success)
	wantCode(t, "check answer", f.end(f.svc, c, message.TransactionCommitType, true), code.Success)
	if got := f.delivered(); got["late"] != 1 {
		t.Fatalf("delivered %v", got)
	}
	// The op records name the original and the copy.
	named := map[int64]bool{}
	for _, op := range f.messages(protocol.TransOpHalfTopic, 0) {
		for _, o := range parseOpBody(op.Body) {
			named[o] = true
		}
	}
	if !named[h.queueOffset] || !named[c.queueOffset] {
		t.Fatalf("op records name %v, want %d and %d", named, h.queueOffset, c.queueOffset)
	}
	// After a restart with lost positions nothing is checked again.
	f.store.CommitOffset(Group, protocol.TransHalfTopic, 0, 0)
	f.store.CommitOffset(Group, protocol.TransOpHalfTopic, 0, 0)
	svc := f.newService()
	f.clk.Advance(time.Minute)
	if n := len(f.check(svc)); n != 0 {
		t.Fatalf("%d checks after the restart", n)
	}
}

// TestCheckMaxThenDiscard: a producer answering UNKNOW forever gets
// transactionCheckMax checks, then the message moves to
// TRANS_CHECK_MAX_TIME_TOPIC.
func TestCheckMaxThenDiscard(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.TransactionCheckMax = 3 })
	h := f.sendHalf("never")
	for i := 1; i <= 3; i++ {
		f.clk.Advance(7 * time.Second)
		reqs := f.check(f.svc)
		if len(reqs) != 1 {
			t.Fatalf("round %d: %d checks", i, len(reqs))
		}
		c, m := checkedHalf(t, reqs[0])
		if m.Property(message.PropertyTransactionCheckTimes) != strconv.Itoa(i) {
			t.Fatalf("round %d: TRANSACTION_CHECK_TIMES %q", i, m.Property(message.PropertyTransactionCheckTimes))
		}
		wantCode(t, "unknown", f.end(f.svc, c, message.TransactionNotType, true), code.Success)
	}
	f.clk.Advance(7 * time.Second)
	if n := len(f.check(f.svc)); n != 0 {
		t.Fatalf("check %d beyond transactionCheckMax", n)
	}
	moved := f.messages(protocol.TransCheckMaxTopic, 0)
	if len(moved) != 1 || moved[0].UniqKey() != h.uniq || moved[0].Property(message.PropertyTransactionCheckTimes) != "3" {
		t.Fatalf("TRANS_CHECK_MAX_TIME_TOPIC holds %d messages", len(moved))
	}
	if _, ok := f.topics.Get(protocol.TransCheckMaxTopic); !ok {
		t.Fatal("TRANS_CHECK_MAX_TIME_TOPIC not created")
	}
	if st := f.svc.Stats(); st.Discards != 1 || st.Checks != 3 {
		t.Fatalf("stats %+v", st)
	}
	lateEnds(t, f, f.svc, h)
}

// lateEnds: after the check scan discarded transaction h, a rollback
// changes nothing, a commit stores the message once (as Apache's
// EndTransactionProcessor does: the half record is still in the CommitLog)
// and a second commit is answered "already ended"; nothing is checked again.
func lateEnds(t *testing.T, f *fixture, svc *Service, h half) {
	t.Helper()
	if resp := f.end(svc, h, message.TransactionRollbackType, false); resp.Code != code.Success || resp.Remark != "transaction already ended" {
		t.Fatalf("rollback after discard: %d %q", resp.Code, resp.Remark)
	}
	if got := f.delivered(); got["never"] != 0 {
		t.Fatalf("delivered after a rollback: %v", got)
	}
	if resp := f.end(svc, h, message.TransactionCommitType, false); resp.Code != code.Success || resp.Remark != "" {
		t.Fatalf("commit after discard: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.end(svc, h, message.TransactionCommitType, false); resp.Code != code.Success || resp.Remark != "transaction already ended" {
		t.Fatalf("second commit after discard: %d %q", resp.Code, resp.Remark)
	}
	if got := f.delivered(); got["never"] != 1 {
		t.Fatalf("delivered after the late commits: %v, want never once", got)
	}
	f.clk.Advance(time.Hour)
	if n := len(f.check(svc)); n != 0 {
		t.Fatalf("discarded transaction checked %d times", n)
	}
	if got := f.delivered(); got["never"] != 1 {
		t.Fatalf("delivered after the check: %v", got)
	}
}

// TestLateCommitAfterDiscardAndRestart: a restarted broker no longer holds
// the discard in memory; the key index (the copy in
// TRANS_CHECK_MAX_TIME_TOPIC, no committed message) tells it, and a commit
// is stored once. A commit repeated after a restart of a transaction that
// was committed (not discarded) stores nothing.
func TestLateCommitAfterDiscardAndRestart(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.TransactionCheckMax = 1 })
	h := f.sendHalf("never")
	ok := f.sendHalf("ok")
	wantCode(t, "commit", f.end(f.svc, ok, message.TransactionCommitType, false), code.Success)
	for range 2 {
		f.clk.Advance(7 * time.Second)
		for _, req := range f.check(f.svc) {
			c, _ := checkedHalf(t, req)
			wantCode(t, "unknown", f.end(f.svc, c, message.TransactionNotType, true), code.Success)
		}
	}
	if st := f.svc.Stats(); st.Discards != 1 {
		t.Fatalf("stats %+v", st)
	}
	svc := f.newService()
	resp := f.end(svc, ok, message.TransactionCommitType, false)
	if resp.Code != code.Success || resp.Remark != "transaction already ended" {
		t.Fatalf("commit repeated after a restart: %d %q", resp.Code, resp.Remark)
	}
	if got := f.delivered(); len(got) != 1 || got["ok"] != 1 {
		t.Fatalf("delivered before the late commit: %v", got)
	}
	lateEnds(t, f, svc, h)
	if got := f.delivered(); got["ok"] != 1 {
		t.Fatalf("delivered at the end: %v", got)
	}
}

// TestNoProducerOnline: rounds without a live producer channel do not
// count as checks during the grace after the start (a restarted broker
// waits for heartbeats), and count afterwards, as in Java.
func TestNoProducerOnline(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.TransactionCheckMax = 2 })
	f.prod.set(testGroup, nil)
	f.sendHalf("offline")
	for range 8 { // 56 s: within DefaultProducerGrace
		f.clk.Advance(7 * time.Second)
		f.check(f.svc)
	}
	if st := f.svc.Stats(); st.Checks != 0 || st.Discards != 0 {
		t.Fatalf("stats %+v", st)
	}
	f.prod.set(testGroup, f.target)
	f.clk.Advance(7 * time.Second)
	reqs := f.check(f.svc)
	if len(reqs) != 1 {
		t.Fatalf("%d checks once the producer is online", len(reqs))
	}
	c, m := checkedHalf(t, reqs[0])
	if m.Property(message.PropertyTransactionCheckTimes) != "1" {
		t.Fatalf("first real check has TRANSACTION_CHECK_TIMES %q", m.Property(message.PropertyTransactionCheckTimes))
	}
	wantCode(t, "commit", f.end(f.svc, c, message.TransactionCommitType, true), code.Success)
	if f.delivered()["offline"] != 1 {
		t.Fatal("not delivered")
	}

	// After the grace, rounds without a producer use up the checks.
	f.prod.set(testGroup, nil)
	f.sendHalf("gone")
	for range 4 {
		f.clk.Advance(7 * time.Second)
		f.check(f.svc)
	}
	if st := f.svc.Stats(); st.Discards != 1 {
		t.Fatalf("transaction of an offline group not discarded after the grace: %+v", st)
	}
	if moved := f.messages(protocol.TransCheckMaxTopic, 0); len(moved) != 1 || string(moved[0].Body) != "gone" {
		t.Fatalf("TRANS_CHECK_MAX_TIME_TOPIC holds %d messages", len(moved))
	}
}

func TestSlaveDoesNotCheck(t *testing.T) {
	f := newFixture(t, nil)
	f.sendHalf("s")
	slave := f.cfg.Get().Clone()
	slave.BrokerRole = config.RoleSlave
	slave.BrokerID = 1
	svc, err := New(Deps{Config: func() *config.Config { return slave }, Store: f.store, Topics: f.topics, Producers: f.prod, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	if n := len(f.check(svc)); n != 0 || f.store.MaxOffset(protocol.TransHalfTopic, 0) != 1 {
		t.Fatalf("a slave checked (%d) or re-appended", n)
	}
}

// TestCheckImmunity: CHECK_IMMUNITY_TIME_IN_SECONDS delays the first check
// without holding back the others; the producer's own answer after it is
// ILLEGAL_OPERATION.
func TestCheckImmunity(t *testing.T) {
	f := newFixture(t, nil)
	slow := f.sendHalf("slow", message.PropertyCheckImmunityTimeInSec, "60")
	f.clk.Advance(time.Second)
	fast := f.sendHalf("fast")
	f.clk.Advance(10 * time.Second)
	reqs := f.check(f.svc)
	if len(reqs) != 1 {
		t.Fatalf("%d checks, want 1 (fast only)", len(reqs))
	}
	if c, _ := checkedHalf(t, reqs[0]); c.uniq != fast.uniq {
		t.Fatalf("checked %s, want %s", c.uniq, fast.uniq)
	}
	f.clk.Advance(55 * time.Second)
	wantCode(t, "own commit after the immunity", f.end(f.svc, slow, message.TransactionCommitType, false), code.IllegalOperation)
	var found bool
	for _, req := range f.check(f.svc) {
		c, _ := checkedHalf(t, req)
		if c.uniq == slow.uniq {
			found = true
			wantCode(t, "check answer", f.end(f.svc, c, message.TransactionCommitType, true), code.Success)
		}
	}
	if !found || f.delivered()["slow"] != 1 {
		t.Fatalf("slow transaction: checked %v, delivered %v", found, f.delivered())
	}
}

func TestEndTransactionBadInput(t *testing.T) {
	f := newFixture(t, nil)
	h := f.sendHalf("h")
	// A message that is not a half message: a committed one.
	other := f.sendHalf("other")
	wantCode(t, "commit other", f.end(f.svc, other, message.TransactionCommitType, false), code.Success)
	committed := f.messages(testTopic, 2)[0]
	notHalf := half{uniq: committed.UniqKey(), queueOffset: committed.QueueOffset, phy: committed.CommitLogOffset}

	for _, tc := range []struct {
		name string
		h    half
		typ  int32
		kv   []string
		want int32
	}{
		{"unknown CommitLog offset", half{uniq: h.uniq, queueOffset: 0, phy: 1 << 40}, message.TransactionCommitType, nil, code.SystemError},
		{"offset inside a record", half{uniq: h.uniq, queueOffset: 0, phy: h.phy + 3}, message.TransactionCommitType, nil, code.SystemError},
		{"negative offset", half{uniq: h.uniq, phy: -1}, message.TransactionRollbackType, nil, code.SystemError},
		{"not a half message", notHalf, message.TransactionCommitType, nil, code.IllegalOperation},
		{"wrong producer group", h, message.TransactionCommitType, []string{"producerGroup", "other_pg"}, code.SystemError},
		{"wrong queue offset", half{uniq: h.uniq, queueOffset: 7, phy: h.phy}, message.TransactionRollbackType, nil, code.SystemError},
		{"bad commitOrRollback", h, 5, nil, code.InvalidParameter},
		{"missing producerGroup", h, message.TransactionCommitType, []string{"producerGroup", remotingtest.Absent}, code.InvalidParameter},
		{"missing commitLogOffset", h, message.TransactionCommitType, []string{"commitLogOffset", remotingtest.Absent}, code.InvalidParameter},
		{"malformed tranStateTableOffset", h, message.TransactionCommitType, []string{"tranStateTableOffset", "x"}, code.InvalidParameter},
	} {
		wantCode(t, tc.name, f.end(f.svc, tc.h, tc.typ, false, tc.kv...), tc.want)
	}
	// Still serving: the real half commits.
	wantCode(t, "commit h", f.end(f.svc, h, message.TransactionCommitType, false), code.Success)
	if got := f.delivered(); got["h"] != 1 || got["other"] != 1 || len(got) != 2 {
		t.Fatalf("delivered %v", got)
	}

	// A slave refuses.
	slave := f.cfg.Get().Clone()
	slave.BrokerRole = config.RoleSlave
	slave.BrokerID = 1
	svc, err := New(Deps{Config: func() *config.Config { return slave }, Store: f.store, Topics: f.topics, Producers: f.prod})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "on a slave", f.end(svc, h, message.TransactionCommitType, false), code.SlaveNotAvailable)
}

// TestRestartKeepsState: ended transactions stay ended and pending ones are
// checked by a new service on the same store, whether the scan positions
// were saved or lost.
func TestRestartKeepsState(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("positionsLost=%v", lost), func(t *testing.T) {
			f := newFixture(t, nil)
			pending := f.sendMixed("m", 9)
			f.clk.Advance(7 * time.Second)
			if n := len(f.check(f.svc)); n != len(pending) { // checks the pending ones once
				t.Fatalf("%d checks before the restart, want %d", n, len(pending))
			}
			f.svc.Close()
			if lost {
				f.store.CommitOffset(Group, protocol.TransHalfTopic, 0, 0)
				f.store.CommitOffset(Group, protocol.TransOpHalfTopic, 0, 0)
			}
			svc := f.newService()
			f.clk.Advance(7 * time.Second)
			reqs := f.check(svc)
			checked := map[string]int{}
			for _, req := range reqs {
				c, m := checkedHalf(t, req)
				checked[string(m.Body)]++
				wantCode(t, "commit after restart", f.end(svc, c, message.TransactionCommitType, true), code.Success)
			}
			for _, b := range []string{"m0", "m1", "m3", "m4", "m6", "m7"} {
				if checked[b] > 0 {
					t.Fatalf("ended transaction %s checked after the restart: %v", b, checked)
				}
			}
			for _, b := range []string{"m2", "m5", "m8"} {
				if checked[b] == 0 {
					t.Fatalf("pending transaction %s not checked after the restart: %v", b, checked)
				}
			}
			got := f.delivered()
			for i := range 9 {
				b := fmt.Sprint("m", i)
				want := 1
				if i%3 == 1 {
					want = 0
				}
				if got[b] != want {
					t.Fatalf("%s delivered %d times, want %d (all: %v)", b, got[b], want, got)
				}
			}
		})
	}
}

// TestConcurrentEnds: parallel commits and rollbacks of distinct
// transactions, with duplicates, race with check rounds; with a
// transactionCheckMax of 1 the rounds also discard transactions the ends
// have not reached yet, and the commits that come after are stored once.
func TestConcurrentEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		checkMax int
	}{
		// Far out of reach: the check loop runs rounds as fast as it can.
		{"no discards", 1 << 20},
		{"discards race the ends", 1},
	} {
		t.Run(tc.name, func(t *testing.T) { concurrentEnds(t, tc.checkMax) })
	}
}

func concurrentEnds(t *testing.T, checkMax int) {
	f := newFixture(t, func(c *config.Config) { c.TransactionTimeOut = time.Millisecond; c.TransactionCheckMax = checkMax })
	const n = 200
	hs := make([]half, n)
	for i := range hs {
		hs[i] = f.sendHalf(fmt.Sprint("c", i))
	}
	f.clk.Advance(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := f.svc.Check(ctx); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			f.clk.Advance(time.Second)
		}
	}()
	var ends sync.WaitGroup
	for w := range 8 {
		ends.Add(1)
		go func() {
			defer ends.Done()
			for i := w; i < n; i += 4 { // every transaction twice
				typ := message.TransactionCommitType
				if i%2 == 1 {
					typ = message.TransactionRollbackType
				}
				resp := f.end(f.svc, hs[i], typ, false)
				if resp.Code != code.Success {
					t.Errorf("end %d: %d %q", i, resp.Code, resp.Remark)
				}
			}
		}()
	}
	ends.Wait()
	// Answer the checks that raced the ends.
	cancel()
	wg.Wait()
	for _, req := range f.target.take() {
		c, m := checkedHalf(t, req)
		i, _ := strconv.Atoi(string(m.Body[1:]))
		typ := message.TransactionCommitType
		if i%2 == 1 {
			typ = message.TransactionRollbackType
		}
		f.end(f.svc, c, typ, true)
	}
	got := f.delivered()
	for i := range n {
		want := 1 - i%2
		if got[fmt.Sprint("c", i)] != want {
			t.Fatalf("c%d delivered %d times, want %d", i, got[fmt.Sprint("c", i)], want)
		}
	}
}
