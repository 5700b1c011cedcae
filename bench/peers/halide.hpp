// The Halide peers (rms_norm and softmax over rows of f32), from the shared library
// bench/peers_halide.py builds, loaded at run time so that kiln neither links nor needs Halide.
#pragma once

#include <dlfcn.h>

#include <string>

#include "kiln/error.hpp"

namespace kiln::bench {

// The library's entries; null where no library was named.
struct HalidePeers {
    int (*rms_norm)(const float* x, const float* w, float eps, float* out, int rows,
                    int n) = nullptr;
    int (*softmax)(const float* x, float* out, int rows, int n) = nullptr;
};

// The entries of the library at `lib` (empty: none). kiln::Error when it cannot be loaded or
// lacks them.
inline HalidePeers halide_peers(const std::string& lib) {
    HalidePeers h;
    if (lib.empty()) return h;
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) fail("Halide peers {}: {}", lib, dlerror());
    h.rms_norm = reinterpret_cast<decltype(h.rms_norm)>(dlsym(handle, "kiln_halide_rms_norm"));
    h.softmax = reinterpret_cast<decltype(h.softmax)>(dlsym(handle, "kiln_halide_softmax"));
    if (!h.rms_norm || !h.softmax)
        fail(
            "Halide peers {}: no kiln_halide_rms_norm / kiln_halide_softmax (built by "
            "bench/peers_halide.py)",
            lib);
    return h;
}

}  // namespace kiln::bench
