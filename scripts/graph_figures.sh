#!/usr/bin/env bash
# The tensor graph compiler's figures on one device: every `kiln profile` case at the sizes the
# issue names, one JSON object a line (kernel us per launch, launches, host us per resolve on a
# miss and a replay hit, bit-identical to the oracle).
#   scripts/graph_figures.sh KILN_BINARY DEVICE OUT.jsonl
set -euo pipefail
kiln="$1"
device="$2"
out="$3"
: >"$out"
run() {
    echo "kiln profile $*" >&2
    "$kiln" profile "$@" --device "$device" --json >>"$out"
}
run add_square --n 67108864
run add_square --n 262144
run mul_rank4 --shape 9,11,32,16
run softmax --rows 4096 --n 4096
run layer_norm --rows 4096 --n 4096
run layer_norm --rows 32 --n 4096
run rms_norm --rows 4096 --n 4096
run rms_norm --rows 32 --n 4096
run rms_norm --rows 1 --n 4096
run gelu_mlp_epilogue --rows 4096 --n 4096
