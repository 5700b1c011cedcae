#!/usr/bin/env bash
# Installs kiln's build dependencies when they are missing (Debian 12; needs root for that),
# then configures and builds with a CMake preset. Idempotent: a second run only rebuilds.
#   scripts/setup.sh [preset]      preset: default (build/) or ci (build-ci/, warnings as errors)
set -euo pipefail

preset="${1:-default}"
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libfmt-dev libcli11-dev libxxhash-dev ocl-icd-opencl-dev
          opencl-headers pocl-opencl-icd libgtest-dev libgmock-dev libbenchmark-dev
          libmpfr-dev)

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

cmake --preset "$preset"
cmake --build --preset "$preset"
