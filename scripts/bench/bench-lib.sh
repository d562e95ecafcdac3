# shellcheck shell=bash
# Sourced (not run) by the load benchmarks ha.sh, vs-apache.sh and recovery.sh.

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

# free_ports <n>: the first of n consecutive loopback ports free now (the
# broker also listens on listenPort-2 and listenPort+1).
free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
while True:
    p = random.randrange(20000, 60000)
    try:
        socks = []
        for q in range(p, p + n):
            s = socket.socket(); s.bind(("127.0.0.1", q)); socks.append(s)
        print(p); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
}
