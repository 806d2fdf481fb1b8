#!/usr/bin/env bash
# Quickstart, on a fresh Debian or Ubuntu machine, as root: installs what is
# missing (runc, Python's venv), builds levers9, starts `levers9 up`
# (controlplane on the embedded state + a local runc worker; the first time
# it builds its Python base image from Debian packages) and runs
# examples/hello.py in a sandbox.
#
# levers9 up keeps running in the background; stop it with
#   kill $(cat ~/.levers9/up.pid)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "quickstart: run as root (the local worker starts containers with runc)" >&2
  exit 1
fi

state_dir="$HOME/.levers9"
mkdir -p "$state_dir" && chmod 700 "$state_dir"
grpc_port=${LEVERS9_GRPC_PORT:-1993}
http_port=${LEVERS9_HTTP_PORT:-1994}
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# Waits for a line of up's log, or fails with its log if it stopped.
wait_up() {
  for _ in $(seq 1 4500); do
    grep -q "levers9 is up" "$state_dir/up.log" && return 0
    alive "$state_dir/up.pid" || { cat "$state_dir/up.log" >&2; echo "quickstart: levers9 up stopped" >&2; return 1; }
    sleep 0.2
  done
  echo "quickstart: levers9 up did not come up within 15 minutes (log: $state_dir/up.log)" >&2
  return 1
}

echo "==> installing missing system packages"
scripts/install-test-packages.sh

echo "==> building levers9 (release, whole-program optimised: about 15 min the first time on 2 cores)"
cargo build --release --locked -p levers9-cli
levers9="$PWD/target/release/levers9"

if ! alive "$state_dir/up.pid"; then
  echo "==> starting levers9 up (log: $state_dir/up.log; the first start builds the Python base image)"
  nohup "$levers9" up --grpc-port "$grpc_port" --http-port "$http_port" \
    >"$state_dir/up.log" 2>&1 </dev/null &
  echo $! >"$state_dir/up.pid"
  wait_up
fi

echo "==> installing the Python SDK in $state_dir/venv"
[ -x "$state_dir/venv/bin/python" ] || /usr/bin/python3 -m venv "$state_dir/venv"
"$state_dir/venv/bin/python" -m pip install -q --disable-pip-version-check ./sdk/python

echo "==> python examples/hello.py"
"$state_dir/venv/bin/python" examples/hello.py
echo
echo "levers9 is up in the background (context \"local\"): gRPC 127.0.0.1:$grpc_port, HTTP 127.0.0.1:$http_port."
echo "Next: levers9 run examples/hello.py::hello world    (with $state_dir/venv/bin on PATH)"
echo "Stop it with: kill \$(cat $state_dir/up.pid)"
