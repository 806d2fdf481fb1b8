#!/usr/bin/env bash
# Builds the test Python image (scripts/push-python-image.sh) with Debian's
# FastAPI on top (python3-fastapi: Starlette, pydantic 1, AnyIO and what
# they depend on, as one more layer) and pushes it to a registry:
#   scripts/push-fastapi-image.sh 127.0.0.1:5000/levers9/fastapi:1
# Prints the pushed reference by digest. Like the base image's root
# filesystem, the layer is made from Debian packages (apt-get download +
# dpkg-deb -x) and cached as a tarball in ${LEVERS9_CACHE_DIR:-~/.cache/levers9}.
set -euo pipefail
ref=$1
here=$(cd "$(dirname "$0")" && pwd)
cache_dir=${LEVERS9_CACHE_DIR:-$HOME/.cache/levers9}
cache=$cache_dir/python3-fastapi-layer.tar.gz
mkdir -p "$cache_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

base=$("$here/push-python-image.sh" "${ref%:*}-base:${ref##*:}")
if [ ! -s "$cache" ]; then
  list_packages() {
    # Python packages only: the interpreter and its libraries are the base's.
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances python3-fastapi 2>/dev/null \
      | grep -E '^python3-' | grep -vx 'python3-minimal' | sort -u
  }
  packages=$(list_packages || true)
  if [ -z "$packages" ]; then
    apt-get update -qq
    packages=$(list_packages)
  fi
  mkdir -p "$work/debs" "$work/layer"
  (cd "$work/debs" && for p in $packages; do apt-get download -qq "$p" >/dev/null 2>&1; done)
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/layer"; done
  rm -rf "$work"/layer/usr/share/{doc,man,locale,info}
  tar -C "$work/layer" -czf "$cache.tmp" . && mv "$cache.tmp" "$cache"
fi

skopeo copy -q --src-tls-verify=false "docker://$base" "oci:$work/oci:img"
umoci unpack --rootless --image "$work/oci:img" "$work/bundle" >/dev/null
tar -C "$work/bundle/rootfs" -xzf "$cache"
# Byte-compiled by the image's own interpreter, as for the base: otherwise
# every container compiles FastAPI's modules on its first request.
chroot "$work/bundle/rootfs" /usr/bin/python3.11 -m compileall -q /usr/lib/python3/dist-packages >/dev/null
umoci repack --image "$work/oci:img" "$work/bundle" >/dev/null
umoci gc --layout "$work/oci"
skopeo copy -q --dest-tls-verify=false "oci:$work/oci:img" "docker://$ref"
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
echo "${ref%:*}@$digest"
