#!/usr/bin/env bash
# Runs one of scripts/java5's consumer programs through java5-client.sh
# (issue 17):
#
#   scripts/java5-consumer.sh simple 127.0.0.1:8081 TopicTest GID true 3 -0 2 10 2
#   scripts/java5-consumer.sh push 127.0.0.1:8081 TopicTest GID true 3 -0 1
#   scripts/java5-consumer.sh lite 127.0.0.1:8081 LiteParent GID false a,b 4 1
#
# "simple" runs GrpcSimpleConsumer, "push" GrpcPushConsumer, "lite"
# GrpcLitePushConsumer (their arguments: see their sources). Exit codes:
# those of java5-client.sh.
set -euo pipefail
case "${1:-}" in
simple) main=GrpcSimpleConsumer ;;
push) main=GrpcPushConsumer ;;
lite) main=GrpcLitePushConsumer ;;
*)
	echo "usage: java5-consumer.sh simple|push|lite <program arguments>" >&2
	exit 2
	;;
esac
shift
exec "$(dirname "${BASH_SOURCE[0]}")/java5-client.sh" "$main" "$@"
