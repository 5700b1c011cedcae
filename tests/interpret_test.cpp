// kiln::interpret: the IR interpreter gives the oracle's bits for every test kernel and both
// shipped ops (every variant), and the devices give the interpreter's; lowered kernels (warp
// shuffles, exchange tiles) interpret as their source does; out-of-range accesses and bad
// arguments are errors naming what was wrong.
#include <gtest/gtest.h>

#include <random>

#include "ir/lower_folds.hpp"
#include "kiln/interpret.hpp"
#include "kiln/math.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "ops/test_kernels.hpp"
#include "oracle/matvec_q8.hpp"
#include "oracle/rms_norm.hpp"
#include "oracle/test_kernels.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using kiln::test::HostBuffer;

namespace {

// Finite floats in [-3, 3) (or near 1 for products), random integers, for `type`.
HostBuffer values(DType type, size_t n, uint32_t seed, bool near_one = false) {
    if (!is_float(type)) return test::random_buffer(type, n, seed);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(near_one ? 0.97f : -3.0f, near_one ? 1.03f : 3.0f);
    std::vector<float> f(n);
    for (auto& v : f) v = dist(rng);
    if (type == DType::f32) return HostBuffer::of(f);
    HostBuffer b{type, test::Bytes(n * 2)};
    for (size_t i = 0; i < n; ++i) {
        const uint16_t h =
            type == DType::f16 ? semantics::f32_to_f16(f[i]) : semantics::f32_to_bf16(f[i]);
        std::memcpy(&b.bytes[i * 2], &h, 2);
    }
    return b;
}

TEST(Interpret, ElementwiseMixInEveryDtype) {
    const size_t n = 1001;
    for (DType t : all_dtypes) {
        SCOPED_TRACE(std::string(name(t)));
        const auto a = test::random_buffer(t, n, 1), b = test::random_buffer(t, n, 2);
        HostBuffer want = test::poisoned(t, n);
        oracle::elementwise_mix(t, a.bytes, b.bytes, want.bytes);
        const ir::Kernel k = ops::elementwise_mix(t, 64, 3);
        const int64_t grid = ops::elementwise_grid(n, 64, 3);
        const auto got = interpret(k, grid, {a, b, test::poisoned(t, n)});
        EXPECT_TRUE(test::identical(got[2], want));
        if (t == DType::f16 || t == DType::i8 || t == DType::boolean)
            test::expect_everywhere(k, grid, {a, b, test::poisoned(t, n)}, 2, got[2]);
    }
}

TEST(Interpret, CastsBetweenEveryPairOfDtypes) {
    const size_t n = 300;
    for (DType from : all_dtypes)
        for (DType to : all_dtypes) {
            SCOPED_TRACE(fmt::format("{} -> {}", name(from), name(to)));
            const auto x = test::random_buffer(from, n, 7);
            HostBuffer want = test::poisoned(to, n);
            oracle::cast(from, to, x.bytes, want.bytes);
            const auto got = interpret(ops::cast_kernel(from, to, 64), (n + 63) / 64,
                                       {x, test::poisoned(to, n)});
            EXPECT_TRUE(test::identical(got[1], want));
        }
}

struct FoldCase {
    DType type;
    Fold fold;
    int block;
};

// Every fold schedule: the interpreter's canonical order is the oracle's, lower_folds' loops,
// trees, shuffles and exchange tiles interpret to the same bits, and the devices agree.
TEST(Interpret, CanonicalFoldsAndTheirLowering) {
    const std::vector<FoldCase> cases = {
        {DType::f32, Fold::sum().lanes(32).chunk(4).threads(1), 64},
        {DType::f32, Fold::sum().lanes(32).chunk(4).threads(32), 128},
        {DType::f32, Fold::sum().lanes(256).chunk(1).threads(256), 256},
        {DType::f32, Fold::max().lanes(32).chunk(4).threads(8), 64},
        {DType::f32, Fold::prod().lanes(16).chunk(2).threads(4), 64},
        {DType::bf16, Fold::sum().lanes(32).chunk(2).threads(2).unroll(2), 64},
        {DType::i32, Fold::sum().lanes(64).chunk(1).threads(64), 128},
        {DType::u8, Fold::min().lanes(4).chunk(4).threads(4), 16},
    };
    const int64_t rows = 5;
    for (const FoldCase& c : cases) {
        for (int64_t n : {1, 100, 1000}) {
            const ir::FoldSpec& s = c.fold.spec;
            SCOPED_TRACE(fmt::format("{} {} lanes {} threads {} n {}", name(c.type), ir::name(s.op),
                                     s.lanes, s.threads, n));
            const auto x =
                values(c.type, static_cast<size_t>(rows * n), 3, s.op == ir::FoldOp::prod);
            HostBuffer want = test::poisoned(c.type, rows);
            oracle::row_fold(c.type, n, s, x.bytes, want.bytes);
            const ir::Kernel k = ops::row_fold(c.type, n, c.fold, c.block);
            const int64_t grid = ops::row_fold_grid(rows, c.fold, c.block);
            const std::vector<HostBuffer> args = {x, test::poisoned(c.type, rows)};
            EXPECT_TRUE(test::identical(interpret(k, grid, args)[1], want));
            for (int warp : {1, 32})
                EXPECT_TRUE(
                    test::identical(interpret(ir::lower_folds(k, warp), grid, args)[1], want))
                    << "lowered for warp size " << warp;
            // The devices for the newest kinds: products, and an unrolled bf16 fold.
            if (n == 1000 && (s.op == ir::FoldOp::prod || s.unroll > 1))
                test::expect_everywhere(k, grid, args, 1, want);
        }
    }
}

TEST(Interpret, SharedTilesAndBarriers) {
    const int64_t m = 33, n = 17, kdim = 29;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(m * kdim), b(kdim * n), c(m * n);
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    oracle::matmul(m, n, kdim, a, b, c);
    const auto got =
        interpret(ops::tiled_matmul(n, kdim, 8), ops::tiled_matmul_grid(m, n, 8),
                  {HostBuffer::of(a), HostBuffer::of(b), test::poisoned(DType::f32, c.size())});
    EXPECT_TRUE(test::identical(got[2], HostBuffer::of(c)));

    for (DType t : {DType::f32, DType::i8}) {
        const auto x = test::random_buffer(t, 1000, 9);
        HostBuffer want = test::poisoned(t, 1000);
        oracle::block_reverse(t, 64, x.bytes, want.bytes);
        const ir::Kernel k = ops::block_reverse(t, 64);
        const auto out = interpret(k, 16, {x, test::poisoned(t, 1000)});
        EXPECT_TRUE(test::identical(out[1], want));
        test::expect_everywhere(k, 16, {x, test::poisoned(t, 1000)}, 1, out[1]);
    }
}

TEST(Interpret, ComptimeUnrollingAndPackedBytes) {
    const size_t n = 1001;
    std::vector<float> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) / 250.0f - 2.0f;
    oracle::comptime_poly(7, x, y);
    const auto got = interpret(ops::comptime_poly(7, 64, 3), ops::comptime_poly_grid(n, 64, 3),
                               {HostBuffer::of(x), test::poisoned(DType::f32, n)});
    EXPECT_TRUE(test::identical(got[1], HostBuffer::of(y)));

    const auto a = test::random_buffer(DType::i32, n, 21),
               b = test::random_buffer(DType::i32, n, 22),
               c = test::random_buffer(DType::i32, n, 23);
    const std::vector<HostBuffer> args = {a, b, c, test::poisoned(DType::i32, n)};
    const auto packed = interpret(ops::packed_bytes(64), (n + 63) / 64, args);
    test::expect_everywhere(ops::packed_bytes(64), (n + 63) / 64, args, 3, packed[3]);
}

TEST(Interpret, RmsNormEveryVariantGivesTheOraclesBits) {
    const int64_t rows = 3, n = 300;
    const float eps = 1e-5f;
    for (DType t : {DType::f32, DType::bf16}) {
        const auto x = values(t, rows * n, 1), w = values(t, n, 2);
        HostBuffer want = test::poisoned(t, rows * n);
        oracle::rms_norm(t, n, eps, x.bytes, w.bytes, want.bytes);
        const std::vector<HostBuffer> args = {x, w, test::poisoned(t, rows * n)};
        for (const ops::RmsNormSchedule& s : ops::rms_norm_variants()) {
            SCOPED_TRACE(s.name + " " + std::string(name(t)));
            const ir::Kernel k = ops::rms_norm_kernel(t, n, s);
            const auto got = interpret(k, ops::rms_norm_grid(rows, s), args, {eps});
            EXPECT_TRUE(test::identical(got[2], want));
        }
    }
    // The devices against the interpreter, for one variant of each kind.
    const auto x = values(DType::f32, rows * n, 1), w = values(DType::f32, n, 2);
    for (const char* v : {"b64_r1", "warp_b128_u2", "block_b256_rw", "vec4_b64_w"}) {
        const ops::RmsNormSchedule& s = ops::rms_norm_variant(v);
        const ir::Kernel k = ops::rms_norm_kernel(DType::f32, n, s);
        const std::vector<HostBuffer> args = {x, w, test::poisoned(DType::f32, rows * n)};
        test::expect_everywhere(k, ops::rms_norm_grid(rows, s), args, 2,
                                interpret(k, ops::rms_norm_grid(rows, s), args, {eps})[2], {eps});
    }
}

TEST(Interpret, MatvecQ8EveryVariantGivesTheOraclesBits) {
    const int64_t rows = 9, k = 128;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-2, 2);
    std::vector<float> wf(rows * k), xf(k);
    for (auto& v : wf) v = dist(rng);
    for (auto& v : xf) v = dist(rng);
    const std::vector<uint8_t> wq = ops::quantize_q8_0(wf), xq = ops::quantize_q8_0(xf);
    const HostBuffer want = HostBuffer::of(oracle::matvec_q8(wq, xq, rows, k));
    size_t on_devices = 0;
    for (const ops::MatvecVariant& v : ops::matvec_q8_variants()) {
        if (!ops::matvec_q8_serves(v.schedule, k)) continue;
        SCOPED_TRACE(v.name);
        const DType word = ops::matvec_q8_word_type(v.schedule);
        const std::vector<HostBuffer> args = {
            {word, wq}, {word, xq}, test::poisoned(DType::f32, rows)};
        const ir::Kernel kernel = ops::matvec_q8_kernel(v.schedule);
        const int64_t grid = ops::matvec_q8_grid(rows, v.schedule, 4);
        const auto got = interpret(kernel, grid, args);
        EXPECT_TRUE(test::identical(got[2], want));
        if (on_devices++ < 2) test::expect_everywhere(kernel, grid, args, 2, got[2]);
    }
}

// A kernel of kiln's math functions: the interpreter and every device agree.
TEST(Interpret, MathFunctionsAsTheDevicesComputeThem) {
    KernelBuilder k("interpret_math", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Expr v = x[i];
        y[i] = sin(v) + pow(abs(v), cos(v)) * rsqrt(abs(v) + 1.0f) + erf(v) - round(v);
    });
    const ir::Kernel kernel = k.finish();
    const auto in = test::random_buffer(DType::f32, 4000, 17);
    const std::vector<HostBuffer> args = {in, test::poisoned(DType::f32, 4000)};
    test::expect_everywhere(kernel, 63, args, 1, interpret(kernel, 63, args)[1]);
}

ir::Kernel gather(bool guarded) {
    KernelBuilder k(guarded ? "guarded_gather" : "gather", 64);
    auto x = k.input("x", DType::f32);
    auto idx = k.input("idx", DType::i32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Expr j = idx[i];
        y[i] = guarded ? select(j < x.len(), x[j], 0.0f) : x[j];
    });
    return k.finish();
}

TEST(Interpret, OutOfRangeAccessesAreErrorsUnlessUnused) {
    const HostBuffer x = HostBuffer::of(std::vector<float>{1, 2, 3});
    const HostBuffer idx = HostBuffer::of(std::vector<int32_t>{2, 0, 7});
    const std::vector<HostBuffer> args = {x, idx, test::poisoned(DType::f32, 3)};
    // A select that does not take the load forgives it, as C's ?: never evaluates it.
    const auto out = interpret(gather(true), 1, args);
    EXPECT_EQ(out[2].values<float>(), (std::vector<float>{3, 1, 0}));
    const std::string load = test::error_of([&] { interpret(gather(false), 1, args); });
    EXPECT_NE(load.find("kernel gather: block 0 thread 2 loads from global memory 'x' at index 7, "
                        "outside its 3 elements"),
              std::string::npos)
        << load;

    KernelBuilder k("overrun", 64);
    auto y = k.output("y", DType::f32);
    auto tile = k.shared(DType::f32, 64, "tile");
    tile[k.thread_index()] = 1.0f;
    k.barrier();
    y[k.absolute_pos()] = tile[k.thread_index()];
    const std::string store =
        test::error_of([&] { interpret(k.finish(), 2, {test::poisoned(DType::f32, 100)}); });
    EXPECT_NE(store.find("kernel overrun: block 1 thread 36 stores to global memory 'y' at index "
                         "100, outside its 100 elements"),
              std::string::npos)
        << store;
}

TEST(Interpret, ArgumentsAreCheckedAsALaunchChecksThem) {
    const ir::Kernel k = ops::row_fold(DType::f32, 10, Fold::sum(), 64);
    const HostBuffer x = test::poisoned(DType::f32, 30), out = test::poisoned(DType::f32, 3);
    auto error = [&](const std::vector<HostBuffer>& buffers, const std::vector<Arg>& scalars) {
        return test::error_of([&] { interpret(k, 1, buffers, scalars); });
    };
    EXPECT_NE(error({x}, {}).find("buffer 'out' is parameter 1, but 1 buffers were given"),
              std::string::npos);
    EXPECT_NE(error({x, test::poisoned(DType::i32, 3)}, {}).find("buffer 'out' must hold f32"),
              std::string::npos);
    EXPECT_NE(error({x, out}, {1.0f}).find("takes 2 buffers and 0 scalars; got 2 and 1"),
              std::string::npos);
    EXPECT_NE(error({x, test::poisoned(DType::f32, 4)}, {}).find("x holds rows of 10"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  interpret(k, -1, {x, out});
              }).find("grid of -1 blocks"),
              std::string::npos);
}

}  // namespace
