#!/usr/bin/env bash
# Sets up and builds kiln with warnings as errors (the ci preset), then runs a tier of the test
# suite on every backend found. Exits non-zero if anything fails.
#   scripts/test.sh [--full] [AREA]...
#     (no option)  the quick tier (ctest label quick): every backend, op, dtype and schedule point
#                  at small, ragged shapes; builds everything but the benchmarks. Kernels are
#                  built for a short build (KILN_OPTIMIZE=0 unless set: OpenCL without the
#                  driver's optimizer, the CPU at -O1; the same bits); scripts/test-sanitize.sh
#                  runs the same tests with the compilers' optimizers
#     --full       the full tier (label full): the same checks at more shapes, dtypes and
#                  repetitions, and the real Gemma 3 model (setup.sh --gemma installs it); builds
#                  the benchmarks too (.ci/run runs it after the quick tier)
#     AREA         only the tests whose names match this regular expression, in any case
#                  (ctest -R): `scripts/test.sh matmul` runs Matmul.*, MatmulTensorCore.*, ...
set -euo pipefail

cd "$(dirname "$0")/.."
tier=quick
areas=()
for arg in "$@"; do
    case "$arg" in
        --full) tier=full ;;
        -*) echo "test: unknown option '$arg'; expected --full or an area" >&2; exit 2 ;;
        *) areas+=("$arg") ;;
    esac
done

setup_args=(-DKILN_BUILD_BENCH=OFF)
[[ "$tier" == full ]] && setup_args=(-DKILN_BUILD_BENCH=ON --gemma)
[[ "$tier" == quick ]] && export KILN_OPTIMIZE="${KILN_OPTIMIZE:-0}"
start=$SECONDS
bash scripts/setup.sh ci "${setup_args[@]}"
echo "test: set-up and build took $((SECONDS - start)) s"

# Measured test times start the longest tests first on a fresh build (ctest keeps its own
# figures once it has run).
cost_data=build-ci/Testing/Temporary/CTestCostData.txt
if [[ ! -f "$cost_data" ]]; then
    mkdir -p "$(dirname "$cost_data")"
    cp tests/ctest-cost-data.txt "$cost_data"
fi

filter=()
if ((${#areas[@]})); then
    regex=""
    for area in "${areas[@]}"; do
        # Each letter as [xX]: ctest -R is case-sensitive.
        regex+="${regex:+|}$(sed -E 's/([a-zA-Z])/[\L\1\U\1]/g' <<<"$area")"
    done
    filter=(-R "$regex")
fi

# Every test binary fails if one of these backends found no device (tests/support).
export KILN_REQUIRE_BACKENDS="${KILN_REQUIRE_BACKENDS:-cpu,opencl}"
echo "test: the $tier tier${areas[*]:+ (${areas[*]})} on $(nproc) cores" \
    "(KILN_OPTIMIZE=${KILN_OPTIMIZE:-1})"
ctest --preset ci -L "$tier" "${filter[@]}" --output-on-failure -j"$(nproc)" --timeout 1800
