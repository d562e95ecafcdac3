#!/usr/bin/env bash
# Runs scripts/java5's GrpcProducer through java5-client.sh (issue 17):
#
#   scripts/java5-producer.sh 127.0.0.1:8081 TopicTest 3 true body
#
# RMQ_JAVA5_MAIN names another program of scripts/java5 to run instead
# (e.g. rmqgo.GrpcTypedProducer: FIFO, delay and transactional sends).
# Exit codes: those of java5-client.sh.
set -euo pipefail
main=${RMQ_JAVA5_MAIN:-rmqgo.GrpcProducer}
exec "$(dirname "${BASH_SOURCE[0]}")/java5-client.sh" "${main#rmqgo.}" "$@"
