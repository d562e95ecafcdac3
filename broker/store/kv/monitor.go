package kv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// What Pebble (v2.1.7) does when the disk fails, and so what the monitor
// tracks:
//
//   - a table write, sync or creation fails during a flush: the flush is
//     abandoned, the memtable kept, and the flush retried at once, for as
//     long as the fault lasts. Only the event listener hears of it
//     (FlushEnd, BackgroundError); pebble.DB.Flush just keeps waiting.
//   - the same during a compaction: the compaction is abandoned, its
//     inputs stay valid; nothing is lost.
//   - a MANIFEST write, sync or creation fails (after a flush or a
//     compaction, or at open), or a WAL write or sync fails under a
//     synced commit: Pebble calls Logger.Fatalf and expects it not to
//     return (see fatalLogger).

// monitor follows a database's background work through Pebble's event
// listener: it logs failures (rate-limited: Pebble retries a failed flush
// in a loop) and keeps the state Err and Flush report.
type monitor struct {
	log *slog.Logger

	// cur is the error Err reports (nil: healthy); written under mu, read
	// without it on every send.
	cur atomic.Pointer[error]

	mu       sync.Mutex
	flushErr error         // the latest flush's error; nil once one succeeds
	fatal    error         // sticky
	failures int           // consecutive failed flushes
	failedCh chan struct{} // closed, and replaced, at each failed flush

	limits map[string]*logLimit
}

func newMonitor(log *slog.Logger) *monitor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &monitor{log: log.With("component", "pebble"), failedCh: make(chan struct{}), limits: map[string]*logLimit{}}
}

func (m *monitor) err() error {
	if p := m.cur.Load(); p != nil {
		return *p
	}
	return nil
}

// flushFailed returns a channel closed at the next failed flush.
func (m *monitor) flushFailed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failedCh
}

// consecutiveFailures is the number of flushes that failed since the last
// one that succeeded.
func (m *monitor) consecutiveFailures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures
}

// publish sets cur from the state; m.mu must be held.
func (m *monitor) publish() {
	var err error
	switch {
	case m.fatal != nil:
		err = m.fatal
	case m.flushErr != nil:
		err = fmt.Errorf("pebble cannot flush (it keeps retrying): %w", m.flushErr)
	}
	if err == nil {
		m.cur.Store(nil)
	} else {
		m.cur.Store(&err)
	}
}

func (m *monitor) flushEnd(info pebble.FlushInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if info.Err != nil && !isEmptyFlush(info.Err) {
		if m.failures == 0 {
			m.log.Error("pebble flush failed: new consume-queue entries, offsets and other metadata are held in memory only; retrying", "err", info.Err)
		}
		m.failures++
		m.flushErr = info.Err
		m.publish() // before waking Flush, which reads it
		close(m.failedCh)
		m.failedCh = make(chan struct{})
		return
	}
	if m.failures > 0 {
		m.log.Info("pebble flush succeeded again", "failedAttempts", m.failures)
	}
	m.failures = 0
	m.flushErr = nil
	m.publish()
}

// isEmptyFlush reports Pebble's FlushEnd error for a flush that had
// nothing to write: a success. Pebble does not export it; a test
// (TestEmptyFlushIsHealthy) notices when its text changes.
func isEmptyFlush(err error) bool { return err.Error() == "pebble: empty table" }

// setFatal records a fatal error before the process stops.
func (m *monitor) setFatal(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fatal == nil {
		m.fatal = err
	}
	m.publish()
}

// logLimit lets one message of a kind through per logEvery and counts the
// rest.
type logLimit struct {
	last       time.Time
	suppressed int
}

const logEvery = 10 * time.Second

// logLimited logs msg unless one of its kind was logged within logEvery.
func (m *monitor) logLimited(level slog.Level, kind, msg string, args ...any) {
	m.mu.Lock()
	l := m.limits[kind]
	if l == nil {
		l = &logLimit{}
		m.limits[kind] = l
	}
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < logEvery {
		l.suppressed++
		m.mu.Unlock()
		return
	}
	if l.suppressed > 0 {
		args = append(args, "suppressed", l.suppressed)
	}
	l.last, l.suppressed = now, 0
	m.mu.Unlock()
	m.log.Log(context.Background(), level, msg, args...)
}

func (m *monitor) listener() *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: m.flushEnd,
		BackgroundError: func(err error) {
			m.logLimited(slog.LevelError, "background", "pebble background error", "err", err)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			m.log.Warn("pebble write stall: writes wait for flushes or compactions", "reason", info.Reason)
		},
		WriteStallEnd: func() { m.log.Info("pebble write stall ended") },
		DiskSlow: func(info vfs.DiskSlowInfo) {
			m.logLimited(slog.LevelWarn, "diskslow", "pebble disk operation slow", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
		},
		LowDiskSpace: func(info pebble.LowDiskSpaceInfo) {
			m.log.Warn("pebble disk space low", "availBytes", info.AvailBytes, "totalBytes", info.TotalBytes, "percent", info.PercentThreshold)
		},
	}
}

// fatalError is the panic value of a Pebble fatal error.
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }

// pebbleFatal is a fatal error with the error Pebble passed along, if any.
type pebbleFatal struct {
	msg   string
	cause error
}

func (e *pebbleFatal) Error() string { return "kv: pebble fatal error: " + e.msg }
func (e *pebbleFatal) Unwrap() error { return e.cause }

// fatalLogger handles Pebble's Fatalf. Pebble calls it when it cannot tell
// what reached the disk (a MANIFEST write or a WAL sync failed) and
// continues as if it succeeded should Fatalf return (a failed commit would
// be reported as committed), so Fatalf never returns: it logs, records the
// error (Err reports it) and panics. In Pebble's background goroutines —
// where MANIFEST writes after flushes and compactions happen — that stops
// the process: a broker that cannot update Pebble's MANIFEST stops rather
// than run on in a state nobody can verify, and on restart Pebble reopens
// from the last MANIFEST record it synced while the store re-dispatches
// the CommitLog tail.
type fatalLogger struct {
	slogAdapter
	mon *monitor
}

func (l fatalLogger) Fatalf(format string, args ...any) {
	e := &pebbleFatal{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.cause = err
		}
	}
	l.mon.setFatal(e)
	l.mon.log.Error("pebble fatal error: the broker stops; restart it (once the disk is fixed, for an I/O error): Pebble reopens from its MANIFEST, the store re-dispatches the CommitLog tail", "err", e)
	panic(fatalError{e})
}

// backoffFS spaces out the retries of a failing flush. Pebble starts the
// next attempt as soon as one fails, which on a full or failing disk is a
// loop burning a processor and creating a file per turn; each attempt
// first creates its table, so waiting there (Pebble holds no lock a
// reader or writer needs meanwhile) slows the loop down.
type backoffFS struct {
	vfs.FS
	mon *monitor
}

// flushWrites is Pebble's write category of memtable flush output.
const flushWrites vfs.DiskWriteCategory = "pebble-memtable-flush"

// maxFlushBackoff bounds the wait; Close waits for an attempt in progress.
const maxFlushBackoff = 500 * time.Millisecond

func (fs backoffFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if category == flushWrites {
		if n := fs.mon.consecutiveFailures(); n > 0 {
			time.Sleep(min(10*time.Millisecond<<min(n-1, 6), maxFlushBackoff))
		}
	}
	return fs.FS.Create(name, category)
}

// Unwrap lets Pebble see the file system underneath (vfs.Root).
func (fs backoffFS) Unwrap() vfs.FS { return fs.FS }
