#!/usr/bin/env bash
# Quickstart: builds levers9, starts a controlplane on the embedded default
# (SQLite + in-process hot state under ~/.levers9/data), gets the first admin
# token the documented way and lists it.
#
# The controlplane keeps running in the background; stop it with
#   kill "$(cat ~/.levers9/controlplane.pid)"
set -euo pipefail
cd "$(dirname "$0")/.."

state_dir="$HOME/.levers9"
mkdir -p "$state_dir" && chmod 700 "$state_dir"
pid_file="$state_dir/controlplane.pid"
log_file="$state_dir/controlplane.log"
grpc_port=${LEVERS9_GRPC_PORT:-1993}
http_port=${LEVERS9_HTTP_PORT:-1994}

echo "==> building levers9 (release)"
cargo build --release --locked -p levers9-cli
levers9="$PWD/target/release/levers9"

if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  echo "==> a controlplane started by this script is already running (pid $(cat "$pid_file"))"
  secret=""
else
  # A fresh bootstrap secret, passed in the environment (never in argv).
  secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  echo "==> starting the controlplane on the embedded default (log: $log_file)"
  LEVERS9_BOOTSTRAP_SECRET="$secret" LEVERS9_BIND_ADDRESS=127.0.0.1 \
    LEVERS9_GRPC_PORT="$grpc_port" LEVERS9_HTTP_PORT="$http_port" \
    nohup "$levers9" controlplane >"$log_file" 2>&1 </dev/null &
  echo $! >"$pid_file"
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$http_port/readyz', timeout=1)" 2>/dev/null; then
      break
    fi
    kill -0 "$(cat "$pid_file")" 2>/dev/null || { cat "$log_file"; exit 1; }
    sleep 0.2
  done
fi

if "$levers9" config show quickstart >/dev/null 2>&1; then
  echo "==> the CLI already has the quickstart context"
  "$levers9" config select quickstart
elif [ -n "$secret" ]; then
  echo "==> getting the first admin token with the bootstrap secret"
  # The empty line answers the token question: empty token = bootstrap.
  echo "" | LEVERS9_BOOTSTRAP_SECRET="$secret" \
    "$levers9" config create quickstart --host 127.0.0.1 --port "$grpc_port"
else
  echo "restart the quickstart controlplane (kill $(cat "$pid_file")) to bootstrap again" >&2
  exit 1
fi

echo "==> levers9 token list"
"$levers9" --context quickstart token list
echo
echo "The controlplane runs in the background (pid $(cat "$pid_file")): gRPC 127.0.0.1:$grpc_port, HTTP 127.0.0.1:$http_port."
echo "Stop it with: kill \$(cat $pid_file)"
