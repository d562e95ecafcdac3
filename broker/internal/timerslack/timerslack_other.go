//go:build !linux

package timerslack

import (
	"errors"
	"time"
)

// Supported reports whether this platform has a timer slack to set.
const Supported = false

var errUnsupported = errors.New("timer slack: Linux only")

// Current is the calling thread's timer slack (Linux only).
func Current() (time.Duration, error) { return 0, errUnsupported }

// Reexec is Linux only.
func Reexec(time.Duration, []string, []string) error { return errUnsupported }
