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
# placeholder `levers9` (or `levers9-worker`, `levers9-dashboard-api`),
# because compiling the workspace takes the machine for many minutes. Everything else is real: the
# multi-stage wiring, the runtime packages, the entrypoints and the runner's
# Python. With LEVERS9_RUST_IMAGE=<a real rust image already in this buildah
# store> the build stage compiles for real.
# pip, in the controlplane's and the worker's juicefs stages, is treated the same way: when this
# machine's pip trusts a CA file of its own (`cert` in `pip config list`:
# $PIP_CERT or a pip.conf), the build mounts it read-only with a pip.conf
# naming it.
#
# With LEVERS9_PREBUILT_BIN=<a levers9 binary built on this machine> and
# LEVERS9_PREBUILT_WORKER_BIN=<the levers9-worker of the same build> the
# controlplane and worker images take those binaries instead of running
# their build stage: `--build-context build=DIR` replaces the stage named
# `build` with a directory holding out/levers9 and out/levers9-worker, so
# no Rust image, real or stand-in, is used (RUST_IMAGE names an image that
# does not exist, and nothing is pulled). Their checks then require that
# the image's entrypoint prints its binary's own `--version` and that
# /usr/local/bin/levers9 (levers9-worker in the worker image) has its sha256.
# scripts/test-images.sh runs it so in the test command. (The dashboard API
# image still takes the Rust image as above.)
#
# The stand-in for node:22-bookworm-slim is the host's node and npm on the
# Debian base, so the dashboard web image is built for real: `npm ci` from
# the npm registry (which must be reachable) and `next build`. When the
# host's npm trusts a CA file of its own (`npm config get cafile`), the
# stand-in's npm names the same file and the build mounts it read-only.
set -euo pipefail
cd "$(dirname "$0")/.."

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(runner controlplane worker dashboard-api dashboard-web)

cache=${LEVERS9_CACHE_DIR:-$HOME/.cache/levers9}/buildah-vfs
mkdir -p "$cache"
# A store of its own, so nothing else's images are touched; vfs works on
# any filesystem, inside a container too, with no overlay mounts to leak.
bah=(buildah --root "$cache/storage" --runroot "$cache/run" --storage-driver vfs)
rust_image=${LEVERS9_RUST_IMAGE:-rust:1.95-bookworm}
node_image=${LEVERS9_NODE_IMAGE:-node:22-bookworm-slim}
# The API the web image is built for; its CSP must name it.
api_base=https://dashboard.example.com/api
npm_cafile=$(npm config get cafile 2>/dev/null || true)
npm_trust=()
[ ! -f "$npm_cafile" ] || npm_trust=(--volume "$npm_cafile:$npm_cafile:ro")
tag=${LEVERS9_IMAGE_TAG:-local}
prebuilt=${LEVERS9_PREBUILT_BIN:-}
prebuilt_worker=${LEVERS9_PREBUILT_WORKER_BIN:-}
# What RUST_IMAGE names when the build stage must not run.
no_compiler=localhost/levers9/no-compiler-the-binary-is-prebuilt:none
work=$(mktemp -d)
# Working containers this script made; removed on any exit, failures too.
containers=()
cleanup() {
  local ctr
  for ctr in "${containers[@]}"; do
    "${bah[@]}" rm "$ctr" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
remove_container() {
  "${bah[@]}" rm "$1" >/dev/null
  local kept=() ctr
  for ctr in "${containers[@]}"; do [ "$ctr" = "$1" ] || kept+=("$ctr"); done
  containers=("${kept[@]}")
}
pip_cafile=$(python3 -m pip config list 2>/dev/null | sed -n "s/^[^=]*\.cert='\(.*\)'$/\1/p" | head -n 1 || true)
pip_trust=()
if [ -f "$pip_cafile" ]; then
  printf '[global]\ncert = /run/levers9-build-ca.crt\n' >"$work/pip.conf"
  pip_trust=(--volume "$pip_cafile:/run/levers9-build-ca.crt:ro" --volume "$work/pip.conf:/etc/pip.conf:ro")
fi
# prebuilt_version[BINARY] and prebuilt_sum[BINARY], for each binary given.
declare -A prebuilt_version prebuilt_sum
take_prebuilt() {
  local variable=$1 path=$2 name=$3
  if [ ! -f "$path" ] || [ ! -x "$path" ]; then
    echo "build-local: $variable=$path is not an executable file" >&2
    exit 2
  fi
  install -D -m 0755 "$path" "$work/prebuilt/out/$name"
  prebuilt_version[$name]=$("$path" --version)
  prebuilt_sum[$name]=$(sha256sum "$path" | cut -d' ' -f1)
}
if [ -n "$prebuilt" ]; then
  [ -n "$prebuilt_worker" ] || {
    echo "build-local: LEVERS9_PREBUILT_BIN needs LEVERS9_PREBUILT_WORKER_BIN (the same build's levers9-worker)" >&2
    exit 2
  }
  take_prebuilt LEVERS9_PREBUILT_BIN "$prebuilt" levers9
  take_prebuilt LEVERS9_PREBUILT_WORKER_BIN "$prebuilt_worker" levers9-worker
fi

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
  containers+=("$ctr")
  "${bah[@]}" add "$ctr" "$work/debian.tar" / >/dev/null
  "${bah[@]}" config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  "${bah[@]}" commit -q "$ctr" debian:bookworm-slim >/dev/null
  remove_container "$ctr"
}

# The stand-in's version: a stand-in of another (made before its cargo knew
# `--bin levers9-worker`) is made again. A real Rust image is never touched.
stand_in_version=2
make_rust_stand_in() {
  if have_image "$rust_image"; then
    local made env
    made=$("${bah[@]}" inspect --type image --format '{{index .OCIv1.Config.Labels "levers9.stand-in"}}' "$rust_image")
    env=$("${bah[@]}" inspect --type image --format '{{.OCIv1.Config.Env}}' "$rust_image")
    if [ "$made" = "$stand_in_version" ] || [[ $env == *RUSTUP_HOME=* ]]; then
      return
    fi
    echo "build-local: $rust_image is an older stand-in: making it again"
    "${bah[@]}" rmi -f "$rust_image" >/dev/null
  fi
  echo "build-local: making a stand-in $rust_image (placeholder cargo, no compiler)"
  local ctr
  ctr=$("${bah[@]}" from debian:bookworm-slim)
  containers+=("$ctr")
  cat >"$work/cargo" <<'STUB'
#!/bin/sh
# Stand-in cargo: checks it was asked for a release binary and writes one.
set -eu
case " $* " in
  *" build "*"--release"*"-p levers9-cli --bin levers9-worker"*) bin=levers9-worker ;;
  *" build "*"--release"*"-p levers9-cli --bin levers9"*) bin=levers9 ;;
  *" build "*"--release"*"-p levers9-dashboard-api"*) bin=levers9-dashboard-api ;;
  *) echo "unexpected cargo $*" >&2; exit 2 ;;
esac
test -f Cargo.lock && test -d crates/levers9-cli && test -d proto && test -f dashboard/api/Cargo.toml
mkdir -p target/release
printf '#!/bin/sh\necho "%s stand-in $*"\n' "$bin" > "target/release/$bin"
STUB
  "${bah[@]}" copy --chmod 0755 "$ctr" "$work/cargo" /usr/local/bin/cargo >/dev/null
  "${bah[@]}" config --label "levers9.stand-in=$stand_in_version" "$ctr"
  "${bah[@]}" commit -q "$ctr" "$rust_image" >/dev/null
  remove_container "$ctr"
}

make_node_stand_in() {
  have_image "$node_image" && return
  local node npm ctr
  if ! node=$(command -v node) || ! npm=$(npm root -g)/npm; then
    echo "build-local: the stand-in $node_image needs node and npm on this machine" >&2
    exit 1
  fi
  echo "build-local: making a stand-in $node_image (this machine's node $(node --version) and npm)"
  ctr=$("${bah[@]}" from debian:bookworm-slim)
  containers+=("$ctr")
  "${bah[@]}" copy "$ctr" "$node" /usr/local/bin/node >/dev/null
  "${bah[@]}" copy "$ctr" "$npm" /usr/local/lib/node_modules/npm >/dev/null
  if [ ${#npm_trust[@]} -gt 0 ]; then
    printf 'cafile=%s\n' "$npm_cafile" >"$work/npmrc"
    "${bah[@]}" copy "$ctr" "$work/npmrc" /usr/local/etc/npmrc >/dev/null
  fi
  "${bah[@]}" run --isolation chroot "$ctr" -- sh -c \
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && npm --version >/dev/null'
  "${bah[@]}" commit -q "$ctr" "$node_image" >/dev/null
  remove_container "$ctr"
}

image_id() { "${bah[@]}" images --quiet --no-trunc "$1" 2>/dev/null || true; }

# Extra bud arguments go after the image's name. Every FROM image is in the
# store already: nothing is pulled. A failed step's container is removed.
build() {
  local name=$1 before
  shift
  echo "build-local: building levers9/$name:$tag"
  before=$(image_id "levers9/$name:$tag")
  "${bah[@]}" bud --quiet --isolation chroot --layers --pull=never --force-rm \
    --build-arg NODE_IMAGE="$node_image" "$@" \
    -f "docker/$name.Dockerfile" -t "levers9/$name:$tag" . >/dev/null
  # The image the tag named before goes, with the cached layers only it
  # used (a rebuilt binary's): vfs keeps every layer as a whole copy of the
  # root filesystem, so the store would grow with every run. Layers the new
  # image shares stay cached.
  if [ -n "$before" ] && [ "$before" != "$(image_id "levers9/$name:$tag")" ]; then
    "${bah[@]}" rmi "$before" >/dev/null 2>&1 || true
  fi
}

# Runs a command in a fresh container of the image, which is removed
# whatever the command's status (returned). Call it outside $(…): the
# container must be in this shell's list for the exit trap.
run_in() {
  local image=$1 ctr rc=0
  shift
  ctr=$("${bah[@]}" from "$image")
  containers+=("$ctr")
  "${bah[@]}" run --isolation chroot "$ctr" -- "$@" || rc=$?
  remove_container "$ctr"
  return "$rc"
}

check() {
  local name=$1
  case $name in
    runner)
      run_in "levers9/runner:$tag" python3 -c \
        'import sys, json, ssl, sqlite3, asyncio; print("python", sys.version.split()[0])' ;;
    controlplane) check_levers9 "$name" levers9 'juicefs fusermount3' 'juicefs version' ;;
    worker)
      check_levers9 "$name" levers9-worker 'runc runsc juicefs fusermount3' \
        'runc --version | head -1; runsc --version | head -1; juicefs version' ;;
    dashboard-api)
      run_in "levers9/dashboard-api:$tag" sh -ec "$non_root"$'\n''command -v tini >/dev/null && levers9-dashboard-api' ;;
    dashboard-web) check_web ;;
  esac
  local summary
  summary=$("${bah[@]}" inspect --type image --format \
    "{{.FromImage}}: entrypoint {{.OCIv1.Config.Entrypoint}} cmd {{.OCIv1.Config.Cmd}}, {{len .OCIv1.RootFS.DiffIDs}} layer(s)" \
    "levers9/$name:$tag")
  printf '%s\n' "$summary"
}

# In the image: its tools are on PATH, a shell snippet runs, then its
# entrypoint (tini, then the binary: levers9 or levers9-worker) with
# --version, and the binary's sha256. With prebuilt binaries both must be
# that binary's.
check_levers9() {
  local image=levers9/$1:$tag binary=$2 out entrypoint=()
  mapfile -t entrypoint < <("${bah[@]}" inspect --type image \
    --format '{{range .OCIv1.Config.Entrypoint}}{{println .}}{{end}}' "$image" | grep .)
  run_in "$image" sh -ec "$levers9_probe" sh "$3" "$4" "/usr/local/bin/$binary" "${entrypoint[@]}" >"$work/probe.out"
  out=$(cat "$work/probe.out")
  printf '%s\n' "$out"
  [ -n "$prebuilt" ] || return 0
  grep -qxF "${prebuilt_version[$binary]}" <<<"$out" ||
    { echo "build-local: $image: its entrypoint did not print '${prebuilt_version[$binary]}'" >&2; return 1; }
  grep -qxF "${prebuilt_sum[$binary]}  /usr/local/bin/$binary" <<<"$out" ||
    { echo "build-local: $image: /usr/local/bin/$binary is not the prebuilt $binary" >&2; return 1; }
}

# Arguments: the tools, a snippet, the binary, the entrypoint.
# TINI_SUBREAPER: tini is not PID 1 under `buildah run`, and would say so.
levers9_probe=$(cat <<'SH'
tools=$1 snippet=$2 binary=$3
shift 3
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "no $tool in the image" >&2; exit 1; }
done
eval "$snippet"
TINI_SUBREAPER=1 "$@" --version
sha256sum "$binary"
SH
)

# The dashboard images run as uid 10001.
non_root=$(cat <<'SH'
id -u | grep -qx 10001 || { echo "runs as uid $(id -u), not 10001"; exit 1; }
echo "user $(id -un)"
SH
)

# Serves the web image's app on a loopback port (chroot isolation shares
# the host's network) and checks its policy names the API it was built for,
# then that a build without NEXT_PUBLIC_API_BASE is refused.
check_web() {
  local serve
  serve=$(cat <<'SH'
HOSTNAME=127.0.0.1 PORT=$1 node server.js >/tmp/server.log 2>&1 &
server=$!
rc=1
for _ in $(seq 150); do
  rc=0
  node -e '
    fetch(`http://127.0.0.1:${process.argv[1]}/signin`).then((r) => {
      const csp = r.headers.get("content-security-policy-report-only") || "";
      console.log("GET /signin", r.status, (csp.match(/connect-src [^;]*/) || ["no connect-src"])[0]);
      process.exit(r.status === 200 && csp.includes(process.argv[2]) ? 0 : 3);
    }, () => process.exit(1));' "$1" "$2" || rc=$?
  [ "$rc" = 1 ] || break
  sleep 0.2
done
kill "$server"
[ "$rc" = 0 ] || { cat /tmp/server.log; exit 1; }
SH
)
  run_in "levers9/dashboard-web:$tag" sh -ec "$non_root"$'\n'"$serve" sh \
    $((20000 + RANDOM % 20000)) "${api_base%/api}"
  if "${bah[@]}" bud --quiet --isolation chroot --layers --pull=never --force-rm --build-arg NODE_IMAGE="$node_image" "${npm_trust[@]}" \
    -f docker/dashboard-web.Dockerfile -t levers9/dashboard-web:no-api . >"$work/no-api.log" 2>&1; then
    echo "build-local: the web image built without NEXT_PUBLIC_API_BASE" >&2
    return 1
  fi
  echo "without NEXT_PUBLIC_API_BASE: $(grep -o 'NEXT_PUBLIC_API_BASE is not set[^:]*' "$work/no-api.log" | head -1)"
}

make_debian_base
for name in "${images[@]}"; do
  args=()
  case $name in
    controlplane | worker)
      if [ -n "$prebuilt" ]; then
        args=(--build-arg "RUST_IMAGE=$no_compiler" --build-context "build=$work/prebuilt")
      else
        make_rust_stand_in
        args=(--build-arg "RUST_IMAGE=$rust_image")
      fi
      # Both install juicefs with pip.
      args+=("${pip_trust[@]}")
      ;;
    dashboard-api)
      make_rust_stand_in
      args=(--build-arg "RUST_IMAGE=$rust_image")
      ;;
    dashboard-web)
      make_node_stand_in
      args=(--build-arg "NEXT_PUBLIC_API_BASE=$api_base" "${npm_trust[@]}")
      ;;
    runner) ;;
    *) echo "build-local: unknown image $name (runner, controlplane, worker, dashboard-api, dashboard-web)" >&2; exit 2 ;;
  esac
  build "$name" "${args[@]}"
  check "$name"
done
"${bah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep levers9/
echo "build-local: ${images[*]} built"
