#!/usr/bin/env bash
# Prints the levers9 binary a bench runs: $LEVERS9_BENCH_BIN when set
# (another commit's or build's binary, for an A/B; nothing is built), else
# this checkout's build for LEVERS9_BENCH_PROFILE, built first: release by
# default, debug to check that a bench runs (its figures are not the
# release build's). Cargo's output goes to stderr.
#
# `scripts/bench-bin.sh --worker BIN` prints, one word a line, the command
# that runs a worker of BIN's build as the worker image does: the
# levers9-worker beside BIN, or `BIN worker` for a build older than it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --worker ]; then
  worker=$(dirname "$2")/levers9-worker
  if [ -x "$worker" ]; then
    echo "$worker"
  else
    printf '%s\nworker\n' "$2"
  fi
  exit 0
fi
if [ -n "${LEVERS9_BENCH_BIN:-}" ]; then
  echo "$LEVERS9_BENCH_BIN"
  exit 0
fi
profile=${LEVERS9_BENCH_PROFILE:-release}
if [ "$profile" = release ]; then
  cargo build --release --locked -p levers9-cli >&2
else
  cargo build --locked -p levers9-cli >&2
fi
echo "$PWD/target/$profile/levers9"
