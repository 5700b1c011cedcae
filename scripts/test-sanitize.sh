#!/usr/bin/env bash
# Builds kiln with AddressSanitizer and UndefinedBehaviorSanitizer (the sanitize preset:
# build-sanitize/, no benchmarks) and runs the test suite under them. Any report fails the run:
# UBSan halts on its first finding, ASan and LeakSanitizer exit non-zero. Leaks inside PoCL, the
# OpenCL ICD loader and LLVM are suppressed (scripts/lsan-suppressions.txt); kiln's never are.
# The whole suite runs, but install_and_find_package: an unsanitized consumer cannot link the
# sanitized static library, and packaging is checked by the ci build.
set -euo pipefail

cd "$(dirname "$0")/.."
cmake --preset sanitize
cmake --build --preset sanitize
ctest --preset sanitize --output-on-failure -j2 --timeout 1800
