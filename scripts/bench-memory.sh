#!/usr/bin/env bash
# Idle memory of a controlplane and a worker (make bench-memory): RSS and
# PSS of each process (bench/memory.py), for each backend,
#   - idle: LEVERS9_BENCH_SETTLE seconds (default 10) after the worker
#     started;
#   - after a call: one cold and one warm function call
#     (bench/functions/memory_call.py, keep_warm_seconds=2), the container
#     stopped at its keep-warm's end, then the same settling time;
# on the embedded backends (SQLite, in-process hot state) and, when the
# test servers are given, on PostgreSQL and Redis. Run it through
# scripts/test-servers.sh: its registry holds the function's image. A
# release runc worker, levers9-worker as the worker image runs it (`levers9
# worker` for an older build); LEVERS9_BENCH_PROFILE=debug or LEVERS9_BENCH_BIN
# pick another binary (scripts/bench-bin.sh). LEVERS9_BENCH_MEMORY_ENV,
# e.g. "MALLOC_ARENA_MAX=2", is put in the environment of both processes,
# to try a setting.
set -euo pipefail
cd "$(dirname "$0")/.."
settle=${LEVERS9_BENCH_SETTLE:-10}
bin=$(scripts/bench-bin.sh)
mapfile -t worker_command < <(scripts/bench-bin.sh --worker "$bin")
python=$(scripts/python-test-env.sh)
work=$(mktemp -d /tmp/l9memory.XXXX)
extra_env=()
[ -n "${LEVERS9_BENCH_MEMORY_ENV:-}" ] && read -r -a extra_env <<<"$LEVERS9_BENCH_MEMORY_ENV"
pids=()
stop_stack() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
cleanup() { stop_stack; rm -rf "$work" 2>/dev/null || echo "bench: left $work (a container mount was still busy)" >&2; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The functions run on the base image the controlplane names by default.
scripts/push-python-image.sh "$LEVERS9_TEST_REGISTRY/levers9/python:3.11" >/dev/null
readings=$work/readings.jsonl

# measure BACKEND: starts a stack on it, takes both readings, stops it.
measure() {
  local backend=$1 dir=$work/$1 db_env=()
  mkdir -p "$dir/home"
  if [ "$backend" = postgres+redis ]; then
    local db=l9memory_$$ rest=${LEVERS9_TEST_DATABASE_URL#postgres://}
    psql "$LEVERS9_TEST_DATABASE_URL" -q -c "CREATE DATABASE $db"
    local user=${rest%%@*} hostport=${rest#*@}
    hostport=${hostport%%/*}
    db_env=("LEVERS9_POSTGRES_HOST=${hostport%:*}" "LEVERS9_POSTGRES_PORT=${hostport#*:}" "LEVERS9_POSTGRES_USER=$user"
      "LEVERS9_POSTGRES_NAME=$db" "LEVERS9_REDIS_ADDRS=${LEVERS9_TEST_REDIS_URL#redis://}" "LEVERS9_REDIS_KEY_PREFIX=$db:")
  fi
  local grpc_port http_port
  grpc_port=$(free_port)
  http_port=$(free_port)
  env HOME="$dir/home" LEVERS9_BOOTSTRAP_SECRET=bench LEVERS9_BIND_ADDRESS=127.0.0.1 LEVERS9_GRPC_PORT="$grpc_port" \
    LEVERS9_HTTP_PORT="$http_port" LEVERS9_DATA_DIR="$dir/data" LEVERS9_BASE_IMAGE_REGISTRY="$LEVERS9_TEST_REGISTRY" \
    "${db_env[@]}" "${extra_env[@]}" "$bin" controlplane >"$dir/cp.log" 2>&1 &
  local cp=$!
  pids+=("$cp")
  for _ in $(seq 1 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$http_port/readyz', timeout=1)" 2>/dev/null && break
    sleep 0.1
  done
  echo "" | HOME="$dir/home" LEVERS9_BOOTSTRAP_SECRET=bench "$bin" config create bench --host 127.0.0.1 --port "$grpc_port" >/dev/null 2>&1
  local token
  token=$(grep '^token' "$dir/home/.levers9/config.toml" | head -1 | cut -d'"' -f2)
  env HOME="$dir/home" LEVERS9_TOKEN="$token" "${extra_env[@]}" "${worker_command[@]}" --pool default --runtime runc --worker-id bench \
    --controlplane "127.0.0.1:$grpc_port" --state-dir "$dir/worker" >"$dir/worker.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  sleep "$settle"
  python3 bench/memory.py record "$readings" "$backend, idle after start" controlplane="$cp" worker="$worker"
  HOME="$dir/home" LEVERS9_BENCH_WORKER_STATE_DIR="$dir/worker" "$python" bench/functions/memory_call.py
  sleep "$settle"
  python3 bench/memory.py record "$readings" "$backend, idle after a call" controlplane="$cp" worker="$worker"
  echo "bench: $backend: processes under the controlplane and the worker at the end:" >&2
  ps -o pid=,ppid=,rss=,args= --ppid "$cp,$worker" >&2 || true
  stop_stack
}

measure embedded
if [ -n "${LEVERS9_TEST_DATABASE_URL:-}" ] && [ -n "${LEVERS9_TEST_REDIS_URL:-}" ]; then
  measure postgres+redis
fi
echo
echo "Idle memory, ${LEVERS9_BENCH_BIN:-${LEVERS9_BENCH_PROFILE:-release} build} (worker: ${worker_command[*]}), $(nproc) cores, settled ${settle} s${LEVERS9_BENCH_MEMORY_ENV:+, with $LEVERS9_BENCH_MEMORY_ENV}:"
echo
python3 bench/memory.py table "$readings"
