#!/usr/bin/env bash
# Packs a build's test binaries, CLI and benchmarks (stripped) with the shared libraries they
# need beyond the C and C++ runtimes, so they can run on a machine without kiln's build
# dependencies (e.g. a lent GPU machine):  scripts/bundle.sh BUILD_DIR DEST
set -euo pipefail
build=$1
dest=$2
rm -rf "$dest"
mkdir -p "$dest/lib"
cp "$build"/tests/*_test "$build/kiln" "$build/kiln-opencl-probe" "$build"/bench/bench_* "$dest/"
strip "$dest"/* 2>/dev/null || true
for lib in $(ldd "$dest/kiln" "$dest"/*_test | awk '/=> \// {print $3}' | sort -u); do
    case $(basename "$lib") in
        libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|libdl*|librt*) ;;
        *) cp -L "$lib" "$dest/lib/" ;;
    esac
done
du -sh "$dest"
