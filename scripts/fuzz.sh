#!/usr/bin/env bash
# Runs the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer) for a bounded time
# each: what levers9 parses from untrusted peers (image layers and
# references, the function runner's frames, REST bodies and headers). Not
# part of CI: a run is minutes of CPU and a first build of fuzz/ about half
# an hour. See docs/testing.md, "Fuzzing".
#
#   scripts/fuzz.sh                  every target, 60 s each
#   scripts/fuzz.sh image_unpack     the targets named
#   LEVERS9_FUZZ_SECONDS=600 scripts/fuzz.sh
#
# Each target grows its corpus in fuzz/corpus/<target> (starting from
# fuzz/seeds/<target>); an input that fails is written to
# fuzz/artifacts/<target>/ and the script goes on to the next target, then
# exits 1 naming those that failed. Reproduce one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run -O <target> fuzz/artifacts/<target>/<file>
set -euo pipefail

cd "$(dirname "$0")/.."

seconds="${LEVERS9_FUZZ_SECONDS:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "LEVERS9_FUZZ_SECONDS must be a whole number of seconds, not \"$seconds\"" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

# cargo-fuzz hands rustc -Z flags (the sanitizer, the coverage
# instrumentation); RUSTC_BOOTSTRAP lets the stable toolchain take them,
# so no nightly toolchain is needed.
export RUSTC_BOOTSTRAP=1

if (($# > 0)); then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

# One build of all of them first, so the time limit is spent fuzzing.
cargo fuzz build -O

failed=()
for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus"
    seeds=()
    if [[ -d "fuzz/seeds/$target" ]]; then
        seeds=("fuzz/seeds/$target")
    fi
    echo "== $target: ${seconds} s" >&2
    # One process (no -jobs/-fork): the machines it runs on are shared. A
    # single input running 30 s is a hang, reported like a crash.
    if ! cargo fuzz run -O "$target" "$corpus" "${seeds[@]}" -- \
        -max_total_time="$seconds" -timeout=30 -print_final_stats=1; then
        failed+=("$target")
    fi
done

if ((${#failed[@]} > 0)); then
    echo "failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "no target failed in ${seconds} s each" >&2
