// matmul (exact class): every schedule point, dtype, layout and ragged shape bit-identical to the
// oracle on every device; the op's order (one fma per term, k ascending) pinned by values that
// show any other order; batches, views and broadcasts; the tuner; bad inputs; CUDA C by NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "kiln/semantics.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/matmul.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/chunk_cases.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"
#include "support/float_values.hpp"
#include "support/op_checks.hpp"
#include "support/tuned_entry.hpp"

using namespace kiln;
using kiln::test::chunk_operands;
using kiln::test::ChunkCase;
using kiln::test::download;
using kiln::test::encode_floats;
using kiln::test::expect_chunk_sums;
using kiln::test::expect_compiles_for_cuda;
using kiln::test::expect_distinct_kernels;
using kiln::test::HostBuffer;
using kiln::test::identical;
using kiln::test::kChunkCases;
using kiln::test::random_values;
using kiln::test::upload;

namespace {

using Bytes = std::vector<uint8_t>;

// Input and output dtypes: each input dtype with an f32 output and with its own.
constexpr std::pair<DType, DType> kTypes[] = {{DType::f32, DType::f32},
                                              {DType::f16, DType::f32},
                                              {DType::bf16, DType::f32},
                                              {DType::f16, DType::f16},
                                              {DType::bf16, DType::bf16}};

// Elements a view of rows x cols per batch needs in its buffer.
size_t view_count(const ops::MatmulOperand& v, int64_t batch, int64_t rows, int64_t cols) {
    const int64_t ld = v.ld != 0 ? v.ld : (v.transposed ? rows : cols);
    return static_cast<size_t>(v.offset + (batch - 1) * v.batch_stride +
                               (v.transposed ? (cols - 1) * ld + rows : (rows - 1) * ld + cols));
}

// Ragged shapes (batch, m, n, k): nothing a multiple of any tile (up to 128 x 128, bk up to 16)
// but for the ones; m = 1, n = 1, k = 1; 131 x 133 overflows the largest tile in both directions,
// 37 terms are two whole steps of 16 (four of 8) and a short one, 517 terms three chunks of
// kiln/ops/contraction_order.hpp (the last of 5 terms, in a short step) and 2305 terms ten (the
// last of one term); 100 x 130 x 300 has a block of 96 x 128 inside C (a chunk-major point's 16
// row tiles) with two chunks, and one row tile below it.
constexpr ops::MatmulShape kShapes[] = {
    {1, 1, 1, 1},    {1, 1, 70, 5},   {1, 67, 1, 9},    {2, 37, 45, 1},     {1, 131, 133, 37},
    {3, 20, 19, 17}, {2, 9, 35, 517}, {1, 2, 33, 2305}, {1, 100, 130, 300},
};

using Points = std::vector<const ops::MatmulSchedule*>;

// Every third point from `part` on: each case's compile stays under half a minute on a CI core
// (the 8 x 8 thread tiles cost the most), and the three parts cover every point.
constexpr int kParts = 3;
Points every_point(int part) {
    Points points;
    const auto& all = ops::matmul_variants();
    for (size_t i = static_cast<size_t>(part); i < all.size(); i += kParts)
        points.push_back(&all[i]);
    return points;
}

// Points for the dtype and layout cases (each compile costs seconds on the CPU and PoCL): the
// direct form, a staged tile with an oblong thread tile, the direct form with spread columns and
// the CPU's register tile (6 rows: a block tile that is no power of two), its chunk-major form
// and the chunk-major form over column tiles with B's chunk copied. The same list in every case, so
// a case with the same types reuses the compiled unit from the disk cache.
Points some_points() {
    return {&ops::matmul_variant("d1x64"),
            &ops::matmul_variant("s128x64_k8_t8x4"),
            &ops::matmul_variant("d8x128_t8x4_s"),
            &ops::matmul_variant("d6x128_t6x4_s"),
            &ops::matmul_variant("d96x128_t6x4_s_kc"),
            &ops::matmul_variant("d96x64_t6x2_s_kc4")};
}

// The quick tier runs each dtype and layout case at one of some_points() (case i at point
// i % 6); the full tier (FullMatmul) runs each case at the other five.
constexpr size_t kSome = 6;
Points one_point(size_t i) {
    return {some_points()[i % kSome]};
}
Points other_points(size_t i) {
    Points points = some_points();
    points.erase(points.begin() + static_cast<std::ptrdiff_t>(i % kSome));
    return points;
}

// The points' kernels for the given types, compiled on every device one by one, as the entry
// point compiles them: each is its own disk cache entry, which other cases then find.
void compile_points(const ops::MatmulTypes& t, const Points& points) {
    for (Device* d : devices())
        for (const auto* s : points) compile(*d, ops::matmul_kernel(t, *s));
}

// Runs the points on every device for one case and compares C with the oracle.
void expect_points(const Points& points, DType input, DType out, const HostBuffer& a,
                   const ops::MatmulOperand& av, const HostBuffer& b, const ops::MatmulOperand& bv,
                   const ops::MatmulShape& s) {
    const HostBuffer want{out, oracle::matmul(input, out, a.bytes, av, b.bytes, bv, s)};
    for (Device* d : devices()) {
        const Buffer ab = upload(*d, a), bb = upload(*d, b);
        for (const auto* p : points) {
            SCOPED_TRACE(fmt::format("{} {} {}->{} a{} b{} batch={} m={} n={} k={}", d->info().id,
                                     p->name, name(input), name(out), av.transposed ? "t" : "n",
                                     bv.transposed ? "t" : "n", s.batch, s.m, s.n, s.k));
            const auto r = ops::matmul_bench(*d, ab, av, bb, bv, s, out, *p, 1);
            EXPECT_TRUE(identical(download(r.output), want));
        }
    }
}

// Dense operands of the kShapes, batched, through the points.
void expect_ragged_shapes(const Points& points, DType input, DType out, uint64_t seed) {
    compile_points({input, out, false, false}, points);
    for (const auto& s : kShapes) {
        const ops::MatmulOperand av{0, s.m * s.k, 0, false}, bv{0, s.k * s.n, 0, false};
        const HostBuffer a = random_values(input, static_cast<size_t>(s.batch * s.m * s.k), seed++);
        const HostBuffer b = random_values(input, static_cast<size_t>(s.batch * s.k * s.n), seed++);
        expect_points(points, input, out, a, av, b, bv, s);
    }
}

// Values whose result shows the op's order: one fma per term (the product is not rounded before
// the add) and terms added from p = 0 up (another order or a split of k gives another value),
// through the points (compiled already).
void expect_the_order(const Points& points) {
    const float e = 1.0f + std::ldexp(1.0f, -12);
    const float big = std::ldexp(1.0f, 24);
    // Row 0: -1 + e*e is exactly 2^-11 + 2^-24 with a fused product (2^-11 if rounded first).
    // Row 1: ((2^24 + 1) - 2^24) + 1 is 1 in order (2^24 + 1 rounds to 2^24), 2 from the end.
    // Row 2: in order 2^24 + 1 + 1 is 2^24; k split in halves of two terms gives 2^24 + 2.
    const std::vector<float> a{1.0f, e,    0.0f, 0.0f,  //
                               big,  1.0f, -big, 1.0f,  //
                               big,  0.0f, 1.0f, 1.0f};
    const std::vector<float> b{-1.0f, e, 0.0f, 0.0f};
    const std::vector<float> bones{1.0f, 1.0f, 1.0f, 1.0f};
    const ops::MatmulShape s{1, 3, 1, 4};
    const ops::MatmulOperand dense{};
    for (Device* d : devices()) {
        Buffer ab(*d, DType::f32, a.size()), bb(*d, DType::f32, 4), b1(*d, DType::f32, 4);
        ab.upload(a);
        bb.upload(b);
        b1.upload(bones);
        for (const auto* p : points) {
            SCOPED_TRACE(d->info().id + " " + p->name);
            const auto r0 = ops::matmul_bench(*d, ab, dense, bb, dense, s, DType::f32, *p, 1);
            const auto r1 = ops::matmul_bench(*d, ab, dense, b1, dense, s, DType::f32, *p, 1);
            EXPECT_EQ(r0.output.download<float>()[0],
                      std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
            const auto c1 = r1.output.download<float>();
            EXPECT_EQ(c1[1], 1.0f);
            EXPECT_EQ(c1[2], big);
        }
    }
}

// The sums of support/chunk_cases.hpp, through the points (compiled already).
void expect_the_chunks(const Points& points) {
    for (const ChunkCase& c : kChunkCases) {
        const auto [a, b] = chunk_operands(c.k);
        const ops::MatmulShape s{1, 2, 1, c.k};
        for (Device* d : devices()) {
            Buffer ab(*d, DType::f32, a.size()), bb(*d, DType::f32, b.size());
            ab.upload(a);
            bb.upload(b);
            for (const auto* p : points) {
                SCOPED_TRACE(fmt::format("{} {} k={}", d->info().id, p->name, c.k));
                const auto r = ops::matmul_bench(*d, ab, {}, bb, {}, s, DType::f32, *p, 1);
                const auto got = r.output.download<float>();
                expect_chunk_sums(c, got[0], got[1]);
            }
        }
    }
}

TEST(Matmul, TheOracleAddsTheChunksOfKInOrder) {
    for (const ChunkCase& c : kChunkCases) {
        SCOPED_TRACE(c.k);
        const auto [a, b] = chunk_operands(c.k);
        expect_chunk_sums(
            c, oracle::matmul(DType::f32, DType::f32, encode_floats(DType::f32, a).bytes, {},
                              encode_floats(DType::f32, b).bytes, {}, {1, 2, 1, c.k}));
    }
}

TEST(Matmul, PointsOfPart0MatchTheOracleAndTheOrderOnEveryDevice) {
    expect_ragged_shapes(every_point(0), DType::f32, DType::f32, 1);
    expect_the_order(every_point(0));
    expect_the_chunks(every_point(0));
}

TEST(Matmul, PointsOfPart1MatchTheOracleAndTheOrderOnEveryDevice) {
    expect_ragged_shapes(every_point(1), DType::f32, DType::f32, 1);
    expect_the_order(every_point(1));
    expect_the_chunks(every_point(1));
}

TEST(Matmul, PointsOfPart2MatchTheOracleAndTheOrderOnEveryDevice) {
    expect_ragged_shapes(every_point(2), DType::f32, DType::f32, 1);
    expect_the_order(every_point(2));
    expect_the_chunks(every_point(2));
}

// Inputs of `input` (f16 or bf16) to an f32 output and to their own dtype.
void expect_half_inputs(const Points& points, DType input, uint64_t seed) {
    for (const auto& [in, out] : kTypes)
        if (in == input) expect_ragged_shapes(points, in, out, seed += 100);
}

TEST(Matmul, F16InputsToF32OrF16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(one_point(0), DType::f16, 50);
}

TEST(FullMatmul, F16InputsToF32OrF16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(other_points(0), DType::f16, 50);
}

TEST(Matmul, Bf16InputsToF32OrBf16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(one_point(1), DType::bf16, 500);
}

TEST(FullMatmul, Bf16InputsToF32OrBf16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(other_points(1), DType::bf16, 500);
}

// Transposed operands, offsets and padded leading dimensions (views of larger buffers, as a
// slice or a transpose of a tensor would give): A transposed or not, B both ways.
void expect_views(const Points& points, bool at, uint64_t seed) {
    for (bool bt : {false, true}) {
        compile_points({DType::f32, DType::f32, at, bt}, points);
        for (const ops::MatmulShape& s :
             {ops::MatmulShape{1, 67, 1, 9}, ops::MatmulShape{1, 131, 133, 37},
              ops::MatmulShape{2, 20, 19, 17}}) {
            // ld padded by 3, offsets 5 and 2, batches 7 elements further apart than needed.
            ops::MatmulOperand av{5, 0, (at ? s.m : s.k) + 3, at};
            ops::MatmulOperand bv{2, 0, (bt ? s.k : s.n) + 3, bt};
            av.batch_stride = static_cast<int64_t>(view_count(av, 1, s.m, s.k)) + 7;
            bv.batch_stride = static_cast<int64_t>(view_count(bv, 1, s.k, s.n)) + 7;
            const HostBuffer a =
                random_values(DType::f32, view_count(av, s.batch, s.m, s.k), seed++);
            const HostBuffer b =
                random_values(DType::f32, view_count(bv, s.batch, s.k, s.n), seed++);
            expect_points(points, DType::f32, DType::f32, a, av, b, bv, s);
        }
    }
}

TEST(Matmul, StridedViewsOfAAndTransposedOrStridedBMatchTheOracleOnEveryDevice) {
    expect_views(one_point(2), false, 1000);
}

TEST(FullMatmul, StridedViewsOfAAndTransposedOrStridedBMatchTheOracleOnEveryDevice) {
    expect_views(other_points(2), false, 1000);
}

TEST(Matmul, TransposedAWithBothBLayoutsMatchesTheOracleOnEveryDevice) {
    expect_views(one_point(3), true, 2000);
}

TEST(FullMatmul, TransposedAWithBothBLayoutsMatchesTheOracleOnEveryDevice) {
    expect_views(other_points(3), true, 2000);
}

TEST(Matmul, ColumnTilesCopyBInEveryLayoutOfBothOperands) {
    // The copy of B's chunk steps its column tiles along B's rows or, transposed, its columns;
    // 131 x 133 has a block inside C's columns and one at its edge (a column tile partly past n,
    // two wholly past).
    const Points kc4{&ops::matmul_variant("d96x64_t6x2_s_kc4")};
    expect_views(kc4, false, 3000);
    expect_views(kc4, true, 4000);
}

// On the CPU, B's rows 1 KiB apart with a large k are read from a copy with longer rows
// (ops::pads_b_rows): an offset and batches further apart than needed, copied row by row, give the
// oracle's bits at every device's point.
void expect_padded_rows(const Points& points) {
    const ops::MatmulShape s{2, 256, 256, 1024};
    ASSERT_TRUE(ops::pads_b_rows(cpu_device(), s.n, 4, s.m, s.k, false));
    compile_points({DType::f32, DType::f32, false, false}, points);
    const ops::MatmulOperand av{0, s.m * s.k, 0, false};
    const ops::MatmulOperand bv{3, s.k * s.n + 5, 0, false};
    const HostBuffer a = random_values(DType::f32, view_count(av, s.batch, s.m, s.k), 11);
    const HostBuffer b = random_values(DType::f32, view_count(bv, s.batch, s.k, s.n), 12);
    expect_points(points, DType::f32, DType::f32, a, av, b, bv, s);
}

TEST(Matmul, BRowsOneKiBApartMatchTheOracleThroughTheCpusPaddedCopy) {
    expect_padded_rows(
        {&ops::matmul_variant("d6x128_t6x4_s"), &ops::matmul_variant("d96x128_t6x4_s_kc")});
}

// Batches: B shared by every batch (batch stride 0), products underflowing to subnormals and
// signed zeros (B scaled by 2^-140), in f32 and in bf16 with a bf16 output.
void expect_shared_operand_batches(const Points& points) {
    const ops::MatmulShape s{4, 29, 66, 19};
    for (DType input : {DType::f32, DType::bf16}) {
        compile_points({input, input, false, true}, points);
        const ops::MatmulOperand av{0, s.m * s.k, 0, false}, bv{0, 0, 0, true};
        const HostBuffer a = random_values(input, static_cast<size_t>(s.batch * s.m * s.k), 7);
        const HostBuffer b =
            random_values(input, static_cast<size_t>(s.k * s.n), 8, std::ldexp(1.0f, -140));
        expect_points(points, input, input, a, av, b, bv, s);
    }
}

TEST(Matmul, BatchesWithASharedOperandAndTinyProductsMatchTheOracle) {
    expect_shared_operand_batches(one_point(4));
}

TEST(FullMatmul, BatchesWithASharedOperandAndTinyProductsMatchTheOracle) {
    expect_shared_operand_batches(other_points(4));
}

TEST(Matmul, OracleAgreesWithADoubleDot) {
    const ops::MatmulShape s{2, 9, 11, 300};
    const HostBuffer a = random_values(DType::f32, static_cast<size_t>(s.batch * s.m * s.k), 3);
    const HostBuffer b = random_values(DType::f32, static_cast<size_t>(s.batch * s.k * s.n), 4);
    const ops::MatmulOperand av{0, s.m * s.k, 0, false}, bv{0, s.k * s.n, 0, false};
    const Bytes c = oracle::matmul(DType::f32, DType::f32, a.bytes, av, b.bytes, bv, s);
    auto f = [](const Bytes& bytes, int64_t i) {
        float v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        return static_cast<double>(v);
    };
    for (int64_t bt = 0; bt < s.batch; ++bt)
        for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
                double dot = 0, mag = 0;
                for (int64_t p = 0; p < s.k; ++p) {
                    const double t =
                        f(a.bytes, (bt * s.m + i) * s.k + p) * f(b.bytes, (bt * s.k + p) * s.n + j);
                    dot += t;
                    mag += std::fabs(t);
                }
                EXPECT_NEAR(f(c, (bt * s.m + i) * s.n + j), dot, s.k * 0x1p-24 * mag);
            }
}

// The dense entry on the CPU for 2 batches of m x k times one shared k x n: it races every point
// that applies (`variants` of them) once, then hits.
void expect_dense_entry_tunes_once(int64_t m, int64_t n, int64_t k, size_t variants) {
    Device& cpu = cpu_device();
    const HostBuffer a = random_values(DType::f32, static_cast<size_t>(2 * m * k), 11);
    const HostBuffer b = random_values(DType::f32, static_cast<size_t>(k * n), 12);
    const Buffer ab = upload(cpu, a), bb = upload(cpu, b);
    const ops::MatmulShape s{2, m, n, k};
    const HostBuffer want{DType::f32, oracle::matmul(DType::f32, DType::f32, a.bytes,
                                                     {0, m * k, 0, false}, b.bytes, {}, s)};
    const ops::DenseMatrix da{ab, 2, m, k}, db{bb, 1, k, n};
    test::expect_tunes_once_then_hits(
        "matmul", cpu,
        [&](Tuner& tuner) {
            return download(ops::matmul(cpu, da, db, DType::f32, ops::MatmulClass::exact, tuner));
        },
        want, variants, fmt::format("batch=2,m={},n={},k={},in=f32,out=f32,layout=nn", m, n, k),
        [](const std::string& winner) { EXPECT_NO_THROW(ops::matmul_variant(winner)); });
}

TEST(Matmul, DenseEntryTunesOnceThenHitsAndMatchesTheOracle) {
    // k = 6 is one chunk: the split points are left out of the race (they could only add a pass).
    const auto& all = ops::matmul_variants();
    const auto split =
        std::count_if(all.begin(), all.end(), [](const auto& p) { return p.split_k; });
    ASSERT_GT(split, 0);
    expect_dense_entry_tunes_once(13, 10, 6, all.size() - static_cast<size_t>(split));
}

TEST(Matmul, DenseEntryRacesTheSplitPointsWhereKHasTwoChunksOrMore) {
    expect_dense_entry_tunes_once(3, 5, 300, ops::matmul_variants().size());
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    test::expect_error_naming("matmul", f, needles);
}

TEST(Matmul, ASplitPointWhoseScratchWouldPass256MiBIsAnError) {
    // 8192 x 8192 outputs of two chunks: 512 MiB of chunk sums (the operands are 10 MB each).
    Device& cpu = cpu_device();
    const ops::MatmulShape s{1, 8192, 8192, 300};
    Buffer a(cpu, DType::f32, static_cast<size_t>(s.m * s.k)),
        b(cpu, DType::f32, static_cast<size_t>(s.k * s.n));
    const auto& split = ops::matmul_variant("s8x32_k64_t1x1_p_sk");
    EXPECT_FALSE(ops::matmul_point_applies(split, s));
    EXPECT_TRUE(ops::matmul_point_applies(ops::matmul_variant("s8x32_k64_t1x1_p"), s));
    expect_error([&] { ops::matmul_bench(cpu, a, {}, b, {}, s, DType::f32, split, 1); },
                 {"split point s8x32_k64_t1x1_p_sk", "m=8192", "k=300", "at most 256 MiB"});
}

TEST(Matmul, BadInputsAreErrorsNamingTheOpAndShapes) {
    Device& cpu = cpu_device();
    Buffer a(cpu, DType::f32, 15), b(cpu, DType::f32, 28), h(cpu, DType::f16, 28),
        i(cpu, DType::i32, 15);
    Buffer b55(cpu, DType::f32, 25);
    const ops::DenseMatrix a35{a, 1, 3, 5}, b47{b, 1, 4, 7};
    expect_error([&] { ops::matmul(cpu, a35, b47); }, {"inner dimensions differ", "m x k = 3 x 5",
                                                       "k x n = 4 x 7", "expected b's k = 5"});
    expect_error(
        [&] {
            ops::matmul(cpu, ops::DenseMatrix{a, 1, 5, 3, true}, b47);
        },
        {"inner dimensions differ", "m x k = 3 x 5"});
    expect_error(
        [&] {
            ops::matmul(cpu, a35, ops::DenseMatrix{h, 1, 5, 5});
        },
        {"b has 28 elements", "1 x 5 x 5"});
    expect_error(
        [&] {
            ops::matmul(cpu, ops::DenseMatrix{a, 1, 3, 0}, b47);
        },
        {"1 x 3 x 0", "expected every size >= 1"});
    expect_error(
        [&] {
            ops::matmul(cpu, ops::DenseMatrix{i, 1, 3, 5}, ops::DenseMatrix{b55, 1, 5, 5});
        },
        {"a is i32", "expected f32, f16 or bf16"});
    Buffer h55(cpu, DType::f16, 25);
    expect_error(
        [&] {
            ops::matmul(cpu, a35, ops::DenseMatrix{h55, 1, 5, 5});
        },
        {"b is f16 but a is f32"});
    expect_error(
        [&] {
            ops::matmul(cpu, a35, ops::DenseMatrix{b55, 1, 5, 5}, DType::bf16);
        },
        {"output dtype bf16 for f32 inputs"});
    Buffer a2(cpu, DType::f32, 30), b3(cpu, DType::f32, 75);
    expect_error(
        [&] {
            ops::matmul(cpu, ops::DenseMatrix{a2, 2, 3, 5}, ops::DenseMatrix{b3, 3, 5, 5});
        },
        {"a has 2 batches and b 3"});
    expect_error(
        [&] {
            ops::matmul(cpu, ops::DenseMatrix{a, 1 << 20, 1 << 20, 1 << 20}, b47);
        },
        {"a has 15 elements", "1048576 x 1048576 x 1048576"});
    expect_error(
        [&] {
            ops::matmul(cpu, a, {}, b55, {}, {1, 3, 5, int64_t{1} << 31});
        },
        {"k=2147483648", "k and batch*m*n at most 2147483647"});
    expect_error(
        [&] {
            ops::matmul(cpu, a, {}, b55, {}, {1 << 16, 1 << 16, 5, 5});
        },
        {"batch=65536 m=65536"});
    const ops::MatmulShape zero{1, 3, 0, 5};
    expect_error([&] { ops::matmul(cpu, a, {}, b55, {}, zero); }, {"m=3 n=0 k=5", ">= 1"});
    const ops::MatmulShape s{1, 3, 5, 5};
    expect_error(
        [&] {
            ops::matmul(cpu, a, {}, b55, {1, 0, 0, false}, s);
        },
        {"b view of 1 x 5 x 5", "offset 1", "reaches element 25", "25 elements"});
    expect_error(
        [&] {
            ops::matmul(cpu, a, {0, 0, 6, false}, b55, {}, s);
        },
        {"a view of 1 x 3 x 5", "ld 6", "reaches element 16"});
    expect_error(
        [&] {
            ops::matmul(cpu, a, {-1, 0, 0, false}, b55, {}, s);
        },
        {"a view has offset -1"});
    ops::MatmulSchedule bad = ops::matmul_variant("s64x64_k8_t4x4");
    bad.tm = 3;
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"thread tile 3x4"});
    bad = ops::matmul_variant("d6x128_t6x4_s");  // 6 rows only in a block of one row of threads
    bad.bm = 12;
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"thread tile 6x4"});
    bad = ops::matmul_variant("d96x128_t6x4_s_kc");
    bad.bm = 6 * 17;  // 17 row tiles: totals past 48 KiB
    expect_error([&] { ops::matmul_kernel({}, bad); },
                 {"chunk-major totals of 102 x 128 f32 (52224 bytes); expected at most 49152"});
    {
        ops::MatmulSchedule tiled = ops::matmul_variant("d96x64_t6x2_s_kc4");
        tiled.bm = 6 * 32;  // 24 KiB more totals beside B's 16 KiB tile
        expect_error([&] { ops::matmul_kernel({}, tiled); },
                     {"totals of 192 x 64 f32 and B's tile of 256 x 16 (65536 bytes)"});
        tiled = ops::matmul_variant("d96x64_t6x2_s_kc4");
        tiled.column_tiles = 3;
        expect_error([&] { ops::matmul_kernel({}, tiled); },
                     {"3 column tiles", "expected a chunk-major point whose bn is a multiple"});
        tiled = ops::matmul_variant("d6x128_t6x4_s");
        tiled.column_tiles = 2;
        expect_error([&] { ops::matmul_kernel({}, tiled); }, {"2 column tiles"});
    }
    bad.bm = 100;
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"expected a multiple of the tile's rows"});
    bad.bm = 6;  // one tile: the direct point itself
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"2 tiles or more"});
    bad = ops::matmul_variant("s64x64_k8_t4x4");
    bad.chunk_major = true;
    expect_error([&] { ops::matmul_kernel({}, bad); },
                 {"chunk-major row tiles; expected a direct point with spread columns"});
    bad = ops::matmul_variant("s64x64_k8_t4x4");
    bad.bk = 12;
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"bk 12"});
    bad = ops::matmul_variant("s64x64_k8_t4x4");
    bad.spread = true;
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"spread columns with shared tiles"});
    bad = ops::matmul_variant("s128x128_k8_t8x8_p_m_b2");
    bad.min_blocks = 9;  // 9 x 256 threads: more than an SM holds
    expect_error([&] { ops::matmul_kernel({}, bad); }, {"min_blocks 9 of 256 threads"});
    bad = ops::matmul_variant("tc64x64_k32_w32x32");
    bad.totals_in_memory = true;
    expect_error([&] { ops::matmul_kernel({DType::f16}, bad); },
                 {"totals in memory or min_blocks on tensor cores"});
    expect_error([&] { ops::matmul_variant("s7x7"); }, {"no schedule named 's7x7'"});
    // The kernel's own launch contract, for callers that launch it directly (a planner).
    const auto compiled = compile(cpu, ops::matmul_kernel({}, ops::matmul_variants()[0]));
    Buffer c(cpu, DType::f32, 14);
    std::vector<Arg> args{a, b55, c};
    for (const Arg& x : ops::matmul_scalars(s, {}, {}, {})) args.push_back(x);
    expect_error([&] { compiled->launch(1, args); }, {"c's view (m x n per batch) lies inside c"});
}

TEST(Matmul, PointsAreDistinctKernels) {
    expect_distinct_kernels(
        ops::matmul_all_variants(), [](const auto& s) { return s.name; },
        [](const auto& s) {
            return ops::matmul_kernel({DType::f16, DType::f32, false, false}, s);
        });
}

// As CUDA C, compiled by NVRTC for sm_90 (no GPU needed): every point (f32, no transposes), and
// every dtype pair and layout on a direct and the largest staged point (the ways the source
// differs by types and layout are the same at every point).
TEST(Matmul, EveryPointDtypeAndLayoutCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& s : ops::matmul_variants()) kernels.push_back(ops::matmul_kernel({}, s));
    for (const auto& [input, out] : kTypes)
        for (bool at : {false, true})
            for (bool bt : {false, true})
                for (const char* point : {"d8x32", "s128x128_k8_t8x8_m_b2"})
                    kernels.push_back(
                        ops::matmul_kernel({input, out, at, bt}, ops::matmul_variant(point)));
    expect_compiles_for_cuda(kernels);
}

// On CUDA the staged points read their thread's run of each tile in 16-byte loads, with no
// run-time alignment test (the tiles are declared 16-byte aligned, the runs start at multiples
// of 4 elements).
TEST(Matmul, CudaReadsTileRunsInAlignedFloat4s) {
    const std::string source = generate_source(
        Backend::cuda, std::vector{ops::matmul_kernel({}, ops::matmul_variant("s64x64_k8_t4x4"))});
    const std::string kernel = source.substr(source.find("__global__"));
    EXPECT_NE(kernel.find("__shared__ __align__(16) float"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("& 15ull"), std::string::npos) << kernel;
    size_t wide = 0;
    for (size_t at = kernel.find("*(const float4*)"); at != std::string::npos;
         at = kernel.find("*(const float4*)", at + 1))
        ++wide;
    // A run of 4 of A and one of B for each of the 8 unrolled terms, and in the short last step.
    EXPECT_EQ(wide, 18u) << kernel;
}

}  // namespace
