# shellcheck shell=bash
# Sourced (not run) by the load benchmarks ha.sh and vs-apache.sh.

# bench_defaults <duration> <name>: sets the load parameters both take from
# the environment to their defaults where unset: DURATION (<duration>),
# ROUNDS (2), SIZE (1024), THREADS (32), QUEUES (8), FLUSH_DISK_TYPE
# (ASYNC_FLUSH) and OUT (a new <name>-XXXX.jsonl results file).
bench_defaults() {
  DURATION=${DURATION:-$1}
  ROUNDS=${ROUNDS:-2}
  SIZE=${SIZE:-1024}
  THREADS=${THREADS:-32}
  QUEUES=${QUEUES:-8}
  FLUSH_DISK_TYPE=${FLUSH_DISK_TYPE:-ASYNC_FLUSH}
  OUT=${OUT:-$(mktemp -t "$2-XXXX.jsonl")}
}
