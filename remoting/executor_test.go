package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
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

// BenchmarkExecutor: the hand-off of one request to a worker (every request
// a server reads goes through it).
func BenchmarkExecutor(b *testing.B) {
	ex := NewExecutor("bench", 4, 1<<16)
	defer ex.Close()
	var wg sync.WaitGroup
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		for !ex.Submit(wg.Done) {
			runtime.Gosched()
		}
	}
	wg.Wait()
}

// TestExecutorDropExpired: with every worker stuck, the tasks that waited
// too long are answered (dropped) oldest first; a younger task, or one that
// cannot be dropped, stops the scan and later tasks still run.
func TestExecutorDropExpired(t *testing.T) {
	ex := NewExecutor("drop", 1, 8)
	release, started := make(chan struct{}), make(chan struct{})
	ex.Submit(func() { close(started); <-release })
	<-started
	var mu sync.Mutex
	var dropped []string
	var ran []string
	submit := func(name string, droppable bool) {
		var drop DropFunc
		if droppable {
			drop = func(_ DropReason, waited time.Duration, left int) {
				mu.Lock()
				defer mu.Unlock()
				dropped = append(dropped, fmt.Sprintf("%s left=%d waited>=20ms:%v", name, left, waited >= 20*time.Millisecond))
			}
		}
		if !ex.SubmitDroppable(func() { mu.Lock(); ran = append(ran, name); mu.Unlock() }, drop) {
			t.Fatalf("submit %s refused", name)
		}
	}
	submit("a", true)
	submit("b", true)
	submit("keep", false)
	submit("c", true)
	time.Sleep(30 * time.Millisecond)
	submit("young", true)
	if n := ex.DropExpired(20 * time.Millisecond); n != 2 {
		t.Fatalf("DropExpired dropped %d, want 2 (a, b)", n)
	}
	if ex.QueueLen() != 3 {
		t.Fatalf("QueueLen = %d after dropping, want 3", ex.QueueLen())
	}
	close(release)
	ex.Close()
	want := []string{"a left=4 waited>=20ms:true", "b left=3 waited>=20ms:true"}
	if fmt.Sprint(dropped) != fmt.Sprint(want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	if fmt.Sprint(ran) != fmt.Sprint([]string{"keep", "c", "young"}) {
		t.Fatalf("ran %v, want [keep c young]", ran)
	}
	if ex.DropExpired(0) != 0 {
		t.Fatal("DropExpired after Close found tasks")
	}
}

// TestExecutorSubmitSince: a task's wait counts from the time it was
// submitted with (a request's receipt), not from the submit.
func TestExecutorSubmitSince(t *testing.T) {
	ex := NewExecutor("since", 1, 8)
	release, started := make(chan struct{}), make(chan struct{})
	ex.Submit(func() { close(started); <-release })
	<-started
	var waited time.Duration
	ex.SubmitSince(func() {}, func(_ DropReason, w time.Duration, _ int) { waited = w }, time.Now().Add(-time.Second))
	ex.SubmitSince(func() {}, func(DropReason, time.Duration, int) { t.Error("a fresh task dropped") }, time.Now())
	if n := ex.DropExpired(500 * time.Millisecond); n != 1 || waited < time.Second {
		t.Fatalf("DropExpired dropped %d (waited %v), want the task received a second ago", n, waited)
	}
	close(release)
	ex.Close()
}

// TestExecutorZeroQueue: with no queue a task is accepted only while a
// worker is idle.
func TestExecutorZeroQueue(t *testing.T) {
	ex := NewExecutor("zero", 1, 0)
	defer ex.Close()
	release, started := make(chan struct{}), make(chan struct{})
	deadline := time.Now().Add(waitDeadline)
	for !ex.Submit(func() { close(started); <-release }) {
		if time.Now().After(deadline) {
			t.Fatal("the idle worker never took a task")
		}
		runtime.Gosched()
	}
	<-started
	if ex.Submit(func() {}) {
		t.Fatal("accepted a task with the only worker busy and no queue")
	}
	close(release)
}
