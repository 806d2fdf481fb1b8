#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL, Redis and OCI registry on
# 127.0.0.1 (random free ports, data in a temporary directory) and stops them
# by PID afterwards.
#
#   scripts/test-servers.sh cargo test --workspace
#
# The command sees LEVERS9_TEST_DATABASE_URL (an admin URL: tests create a fresh
# database each), LEVERS9_TEST_REDIS_URL and LEVERS9_TEST_REGISTRY (host:port of
# a plain-HTTP registry; LEVERS9_TEST_REGISTRY_DIR is its storage). Servers the caller already gives
# through those variables are used as they are and not started.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-test-packages.sh"

work=$(mktemp -d /tmp/levers9-test.XXXXXX)
chmod 755 "$work"
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
redis_pid=""
registry_pid=""
pg_started=""

cleanup() {
  set +e
  if [ -n "$pg_started" ]; then
    runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1
  fi
  for pid in $registry_pid $redis_pid; do
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

if [ -z "${LEVERS9_TEST_DATABASE_URL:-}" ]; then
  pg_port=$(free_port)
  install -d -o postgres -g postgres "$work/pg"
  runuser -u postgres -- "$pg_bin/initdb" -D "$work/pg/data" -A trust -U postgres --no-sync -E UTF8 >"$work/pg/initdb.log" 2>&1
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $work/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
    start >/dev/null
  pg_started=1
  export LEVERS9_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
  echo "test-servers: PostgreSQL on 127.0.0.1:$pg_port"
fi

if [ -z "${LEVERS9_TEST_REDIS_URL:-}" ]; then
  redis_port=$(free_port)
  mkdir -p "$work/redis"
  redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --dir "$work/redis" --daemonize no >"$work/redis/log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 1 100); do
    redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.05
  done
  export LEVERS9_TEST_REDIS_URL="redis://127.0.0.1:$redis_port"
  echo "test-servers: Redis on 127.0.0.1:$redis_port"
fi

if [ -z "${LEVERS9_TEST_REGISTRY:-}" ]; then
  registry_port=$(free_port)
  mkdir -p "$work/registry/data"
  cat >"$work/registry/config.yml" <<YAML
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $work/registry/data}
  delete: {enabled: true}
http: {addr: 127.0.0.1:$registry_port}
YAML
  docker-registry serve "$work/registry/config.yml" >"$work/registry/log" 2>&1 &
  registry_pid=$!
  for _ in $(seq 1 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$registry_port/v2/', timeout=1)" 2>/dev/null && break
    sleep 0.05
  done
  export LEVERS9_TEST_REGISTRY="127.0.0.1:$registry_port"
  # Its storage, so tests can tamper with a stored blob.
  export LEVERS9_TEST_REGISTRY_DIR="$work/registry/data"
  echo "test-servers: OCI registry on 127.0.0.1:$registry_port"
fi

"$@"
