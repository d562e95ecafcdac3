package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting/code"
)

func TestExecutor(t *testing.T) {
	ex := NewExecutor("test", 1, 2)
	release := make(chan struct{})
	started := make(chan struct{})
	var ran atomic.Int32
	if !ex.Submit(func() { close(started); <-release; ran.Add(1) }) {
		t.Fatal("first submit refused")
	}
	<-started
	for i := range 2 {
		if !ex.Submit(func() { ran.Add(1) }) {
			t.Fatalf("submit %d refused with room in the queue", i)
		}
	}
	if ex.QueueLen() != 2 {
		t.Fatalf("QueueLen = %d, want 2", ex.QueueLen())
	}
	if ex.Submit(func() {}) {
		t.Fatal("submit accepted with a full queue")
	}
	close(release)
	ex.Close() // waits for the queued tasks
	if ran.Load() != 3 {
		t.Fatalf("%d tasks ran before Close returned, want 3", ran.Load())
	}
	if ex.Submit(func() {}) {
		t.Fatal("submit accepted after Close")
	}
	ex.Close() // idempotent
}

func TestExecutorSurvivesPanic(t *testing.T) {
	ex := NewExecutor("panicky", 1, 4)
	defer ex.Close()
	logs := &logBuffer{}
	ex.SetLogger(logs.logger())
	ex.Submit(func() { panic("task bug") })
	done := make(chan struct{})
	if !ex.Submit(func() { close(done) }) {
		t.Fatal("submit refused")
	}
	select {
	case <-done:
	case <-time.After(waitDeadline):
		t.Fatal("worker died with the panicking task")
	}
	if !strings.Contains(logs.String(), "task bug") {
		t.Fatalf("panic not logged: %s", logs.String())
	}
}

func TestResponseFromError(t *testing.T) {
	req := &Command{Code: 10, Opaque: 77, SerializeType: SerializeRocketMQ}
	for _, tc := range []struct {
		name       string
		err        error
		wantCode   int32
		wantRemark string
	}{
		{"nil", nil, code.Success, ""},
		{"code-error", &CodeError{Code: code.TopicNotExist, Remark: "topic T not exist"}, code.TopicNotExist, "topic T not exist"},
		{"errorf", Errorf(code.MessageIllegal, "body length %d too big", 5<<20), code.MessageIllegal, "body length 5242880 too big"},
		{"wrapped", fmt.Errorf("send: %w", Errorf(code.NoPermission, "denied")), code.NoPermission, "send: denied"},
		{"plain", io.ErrUnexpectedEOF, code.SystemError, "unexpected EOF"},
		{"empty-remark", &CodeError{Code: code.SystemBusy}, code.SystemBusy, "remoting: response code 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ResponseFromError(req, tc.err)
			if resp.Code != tc.wantCode || resp.Remark != tc.wantRemark {
				t.Fatalf("got code %d remark %q", resp.Code, resp.Remark)
			}
			if resp.Opaque != 77 || !resp.IsResponse() || resp.SerializeType != SerializeRocketMQ {
				t.Fatalf("not a response to req: %s", describe(resp))
			}
		})
	}
	// %w keeps the cause reachable.
	err := Errorf(code.SystemError, "flush: %w", context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v does not wrap its cause", err)
	}
}

func TestCounter(t *testing.T) {
	var c counter
	if err := c.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.add()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with a pending count: %v", err)
	}
	c.add() // adding while waiting is allowed
	go func() { c.done(); c.done() }()
	if err := c.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
