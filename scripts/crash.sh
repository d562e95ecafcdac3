#!/usr/bin/env bash
# The broker's crash-safety harness (tests/crash): under a SYNC_FLUSH load
# from concurrent producers it kills the real broker with SIGKILL at random
# moments, restarts it and checks every queue from offset 0 — every
# acknowledged message present and intact, no corrupt record, contiguous
# queue offsets, nothing that was never sent — round after round.
#
#   scripts/crash.sh                 # 30 rounds
#   scripts/crash.sh 200             # 200 rounds
#   CRASH_SEED=42 scripts/crash.sh   # replay the kill schedule of seed 42
#   scripts/crash.sh 50 -race        # extra flags go to `go test`
#
# Other knobs: CRASH_PRODUCERS (default 4), CRASH_MAX_DELAY (longest run
# before a kill, default 1.5s), CRASH_TIMEOUT (go test -timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-${CRASH_ROUNDS:-30}}
if [ $# -gt 0 ]; then shift; fi
case $rounds in
  ''|*[!0-9]*) echo "usage: $0 [rounds] [go test flags...]" >&2; exit 2 ;;
esac
timeout=${CRASH_TIMEOUT:-$((rounds * 15 + 180))s}
export CRASH_ROUNDS=$rounds
exec "${GO:-go}" test -count=1 -v -run '^TestCrashRounds$' -timeout "$timeout" "$@" github.com/rmqgo/rmq/tests/crash
