package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestPrefixVerifier: a log without epochs (a classic replica upgraded in
// place) is accepted only when its last record is byte for byte the
// master's record at that offset and it does not end past the master's
// log; an unreachable master or one without that record is a refusal.
func TestPrefixVerifier(t *testing.T) {
	_, mine, _ := openEpochStore(t)
	put := func(st *store.Store, body string) {
		t.Helper()
		m := &message.Message{Topic: "T", Body: []byte(body), Properties: map[string]string{}, BornTimestamp: 1700000000000}
		if _, err := st.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		put(mine, fmt.Sprintf("m-%d", i))
	}
	// The master's log: this one's bytes (replicated), then others.
	masterStore := mine
	asks := 0
	v := &prefixVerifier{cl: mine.CommitLog(), read: mine.ReadRecord, masterAddr: "master:10911",
		invoker: func(_ context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
			asks++
			if req.Code != code.ViewMessageByID || addr != "master:10911" {
				return nil, fmt.Errorf("unexpected request %d to %s", req.Code, addr)
			}
			off, _ := strconv.ParseInt(req.Ext("offset"), 10, 64)
			rec, err := masterStore.ReadRecord(off)
			if err != nil {
				return remoting.NewResponse(req, code.SystemError, "can not find message by the offset"), nil
			}
			resp := remoting.NewResponse(req, code.Success, "")
			resp.Body = rec
			return resp, nil
		}}
	localMax := mine.CommitLog().MaxOffset()

	// Aligned, and behind a master that went on.
	if err := v.verify(localMax, localMax); err != nil {
		t.Fatalf("aligned logs refused: %v", err)
	}
	if err := v.verify(localMax, localMax+4096); err != nil {
		t.Fatalf("a prefix of the master's refused: %v", err)
	}
	// Past the master's end: refused before anything is asked.
	before := asks
	if err := v.verify(localMax, localMax-1); err == nil || !strings.Contains(err.Error(), "past the master's end") || asks != before {
		t.Fatalf("a log past the master's accepted or asked: %v (asks %d→%d)", err, before, asks)
	}
	// A master whose record there differs (another set's log, or a tail it
	// rewrote): the same bodies at the same offsets, stored at other times.
	_, other, _ := openEpochStore(t)
	time.Sleep(5 * time.Millisecond)
	for i := range 5 {
		put(other, fmt.Sprintf("m-%d", i))
	}
	if other.CommitLog().MaxOffset() != localMax {
		t.Fatalf("the other log ends at %d, want %d", other.CommitLog().MaxOffset(), localMax)
	}
	masterStore = other
	if err := v.verify(localMax, localMax); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("a diverged log accepted: %v", err)
	}
	// A master without a record there.
	_, empty, _ := openEpochStore(t)
	masterStore = empty
	if err := v.verify(localMax, localMax); err == nil || !strings.Contains(err.Error(), "has no record") {
		t.Fatalf("a master without the record: %v", err)
	}
	// The master unreachable.
	v.invoker = func(context.Context, string, *remoting.Command) (*remoting.Command, error) {
		return nil, errors.New("connection refused")
	}
	if err := v.verify(localMax, localMax); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("an unreachable master: %v", err)
	}
}
