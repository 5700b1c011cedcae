// OpenBLAS's sgemm as a benchmark peer, loaded at run time where the library is installed
// (Debian libopenblas0), so that kiln neither links nor needs it.
#pragma once

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::bench {

// cblas_sgemm: (order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);

// OpenBLAS's cblas_sgemm, or null where the library cannot be loaded. OpenBLAS picks its kernels
// from the CPU it recognizes and falls back to its SSE3 ("Prescott") ones on a CPU newer than its
// table; so that the peer runs at its best, an AVX-512 (or AVX2) CPU gets OpenBLAS's SkylakeX (or
// Haswell) kernels unless OPENBLAS_CORETYPE already says otherwise. openblas_core() names the pick.
inline CblasSgemm openblas_sgemm() {
    if (!std::getenv("OPENBLAS_CORETYPE")) {
        if (__builtin_cpu_supports("avx512f"))
            setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
        else if (__builtin_cpu_supports("avx2"))
            setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    }
    for (const char* lib : {"libopenblas.so.0", "libopenblas.so"})
        if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))
            return reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    return nullptr;
}

// The kernels OpenBLAS chose ("SkylakeX", ...), or "?" where it cannot say.
inline const char* openblas_core() {
    for (const char* lib : {"libopenblas.so.0", "libopenblas.so"})
        if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))
            if (auto name = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename")))
                return name();
    return "?";
}

// c = a·b through `sgemm`, each dense and row-major: a is m x k, b k x n, c m x n.
inline void sgemm_row_major(CblasSgemm sgemm, int m, int n, int k, const float* a, const float* b,
                            float* c) {
    constexpr int row_major = 101, no_transpose = 111;
    sgemm(row_major, no_transpose, no_transpose, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

}  // namespace kiln::bench
