//go:build linux

package timerslack

import (
	"fmt"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform has a timer slack to set.
const Supported = true

// Current is the calling thread's timer slack.
func Current() (time.Duration, error) {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("prctl PR_GET_TIMERSLACK: %w", err)
	}
	return time.Duration(ns), nil
}

// Reexec sets the calling thread's slack to d and replaces the process
// image with /proc/self/exe, argv args and environment environ plus
// Marker. It returns only on failure, with the thread's slack restored.
func Reexec(d time.Duration, args, environ []string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := Current()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_TIMERSLACK %v: %w", d, err)
	}
	env := append(environ[:len(environ):len(environ)], Marker+"=1")
	err = syscall.Exec("/proc/self/exe", args, env)
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(prev.Nanoseconds()), 0, 0, 0)
	return fmt.Errorf("re-exec /proc/self/exe: %w", err)
}
