#!/usr/bin/env bash
# Function-call benchmarks (make bench-functions): a release controlplane on
# the test Postgres and Redis, a release runc worker, the Python base image
# in the test registry, then bench/functions/bench.py (or the bench file
# given, e.g. bench/functions/endpoints.py). Run it through
# scripts/test-servers.sh, which starts the servers. LEVERS9_BENCH_PROFILE=debug
# or LEVERS9_BENCH_BIN=/path/to/levers9 pick another binary
# (scripts/bench-bin.sh; scripts/bench-ab.sh passes another commit's build).
# LEVERS9_BENCH_LOGS=DIR keeps the controlplane's and worker's logs there
# (cp.log, worker.log), which are otherwise removed with the run.
# LEVERS9_BENCH_RUNTIME=gvisor runs the worker on gVisor (default runc).
# LEVERS9_BENCH_SPARES=N has the worker keep N spare containers
# (worker.spares; default 0).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/bench-bin.sh)
mapfile -t worker < <(scripts/bench-bin.sh --worker "$bin")
python=$(scripts/python-test-env.sh)
work=$(mktemp -d /tmp/l9bench.XXXX)
pids=()
keep_logs() {
  if [ -n "${LEVERS9_BENCH_LOGS:-}" ]; then
    mkdir -p "$LEVERS9_BENCH_LOGS"
    cp "$work"/*.log "$LEVERS9_BENCH_LOGS"/ 2>/dev/null || true
  fi
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; keep_logs; rm -rf "$work" 2>/dev/null || echo "bench: left $work (a container mount was still busy)" >&2; }
trap cleanup EXIT

image=$(scripts/push-python-image.sh "$LEVERS9_TEST_REGISTRY/levers9/python:3.11")
# A raw bundle of the same image for the runc baseline.
skopeo copy -q --src-tls-verify=false "docker://$image" "oci:$work/oci:py" >&2
umoci unpack --image "$work/oci:py" "$work/bundle" >/dev/null 2>&1
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["args"] = ["python3", "-c", "pass"]
spec["process"]["terminal"] = False
json.dump(spec, open(path, "w"))
PY

db=l9bench_$$
psql "$LEVERS9_TEST_DATABASE_URL" -q -c "CREATE DATABASE $db"
rest=${LEVERS9_TEST_DATABASE_URL#postgres://}
user=${rest%%@*}; hostport=${rest#*@}; hostport=${hostport%%/*}
grpc_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export HOME=$work/home; mkdir -p "$HOME"
LEVERS9_BOOTSTRAP_SECRET=bench LEVERS9_BIND_ADDRESS=127.0.0.1 LEVERS9_GRPC_PORT=$grpc_port \
  LEVERS9_HTTP_PORT=$http_port LEVERS9_DATA_DIR=$work/data \
  LEVERS9_POSTGRES_HOST=${hostport%:*} LEVERS9_POSTGRES_PORT=${hostport#*:} LEVERS9_POSTGRES_USER=$user \
  LEVERS9_POSTGRES_NAME=$db LEVERS9_REDIS_ADDRS=${LEVERS9_TEST_REDIS_URL#redis://} \
  LEVERS9_REDIS_KEY_PREFIX="$db:" LEVERS9_BASE_IMAGE_REGISTRY=$LEVERS9_TEST_REGISTRY \
  "$bin" controlplane >"$work/cp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$http_port/readyz', timeout=1)" 2>/dev/null && break
  sleep 0.1
done
echo "" | LEVERS9_BOOTSTRAP_SECRET=bench "$bin" config create bench --host 127.0.0.1 --port "$grpc_port" >/dev/null 2>&1
token=$(grep '^token' "$HOME/.levers9/config.toml" | head -1 | cut -d'"' -f2)
LEVERS9_TOKEN=$token LEVERS9_WORKER_SPARES=${LEVERS9_BENCH_SPARES:-0} "${worker[@]}" --pool default --runtime "${LEVERS9_BENCH_RUNTIME:-runc}" --worker-id bench \
  --controlplane "127.0.0.1:$grpc_port" --state-dir "$work/worker" >"$work/worker.log" 2>&1 &
pids+=($!)
sleep 2
LEVERS9_BENCH_RAW_BUNDLE=$work/bundle LEVERS9_BENCH_WORKER_LOG=$work/worker.log LEVERS9_BENCH_HTTP=http://127.0.0.1:$http_port \
  "$python" "${1:-bench/functions/bench.py}"
