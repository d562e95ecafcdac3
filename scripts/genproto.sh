#!/usr/bin/env bash
# Regenerates pkg/grpcapi/v2pb from pkg/grpcapi/proto (make proto).
# protoc is not assumed installed: when it is not on PATH, the npm package
# protoc@36.2.0 (which ships the protoc binary and the well-known types) is
# installed into a temporary directory. The Go plugins are pinned here.
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOC_VERSION=36.2.0
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp/bin" GOWORK=off go install "$PROTOC_GEN_GO"
GOBIN="$tmp/bin" GOWORK=off go install "$PROTOC_GEN_GO_GRPC"
protoc=$(command -v protoc || true)
if [ -z "$protoc" ]; then
	npm install --silent --prefix "$tmp/npm" "protoc@$PROTOC_VERSION" >/dev/null
	case "$(uname -m)" in
	aarch64 | arm64) arch=aarch_64 ;;
	*) arch=x86_64 ;;
	esac
	protoc="$tmp/npm/node_modules/protoc/bin/protoc-linux-$arch"
	chmod +x "$protoc"
fi
rm -f pkg/grpcapi/v2pb/*.pb.go
PATH="$tmp/bin:$PATH" "$protoc" -I pkg/grpcapi/proto \
	--go_out=. --go_opt=module=github.com/rmqgo/rmq \
	--go-grpc_out=. --go-grpc_opt=module=github.com/rmqgo/rmq \
	pkg/grpcapi/proto/rmqgo/v2/*.proto
