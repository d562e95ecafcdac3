#!/usr/bin/env bash
# Runs scripts/python5/client.py, the RocketMQ 5.x Python client
# (rocketmq-python-client, gRPC; every package pinned in
# scripts/python5/requirements.txt), against a broker's gRPC endpoint
# (issue 17), with the command line of scripts/node5-client.sh:
#
#   scripts/python5-client.sh produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
#   scripts/python5-client.sh consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3
#   scripts/python5-client.sh lite --endpoint 127.0.0.1:8081 --topic P --group G --lites a,b --count 4
#
# The last line on stdout is the JSON result. The packages are installed
# once into scripts/python5/.venv (again when requirements.txt changes);
# concurrent first runs install once.
#
# Exit codes: 0 ok, 1 failed, 2 usage, 3 python3 or its venv module missing
# (stderr starts with "python not available:"), 4 pip install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=python-venv-lib.sh
. "$here/python-venv-lib.sh"
venv_ready "$here/python5" python5
exec "$venv/bin/python" "$here/python5/client.py" "$@"
