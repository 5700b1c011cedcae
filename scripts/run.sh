#!/usr/bin/env bash
# Sets up and builds kiln's command-line tool and the MiniLM example (not the tests), shows every
# device, runs the demo kernel on each of them, tunes the shipped ops (rms_norm, matvec_q8_dp4a) on
# the best device and prints their tables, then embeds four sentences with all-MiniLM-L6-v2 on the
# best device and prints their similarity matrix. Exits non-zero if any step fails or any device
# is not bit-identical to the oracle.
set -euo pipefail

cd "$(dirname "$0")/.."
bash scripts/setup.sh default --target kiln_cli --target minilm
step() { echo; echo "run: $*"; }
step "kiln info"
build/kiln info
step "kiln demo: the demo kernel compiled and run on every device"
build/kiln demo
step "kiln tune rms_norm: every variant compiled and timed once on the best device"
build/kiln tune rms_norm --rows 4096 --n 4096
step "kiln tune matvec_q8: likewise"
build/kiln tune matvec_q8 --rows 4096 --k 4096
step "minilm: all-MiniLM-L6-v2 planned, compiled and run on the best device"
build/examples/minilm
