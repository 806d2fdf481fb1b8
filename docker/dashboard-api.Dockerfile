# The dashboard API image: the levers9-dashboard-api binary on Debian, run
# by an unprivileged user. Build from the repository root:
#   docker build -f docker/dashboard-api.Dockerfile -t REGISTRY/levers9/dashboard-api:TAG .

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
WORKDIR /src
# The whole workspace: cargo reads every member's manifest, and the API
# depends on levers9-api (crates/, proto/).
COPY Cargo.toml Cargo.lock ./
COPY proto proto
COPY crates crates
COPY bench bench
COPY dashboard/api dashboard/api
RUN cargo build --release --locked -p levers9-dashboard-api \
 && install -D -m 0755 target/release/levers9-dashboard-api /out/levers9-dashboard-api

FROM ${RUNTIME_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# ca-certificates: rustls verifies Google's endpoints against the system's
# roots. tini: the API has no SIGTERM handler, and as PID 1 it would ignore
# the signal until Kubernetes kills it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin levers9
COPY --from=build /out/levers9-dashboard-api /usr/local/bin/levers9-dashboard-api
# Numeric, so a pod's runAsNonRoot can check it without /etc/passwd.
USER 10001:10001
# The rest of its settings come from the levers9-dashboard-env Secret
# (docs/dashboard.md).
ENV LEVERS9_DASHBOARD_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/levers9-dashboard-api"]
