// The demo kernel in the DSL and its plain C++ oracle.
#include "demo_kernel.hpp"

#include <cmath>

#include "kiln/dsl.hpp"

namespace kiln::cli {

ir::Kernel demo_kernel(int64_t n, int threads) {
    if (n < 1 || n > (int64_t{1} << 30))
        fail("demo: row length {} out of range; expected 1 to 2^30", n);
    const int row_len = static_cast<int>(n);
    KernelBuilder k("demo_row_sumsq", demo_block_size);
    auto x = k.input("x", DType::f32);
    auto out = k.output("out", DType::f32);
    Expr a = k.scalar("a", DType::f32);
    k.require(out.len() > 0, "out holds at least one row");
    k.require(x.len() / row_len == out.len() && x.len() % row_len == 0,
              "x holds exactly n elements per row of out");
    Expr rows = out.len();
    Var row = k.let(k.absolute_pos() / threads, "row");
    // Every thread takes part in the fold (a cross-thread fold is a uniform point), so threads
    // past the last row fold the last row again and store nothing.
    Var src = k.let(min(row, rows - 1), "src");
    const Fold fold = Fold::sum().lanes(demo_fold_lanes).chunk(demo_fold_chunk).threads(threads);
    Var sum = k.fold(DType::f32, row_len, fold, [&](Expr i) {
        Expr v = x[src * row_len + i];
        Expr y = a * v + sqrt(abs(v));
        return y * y;
    });
    k.if_(row < rows && k.thread_index() % threads == 0, [&] { out[row] = sum; });
    return k.finish();
}

int64_t demo_grid(int64_t rows, int threads) {
    const int64_t rows_per_block = demo_block_size / threads;
    return (rows + rows_per_block - 1) / rows_per_block;
}

std::vector<float> demo_oracle(const std::vector<float>& x, int64_t n, float a) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n;
    const int64_t W = demo_fold_lanes, V = demo_fold_chunk;
    std::vector<float> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x.data() + r * n;
        float lanes[demo_fold_lanes];
        // Lane j folds chunks j, j+W, j+2W, ... of V consecutive elements, left to right.
        for (int64_t j = 0; j < W; ++j) {
            float acc = 0.0f;
            for (int64_t base = j * V; base < n; base += W * V)
                for (int64_t u = 0; u < V && base + u < n; ++u) {
                    const float v = row[base + u];
                    const float ax = a * v;
                    const float y = ax + std::sqrt(std::fabs(v));
                    acc = acc + y * y;
                }
            lanes[j] = acc;
        }
        // The fixed halving tree over the lanes.
        for (int64_t s = W / 2; s >= 1; s /= 2)
            for (int64_t j = 0; j < s; ++j) lanes[j] = lanes[j] + lanes[j + s];
        out[static_cast<size_t>(r)] = lanes[0];
    }
    return out;
}

}  // namespace kiln::cli
