// The conformance suite's kernels, in the DSL.
#include "ops/test_kernels.hpp"
#include "base/ceil_div.hpp"

#include <fmt/format.h>

namespace kiln::ops {

ir::Kernel elementwise_mix(DType type, int block, int per_thread) {
    KernelBuilder k(fmt::format("mix_{}", name(type)), block);
    auto a = k.input("a", type);
    auto b = k.input("b", type);
    auto y = k.output("y", type);
    Expr stride = k.grid_size() * block;
    k.unroll(0, per_thread, [&](Expr u) {
        Var i = k.let(k.absolute_pos() + u * stride, "i");
        k.if_(i < y.len(), [&] {
            Expr x = a[i], z = b[i];
            if (is_float(type)) {
                y[i] = fma(x, z, x) / (z * z + 1) - min(x, z) + sqrt(abs(max(x, z)));
            } else if (type == DType::boolean) {
                y[i] = (x && !z) || ((x != z) & (x == z));
            } else {
                y[i] = ((((x * z + x) - x / z + x % z) ^ (x << (z & 7))) | (min(x, z) >> 3)) +
                       (max(x, z) - (-x));
            }
        });
    });
    return k.finish();
}

int64_t elementwise_grid(int64_t n, int block, int per_thread) {
    return ceil_div(n, static_cast<int64_t>(block) * per_thread);
}

ir::Kernel cast_kernel(DType from, DType to, int block) {
    KernelBuilder k(fmt::format("cast_{}_to_{}", name(from), name(to)), block);
    auto x = k.input("x", from);
    auto y = k.output("y", to);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = cast(to, x[i]); });
    return k.finish();
}

ir::Kernel row_fold(DType type, int64_t n, const Fold& fold, int block) {
    const ir::FoldSpec& s = fold.spec;
    KernelBuilder k(fmt::format("row_{}_{}", ir::name(s.op), name(type)), block);
    auto x = k.input("x", type);
    auto out = k.output("out", type);
    k.require(x.len() == out.len() * static_cast<int>(n), fmt::format("x holds rows of {}", n));
    Var group = k.let(k.absolute_pos() / s.threads, "group");
    // Clamp instead of branching: every thread of the block must reach the fold's barriers.
    Var row = k.let(min(group.expr(), max(out.len() - 1, 0)), "row");
    Var acc = k.fold(type, static_cast<int>(n), fold, [&](Expr i) -> Expr {
        Expr v = x[row * static_cast<int>(n) + i];
        return s.op == ir::FoldOp::sum ? v * v : v;
    });
    k.if_(group < out.len() && (k.thread_index() % s.threads) == 0, [&] { out[row] = acc; });
    return k.finish();
}

int64_t row_fold_grid(int64_t rows, const Fold& fold, int block) {
    return ceil_div(rows, block / fold.spec.threads);
}

ir::Kernel tiled_matmul(int64_t n, int64_t kdim, int tile) {
    KernelBuilder k("tiled_matmul", tile * tile);
    auto a = k.input("a", DType::f32);
    auto b = k.input("b", DType::f32);
    auto c = k.output("c", DType::f32);
    const int N = static_cast<int>(n), K = static_cast<int>(kdim);
    k.require(a.len() == (c.len() / N) * K && b.len() == K * N && c.len() % N == 0,
              fmt::format("a is M x {}, b is {} x {}, c is M x {}", K, K, N, N));
    auto as = k.shared(DType::f32, tile * tile, "a_tile");
    auto bs = k.shared(DType::f32, tile * tile, "b_tile");
    const int tiles_n = static_cast<int>(ceil_div(N, tile));
    Var m_rows = k.let(c.len() / N, "m");
    Var tx = k.let(k.thread_index() % tile, "tx");
    Var ty = k.let(k.thread_index() / tile, "ty");
    Var row = k.let((k.block_index() / tiles_n) * tile + ty, "row");
    Var col = k.let((k.block_index() % tiles_n) * tile + tx, "col");
    Var acc = k.let(DType::f32, 0.0f, "acc");
    k.for_(0, static_cast<int>(ceil_div(K, tile)), [&](Expr kt) {
        Var ka = k.let(kt * tile + tx, "ka");
        Var kb = k.let(kt * tile + ty, "kb");
        as[ty * tile + tx] =
            select(row < m_rows && ka < K,
                   a[min(row.expr(), m_rows - 1) * K + min(ka.expr(), K - 1)], 0.0f);
        bs[ty * tile + tx] =
            select(kb < K && col < N, b[min(kb.expr(), K - 1) * N + min(col.expr(), N - 1)], 0.0f);
        k.barrier();
        k.for_(0, tile, [&](Expr kk) {
            k.if_(kt * tile + kk < K,
                  [&] { acc = fma(as[ty * tile + kk], bs[kk * tile + tx], acc); });
        });
        k.barrier();
    });
    k.if_(row < m_rows && col < N, [&] { c[row * N + col] = acc; });
    return k.finish();
}

int64_t tiled_matmul_grid(int64_t m, int64_t n, int tile) {
    return ceil_div(m, tile) * ceil_div(n, tile);
}

double comptime_poly_coefficient(int i) {
    return 1.0 / (1.0 + i) * ((i % 2) ? -1.0 : 1.0);
}

ir::Kernel comptime_poly(int degree, int block, int rows_per_thread) {
    KernelBuilder k(fmt::format("poly{}", degree), block);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Var base = k.let(k.absolute_pos() * rows_per_thread, "base");
    k.unroll(0, rows_per_thread, [&](Expr r) {
        Var i = k.let(base + r, "i");
        k.if_(i < y.len(), [&] {
            Var v = k.let(x[i], "v");
            Var acc = k.let(constant(DType::f32, comptime_poly_coefficient(degree)), "acc");
            for (int c = degree - 1; c >= 0; --c)  // comptime: one fma per coefficient
                acc = fma(acc, v, constant(DType::f32, comptime_poly_coefficient(c)));
            y[i] = acc;
        });
    });
    return k.finish();
}

int64_t comptime_poly_grid(int64_t n, int block, int rows_per_thread) {
    return ceil_div(n, static_cast<int64_t>(block) * rows_per_thread);
}

ir::Kernel packed_bytes(int block) {
    KernelBuilder k("packed_bytes", block);
    auto a = k.input("a", DType::i32);
    auto b = k.input("b", DType::i32);
    auto c = k.input("c", DType::i32);
    auto y = k.output("y", DType::i32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Expr low_half = bitcast(DType::f16, bitcast(DType::u32, a[i]) & 0xffffu);
        y[i] = dp4a(a[i], b[i], c[i]) + cast(DType::i32, cast(DType::f32, low_half));
    });
    return k.finish();
}

ir::Kernel block_reverse(DType type, int block) {
    KernelBuilder k(fmt::format("block_reverse_{}", name(type)), block);
    auto x = k.input("x", type);
    auto y = k.output("y", type);
    auto tile = k.shared(type, block, "tile");
    Var i = k.let(k.absolute_pos(), "i");
    Var t = k.let(k.thread_index(), "t");
    k.if_(i < x.len(), [&] { tile[t] = x[i]; });
    k.barrier();
    // Element i takes the tile slot mirrored within the block's valid range.
    Var base = k.let(k.block_index() * block, "base");
    Var valid = k.let(min(x.len() - base, Expr(block)), "valid");
    k.if_(i < x.len(), [&] { y[i] = tile[valid - 1 - t]; });
    return k.finish();
}

}  // namespace kiln::ops
