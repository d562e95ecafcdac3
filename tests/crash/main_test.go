// Package crash is the broker's crash-safety harness: under a SYNC_FLUSH
// load from concurrent producers it kills the real broker process with
// SIGKILL at random moments, restarts it, and reads every queue back from
// offset 0, round after round. After every restart each acknowledged
// message must be there, intact (body CRC and bytes checked), at contiguous
// queue offsets, with nothing served that was never sent.
//
//	go test ./tests/crash                          # CRASH_ROUNDS=3 (CI)
//	make crash                                     # 30 rounds
//	CRASH_ROUNDS=100 CRASH_SEED=42 ./scripts/crash.sh
//
// Environment: CRASH_ROUNDS (default 3), CRASH_SEED (default: the clock;
// logged, it reproduces the kill delays and body sizes), CRASH_PRODUCERS
// (default 4), CRASH_MAX_DELAY (longest run before a kill, Go duration,
// default 1.5s).
package crash

import (
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
