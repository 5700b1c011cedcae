// OpenBLAS's sgemm as a benchmark peer, loaded at run time where the library is installed
// (Debian libopenblas0), so that kiln neither links nor needs it.
#pragma once

#include <dlfcn.h>

namespace kiln::bench {

// cblas_sgemm: (order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);

// OpenBLAS's cblas_sgemm, or null where the library cannot be loaded.
inline CblasSgemm openblas_sgemm() {
    for (const char* lib : {"libopenblas.so.0", "libopenblas.so"})
        if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))
            return reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    return nullptr;
}

// c = a·b through `sgemm`, each dense and row-major: a is m x k, b k x n, c m x n.
inline void sgemm_row_major(CblasSgemm sgemm, int m, int n, int k, const float* a, const float* b,
                            float* c) {
    constexpr int row_major = 101, no_transpose = 111;
    sgemm(row_major, no_transpose, no_transpose, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

}  // namespace kiln::bench
