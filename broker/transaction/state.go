package transaction

import (
	"slices"
	"sync"

	"github.com/rmqgo/rmq/pkg/message"
)

// maxChain bounds the copies remembered per transaction (each check
// re-appends the half message; only the newest copies matter).
const maxChain = 32

// endMark records a transaction ended by this process: until the half queue
// progress passes upTo (the half queue's max offset when it ended), every
// copy of it that the check scan meets is resolved without a check.
type endMark struct {
	upTo    int64
	outcome int32 // message.TransactionCommitType / RollbackType, or outcomeDiscarded
}

// outcomeDiscarded marks a transaction dropped after transactionCheckMax.
const outcomeDiscarded int32 = -1

// opRef is one op message read from the op queue: its offset and the
// largest half offset it names.
type opRef struct {
	offset int64
	maxRef int64
}

// state is the in-memory view of the half queue (see doc.go). All fields
// are guarded by mu; no I/O happens under it.
type state struct {
	mu sync.Mutex
	// progress: half queue offsets below it are processed (committed as
	// the CID_RMQ_SYS_TRANS offset of the half queue).
	progress int64
	// done holds half offsets ≥ progress named by an op record.
	done map[int64]struct{}
	// ended holds transactions (by UNIQ_KEY) ended in this process.
	ended map[string]endMark
	// chains maps a transaction re-appended by the check scan to the half
	// offsets of its copies, oldest first.
	chains map[string][]int64
	// inflight holds transactions an END_TRANSACTION is storing; the
	// channel closes when it is done.
	inflight map[string]chan struct{}
	// lateDone holds the last maxLateDone transactions committed after
	// their discard (lateOrder: oldest first); prune leaves them.
	lateDone  map[string]struct{}
	lateOrder []string
	// opRead is the next op queue offset to read; ops the op records read
	// but not yet passed by progress; opProgress the op queue offset below
	// which every op names only half offsets < progress.
	opRead     int64
	ops        []opRef
	opProgress int64
}

func newState(progress, opProgress int64) *state {
	return &state{
		progress:   progress,
		opRead:     opProgress,
		opProgress: opProgress,
		done:       map[int64]struct{}{},
		ended:      map[string]endMark{},
		chains:     map[string][]int64{},
		inflight:   map[string]chan struct{}{},
		lateDone:   map[string]struct{}{},
	}
}

// addOp records an op message read from the op queue.
func (s *state) addOp(opOffset int64, refs []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maxRef := int64(-1)
	for _, r := range refs {
		maxRef = max(maxRef, r)
		if r >= s.progress {
			s.done[r] = struct{}{}
		}
	}
	s.ops = append(s.ops, opRef{offset: opOffset, maxRef: maxRef})
	s.opRead = opOffset + 1
}

// skipOps moves the op read cursor (offsets below the queue's min).
func (s *state) skipOps(next int64) {
	s.mu.Lock()
	if next > s.opRead {
		s.opRead = next
	}
	s.mu.Unlock()
}

// markDone records op records written by this process.
func (s *state) markDone(offsets []int64) {
	s.mu.Lock()
	for _, o := range offsets {
		if o >= s.progress {
			s.done[o] = struct{}{}
		}
	}
	s.mu.Unlock()
}

// claimResult says what END_TRANSACTION may do.
type claimResult struct {
	ok bool
	// busy, when not nil, is closed once the END_TRANSACTION of the
	// transaction that is in flight is done.
	busy <-chan struct{}
	// targets are the half offsets to write op records for (the requested
	// one and every known copy).
	targets []int64
	// prevOutcome is the known outcome when !ok (0: unknown).
	prevOutcome int32
	// chain is what to restore on unclaim.
	chain []int64
	// late: claimed by claimAfterDiscard (a commit after the discard).
	late bool
}

// claimEnd reserves the end of transaction uniq for END_TRANSACTION on half
// offset off. It fails when the transaction already ended: in this process
// (ended), by an op record (done), or because the check scan passed off
// without re-appending it in this process. While the claim is held the
// check scan stops at the transaction's half messages; finishEnd or
// unclaim releases it.
func (s *state) claimEnd(uniq string, off int64) claimResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if busy, ok := s.inflight[uniq]; ok {
		return claimResult{busy: busy}
	}
	if m, ok := s.ended[uniq]; ok {
		return claimResult{prevOutcome: m.outcome}
	}
	chain := s.chains[uniq]
	if len(chain) == 0 {
		if off < s.progress {
			return claimResult{}
		}
		if _, d := s.done[off]; d {
			return claimResult{}
		}
	} else if _, d := s.done[chain[len(chain)-1]]; d {
		return claimResult{}
	}
	targets := append(slices.Clone(chain), off)
	slices.Sort(targets)
	targets = slices.Compact(targets)
	s.inflight[uniq] = make(chan struct{})
	delete(s.chains, uniq)
	return claimResult{ok: true, targets: targets, chain: chain}
}

// claimAfterDiscard reserves the end of transaction uniq, which the check
// scan discarded, for a late commit. It fails when an end other than the
// discard is known (another late commit won); op records need not be
// written again (the discard wrote them).
func (s *state) claimAfterDiscard(uniq string) claimResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if busy, ok := s.inflight[uniq]; ok {
		return claimResult{busy: busy}
	}
	if m, ok := s.ended[uniq]; ok && m.outcome != outcomeDiscarded {
		return claimResult{prevOutcome: m.outcome}
	}
	if _, ok := s.lateDone[uniq]; ok {
		// Committed late already, and forgotten by ended since (the
		// scan moved on): the caller's index lookup may have run before
		// that commit was stored.
		return claimResult{prevOutcome: lateOutcome}
	}
	s.inflight[uniq] = make(chan struct{})
	return claimResult{ok: true, late: true}
}

// lateOutcome is what a late end stores: a commit (a rollback after the
// discard changes nothing).
const lateOutcome = message.TransactionCommitType

// maxLateDone bounds the late commits remembered outside ended (FIFO).
// The memory only has to outlast the key index's dispatch lag: afterwards
// the index finds the committed message.
const maxLateDone = 4096

// rememberLate records a transaction committed after its discard, so that
// a duplicate commit whose index lookup ran before that commit was stored
// cannot claim it again once ended has forgotten it.
func (s *state) rememberLate(uniq string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lateDone[uniq]; ok {
		return
	}
	s.lateDone[uniq] = struct{}{}
	s.lateOrder = append(s.lateOrder, uniq)
	if len(s.lateOrder) > maxLateDone {
		delete(s.lateDone, s.lateOrder[0])
		s.lateOrder = s.lateOrder[1:]
	}
}

// finishEnd records the end of a claimed transaction. Copies the scan made
// while the claim was held get their op records when the scan meets them.
func (s *state) finishEnd(uniq string, outcome int32, halfMax int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release(uniq)
	delete(s.chains, uniq)
	s.ended[uniq] = endMark{upTo: halfMax, outcome: outcome}
}

// unclaim undoes a claim whose store write failed.
func (s *state) unclaim(uniq string, c claimResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release(uniq)
	if len(c.chain) > 0 {
		chain := append(slices.Clone(c.chain), s.chains[uniq]...)
		slices.Sort(chain)
		s.chains[uniq] = slices.Compact(chain)
	}
}

// release ends an in-flight claim; mu is held.
func (s *state) release(uniq string) {
	if ch, ok := s.inflight[uniq]; ok {
		close(ch)
		delete(s.inflight, uniq)
	}
}

// verdict is the scan's classification of a half message.
type verdict int

const (
	pending       verdict = iota // no op record, not ended
	resolvedByOp                 // an op record names it
	endedInMemory                // its transaction ended in this process; no op for this copy yet
	ending                       // an END_TRANSACTION of it is in flight
)

// classify looks at half offset off of transaction uniq.
func (s *state) classify(off int64, uniq string) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, d := s.done[off]; d {
		return resolvedByOp
	}
	if _, e := s.ended[uniq]; e {
		return endedInMemory
	}
	if _, b := s.inflight[uniq]; b {
		return ending
	}
	return pending
}

// replaced records that the scan re-appended half offset off of uniq as
// copy. It reports false when the transaction ended meanwhile: the caller
// then writes an op record for the copy instead of checking it. (An END in
// flight may still fail: the copy is recorded and checked; if the END
// succeeds the check's answer finds the transaction ended.)
func (s *state) replaced(uniq string, off, copyOff int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, e := s.ended[uniq]; e {
		return false
	}
	chain := s.chains[uniq]
	if len(chain) == 0 {
		chain = append(chain, off)
	}
	chain = append(chain, copyOff)
	if len(chain) > maxChain {
		chain = slices.Delete(chain, 0, len(chain)-maxChain)
	}
	s.chains[uniq] = chain
	return true
}

// advance moves progress to next (never backwards). What lies below it is
// forgotten by prune.
func (s *state) advance(next int64) {
	s.mu.Lock()
	if next > s.progress {
		s.progress = next
	}
	s.mu.Unlock()
}

// prune forgets op marks and ended transactions that progress has passed.
func (s *state) prune() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for o := range s.done {
		if o < s.progress {
			delete(s.done, o)
		}
	}
	for k, m := range s.ended {
		if m.upTo <= s.progress {
			delete(s.ended, k)
		}
	}
}

// offsets returns the progress of both queues after passing the op records
// that name only processed half offsets.
func (s *state) offsets() (half, op int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.ops) && s.ops[i].maxRef < s.progress {
		i++
	}
	if i > 0 {
		s.opProgress = s.ops[i-1].offset + 1
		s.ops = slices.Delete(s.ops, 0, i)
	}
	if len(s.ops) == 0 {
		s.opProgress = max(s.opProgress, s.opRead)
	}
	return s.progress, s.opProgress
}

// snapshot is for tests and logs.
type snapshot struct {
	progress, opRead, opProgress int64
	done, ended, chains, ops     int
}

func (s *state) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return snapshot{progress: s.progress, opRead: s.opRead, opProgress: s.opProgress,
		done: len(s.done), ended: len(s.ended), chains: len(s.chains), ops: len(s.ops)}
}
