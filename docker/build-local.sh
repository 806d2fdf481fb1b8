#!/usr/bin/env bash
# Proves the Dockerfiles build on a machine that cannot pull from Docker Hub:
# it makes the FROM images locally, tagged with the names the Dockerfiles
# use, then builds every image with buildah and checks what is inside.
#
#   docker/build-local.sh            # all images
#   docker/build-local.sh runner     # some of them
#
# Needs root, buildah and mmdebstrap (apt-get install -y buildah mmdebstrap)
# and a reachable Debian mirror (the host's apt sources are reused).
#
# The stand-in for rust:1.95-bookworm has no compiler: its `cargo` writes a
# placeholder `levers9`, because compiling the workspace takes the machine
# for many minutes. Everything else is real: the multi-stage wiring, the
# runtime packages, the entrypoints and the runner's Python. With
# LEVERS9_RUST_IMAGE=<a real rust image already in this buildah store> the
# build stage compiles for real.
set -euo pipefail
cd "$(dirname "$0")/.."

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(runner controlplane worker)

cache=${LEVERS9_CACHE_DIR:-$HOME/.cache/levers9}/buildah
mkdir -p "$cache"
# A store of its own, so nothing else's images are touched.
bah=(buildah --root "$cache/storage" --runroot "$cache/run")
rust_image=${LEVERS9_RUST_IMAGE:-rust:1.95-bookworm}
tag=${LEVERS9_IMAGE_TAG:-local}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

have_image() { "${bah[@]}" inspect --type image "$1" >/dev/null 2>&1; }

mirror() {
  local sources=/etc/apt/sources.list.d/debian.sources
  if [ -f "$sources" ]; then
    awk '/^URIs:/ {print $2; exit}' "$sources"
  else
    awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list
  fi
}

make_debian_base() {
  have_image debian:bookworm-slim && return
  echo "build-local: making debian:bookworm-slim with mmdebstrap"
  mmdebstrap --quiet --variant=apt \
    --dpkgopt='path-exclude=/usr/share/{doc,man,locale,info}/*' \
    bookworm "$work/debian.tar" "deb $(mirror) bookworm main"
  local ctr
  ctr=$("${bah[@]}" from scratch)
  "${bah[@]}" add "$ctr" "$work/debian.tar" / >/dev/null
  "${bah[@]}" config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  "${bah[@]}" commit -q "$ctr" debian:bookworm-slim >/dev/null
  "${bah[@]}" rm "$ctr" >/dev/null
}

make_rust_stand_in() {
  have_image "$rust_image" && return
  echo "build-local: making a stand-in $rust_image (placeholder cargo, no compiler)"
  local ctr
  ctr=$("${bah[@]}" from debian:bookworm-slim)
  cat >"$work/cargo" <<'STUB'
#!/bin/sh
# Stand-in cargo: checks it was asked for the release binary and writes one.
set -eu
case " $* " in *" build "*"--release"*"-p levers9-cli"*) ;; *) echo "unexpected cargo $*" >&2; exit 2 ;; esac
test -f Cargo.lock && test -d crates/levers9-cli && test -d proto
mkdir -p target/release
printf '#!/bin/sh\necho "levers9 stand-in $*"\n' > target/release/levers9
STUB
  "${bah[@]}" copy --chmod 0755 "$ctr" "$work/cargo" /usr/local/bin/cargo >/dev/null
  "${bah[@]}" commit -q "$ctr" "$rust_image" >/dev/null
  "${bah[@]}" rm "$ctr" >/dev/null
}

build() {
  local name=$1
  echo "build-local: building levers9/$name:$tag"
  "${bah[@]}" bud --quiet --isolation chroot --layers \
    --build-arg RUST_IMAGE="$rust_image" \
    -f "docker/$name.Dockerfile" -t "levers9/$name:$tag" . >/dev/null
}

# Runs a command in a fresh container of the image and prints its output.
run_in() {
  local image=$1 ctr out
  shift
  ctr=$("${bah[@]}" from "$image")
  out=$("${bah[@]}" run --isolation chroot "$ctr" -- "$@")
  "${bah[@]}" rm "$ctr" >/dev/null
  printf '%s\n' "$out"
}

check() {
  local name=$1
  case $name in
    runner)
      run_in "levers9/runner:$tag" python3 -c \
        'import sys, json, ssl, sqlite3, asyncio; print("python", sys.version.split()[0])' ;;
    controlplane)
      run_in "levers9/controlplane:$tag" sh -c \
        'command -v fusermount3 tini >/dev/null && levers9 --version' ;;
    worker)
      run_in "levers9/worker:$tag" sh -c \
        'runc --version | head -1 && runsc --version | head -1 && levers9 --version' ;;
  esac
  local summary
  summary=$("${bah[@]}" inspect --type image --format \
    "{{.FromImage}}: entrypoint {{.OCIv1.Config.Entrypoint}} cmd {{.OCIv1.Config.Cmd}}, {{len .OCIv1.RootFS.DiffIDs}} layer(s)" \
    "levers9/$name:$tag")
  printf '%s\n' "$summary"
}

make_debian_base
for name in "${images[@]}"; do
  case $name in
    controlplane | worker) make_rust_stand_in ;;
    runner) ;;
    *) echo "build-local: unknown image $name (runner, controlplane, worker)" >&2; exit 2 ;;
  esac
  build "$name"
  check "$name"
done
"${bah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep levers9/
echo "build-local: ${images[*]} built"
