#!/usr/bin/env bash
# Builds the controlplane, worker and runner images from docker/*.Dockerfile
# with a real builder (buildah, through docker/build-local.sh: the Debian
# base made with mmdebstrap, vfs storage, nothing pulled from Docker Hub)
# and runs each image's checks inside it: the worker's runc, runsc, juicefs
# and FUSE, and `--version` of levers9 (levers9-worker in the worker image)
# through each entrypoint.
#
# The levers9 and levers9-worker in the images are the binaries this test
# run built ($LEVERS9_BIN and the levers9-worker beside it, else the debug
# build of `cargo build -p levers9-cli`, as scripts/test-deploy.sh uses),
# their debug info stripped, put in place of the Dockerfiles' `build` stage. The release compile inside the image is not
# run here: it would take most of CI's time on 2 cores (docs/testing.md).
#
# Cached between runs in ~/.cache/levers9/buildah-vfs (or
# $LEVERS9_CACHE_DIR): the Debian base and every layer the binary does not
# change, so a rerun builds only the binary's layers.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in buildah mmdebstrap strip; do
  command -v "$tool" >/dev/null || { echo "test-images: no $tool: run scripts/install-test-packages.sh" >&2; exit 1; }
done
if [ -n "${LEVERS9_BIN:-}" ]; then
  bin=$LEVERS9_BIN
else
  cargo build -q --locked -p levers9-cli
  bin=target/debug/levers9
fi
worker_bin=$(dirname "$bin")/levers9-worker

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# As the release profile ships it: symbols, no debug info.
strip --strip-debug -o "$work/levers9" "$bin"
strip --strip-debug -o "$work/levers9-worker" "$worker_bin"

start=$SECONDS
LEVERS9_PREBUILT_BIN=$work/levers9 LEVERS9_PREBUILT_WORKER_BIN=$work/levers9-worker LEVERS9_IMAGE_TAG=test \
  docker/build-local.sh controlplane worker runner
echo "test-images: built and checked in $((SECONDS - start)) s"
