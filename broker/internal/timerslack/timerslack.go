// Package timerslack runs the broker process with a Linux timer slack
// larger than the kernel's 50 µs default.
//
// Why: a broker under a send load alternates between bursts of work and
// short idle gaps. Each gap puts the Go runtime's monitor thread (sysmon)
// back to 20 µs sleeps, and every one of those sleeps is a context switch:
// on this project's 2-core VM about 4000 a second, 11% of the broker's CPU
// under Apache's benchmark.Producer (perf, docs/operations.md "Timer
// slack"). The slack lets the kernel round such sleeps and timed waits up
// and merge their wake-ups; with 250 µs the broker's CPU per message fell
// by 7-18%. The price: any thread's timed sleep may end up to the slack
// late, the runtime's own short naps included, which at a moderate steady
// rate showed as about 80 µs more in the median send (the p99 did not
// move); nothing in the broker needs a timer finer than a millisecond.
//
// The slack is a per-thread attribute, inherited by new threads and kept
// across execve, and the runtime creates sysmon before any of our code
// runs. So the only way to give every thread the slack is to set it on the
// current thread and replace the process image with itself (Reexec); the
// process keeps its PID, arguments, environment and open descriptors.
package timerslack

import (
	"fmt"
	"strings"
	"time"
)

// Marker is added to the environment of the re-executed image: a second
// image that still lacks the slack does not exec again.
const Marker = "RMQ_TIMER_SLACK_EXEC"

// Decide reports whether the process should re-exec to run with want,
// given the calling thread's slack cur and the process environment: want 0
// leaves the slack alone; an image that was already re-executed (Marker
// set) never execs again, and err says why the slack did not take.
func Decide(want, cur time.Duration, environ []string) (reexec bool, err error) {
	if want <= 0 || cur == want {
		return false, nil
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, Marker+"=") {
			return false, fmt.Errorf("timer slack is %v after re-exec, want %v", cur, want)
		}
	}
	return true, nil
}
