package transaction

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestOpBody(t *testing.T) {
	body := appendOpBody(nil, []int64{0, 17, 123456789012})
	if string(body) != "0,17,123456789012," {
		t.Fatalf("body %q", body)
	}
	for in, want := range map[string][]int64{
		"0,17,123456789012,": {0, 17, 123456789012},
		"5":                  {5},
		" 1 , x,,-3,2,":      {1, 2},
		"":                   nil,
	} {
		if got := parseOpBody([]byte(in)); !slices.Equal(got, want) {
			t.Errorf("parse %q = %v, want %v", in, got, want)
		}
	}
	offs := make([]int64, 1000)
	for i := range offs {
		offs[i] = int64(1_000_000 + i)
	}
	chunks := chunkOffsets(offs, 100)
	var back []int64
	for _, c := range chunks {
		if len(c) > 100 {
			t.Fatalf("chunk of %d bytes", len(c))
		}
		back = append(back, parseOpBody(c)...)
	}
	if !slices.Equal(back, offs) {
		t.Fatal("chunks lose offsets")
	}
	if n := len(chunkOffsets([]int64{1, 2}, 0)); n != 1 {
		t.Fatalf("default size: %d chunks", n)
	}
}

// TestOpWriterGroupsCallers: callers arriving during a write share the
// next one, and each sees its own result.
func TestOpWriterGroupsCallers(t *testing.T) {
	var mu sync.Mutex
	var writes [][]int64
	release := make(chan struct{})
	var first atomic.Bool
	w := &opWriter{put: func(_ context.Context, offs []int64) error {
		if first.CompareAndSwap(false, true) {
			<-release // hold the first write until the others queued
		}
		mu.Lock()
		writes = append(writes, slices.Clone(offs))
		mu.Unlock()
		return nil
	}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.write(context.Background(), []int64{0}) }()
	for !first.Load() {
		runtime.Gosched()
	}
	for i := 1; i <= 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.write(context.Background(), []int64{int64(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	// Wait until all ten are queued behind the first write.
	for {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n == 10 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if len(writes) != 2 || len(writes[0]) != 1 || len(writes[1]) != 10 {
		t.Fatalf("writes %v, want [0] then the ten others together", writes)
	}

	boom := errors.New("boom")
	w = &opWriter{put: func(context.Context, []int64) error { return boom }}
	if err := w.write(context.Background(), []int64{1}); !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if err := w.write(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
