#!/usr/bin/env bash
# Flake hunter: runs the whole suite N times, each time in a fresh clone of
# this repository's HEAD (nothing cached in the work tree: data dirs, bin/,
# built test binaries), and summarizes which tests failed in how many runs.
#
#   scripts/test-repeat.sh          # 5 runs of `make test`
#   scripts/test-repeat.sh 20       # 20 runs
#
# Knobs (environment):
#   TEST_CMD        command run in each clone by bash -c (default: make test).
#                   A tiny one checks this script itself, e.g.
#                   TEST_CMD='go test -count=1 ./remoting/' scripts/test-repeat.sh 2
#   REPEAT_LOG_DIR  where run-<i>.log go (default: a new temp dir, printed)
#   KEEP_CLONES=1   keep the clones (default: each is removed after its run)
#
# Only committed work is tested: uncommitted changes are not in the clones.
# Exit status: 0 if every run passed, 1 if any failed, 2 on bad usage.
set -uo pipefail

runs=${1:-5}
case $runs in
  ''|*[!0-9]*|0) echo "usage: $0 [runs >= 1]" >&2; exit 2 ;;
esac
test_cmd=${TEST_CMD:-make test}

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 2
head=$(git -C "$root" rev-parse HEAD) || exit 2
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "test-repeat: uncommitted changes in $root are not tested (HEAD ${head:0:12} is)" >&2
fi
logdir=${REPEAT_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/test-repeat.XXXXXX")}
mkdir -p "$logdir" || exit 2
echo "test-repeat: $runs run(s) of '$test_cmd' at ${head:0:12}; logs in $logdir"

# failed_tests LOG prints, once each, the tests and packages that failed in
# one run's log: `--- FAIL: Name` lines (subtests too, as Parent/Sub) and
# package lines `FAIL<tab>pkg ...` (the bare `FAIL` line go test prints
# before them names nothing and is skipped).
failed_tests() {
  sed -n -E \
    -e 's/^[[:space:]]*--- FAIL: ([^[:space:]]+).*/\1/p' \
    -e 's/^FAIL[[:space:]]+([^[:space:]]+).*/\1 (package)/p' "$1" | sort -u
}

declare -a results walls
failed_runs=0
for i in $(seq 1 "$runs"); do
  log="$logdir/run-$i.log"
  clone=$(mktemp -d "${TMPDIR:-/tmp}/test-repeat-clone.XXXXXX")
  start=$(date +%s)
  {
    # --no-checkout + detach: the clone holds exactly HEAD, whatever branch
    # (or detached commit) the source is on.
    git clone --quiet --no-checkout "$root" "$clone/rmq" &&
      { git -C "$clone/rmq" cat-file -e "$head^{commit}" 2>/dev/null ||
        git -C "$clone/rmq" fetch --quiet "$root" "$head"; } &&
      git -C "$clone/rmq" checkout --quiet --detach "$head" &&
      (cd "$clone/rmq" && bash -c "$test_cmd")
  } >"$log" 2>&1
  rc=$?
  walls[i]=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then
    results[i]=PASS
  else
    results[i]="FAIL($rc)"
    failed_runs=$((failed_runs + 1))
  fi
  echo "test-repeat: run $i/$runs ${results[i]} in ${walls[i]}s ($log)"
  if [ "${KEEP_CLONES:-0}" = 1 ]; then
    echo "test-repeat: clone kept in $clone/rmq"
  else
    # Test processes may leave read-only files (Go's module cache inside
    # the clone, if any): make them writable first.
    chmod -R u+w "$clone" 2>/dev/null
    rm -rf "$clone"
  fi
done

echo
printf '%-5s  %-10s  %8s\n' run result wall
for i in $(seq 1 "$runs"); do
  printf '%-5s  %-10s  %7ss\n' "$i" "${results[i]}" "${walls[i]}"
done
echo
if [ "$failed_runs" -eq 0 ]; then
  echo "all $runs runs passed"
  exit 0
fi
echo "$failed_runs of $runs runs failed; failed at least once (runs failed in):"
names=$(for i in $(seq 1 "$runs"); do failed_tests "$logdir/run-$i.log"; done | sort | uniq -c | sort -k1,1nr -k2)
if [ -z "$names" ]; then
  echo "  (no --- FAIL or package FAIL line: see the logs, e.g. a build or vet failure)"
else
  echo "$names" | while read -r n name; do printf '  %3d/%d  %s\n' "$n" "$runs" "$name"; done
fi
exit 1
