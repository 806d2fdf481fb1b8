#!/usr/bin/env bash
# Builds a one-layer busybox image with umoci and pushes it to a registry.
#   scripts/push-busybox-image.sh 127.0.0.1:5000/levers9/busybox:1
# Prints the pushed reference by digest.
set -euo pipefail
ref=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
umoci init --layout oci >/dev/null
umoci new --image oci:img >/dev/null
umoci unpack --rootless --image oci:img bundle >/dev/null
root=bundle/rootfs
mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$root/bin/busybox"
for applet in sh echo cat ls id sleep yes dd head tail mkdir rm env true false seq printf md5sum; do
  ln -sf busybox "$root/bin/$applet"
done
umoci repack --image oci:img bundle >/dev/null
umoci config --image oci:img --config.cmd=/bin/sh --config.env=PATH=/bin >/dev/null
umoci gc --layout oci
skopeo copy -q --dest-tls-verify=false oci:"$work/oci":img "docker://$ref"
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
echo "${ref%:*}@$digest"
