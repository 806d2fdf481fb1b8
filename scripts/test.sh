#!/usr/bin/env bash
# The whole test suite: every crate, both backends (embedded and
# Postgres+Redis), against real servers started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/test-servers.sh cargo test --workspace --locked
