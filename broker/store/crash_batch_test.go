package store

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

// crashStore is a Store whose CommitLog and Pebble both live in memory
// file systems that can lose what was not synced: a power cut at any
// moment, the store's goroutines still running.
type crashStore struct {
	mem  *vfs.MemFS
	ffs  *vfs.FaultFS // over mem: refuses everything from the cut on
	kvfs *pebblevfs.MemFS
	mode commitlog.FlushDiskType
	root string
	logs *testutil.SyncBuffer
}

func (c *crashStore) open(t *testing.T) *Store {
	t.Helper()
	cfg := testConfig(c.root)
	cfg.CommitLog.Dir = "/store/commitlog"
	cfg.CommitLog.FS = c.ffs
	cfg.CommitLog.FileSize = 128 << 10 // batches roll segments (BLANK tails)
	cfg.CommitLog.FlushDiskType = c.mode
	cfg.CommitLog.SyncFlushTimeout = 5 * time.Second
	// Under ASYNC_FLUSH only the test's Flush syncs: the flusher's rounds
	// would sync the whole tail in a run that outlasts their interval,
	// and no cut would land inside a batch (helper perf18cq).
	cfg.CommitLog.FlushInterval = time.Hour
	cfg.CommitLog.FlushThoroughInterval = time.Hour
	cfg.KV = kv.DefaultConfig("/store/kv")
	cfg.KV.FS = c.kvfs
	// Pebble flushes only when the test says: the periodic flush (with the
	// consumer offsets') would persist the rounds the power cut is to lose
	// in a run slower than its interval (-race on a loaded machine).
	cfg.OffsetFlushInterval = time.Hour
	c.logs = &testutil.SyncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(c.logs, nil))
	return openStore(t, cfg)
}

// powerCut keeps what each file system had synced (the CommitLog, with
// rng, a random prefix of its later writes, torn), then closes s: the
// CommitLog's file system refuses all it tries from the cut on (no
// checkpoint written, no abort marker removed), and Pebble's is a clone
// taken at the cut.
func (c *crashStore) powerCut(s *Store, rng *rand.Rand) {
	c.ffs.SetHook(func(vfs.Op) error { return vfs.ErrInjected })
	kept := c.kvfs.CrashClone(pebblevfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	c.mem.Crash(vfs.CrashOptions{Rand: rng})
	_ = s.Close()
	c.ffs.Reset()
	c.kvfs = kept
}

// batchMsgs is batch number n of 16 messages for queue n%4 of topic CB,
// each with a UNIQ_KEY, every other one with TAGS and every third with
// two KEYS.
func batchMsgs(n int) []*message.Message {
	out := make([]*message.Message, 16)
	for i := range out {
		id := n*16 + i
		props := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: fmt.Sprintf("U%06d", id), message.PropertyWaitStoreMsgOK: "true"}
		if id%2 == 0 {
			props[message.PropertyTags] = fmt.Sprint("tag", id%5)
		}
		if id%3 == 0 {
			props[message.PropertyKeys] = fmt.Sprintf("k%d common%d", id, id%7)
		}
		out[i] = msg("CB", int32(n%4), fmt.Sprintf("batch-%06d|%0900d", id, id), props)
	}
	return out
}

// queueSnapshot is every consume-queue entry of the four queues and, per
// UNIQ_KEY and KEYS value, the CommitLog offsets the index finds.
type queueSnapshot struct {
	entries [4][]consumequeue.Entry
	uniq    map[string][]int64
	keys    map[string][]int64
}

func snapshot(t *testing.T, s *Store, ids int) queueSnapshot {
	t.Helper()
	var q queueSnapshot
	for qid := range q.entries {
		es, err := s.cq.Entries("CB", int32(qid), 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		q.entries[qid] = es
	}
	q.uniq, q.keys = map[string][]int64{}, map[string][]int64{}
	end := time.Now().UnixMilli() + 1000
	phys := func(key string, uniq bool) []int64 {
		hits, err := s.QueryMessage("CB", key, uniq, 64, 0, end)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, rec := range hits.Records {
			v, err := message.ParseView(rec, message.ParseOptions{VerifyCRC: true})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.PhysicalOffset())
		}
		return out
	}
	for id := range ids {
		k := fmt.Sprintf("U%06d", id)
		q.uniq[k] = phys(k, true)
	}
	for r := range 7 {
		k := fmt.Sprint("common", r)
		q.keys[k] = phys(k, false)
	}
	return q
}

// checkRecords checks that every entry points at the record it names:
// same topic, queue, queue offset and tag code, an intact body.
func checkRecords(t *testing.T, s *Store, q queueSnapshot) {
	t.Helper()
	for qid, es := range q.entries {
		for i, e := range es {
			if e.Offset != int64(i) {
				t.Fatalf("queue %d: entry %d has offset %d (a hole)", qid, i, e.Offset)
			}
			rec, err := s.cl.ReadRecord(e.CommitLogOffset)
			if err != nil {
				t.Fatalf("queue %d offset %d: %v", qid, i, err)
			}
			v := rec.View
			tags, _ := message.PropertyValue(v.Properties(), message.PropertyTags)
			var code int64
			if tags != "" {
				code = int64(message.TagHashCode(tags))
			}
			if string(v.Topic()) != "CB" || v.QueueID() != int32(qid) || v.QueueOffset() != e.Offset || v.TotalSize() != e.Size ||
				e.TagsCode != code || v.StoreTimestamp() != e.StoreTimestamp {
				t.Fatalf("queue %d offset %d: entry %+v, record %s-%d@%d size %d tags %q", qid, i, e, v.Topic(), v.QueueID(), v.QueueOffset(), v.TotalSize(), tags)
			}
			if _, err := message.ParseView(v.Bytes(), message.ParseOptions{VerifyCRC: true}); err != nil {
				t.Fatalf("queue %d offset %d: %v", qid, i, err)
			}
			rec.Release()
		}
	}
}

// TestBatchDispatchRebuiltAfterCrash: batches of 16 (a UNIQ_KEY on every
// message, TAGS and KEYS on some) over 4 queues; Pebble flushes once in
// the middle, so its dispatch checkpoint lies inside the stream; more
// batches are stored and dispatched, then the power is cut with the
// dispatcher running. Pebble (no WAL) keeps only what it flushed, so the
// reopened store re-dispatches the CommitLog written since: every
// consume-queue entry and every index hit must come back as they were.
// Under SYNC_FLUSH every acknowledged batch survives; under ASYNC_FLUSH
// the CommitLog keeps a random prefix of its unsynced writes, the last
// possibly torn inside a batch: what survives must be whole records,
// each queue a gap-free prefix of what it was, the index finding each
// surviving message and no lost one.
func TestBatchDispatchRebuiltAfterCrash(t *testing.T) {
	t.Run("sync", func(t *testing.T) { crashAfterBatches(t, commitlog.SyncFlush, nil) })
	t.Run("async-torn", func(t *testing.T) {
		// Seeds until one cuts the log inside a batch (whole batches are
		// 16 messages each); every one must pass.
		for seed := uint64(1); seed <= 16; seed++ {
			if n := crashAfterBatches(t, commitlog.AsyncFlush, rand.New(rand.NewPCG(seed, 18))); n%16 != 0 {
				return
			}
		}
		t.Fatal("no seed cut the CommitLog inside a batch")
	})
}

// crashAfterBatches runs the scenario of TestBatchDispatchRebuiltAfterCrash
// (rng: the torn prefix the CommitLog keeps; nil keeps only what was
// synced) and returns how many messages survived.
func crashAfterBatches(t *testing.T, mode commitlog.FlushDiskType, rng *rand.Rand) int {
	t.Helper()
	mem := vfs.NewMem()
	c := &crashStore{mem: mem, ffs: vfs.NewFaultFS(mem), kvfs: pebblevfs.NewCrashableMem(), mode: mode, root: t.TempDir()}
	s := c.open(t)
	ctx := context.Background()
	const first, total = 20, 60
	var ids int
	putBatches := func(from, to int) {
		for n := from; n < to; n++ {
			if _, err := s.PutMessages(ctx, batchMsgs(n)); err != nil {
				t.Fatal(err)
			}
			ids += 16
		}
		for qid := range int32(4) {
			waitDispatched(t, s, "CB", qid, int64(to/4*16))
		}
	}
	putBatches(0, first)
	// The CommitLog durable up to here (ASYNC_FLUSH too), then
	// Pebble: the cut loses Pebble's later rounds, not the log.
	if err := s.cl.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	flushedAt := s.cq.DispatchedOffset()
	putBatches(first, total)
	before := snapshot(t, s, ids)
	checkRecords(t, s, before)
	// The index finds each message by its UNIQ_KEY and by each KEYS word.
	wantKeys := map[string]int{}
	for id := range ids {
		if id%3 == 0 {
			wantKeys[fmt.Sprint("common", id%7)]++
		}
		k := fmt.Sprintf("U%06d", id)
		if len(before.uniq[k]) != 1 {
			t.Fatalf("UNIQ_KEY %s found at %v, want one message", k, before.uniq[k])
		}
		rec, err := s.cl.ReadRecord(before.uniq[k][0])
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := message.PropertyValue(rec.View.Properties(), message.PropertyUniqClientMessageIDKeyIdx); got != k {
			t.Fatalf("UNIQ_KEY %s found a message with UNIQ_KEY %s", k, got)
		}
		rec.Release()
	}
	for k, n := range wantKeys {
		if len(before.keys[k]) != n {
			t.Fatalf("KEYS %s found %d messages, want %d", k, len(before.keys[k]), n)
		}
	}

	c.powerCut(s, rng)
	s = c.open(t)
	defer s.Close()
	// A torn ASYNC_FLUSH cut may keep none of the unsynced writes (how
	// many writes there were, and so what a seed keeps, depends on group
	// commit timing): the log then ends where Pebble's checkpoint is and
	// there is nothing to re-dispatch.
	if s.cl.MaxOffset() > flushedAt && !strings.Contains(c.logs.String(), "re-dispatched CommitLog tail") {
		t.Fatalf("the reopened store re-dispatched nothing (Pebble had flushed up to %d); log:\n%s", flushedAt, c.logs)
	}
	after := snapshot(t, s, ids)
	checkRecords(t, s, after)
	survived := 0
	for qid := range after.entries {
		b, a := before.entries[qid], after.entries[qid]
		if mode == commitlog.SyncFlush && len(a) != len(b) {
			t.Fatalf("queue %d: %d entries after the crash, %d acknowledged", qid, len(a), len(b))
		}
		if len(a) > len(b) {
			t.Fatalf("queue %d: %d entries after the crash, more than the %d stored", qid, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("queue %d offset %d: entry %+v after the crash, %+v before", qid, i, a[i], b[i])
			}
		}
		survived += len(a)
	}
	end := s.cl.MaxOffset()
	// The index finds the messages that survived, and only those.
	for kind, hits := range map[string][2]map[string][]int64{"UNIQ_KEY": {before.uniq, after.uniq}, "KEYS": {before.keys, after.keys}} {
		for k, phys := range hits[0] {
			var want []int64
			for _, p := range phys {
				if p < end {
					want = append(want, p)
				}
			}
			if got := hits[1][k]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s %s: found at %v after the crash, want %v (before: %v, log end %d)", kind, k, got, want, phys, end)
			}
		}
	}
	t.Logf("%d of %d messages survived; Pebble had flushed the dispatch up to %d of %d", survived, ids, flushedAt, end)
	// The store goes on from where recovery left it.
	if _, err := s.PutMessages(ctx, batchMsgs(total)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got, want := s.MaxOffset("CB", total%4), int64(len(after.entries[total%4])+16); got != want {
			return fmt.Errorf("queue %d max %d, want %d", total%4, got, want)
		}
		return nil
	})
	return survived
}
