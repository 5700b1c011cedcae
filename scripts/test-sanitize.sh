#!/usr/bin/env bash
# Builds kiln with AddressSanitizer and UndefinedBehaviorSanitizer (the sanitize preset:
# build-sanitize/, no benchmarks) and runs the quick tier under them: it exercises every source
# file of the library. The sanitizers watch kiln's own code; the kernels are the compilers'
# output, not sanitized, so they are built as the quick tier builds them (KILN_OPTIMIZE=0 unless
# set) and come from the kernel cache that scripts/test.sh has just filled; the full tier checks
# the kernels the compilers' optimizers build (tests/CMakeLists.txt). The NVRTC sweeps (every
# point of an op compiled for sm_90) are left out: NVRTC is not sanitized, and the code that
# writes CUDA C and calls NVRTC runs under the sanitizers in the smaller NVRTC tests
# (CudaCodegen.*, CudaNvrtc.*, CheckBounds.*). Any report fails the run: UBSan halts on its first
# finding, ASan and LeakSanitizer exit non-zero. Leaks inside PoCL, the OpenCL ICD loader and
# LLVM are suppressed (scripts/lsan-suppressions.txt); kiln's never are. A test that passed and
# then lost its leak check to LeakSanitizer's own tracer crashing at exit runs once more
# (scripts/lsan_tracer_crashes.py); every other failure stands. install_and_find_package
# is left out: an unsanitized consumer cannot link the sanitized static library, and packaging is
# checked by the ci build.
set -euo pipefail

cd "$(dirname "$0")/.."
echo "test-sanitize: building the sanitize preset (build-sanitize/)"
cmake --preset sanitize
cmake --build --preset sanitize
cost_data=build-sanitize/Testing/Temporary/CTestCostData.txt
if [[ ! -f "$cost_data" ]]; then
    mkdir -p "$(dirname "$cost_data")"
    cp tests/ctest-cost-data.txt "$cost_data"
fi
export KILN_REQUIRE_BACKENDS="${KILN_REQUIRE_BACKENDS:-cpu,opencl}"
export KILN_OPTIMIZE="${KILN_OPTIMIZE:-0}"
# The preset leaves out install_and_find_package and the NVRTC sweeps (CMakePresets.json).
ctest_args=(--output-on-failure -j"$(nproc)" --timeout 1800)
if ! ctest --preset sanitize -L quick "${ctest_args[@]}"; then
    python3 scripts/lsan_tracer_crashes.py build-sanitize
    echo "test-sanitize: running those tests again for their leak check"
    ctest --preset sanitize --rerun-failed "${ctest_args[@]}"
fi
