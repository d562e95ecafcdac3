#!/usr/bin/env bash
# Runs scripts/node5/check.js, the interop check (docs/interop.md) with the
# RocketMQ 5.x Node.js client (rocketmq-client-nodejs, gRPC) on a broker's
# gRPC endpoint:
#
#   scripts/node5-check.sh roundtrip -endpoint 127.0.0.1:8081 -t T -count 100
#
# Exit codes as scripts/node-client-check.sh (3: node or npm missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=node-lib.sh
. "$here/node-lib.sh"

find_node
npm_install "$here/node5" rocketmq-client-nodejs

exec "$node" "$here/node5/check.js" "$@"
