#!/usr/bin/env bash
# Two commits' release builds on the same machine, taking turns (A B A B),
# so that the machine's drift hits both alike:
#
#   scripts/test-servers.sh scripts/bench-ab.sh BASE HEAD [bench file]
#   LEVERS9_BENCH_ROUNDS=3 LEVERS9_BENCH_CPU=1 scripts/test-servers.sh scripts/bench-ab.sh f12177e 7eb9035
#
# Each commit is checked out in a worktree of its own, target/ab/<commit>
# (kept; `git worktree remove` one to drop it), and built with `cargo build
# --release -p levers9-cli` into this checkout's target/, so the builds
# share their dependencies; the workspace's own crates are built again for
# each commit, and this checkout's are cleaned when the script ends, so
# its next release build is its own.
# Each round runs scripts/bench-functions.sh (a fresh controlplane and
# worker on the test servers) with that commit's binary, LEVERS9_BENCH_BIN.
# The caller side, the SDK and bench/functions/, is this checkout's for
# both: only commits whose SDK and controlplane still speak the same
# protocol compare this way. The bench's own settings
# (LEVERS9_BENCH_WARM_CALLS, LEVERS9_BENCH_CPU, ...) pass through.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 2)); then
  echo "usage: scripts/bench-ab.sh BASE HEAD [bench file]" >&2
  exit 2
fi
rounds=${LEVERS9_BENCH_ROUNDS:-2}
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "LEVERS9_BENCH_ROUNDS must be a whole number, not \"$rounds\"" >&2
  exit 2
fi
bench=${3:-bench/functions/bench.py}
revs=("$1" "$2")
names=(A B)
bins=$(mktemp -d /tmp/l9ab.XXXX)
# This checkout's own crates are built again by its next build: the
# worktrees' artifacts have the same names and would be taken as fresh.
own=()
for crate in crates/*/; do
  own+=(-p "$(basename "$crate")")
done
trap 'rm -rf "$bins"; cargo clean --release --quiet "${own[@]}" || true' EXIT
git worktree prune

for i in 0 1; do
  name=${names[$i]}
  commit=$(git rev-parse --verify "${revs[$i]}^{commit}")
  tree=$PWD/target/ab/$commit
  if [ ! -d "$tree" ]; then
    git worktree add --quiet --detach "$tree" "$commit"
  fi
  echo "== building $name: ${revs[$i]} ($commit)" >&2
  # Cargo names a workspace crate's artifacts alike in every worktree, and
  # takes them as fresh when this worktree's sources are older than they
  # are (a worktree kept from an earlier run): the binary would mix
  # commits. So every workspace crate is built again for each commit; the
  # dependencies stay shared.
  members=()
  for crate in "$tree"/crates/*/; do
    members+=(-p "$(basename "$crate")")
  done
  CARGO_TARGET_DIR=$PWD/target cargo clean --release --quiet \
    --manifest-path "$tree/Cargo.toml" "${members[@]}" >&2
  CARGO_TARGET_DIR=$PWD/target cargo build --release --locked -p levers9-cli \
    --manifest-path "$tree/Cargo.toml" >&2
  mkdir -p "$bins/$name"
  cp target/release/levers9 "$bins/$name/levers9"
done

for round in $(seq 1 "$rounds"); do
  for i in 0 1; do
    name=${names[$i]}
    echo "== round $round, $name: ${revs[$i]}"
    LEVERS9_BENCH_BIN=$bins/$name/levers9 scripts/bench-functions.sh "$bench"
  done
done
