#!/usr/bin/env bash
# Runs scripts/cpp4/client.py, which drives the C++ RocketMQ client
# (apache/rocketmq-client-cpp, remoting protocol) through Apache's Python
# wrapper rocketmq-client-python 0.5.0rc2, whose wheel bundles the C++
# library (pinned in scripts/cpp4/requirements.txt):
#
#   scripts/cpp4-client.sh produce --namesrv 127.0.0.1:9876 --topic T --group PG --count 3
#   scripts/cpp4-client.sh consume --namesrv 127.0.0.1:9876 --topic T --group CG --count 3
#
# The last line on stdout is the JSON result. The packages are installed
# once into scripts/cpp4/.venv.
#
# Exit codes: 0 ok, 1 failed, 2 usage, 3 the client cannot run here (python3
# or its venv module missing, or not x86_64 Linux, the only platform the
# wheel is built for; stderr says which), 4 pip install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
	echo "C++ client not available: rocketmq-client-python 0.5.0rc2 bundles librocketmq for x86_64 Linux only, this is $(uname -s)/$(uname -m)" >&2
	exit 3
fi
# shellcheck source=python-venv-lib.sh
. "$here/python-venv-lib.sh"
venv_ready "$here/cpp4" cpp4
exec "$venv/bin/python" "$here/cpp4/client.py" "$@"
