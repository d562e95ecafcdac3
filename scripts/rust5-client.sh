#!/usr/bin/env bash
# Runs scripts/rust5's driver, the RocketMQ 5.x Rust client (crate rocketmq
# 5.0.0 of apache/rocketmq-clients, gRPC; every crate pinned in
# scripts/rust5/Cargo.lock), against a broker's gRPC endpoint (issue 17),
# with the command line of scripts/python5-client.sh:
#
#   scripts/rust5-client.sh produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
#   scripts/rust5-client.sh transaction --endpoint 127.0.0.1:8081 --topic T --tx commit,rollback,check
#   scripts/rust5-client.sh consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3
#   scripts/rust5-client.sh build      (builds the driver only: make rust5-client)
#   scripts/rust5-client.sh check      (exit 0 when the driver can run, 3 if not)
#
# The last line on stdout is the JSON result. The driver is built with cargo
# into $RMQ_RUST5_TARGET (default $HOME/.cache/rmq/rust5-target, outside the
# repository, kept between runs). A cold build compiles ~250 crates (about
# 6 minutes on 2 cores), too long for `make test`: the script builds only
# when asked (the build argument, or RMQ_RUST5_BUILD=1) or when a driver
# already built is older than its sources (a rebuild of the driver alone,
# well under a minute).
#
# Exit codes: 0 ok, 1 failed, 2 usage, 3 cargo missing or the driver not
# built yet (stderr starts with "rust not available:"), 4 cargo build failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/rust5"
target="${RMQ_RUST5_TARGET:-$HOME/.cache/rmq/rust5-target}"
bin="$target/debug/rust5-driver"

cargo=${CARGO:-cargo}
if ! command -v "$cargo" >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
	cargo="$HOME/.cargo/bin/cargo"
fi
if ! command -v "$cargo" >/dev/null 2>&1; then
	echo "rust not available: cargo not found in PATH or ~/.cargo/bin (install Rust with rustup, then make rust5-client)" >&2
	exit 3
fi

if [ "${1:-}" = build ]; then
	RMQ_RUST5_BUILD=1
fi

fresh() {
	[ -x "$bin" ] && [ "$bin" -nt "$dir/src/main.rs" ] && [ "$bin" -nt "$dir/Cargo.toml" ] && [ "$bin" -nt "$dir/Cargo.lock" ]
}

if ! fresh; then
	if [ ! -x "$bin" ] && [ -z "${RMQ_RUST5_BUILD:-}" ]; then
		echo "rust not available: the Rust 5.x driver is not built ($bin missing); run make rust5-client once (a cold build takes about 6 minutes)" >&2
		exit 3
	fi
	exec 9>"${TMPDIR:-/tmp}/rmqgo-cargo-rust5.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if ! fresh; then
		log="$(mktemp "${TMPDIR:-/tmp}/rmqgo-cargo.XXXXXX")"
		if ! CARGO_TARGET_DIR="$target" "$cargo" build --locked --manifest-path "$dir/Cargo.toml" >"$log" 2>&1; then
			cat "$log" >&2
			echo "cargo build of $dir failed (log: $log)" >&2
			exit 4
		fi
		rm -f "$log"
		# cargo leaves an up-to-date binary's time alone: mark it fresh.
		touch "$bin"
	fi
	exec 9>&-
fi

case "${1:-}" in
build | check)
	echo "{\"ok\":true,\"driver\":\"$bin\"}"
	exit 0
	;;
esac
exec "$bin" "$@"
