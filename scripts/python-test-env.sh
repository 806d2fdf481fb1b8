#!/usr/bin/env bash
# Makes the Python environment the SDK tests run in: a venv in .venv-test
# with Debian's Python (the same version as the test base image, so
# functions pickled by value load in the container) and the SDK installed
# editable, with pytest. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-test
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv" >&2
fi
# Installs only what is missing or changed; quiet unless it fails.
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e './sdk/python[dev]' >&2
echo "$PWD/$venv/bin/python"
