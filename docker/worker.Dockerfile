# The worker image: the levers9 binary with runc and gVisor (runsc), which
# run each task's container. Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t REGISTRY/levers9/worker:TAG .

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY proto proto
COPY crates crates
COPY bench bench
# A workspace member: cargo reads its manifest even when not building it.
COPY dashboard/api dashboard/api
RUN cargo build --release --locked -p levers9-cli \
 && install -D -m 0755 target/release/levers9 /out/levers9

FROM ${RUNTIME_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# fuse3: volumes are JuiceFS mounts bind-mounted into task containers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates runc runsc fuse3 tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/levers9 /usr/local/bin/levers9
VOLUME /var/lib/levers9/worker
# The pool, the controlplane address and the token come from the
# environment the pod sets: LEVERS9_WORKER_POOL, LEVERS9_CONTROLPLANE, LEVERS9_TOKEN.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/levers9"]
CMD ["worker"]
