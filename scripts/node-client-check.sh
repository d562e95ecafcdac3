#!/usr/bin/env bash
# Runs the Node.js real-client check (scripts/node/client-check.js, ali-ons
# pinned in scripts/node/package.json / package-lock.json) against any
# RocketMQ cluster:
#
#   scripts/node-client-check.sh roundtrip -n 127.0.0.1:9876 -t CheckTopic -count 1000
#   scripts/node-client-check.sh produce -n 127.0.0.1:9876 -t T -send-mode async
#   scripts/node-client-check.sh consume -n 127.0.0.1:9876 -t T -run <run id> -count 1000
#   scripts/node-client-check.sh help
#
# The last line on stdout is the check's JSON result (docs/interop.md).
# The dependencies are installed once with `npm ci --prefix scripts/node`
# (from the committed package-lock.json, install scripts disabled) and
# reinstalled only when package-lock.json changes.
#
# Environment: NODE (node executable, default node), NPM (default npm).
#
# Exit codes: 0 check passed, 1 check failed, 2 usage error, 3 node or npm
# missing (stderr starts with "node/npm not available:"), 4 npm ci failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nodedir="$here/node"
# shellcheck source=node-lib.sh
. "$here/node-lib.sh"

find_node
npm_install "$nodedir" ali-ons

exec "$node" "$nodedir/client-check.js" "$@"
