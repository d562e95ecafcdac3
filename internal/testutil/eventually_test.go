package testutil

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a fatal failure instead of stopping the goroutine for good.
type fakeT struct {
	testing.TB
	failed atomic.Bool
	msg    string
}

func (f *fakeT) Helper()             {}
func (f *fakeT) Logf(string, ...any) {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed.Store(true)
	f.msg = format
	panic(f)
}

func run(f *fakeT, body func()) {
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
	}()
	body()
}

func TestEventually(t *testing.T) {
	for _, tc := range []struct {
		name     string
		okAfter  int // calls until f succeeds; -1 never
		wantFail bool
	}{
		{"at once", 0, false},
		{"after a few tries", 3, false},
		{"never", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{}
			calls := 0
			run(ft, func() {
				Eventually(ft, 100*time.Millisecond, func() error {
					calls++
					if tc.okAfter >= 0 && calls > tc.okAfter {
						return nil
					}
					return errors.New("not yet")
				})
			})
			if ft.failed.Load() != tc.wantFail {
				t.Fatalf("failed=%v after %d calls, want %v", ft.failed.Load(), calls, tc.wantFail)
			}
		})
	}
	ft := &fakeT{}
	run(ft, func() { WaitFor(ft, 30*time.Millisecond, "never", func() bool { return false }) })
	if !ft.failed.Load() {
		t.Fatal("WaitFor of a false condition did not fail")
	}
}
