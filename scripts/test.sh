#!/usr/bin/env bash
# Sets up and builds kiln with warnings as errors (the ci preset), then runs the whole test
# suite. Exits non-zero if anything fails.
set -euo pipefail

cd "$(dirname "$0")/.."
bash scripts/setup.sh ci
# Every test binary fails if one of these backends found no device (tests/support).
export KILN_REQUIRE_BACKENDS="${KILN_REQUIRE_BACKENDS:-cpu,opencl}"
ctest --preset ci --output-on-failure -j2 --timeout 1800
