#!/usr/bin/env bash
# Runs kiln's test binaries, CLI and benchmarks from a build (or a bundle made by
# scripts/bundle.sh) on a machine with a GPU, writing logs and JSON into an output folder.
#   scripts/gpu_suite.sh BIN_DIR OUT_DIR
# BIN_DIR holds the test binaries, `kiln` and the bench binaries (a lib/ beside them is put on
# LD_LIBRARY_PATH). Prints a summary last; exits non-zero if any test binary failed.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-$(mktemp -d)}"
# A test binary fails if one of these backends found no device (tests/support).
export KILN_REQUIRE_BACKENDS="${KILN_REQUIRE_BACKENDS:-cpu,cuda,opencl}"
log="$out/tests.log"
: >"$log"
failed=()
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 || true
    "$bin/kiln" info
} >>"$log" 2>&1
for t in "$bin"/*_test; do
    name=$(basename "$t")
    echo "=== $name" >>"$log"
    if ! "$t" --gtest_brief=1 >>"$log" 2>&1; then failed+=("$name"); fi
done
{
    echo "=== kiln demo"
    "$bin/kiln" demo || failed+=("kiln demo")
} >>"$log" 2>&1
for b in "$bin"/bench_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    echo "=== $name" >>"$log"
    "$b" --json "$out/$name.json" >>"$log" 2>&1 || failed+=("$name")
done
grep -E "^=== |PASSED|FAILED|SKIPPED \]|tests? ran" "$log" | tail -80
echo "failed: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
