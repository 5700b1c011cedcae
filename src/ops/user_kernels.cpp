// Kernels as a new user writes them, with the public DSL only.
#include "ops/user_kernels.hpp"

#include <functional>
#include <vector>

#include <fmt/format.h>

#include "kiln/dsl.hpp"
#include "kiln/error.hpp"
#include "kiln/math.hpp"

namespace kiln::ops {
namespace {

// The shape of a row kernel: which row a thread works on and its place among the row's threads.
struct Rows {
    Var rows;     // rows in x
    Var row;      // this thread's row (may be past the end)
    Var clamped;  // row, clamped into range, so every thread reaches the folds' barriers
    Var lane;     // this thread's index among its row's threads
};

Rows row_of(KernelBuilder& k, const Memory& x, int64_t n, int threads) {
    const int N = static_cast<int>(n);
    k.require(x.len() % N == 0, fmt::format("x holds rows of {}", n));
    Var rows = k.let(x.len() / N, "rows");
    Var row =
        k.let(k.block_index() * (k.block_size() / threads) + k.thread_index() / threads, "row");
    Var clamped = k.let(min(row.expr(), rows - 1), "clamped");
    Var lane = k.let(k.thread_index() % threads, "lane");
    return {rows, row, clamped, lane};
}

Fold row_fold(Fold f, int threads) {
    return f.lanes(kUserFoldLanes).threads(threads);
}

// body(i) for the elements i of the row this thread writes.
void each_element(KernelBuilder& k, const Rows& r, int64_t n, int threads,
                  const std::function<void(Expr)>& body) {
    k.if_(r.row < r.rows, [&] { k.for_(r.lane, static_cast<int>(n), body, threads); });
}

}  // namespace

ir::Kernel add_square(int block) {
    KernelBuilder k("add_square", block);
    auto a = k.input("a", DType::f32);
    auto b = k.input("b", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Var s = k.let(a[i] + b[i], "s");
        y[i] = s * s;
    });
    return k.finish();
}

ir::Kernel softmax_rows(int64_t n, int block, int threads) {
    KernelBuilder k("softmax_rows", block);
    auto x = k.input("x", DType::f32);
    auto out = k.output("out", DType::f32);
    const int N = static_cast<int>(n);
    Rows r = row_of(k, x, n, threads);
    Var base = k.let(r.clamped * N, "base");
    Var m = k.fold(DType::f32, N, row_fold(Fold::max(), threads),
                   [&](Expr i) -> Expr { return x[base + i]; });
    Var s = k.fold(DType::f32, N, row_fold(Fold::sum(), threads),
                   [&](Expr i) -> Expr { return exp(x[base + i] - m); });
    each_element(k, r, n, threads, [&](Expr i) { out[base + i] = exp(x[base + i] - m) / s; });
    return k.finish();
}

ir::Kernel layer_norm_rows(int64_t n, int block, int threads) {
    KernelBuilder k("layer_norm_rows", block);
    auto x = k.input("x", DType::f32);
    auto g = k.input("g", DType::f32);
    auto b = k.input("b", DType::f32);
    auto out = k.output("out", DType::f32);
    Expr eps = k.scalar("eps", DType::f32);
    const int N = static_cast<int>(n);
    const Expr n_f32 = constant(DType::f32, static_cast<double>(static_cast<float>(n)));
    Rows r = row_of(k, x, n, threads);
    Var base = k.let(r.clamped * N, "base");
    Var sum = k.fold(DType::f32, N, row_fold(Fold::sum(), threads),
                     [&](Expr i) -> Expr { return x[base + i]; });
    Var mean = k.let(sum / n_f32, "mean");
    Var sq = k.fold(DType::f32, N, row_fold(Fold::sum(), threads), [&](Expr i) -> Expr {
        Expr d = x[base + i] - mean;
        return d * d;
    });
    Var inv = k.let(1.0f / sqrt(sq / n_f32 + eps), "inv");
    each_element(k, r, n, threads,
                 [&](Expr i) { out[base + i] = (x[base + i] - mean) * inv * g[i] + b[i]; });
    return k.finish();
}

ir::Kernel rms_norm_rows(int64_t n, int block, int threads) {
    KernelBuilder k("rms_norm_rows", block);
    auto x = k.input("x", DType::f32);
    auto w = k.input("w", DType::f32);
    auto out = k.output("out", DType::f32);
    Expr eps = k.scalar("eps", DType::f32);
    const int N = static_cast<int>(n);
    const Expr n_f32 = constant(DType::f32, static_cast<double>(static_cast<float>(n)));
    Rows r = row_of(k, x, n, threads);
    Var base = k.let(r.clamped * N, "base");
    Var ss = k.fold(DType::f32, N, row_fold(Fold::sum(), threads), [&](Expr i) -> Expr {
        Expr v = x[base + i];
        return v * v;
    });
    Var inv = k.let(1.0f / sqrt(ss / n_f32 + eps), "inv");
    each_element(k, r, n, threads, [&](Expr i) { out[base + i] = x[base + i] * inv * w[i]; });
    return k.finish();
}

int64_t rows_grid(int64_t rows, int block, int threads) {
    const int64_t per_block = block / threads;
    return (rows + per_block - 1) / per_block;
}

ir::Kernel sgemm_blocked(int64_t kdim, int64_t n, int tm, int tn, int block) {
    KernelBuilder k("sgemm_blocked", block);
    auto a = k.input("a", DType::f32);
    auto b = k.input("b", DType::f32);
    auto c = k.output("c", DType::f32);
    const int K = static_cast<int>(kdim), N = static_cast<int>(n);
    const int cols = tn * block, blocks_n = N / cols;
    if (N % cols != 0) fail("sgemm_blocked: n = {} is not a multiple of tn * block = {}", N, cols);
    k.require(
        c.len() % N == 0 && (c.len() / N) % tm == 0 && a.len() == (c.len() / N) * K &&
            b.len() == K * N,
        fmt::format("a is M x {0}, b is {0} x {1}, c is M x {1}, M a multiple of {2}", K, N, tm));
    Var m0 = k.let(k.block_index() / blocks_n * tm, "m0");
    Var n0 = k.let(k.block_index() % blocks_n * cols + k.thread_index(), "n0");
    std::vector<Var> acc;
    for (int i = 0; i < tm * tn; ++i) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
    k.for_(0, K, [&](Expr kk) {
        std::vector<Var> as, bs;
        for (int i = 0; i < tm; ++i) as.push_back(k.let(a[(m0 + i) * K + kk], "a"));
        for (int j = 0; j < tn; ++j) bs.push_back(k.let(b[kk * N + n0 + j * block], "b"));
        for (int i = 0; i < tm; ++i)
            for (int j = 0; j < tn; ++j) acc[i * tn + j] = fma(as[i], bs[j], acc[i * tn + j]);
    });
    for (int i = 0; i < tm; ++i)
        for (int j = 0; j < tn; ++j) c[(m0 + i) * N + n0 + j * block] = acc[i * tn + j];
    return k.finish();
}

int64_t sgemm_grid(int64_t m, int64_t n, int tm, int tn, int block) {
    return (m / tm) * (n / (static_cast<int64_t>(tn) * block));
}

}  // namespace kiln::ops
