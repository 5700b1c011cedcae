#!/usr/bin/env bash
# Sets up and builds kiln, shows every device, runs the demo kernel on each of them, tunes the
# shipped ops (rms_norm, matvec_q8_dp4a) on the best device and prints their tables, then embeds
# four sentences with all-MiniLM-L6-v2 on the best device and prints their similarity matrix.
# Exits non-zero if any step fails or any device is not bit-identical to the oracle.
set -euo pipefail

cd "$(dirname "$0")/.."
bash scripts/setup.sh default
build/kiln info
echo
build/kiln demo
echo
build/kiln tune rms_norm --rows 4096 --n 4096
echo
build/kiln tune matvec_q8 --rows 4096 --k 4096
echo
build/examples/minilm
