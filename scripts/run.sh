#!/usr/bin/env bash
# Sets up and builds kiln, then shows every device and runs the demo kernel on each of them.
# Exits non-zero if any step fails or any device is not bit-identical to the oracle.
set -euo pipefail

cd "$(dirname "$0")/.."
bash scripts/setup.sh default
build/kiln info
echo
build/kiln demo
