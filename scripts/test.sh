#!/usr/bin/env bash
# The whole test suite: the deployment files, the container images built
# with buildah, every crate, both backends (embedded and Postgres+Redis),
# and the Python SDK's tests against a real stack, with real servers
# started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-packages.sh
LEVERS9_TEST_PYTHON=$(scripts/python-test-env.sh)
export LEVERS9_TEST_PYTHON
scripts/test-deploy.sh
scripts/test-images.sh
exec scripts/test-servers.sh cargo test --workspace --locked
