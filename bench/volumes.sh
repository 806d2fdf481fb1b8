#!/usr/bin/env bash
# Sequential write and read throughput of a JuiceFS volume, from the host and
# from inside a runc container, against the same mount, in one run. The
# container gets the volume the way a worker gives it: a bind mount of a
# directory of the JuiceFS mount.
#
#   scripts/test-servers.sh bench/volumes.sh [MIB]      # default 512 MiB
#
# Uses the test servers' S3 (SeaweedFS) and Redis (DB 9) and their juicefs
# binary; prints a Markdown table. Writes end with fsync; before each read
# the kernel's page cache is dropped, so reads come through FUSE from the
# mount's local block cache (the data was just written through it).
set -euo pipefail

mib=${1:-512}
juicefs=${LEVERS9_TEST_JUICEFS:?run under scripts/test-servers.sh}
redis=${LEVERS9_TEST_REDIS_URL:?run under scripts/test-servers.sh}
work=$(mktemp -d /tmp/levers9-bench-volumes.XXXXXX)
mnt=$work/mnt
container=l9bench-$$
cleanup() {
  set +e
  runc delete -f "$container" >/dev/null 2>&1
  "$juicefs" umount "$mnt" >/dev/null 2>&1 || umount -l "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

meta="${redis%/}/9"
name="l9bench-$$"
ACCESS_KEY=$LEVERS9_TEST_S3_ACCESS_KEY_ID SECRET_KEY=$LEVERS9_TEST_S3_SECRET_ACCESS_KEY \
  "$juicefs" format --storage s3 --bucket "$LEVERS9_TEST_S3_ENDPOINT/$LEVERS9_TEST_S3_BUCKET" \
  --trash-days 0 "$meta" "$name" >"$work/format.log" 2>&1
"$juicefs" mount -d --no-usage-report --cache-dir "$work/cache" --log "$work/juicefs.log" \
  "$meta" "$mnt" >"$work/mount.log" 2>&1
mkdir -p "$mnt/vol"

# A busybox bundle whose /data is the volume's directory.
bundle=$work/bundle
mkdir -p "$bundle/rootfs"/{bin,proc,sys,dev,tmp,data}
cp /bin/busybox "$bundle/rootfs/bin/"
for applet in sh dd sync; do ln -s busybox "$bundle/rootfs/bin/$applet"; done
(cd "$bundle" && runc spec)
python3 - "$bundle/config.json" "$mnt/vol" <<'PY'
import json, sys
path, vol = sys.argv[1], sys.argv[2]
spec = json.load(open(path))
spec["process"]["terminal"] = False
spec["root"] = {"path": sys.argv[1].rsplit("/", 1)[0] + "/rootfs", "readonly": False}
spec["mounts"].append({"destination": "/data", "type": "bind", "source": vol, "options": ["rbind", "rw"]})
json.dump(spec, open(path, "w"))
PY

now() { date +%s%N; }
# MiB (dd bs=1M is 1,048,576 bytes) per second.
rate() { python3 -c "print(f'{$mib / (($2 - $1) / 1e9):.0f}')"; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
in_container() {
  python3 - "$bundle/config.json" "$1" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["process"]["args"] = ["sh", "-c", sys.argv[2]]
json.dump(spec, open(sys.argv[1], "w"))
PY
  runc run --bundle "$bundle" "$container" >/dev/null
}

t0=$(now); dd if=/dev/zero of="$mnt/vol/host.bin" bs=1M count="$mib" conv=fsync status=none; t1=$(now)
host_write=$(rate "$t0" "$t1")
drop_caches
t0=$(now); dd if="$mnt/vol/host.bin" of=/dev/null bs=1M status=none; t1=$(now)
host_read=$(rate "$t0" "$t1")

t0=$(now); in_container "dd if=/dev/zero of=/data/ctr.bin bs=1M count=$mib conv=fsync 2>/dev/null"; t1=$(now)
ctr_write=$(rate "$t0" "$t1")
drop_caches
t0=$(now); in_container "dd if=/data/ctr.bin of=/dev/null bs=1M 2>/dev/null"; t1=$(now)
ctr_read=$(rate "$t0" "$t1")

echo "| where | sequential write MiB/s | sequential read MiB/s |"
echo "|---|---|---|"
echo "| host, on the JuiceFS mount | $host_write | $host_read |"
echo "| runc container, volume bind-mounted (incl. container start) | $ctr_write | $ctr_read |"
echo "($mib MiB each; juicefs $("$juicefs" version | awk '{print $3}'))"
