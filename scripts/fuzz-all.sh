#!/usr/bin/env bash
# Runs every fuzz target in the workspace for a while each (default 30s;
# `make fuzz-long` passes 10000000x: ten million executions each).
#
#   scripts/fuzz-all.sh [FUZZTIME [PACKAGE...]]
#
# PACKAGEs (import paths) restrict the run to their targets, in that order
# (a campaign can take the fast leaf packages first); default: every
# package of the workspace.
#
# FUZZ_DONE=FILE makes a long run resumable: a target that passed is
# recorded there ("pkg Func FUZZTIME" a line) and skipped by the next run
# with the same FUZZTIME. A target that fails (a crasher: go test writes it
# under the package's testdata/fuzz/FuzzX/, where it becomes a regression
# case) does not stop the others; the script lists the failures and exits 1.
#
# FUZZMINIMIZE (default 5s) caps the minimization of each new corpus entry
# (go test -fuzzminimizetime; Go's default 60s). Inputs that widen coverage
# keep arriving for a long time in some targets (FuzzBuildMessage: hundreds
# in its first minutes), and the execution count stood still while they
# were minimized (0 execs/s for seconds at a time; once for an hour).
# Crashers are still minimized within the cap and saved either way.
set -uo pipefail
cd "$(dirname "$0")/.."
T=${1:-30s}
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && mapfile -t pkgs < <(go list github.com/rmqgo/rmq/...)
minimize=${FUZZMINIMIZE:-5s}
done_file=${FUZZ_DONE:-}
[ -n "$done_file" ] && touch "$done_file"
failed=()
for pkg in "${pkgs[@]}"; do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    if [ -n "$done_file" ] && grep -qxF "$pkg $f $T" "$done_file"; then
      echo "== $pkg $f: done in an earlier run ($done_file)"
      continue
    fi
    echo "== $pkg $f ($(date -u +%H:%M:%S))"
    if go test -run '^$' -fuzz "^$f\$" -fuzztime "$T" -fuzzminimizetime "$minimize" "$pkg"; then
      [ -n "$done_file" ] && echo "$pkg $f $T" >> "$done_file"
    else
      failed+=("$pkg $f")
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all fuzz targets passed ($T each)"
