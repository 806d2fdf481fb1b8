#!/usr/bin/env bash
# Quickstart, on a fresh Debian or Ubuntu machine, as root: installs what is
# missing (runc, a registry, Python's venv), builds levers9, pushes a Python
# base image to a registry on loopback, starts `levers9 up` (controlplane on
# the embedded state + a local runc worker) and runs examples/hello.py in a
# sandbox.
#
# Everything keeps running in the background; stop it with
#   kill $(cat ~/.levers9/up.pid) $(cat ~/.levers9/registry.pid)
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
registry_port=${LEVERS9_REGISTRY_PORT:-5000}
registry="127.0.0.1:$registry_port"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_http() {
  for _ in $(seq 1 300); do
    python3 -c "import urllib.request; urllib.request.urlopen('$1', timeout=1)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "quickstart: $1 did not answer" >&2
  return 1
}

echo "==> installing missing system packages"
scripts/install-test-packages.sh

echo "==> building levers9 (release)"
cargo build --release --locked -p levers9-cli
levers9="$PWD/target/release/levers9"

if ! alive "$state_dir/registry.pid"; then
  echo "==> starting an OCI registry on $registry"
  mkdir -p "$state_dir/registry/data"
  cat >"$state_dir/registry/config.yml" <<YAML
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $state_dir/registry/data}
http: {addr: $registry}
YAML
  nohup docker-registry serve "$state_dir/registry/config.yml" \
    >"$state_dir/registry/log" 2>&1 </dev/null &
  echo $! >"$state_dir/registry.pid"
  wait_http "http://$registry/v2/"
fi

echo "==> pushing the Python base image (Debian's Python 3.11) to $registry"
scripts/push-python-image.sh "$registry/levers9/python:3.11" >/dev/null

if ! alive "$state_dir/up.pid"; then
  echo "==> starting levers9 up (log: $state_dir/up.log)"
  LEVERS9_BASE_IMAGE_REGISTRY="$registry" \
    nohup "$levers9" up --grpc-port "$grpc_port" --http-port "$http_port" \
    >"$state_dir/up.log" 2>&1 </dev/null &
  echo $! >"$state_dir/up.pid"
  wait_http "http://127.0.0.1:$http_port/readyz"
  # The local context is written once the worker is on its way.
  for _ in $(seq 1 100); do
    grep -q "levers9 is up" "$state_dir/up.log" && break
    sleep 0.2
  done
fi

echo "==> installing the Python SDK in $state_dir/venv"
[ -x "$state_dir/venv/bin/python" ] || /usr/bin/python3 -m venv "$state_dir/venv"
"$state_dir/venv/bin/python" -m pip install -q --disable-pip-version-check ./sdk/python

echo "==> python examples/hello.py"
"$state_dir/venv/bin/python" examples/hello.py
echo
echo "levers9 is up in the background (context \"local\"): gRPC 127.0.0.1:$grpc_port, HTTP 127.0.0.1:$http_port."
echo "Next: levers9 run examples/hello.py::hello world    (with $state_dir/venv/bin on PATH)"
echo "Stop it with: kill \$(cat $state_dir/up.pid) \$(cat $state_dir/registry.pid)"
