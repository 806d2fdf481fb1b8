#!/usr/bin/env bash
# levers9 beside its peers in one run (make bench-peers): Ray, Celery+Redis
# and raw runc/crun/runsc, interleaved round by round with levers9's warm
# call, cold call and map (bench/functions/peers.py). Run it through
# scripts/test-servers.sh (Celery uses the test Redis, levers9 the test
# Postgres and Redis and registry).
#
# Installs, once: Ray and Celery pinned with hashes (bench/peers/
# requirements.txt) into .tmp/bench-peers-venv, and crun from Debian if
# it is missing (a runtime that is still missing is skipped with a note).
# Everything listens on loopback; the peers' processes are started in
# sessions of their own and stopped by PID. LEVERS9_BENCH_PEERS_ROUNDS,
# _CALLS, _TASKS and _STARTS set the counts (bench/functions/peers.py).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LEVERS9_TEST_REDIS_URL:?run under scripts/test-servers.sh}"

venv=.tmp/bench-peers-venv
stamp=$venv/requirements.txt
if ! cmp -s bench/peers/requirements.txt "$stamp" 2>/dev/null; then
  echo "bench-peers: installing Ray and Celery into $venv" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes \
    -r bench/peers/requirements.txt >&2
  cp bench/peers/requirements.txt "$stamp"
fi

if ! command -v crun >/dev/null; then
  echo "bench-peers: installing crun" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq crun >/dev/null 2>&1 \
    || echo "bench-peers: crun could not be installed; raw crun is skipped" >&2
fi

LEVERS9_BENCH_PEERS_PYTHON=$PWD/$venv/bin/python \
  exec scripts/bench-functions.sh bench/functions/peers.py
