package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// prefixCheckTimeout bounds the master's answer to the prefix check.
const prefixCheckTimeout = 5 * time.Second

// prefixVerifier checks a CommitLog that holds bytes but no epoch list —
// a classic replica restarted in controller mode, the in-place upgrade of
// Apache's controller deploy guide ("stop the set with aligned CommitLogs,
// restart it in controller mode, the master first") — before this replica
// replicates on from its end. Apache's slave trusts such a log; ours asks
// the master for the record at the offset of its own last record
// (VIEW_MESSAGE_BY_ID, which Apache's brokers answer with the stored
// bytes too) and goes on only when the two are byte for byte the same and
// its log does not reach past the master's. A log of another set, or one
// whose tail the master rewrote after losing it, differs there and is
// refused (ErrDiverged: wipe the replica, or make it the master).
type prefixVerifier struct {
	cl         *commitlog.Log
	read       func(phy int64) ([]byte, error)
	invoker    func(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
	masterAddr string

	mu      sync.Mutex
	lastEnd int64 // the log end lastRec was found for
	lastRec int64 // offset of the last record below lastEnd (-1: none)
}

func (v *prefixVerifier) verify(localMax, masterMax int64) error {
	if localMax > masterMax {
		return fmt.Errorf("this log ends at %d, past the master's end %d: the set's CommitLogs were not aligned when it was upgraded", localMax, masterMax)
	}
	last, err := v.lastRecord(localMax)
	if err != nil {
		return err
	}
	mine, err := v.read(last)
	if err != nil {
		return fmt.Errorf("read the local record at %d: %w", last, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), prefixCheckTimeout)
	defer cancel()
	req := remoting.NewRequest(code.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(last, 10)}, nil)
	resp, err := v.invoker(ctx, v.masterAddr, req)
	if err != nil {
		return fmt.Errorf("ask the master %s for its record at %d: %w", v.masterAddr, last, err)
	}
	if resp.Code != code.Success {
		return fmt.Errorf("the master %s has no record at %d (code %d: %s)", v.masterAddr, last, resp.Code, resp.Remark)
	}
	if !bytes.Equal(resp.Body, mine) {
		return fmt.Errorf("the record at %d differs from the master's: the logs diverged", last)
	}
	return nil
}

// lastRecord finds where the log's last record below end starts, walking
// the last segment that holds data (a reconnect after a refusal asks again
// for the same end: the walk is kept).
func (v *prefixVerifier) lastRecord(end int64) (int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lastEnd == end && v.lastRec >= 0 {
		return v.lastRec, nil
	}
	from := v.cl.MinOffset()
	for _, b := range v.cl.SegmentBases() {
		if b < end && b > from {
			from = b
		}
	}
	var buf []byte
	it := v.cl.NewIterator(from, commitlog.IteratorOptions{Limit: func() int64 { return end }, ReadBuffer: &buf})
	defer it.Close()
	last := int64(-1)
	for {
		rec, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("walk the local log from %d: %w", from, err)
		}
		last = rec.Offset
	}
	if last < 0 {
		return 0, fmt.Errorf("no complete record between %d and %d", from, end)
	}
	v.lastEnd, v.lastRec = end, last
	return last, nil
}
