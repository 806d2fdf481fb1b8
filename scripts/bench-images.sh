#!/usr/bin/env bash
# Image build benchmarks: a controlplane on the embedded backends pushing to
# the test registry, a runc worker of the build pool and one of the default
# pool, then bench/images/bench.py. Run it through scripts/test-servers.sh
# (it needs LEVERS9_TEST_REGISTRY). LEVERS9_BENCH_PROFILE=debug skips the
# release build (slower binaries; the build containers dominate anyway);
# LEVERS9_BENCH_BIN runs a given binary (scripts/bench-bin.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/bench-bin.sh)
mapfile -t worker < <(scripts/bench-bin.sh --worker "$bin")
python=$(scripts/python-test-env.sh)
work=$(mktemp -d /tmp/l9ibench.XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work" 2>/dev/null || echo "bench: left $work (a container mount was still busy)" >&2; }
trap cleanup EXIT

image=$(scripts/push-python-image.sh "$LEVERS9_TEST_REGISTRY/levers9/python:3.11")
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port)
http_port=$(free_port)
export HOME=$work/home; mkdir -p "$HOME"
LEVERS9_BOOTSTRAP_SECRET=bench LEVERS9_BIND_ADDRESS=127.0.0.1 LEVERS9_GRPC_PORT=$grpc_port \
  LEVERS9_HTTP_PORT=$http_port LEVERS9_DATA_DIR=$work/data \
  LEVERS9_BASE_IMAGE_REGISTRY=$LEVERS9_TEST_REGISTRY LEVERS9_WORKER_IMAGE_REGISTRY=$LEVERS9_TEST_REGISTRY \
  "$bin" controlplane >"$work/cp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$http_port/readyz', timeout=1)" 2>/dev/null && break
  sleep 0.1
done
echo "" | LEVERS9_BOOTSTRAP_SECRET=bench "$bin" config create bench --host 127.0.0.1 --port "$grpc_port" >/dev/null 2>&1
token=$(grep '^token' "$HOME/.levers9/config.toml" | head -1 | cut -d'"' -f2)
for pool in build default; do
  LEVERS9_TOKEN=$token "${worker[@]}" --pool $pool --runtime runc --worker-id bench-$pool \
    --controlplane "127.0.0.1:$grpc_port" --state-dir "$work/worker-$pool" >"$work/worker-$pool.log" 2>&1 &
  pids+=($!)
done
sleep 2
LEVERS9_CONTROLPLANE_HOST=127.0.0.1 LEVERS9_CONTROLPLANE_PORT=$grpc_port LEVERS9_TOKEN=$token \
  LEVERS9_BENCH_BLOBS=$work/worker-default/images/blobs/sha256 LEVERS9_BENCH_BASE=$image \
  "$python" bench/images/bench.py
