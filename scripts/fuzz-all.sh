#!/usr/bin/env bash
# Runs every fuzz target in the workspace for a while each (default 30s).
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-30s}
for pkg in $(go list github.com/rmqgo/rmq/...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    echo "== $pkg $f"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$T" "$pkg"
  done
done
