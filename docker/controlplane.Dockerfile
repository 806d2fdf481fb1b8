# The controlplane image: the levers9 binary on Debian, with FUSE for the
# JuiceFS volumes the controlplane mounts. Build from the repository root:
#   docker build -f docker/controlplane.Dockerfile -t REGISTRY/levers9/controlplane:TAG .

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# Its output is /out/levers9. `--build-context build=DIR`, DIR holding
# out/levers9, replaces this stage with a binary built elsewhere: CI builds
# the image so, with the test run's binary (scripts/test-images.sh).
FROM ${RUST_IMAGE} AS build
WORKDIR /src
# Only what the workspace compiles from, so a docs or SDK change does not
# invalidate the (slow) compile layer.
COPY Cargo.toml Cargo.lock ./
COPY proto proto
COPY crates crates
COPY bench bench
# A workspace member: cargo reads its manifest even when not building it.
COPY dashboard/api dashboard/api
RUN cargo build --release --locked -p levers9-cli \
 && install -D -m 0755 target/release/levers9 /out/levers9

# JuiceFS is not packaged by Debian. The release tarball is only fetched when
# a version and its sha256 are given, so an unverified binary never lands in
# the image; without them the image has no juicefs and volumes cannot mount.
FROM ${RUNTIME_IMAGE} AS juicefs
ARG DEBIAN_FRONTEND=noninteractive
ARG JUICEFS_VERSION=""
ARG JUICEFS_SHA256=""
RUN set -eu; mkdir -p /out; \
    if [ -n "$JUICEFS_VERSION" ]; then \
      apt-get update; \
      apt-get install -y --no-install-recommends ca-certificates curl; \
      curl -fsSLo /tmp/juicefs.tgz "https://github.com/juicedata/juicefs/releases/download/v${JUICEFS_VERSION}/juicefs-${JUICEFS_VERSION}-linux-amd64.tar.gz"; \
      echo "${JUICEFS_SHA256}  /tmp/juicefs.tgz" | sha256sum -c -; \
      tar -xzf /tmp/juicefs.tgz -C /out juicefs; \
    fi

FROM ${RUNTIME_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates fuse3 tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=juicefs /out/ /usr/local/bin/
COPY --from=build /out/levers9 /usr/local/bin/levers9
# The embedded SQLite default lives here when no Postgres is configured.
ENV LEVERS9_DATA_DIR=/var/lib/levers9/data
EXPOSE 1993 1994
# tini reaps the juicefs mount helpers the controlplane starts.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/levers9"]
CMD ["controlplane"]
