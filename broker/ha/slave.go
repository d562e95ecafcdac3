package ha

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// readBufferSize buffers a slave's reads of the master's frames: two
// default transfer batches.
const readBufferSize = 64 << 10

// maxUnreported bounds the bytes a slave appends before it reports, when
// frames keep arriving buffered (see runSession).
const maxUnreported = 1 << 20

// addrPoll is how often a slave without a master address looks for one.
const addrPoll = 100 * time.Millisecond

// Slave replicates from a master (Apache's DefaultHAClient): it reports
// its max offset on connect, after every append and every heartbeat
// interval, and appends each frame verbatim. The store's dispatcher builds
// consume queues and indexes from the appended bytes.
type Slave struct {
	*link
}

// NewSlave replicates into cl from the master at addr() (re-read before
// every connect; "" waits).
func NewSlave(cl *commitlog.Log, addr func() string, opts Options) *Slave {
	s := &Slave{link: newLink(cl, addr, opts)}
	s.session = s.runSession
	return s
}

// runSession runs one connection until it fails.
func (s *Slave) runSession(addr string) error {
	nc, release, err := s.dial(addr)
	if nc == nil {
		return err
	}
	defer release()
	s.opts.Logger.Info("ha connected to master", "master", addr, "maxOffset", s.cl.MaxOffset())

	report := s.reporter(s.writer(nc), AppendReport)
	if err := report(true); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	stop := s.heartbeat(nc, func() error { return report(true) })
	defer stop()

	// Buffered: a frame's header and body (and any frames behind it) come
	// in one read rather than one read each.
	br := bufio.NewReaderSize(nc, readBufferSize)
	tr := NewTransferReader(br)
	unreported := 0
	dl := deadline{set: nc.SetReadDeadline, d: s.opts.HousekeepingInterval}
	for {
		dl.refresh(time.Now())
		t, err := tr.Next()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		now := time.Now()
		s.lastRead.Store(now.UnixMilli())
		if err := s.checkStart(t.Start); err != nil {
			return err
		}
		if err := s.appendBody(t.Start, t.Body, now); err != nil {
			return err
		}
		// One report covers the frames that came in one read: while the
		// next frame is already buffered whole, it is appended first.
		// Apache's HAClient reports after each frame; a report is only
		// the slave's max offset, so a master takes either, and it saves
		// a write here and a read and an ack round on the master.
		unreported += len(t.Body)
		if unreported < maxUnreported && frameBuffered(br, HeaderSize, 8) {
			continue
		}
		unreported = 0
		if err := report(false); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
}

// frameBuffered reports whether a whole frame (header and body) is
// already in br, so reading it makes no system call: headerSize is the
// protocol's frame header, lenAt where its int32 body length sits.
func frameBuffered(br *bufio.Reader, headerSize, lenAt int) bool {
	if br.Buffered() < headerSize {
		return false
	}
	hdr, err := br.Peek(headerSize)
	if err != nil {
		return false
	}
	n := int32(binary.BigEndian.Uint32(hdr[lenAt:]))
	return n >= 0 && br.Buffered()-headerSize >= int(n)
}
