#!/usr/bin/env bash
# The whole test suite: formatting and clippy, the deployment files, the
# container images built with buildah, every crate, both backends (embedded and Postgres+Redis),
# and the Python SDK's tests against a real stack, with real servers
# started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# One build per run: incremental state would double target/ (15 of 25 GB)
# on a disk the tests also write to.
export CARGO_INCREMENTAL=0
scripts/install-test-packages.sh
# The house rules first: they fail in seconds (fmt) or a few minutes
# (clippy, the dashboard's ESLint) rather than after the whole suite.
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
scripts/dashboard-web.sh lint
LEVERS9_TEST_PYTHON=$(scripts/python-test-env.sh)
export LEVERS9_TEST_PYTHON
scripts/test-deploy.sh
scripts/test-images.sh
exec scripts/test-servers.sh cargo test --workspace --locked
