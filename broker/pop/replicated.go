package pop

import (
	"context"
	"sync/atomic"

	"github.com/rmqgo/rmq/remoting"
)

// A pop is answered once the slaves hold its checkpoint record
// (Deps.Replicas): a checkpoint lost with its master would leave a message
// handed out and never revived, while the pop offset it moved may reach
// the slaves with their copy of the consumer offsets. Acks, changes of
// invisible time and revives do not wait: lost with the master, their
// records only make the new master deliver a message again, as a consumer
// that died before acking does. (Apache's acks wait too; here they would
// add a replication round trip to every ack for no loss avoided.)
//
// The wait must not hold a journal queue's lock: a slave that stopped
// acking would stall every pop and ack sharing the queue for its timeout,
// one after another. So the records' ends are gathered in the request's
// context while it holds locks, and the request waits once, at its end,
// when it holds none (replicated).

type replWaitKey struct{}

// replWait is the CommitLog end a request's journal records reach.
type replWait struct{ end atomic.Int64 }

func (w *replWait) add(end int64) {
	for cur := w.end.Load(); end > cur && !w.end.CompareAndSwap(cur, end); cur = w.end.Load() {
	}
}

// withReplWait gives ctx a fresh gatherer of journal record ends.
func withReplWait(ctx context.Context) (context.Context, *replWait) {
	w := &replWait{}
	return context.WithValue(ctx, replWaitKey{}, w), w
}

// noteReplicated records that the caller's answer needs the slaves to hold
// the CommitLog up to end: in the request's gatherer when it has one,
// otherwise by waiting now (for callers that hold no journal lock).
func (j *journal) noteReplicated(ctx context.Context, end int64) {
	if j.replicas == nil || end <= 0 {
		return
	}
	if w, ok := ctx.Value(replWaitKey{}).(*replWait); ok {
		w.add(end)
		return
	}
	j.waitReplicated(ctx, end)
}

// waitReplicated waits for the slaves; a failure leaves the records in
// force (Apache counts FLUSH_SLAVE_TIMEOUT as written).
func (j *journal) waitReplicated(ctx context.Context, end int64) {
	if err := j.replicas(ctx, end); err != nil {
		j.log.Warn("pop journal records not acknowledged by the slaves in time: answered anyway", "end", end, "err", err)
	}
}

// replicated runs a request with a gatherer of its journal records' ends
// and waits for the slaves once it returned (its locks released).
func (p *Processor) replicated(ctx context.Context, f func(context.Context) (*remoting.Command, error)) (*remoting.Command, error) {
	if p.j.replicas == nil {
		return f(ctx)
	}
	ctx, w := withReplWait(ctx)
	resp, err := f(ctx)
	if end := w.end.Load(); end > 0 {
		p.j.waitReplicated(ctx, end)
	}
	return resp, err
}
