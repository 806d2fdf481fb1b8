# levers9: the two commands a newcomer needs are `make quickstart` and `make test`.

.PHONY: build test quickstart bench bench-containers bench-functions bench-endpoints bench-websocket bench-maps bench-peers bench-scheduling bench-memory lint fuzz

build:
	cargo build --release -p levers9-cli

# Installs missing system packages, starts a throwaway PostgreSQL and Redis on
# loopback, runs every test against both backends, and stops them.
test:
	scripts/test.sh

quickstart:
	scripts/quickstart.sh

bench:
	scripts/test-servers.sh cargo run --release -p levers9-bench

# Container starts through a controlplane and a worker vs raw runc/runsc (root).
bench-containers:
	scripts/test-servers.sh cargo run --release -p levers9-bench -- containers

bench-scheduling:
	scripts/test-servers.sh cargo run --release -p levers9-bench -- scheduling

# Every fuzz target in fuzz/ for LEVERS9_FUZZ_SECONDS each (default 60);
# needs cargo-fuzz (cargo install cargo-fuzz --locked), not run in CI.
fuzz:
	scripts/fuzz.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo doc --workspace --no-deps
	scripts/dashboard-web.sh lint

bench-functions:
	scripts/test-servers.sh scripts/bench-functions.sh

bench-endpoints:
	scripts/test-servers.sh scripts/bench-functions.sh bench/functions/endpoints.py

bench-websocket:
	scripts/test-servers.sh scripts/bench-functions.sh bench/functions/websocket.py

# Map throughput by max_containers and concurrency (LEVERS9_BENCH_MAPS).
bench-maps:
	scripts/test-servers.sh scripts/bench-functions.sh bench/functions/maps.py

# levers9 beside Ray, Celery+Redis and raw runc/crun/runsc, interleaved.
bench-peers:
	scripts/test-servers.sh scripts/bench-peers.sh

# Idle RSS and PSS of a controlplane and a worker, on the embedded backends
# and on PostgreSQL and Redis, before and after a call (goal: <= 50 MB).
bench-memory:
	scripts/test-servers.sh scripts/bench-memory.sh
