#!/usr/bin/env bash
# Runs scripts/node5/client.js, the RocketMQ 5.x Node.js client
# (rocketmq-client-nodejs, gRPC, pinned in scripts/node5/package.json and
# package-lock.json), against a broker's gRPC endpoint (issue 17):
#
#   scripts/node5-client.sh produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
#   scripts/node5-client.sh consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3
#   scripts/node5-client.sh lite --endpoint 127.0.0.1:8081 --topic P --group G --lites a,b --count 4
#
# The last line on stdout is the JSON result. Dependencies are installed
# once with `npm ci --prefix scripts/node5`.
#
# Exit codes: 0 ok, 1 failed, 2 usage, 3 node or npm missing (stderr
# starts with "node/npm not available:"), 4 npm ci failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=node-lib.sh
. "$here/node-lib.sh"

find_node
npm_install "$here/node5" rocketmq-client-nodejs

exec "$node" "$here/node5/client.js" "$@"
