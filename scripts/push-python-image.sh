#!/usr/bin/env bash
# Builds a Python base image (Debian's Python 3.11 with its standard library,
# plus busybox for a shell) and pushes it to a registry:
#   scripts/push-python-image.sh 127.0.0.1:5000/levers9/python:3.11
# Prints the pushed reference by digest. The root filesystem is made from
# Debian packages (apt-get download + dpkg-deb -x, no maintainer scripts) and
# cached as a tarball outside the repo, in ${LEVERS9_CACHE_DIR:-~/.cache/levers9}.
# The standard library is byte-compiled as Debian's postinst (py3compile)
# would: without .pyc files every container compiled the modules it imports
# on each start (≈120 ms of CPU for the function runner's imports).
set -euo pipefail
ref=$1
cache_dir=${LEVERS9_CACHE_DIR:-$HOME/.cache/levers9}
cache=$cache_dir/python3.11-rootfs-pyc.tar.gz
mkdir -p "$cache_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -s "$cache" ]; then
  roots=(python3.11-minimal python3.11 libpython3.11-stdlib)
  list_packages() {
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "${roots[@]}" 2>/dev/null \
      | grep -E '^[a-z0-9]' | sort -u
  }
  packages=$(list_packages || true)
  if [ -z "$packages" ]; then
    apt-get update -qq
    packages=$(list_packages)
  fi
  mkdir -p "$work/debs" "$work/rootfs"
  # Virtual packages cannot be downloaded; their providers are in the list.
  (cd "$work/debs" && for p in $packages; do apt-get download -qq "$p" >/dev/null 2>&1 || true; done)
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/rootfs"; done
  root=$work/rootfs
  rm -rf "$root"/usr/share/{doc,man,locale,info} "$root"/usr/share/perl* "$root"/usr/lib/x86_64-linux-gnu/perl*
  mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc,root}
  for link in bin lib lib64 sbin; do
    [ -e "$root/$link" ] || [ ! -d "$root/usr/$link" ] || ln -s "usr/$link" "$root/$link"
  done
  ln -sf python3.11 "$root/usr/bin/python3"
  cp /bin/busybox "$root/usr/bin/busybox"
  for applet in sh echo cat ls env; do ln -sf busybox "$root/usr/bin/$applet"; done
  # With the image's own interpreter, so the .pyc files match it.
  chroot "$root" /usr/bin/python3.11 -m compileall -q /usr/lib/python3.11 >/dev/null
  tar -C "$root" -czf "$cache.tmp" . && mv "$cache.tmp" "$cache"
fi

cd "$work"
umoci init --layout oci >/dev/null
umoci new --image oci:img >/dev/null
umoci unpack --rootless --image oci:img bundle >/dev/null
tar -C bundle/rootfs -xzf "$cache"
umoci repack --image oci:img bundle >/dev/null
umoci config --image oci:img --config.cmd=python3 \
  --config.env=PATH=/usr/local/bin:/usr/bin:/bin --config.env=LANG=C.UTF-8 >/dev/null
umoci gc --layout oci
skopeo copy -q --dest-tls-verify=false oci:"$work/oci":img "docker://$ref"
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
echo "${ref%:*}@$digest"
