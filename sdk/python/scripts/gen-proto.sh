#!/usr/bin/env bash
# Regenerates the Python gRPC stubs in levers9/v1 from /proto/levers9/v1/*.proto.
#
# The output is checked in, and tests/test_generated_code.py fails when it
# is stale. The generator version is pinned because the generated code
# carries it: it sets the lowest grpcio and protobuf the SDK works with
# (see pyproject.toml), and a different version would rewrite every file.
#
# Usage: sdk/python/scripts/gen-proto.sh [OUTPUT_DIR]
#   OUTPUT_DIR defaults to sdk/python; files land in OUTPUT_DIR/levers9/v1.
#   PYTHON selects the interpreter (default python3).
set -euo pipefail

GRPCIO_TOOLS_VERSION="1.66.2"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sdk="$(dirname "$here")"
proto_root="$(cd "$sdk/../../proto" && pwd)"
out="${1:-$sdk}"
python="${PYTHON:-python3}"

installed="$("$python" -c 'from importlib.metadata import version; print(version("grpcio-tools"))' 2>/dev/null || true)"
if [[ -z "$installed" ]]; then
  echo "gen-proto: grpcio-tools is not installed for $python: pip install grpcio-tools==$GRPCIO_TOOLS_VERSION" >&2
  exit 1
fi
if [[ "$installed" != "$GRPCIO_TOOLS_VERSION" ]]; then
  echo "gen-proto: grpcio-tools $installed is installed, but the stubs are generated with $GRPCIO_TOOLS_VERSION:" \
       "pip install grpcio-tools==$GRPCIO_TOOLS_VERSION (or pip install -e 'sdk/python[dev]')" >&2
  exit 1
fi

mkdir -p "$out/levers9/v1"
out="$(cd "$out" && pwd)"
# Stale output of a removed .proto must not linger.
find "$out/levers9/v1" -maxdepth 1 \( -name '*_pb2.py' -o -name '*_pb2.pyi' -o -name '*_pb2_grpc.py' \) -delete

cd "$proto_root"
"$python" -m grpc_tools.protoc \
  -I . \
  --python_out="$out" \
  --pyi_out="$out" \
  --grpc_python_out="$out" \
  levers9/v1/*.proto
