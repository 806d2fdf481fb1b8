#!/usr/bin/env bash
# Installs the system packages the tests need, and only those that are missing.
set -euo pipefail

wanted=(
  redis-server redis-tools postgresql python3 python3-venv
  # containers: runtimes, a registry, and the tools that build test images
  runc runsc busybox-static umoci skopeo docker-registry
  # the images from docker/*.Dockerfile (scripts/test-images.sh): a builder,
  # the Debian base made locally, strip for the binary copied in
  buildah mmdebstrap binutils
  # htpasswd -B, for a registry that asks for credentials
  apache2-utils
  # the hardening tests build a static probe that makes raw syscalls
  gcc libc6-dev
  # the dashboard: a browser for its tests, openssl for the test OpenID
  # provider's keys
  chromium openssl
  # machines: a second host is a network namespace (ip, nsenter); the join
  # command downloads the agent with curl; the TLS tests check HTTPS with it
  iproute2 util-linux curl
)
missing=()
for p in "${wanted[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-test-packages: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The dashboard's web app builds with Node (>= 18.18); machines that have
# none get Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-test-packages: installing nodejs npm"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
