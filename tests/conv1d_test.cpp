// conv1d (exact class): every schedule point, dtype and ragged shape (stride, padding, dilation,
// groups, depthwise, kernel 1, one output) bit-identical to the oracle on every device; the op's
// order (one fma per term, channels then taps, taps in the padding skipped) pinned by values that
// show any other; strided and broadcast views of x; the tuner; bad inputs; CUDA C by NVRTC.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "oracle/conv1d.hpp"
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
using Shape = ops::Conv1dShape;
using Points = std::vector<const ops::Conv1dSchedule*>;

// Ragged shapes: {batch, in_channels, length, out_channels, kernel, {stride, padding, dilation,
// groups}}. Nothing is a multiple of any tile but for the ones.
const Shape kShapes[] = {
    // Every size 1: one output, one term.
    {1, 1, 1, 1, 1, {}},
    // Three blocks along the length at bn = 128 (padding at the left end, none, the ragged
    // right end), 21 terms (whole steps of 8 and 16 and a short one), 9 channels.
    {2, 7, 300, 9, 3, {1, 1, 1, 1}},
    // Stride 2; 70 output channels overflow the largest channel tile.
    {1, 4, 150, 70, 5, {2, 2, 1, 1}},
    // Dilation 2 and two groups of 3 input and 2 output channels.
    {2, 6, 41, 4, 3, {1, 3, 2, 2}},
    // Depthwise (groups = in_channels), two outputs per channel.
    {1, 8, 29, 16, 3, {1, 1, 1, 8}},
    // Stride 3 with dilation 3 and padding 5.
    {1, 3, 70, 5, 4, {3, 5, 3, 1}},
    // One output without padding.
    {1, 3, 5, 6, 5, {}},
    // Kernel 1 with padding 3: outputs with no tap inside x (+0).
    {1, 2, 2, 3, 1, {1, 3, 1, 1}},
    // A kernel longer than x that fits the padded input: one output.
    {1, 2, 3, 3, 5, {1, 1, 1, 1}},
    // 300 terms: two chunks of kiln/ops/contraction_order.hpp, the boundary (q = 256) between
    // channel 85's first and second taps.
    {1, 100, 40, 6, 3, {1, 1, 1, 1}},
    // A kernel of 600 taps over 3 positions with padding 300: each output's taps inside x lie in
    // its second chunk, its first and third chunks all padding (summed as +0 and added).
    {1, 1, 3, 2, 600, {1, 300, 1, 1}},
};

size_t x_count(const Shape& s) {
    return static_cast<size_t>(s.batch * s.in_channels * s.length);
}

size_t w_count(const Shape& s) {
    return static_cast<size_t>(s.out_channels * (s.in_channels / s.params.groups) * s.kernel);
}

ops::Conv1dView dense(const Shape& s) {
    return {0, s.in_channels * s.length, s.length};
}

// The points in two parts of about the same compile time (PoCL's, cold, dominates: the 8 x 8
// thread tile costs as much as the four points of part 0), so each case stays well under half a
// minute on a CI core; the parts cover every point.
Points part_of_the_points(int part) {
    Points points;
    for (const auto& s : ops::conv1d_variants())
        if ((s.name == "s32x32_k16_t2x2" || s.name == "s128x128_k8_t8x8_m_b2") == (part == 1))
            points.push_back(&s);
    return points;
}

// Runs the points on every device for one case and compares y with the oracle.
void expect_points(const Points& points, DType input, DType out, const HostBuffer& x,
                   const ops::Conv1dView& xv, const HostBuffer& w, const Shape& s) {
    const HostBuffer want{out, oracle::conv1d(input, out, x.bytes, xv, w.bytes, s)};
    for (Device* d : devices()) {
        const Buffer xb = upload(*d, x), wb = upload(*d, w);
        for (const auto* p : points) {
            SCOPED_TRACE(fmt::format(
                "{} {} {}->{} {}x{}x{} -> {} k={} stride={} padding={} dilation={} groups={}",
                d->info().id, p->name, name(input), name(out), s.batch, s.in_channels, s.length,
                s.out_channels, s.kernel, s.params.stride, s.params.padding, s.params.dilation,
                s.params.groups));
            const auto r = ops::conv1d_bench(*d, xb, xv, wb, s, out, *p, 1);
            EXPECT_TRUE(identical(download(r.output), want));
        }
    }
}

// Dense operands of the kShapes through the points.
void expect_ragged_shapes(const Points& points, DType input, DType out, uint64_t seed) {
    for (const Shape& s : kShapes) {
        const HostBuffer x = random_values(input, x_count(s), seed++);
        const HostBuffer w = random_values(input, w_count(s), seed++);
        expect_points(points, input, out, x, dense(s), w, s);
    }
}

// y of one f32 case on `d` under point `p`, as floats.
std::vector<float> run_f32(Device& d, const ops::Conv1dSchedule& p, const std::vector<float>& x,
                           const std::vector<float>& w, const Shape& s,
                           std::optional<ops::Conv1dView> view = std::nullopt) {
    Buffer xb(d, DType::f32, x.size()), wb(d, DType::f32, w.size());
    xb.upload(x);
    wb.upload(w);
    return ops::conv1d_bench(d, xb, view.value_or(dense(s)), wb, s, DType::f32, p, 1)
        .output.download<float>();
}

// Values whose results show the op's order, through the points: terms added channel by channel
// and tap by tap from the first, one fma each, and taps in the padding skipped.
void expect_the_order(const Points& points) {
    const float big = std::ldexp(1.0f, 24);
    const float e = 1.0f + std::ldexp(1.0f, -12);
    const float tiny = std::ldexp(1.0f, -100);
    const float inf = std::numeric_limits<float>::infinity();
    // Order: 2 channels, kernel 2, padding 1, w all ones; output t sums x0[t-1], x0[t], x1[t-1],
    // x1[t] in that order. t=1: big, 1, -big, 1 is 1 in order (big + 1 rounds to big), 2 with
    // the taps outermost (big - big + 1 + 1) or from the end. t=2: 1, big, 1, 1 and t=3: big,
    // 0, 1, 1 are big in order, big + 2 with each channel summed on its own and then added.
    const Shape order{1, 2, 4, 1, 2, {1, 1, 1, 1}};
    const std::vector<float> x_order{big, 1.0f, big, 0.0f, -big, 1.0f, 1.0f, 1.0f};
    const std::vector<float> ones(4, 1.0f);
    // Fused: one channel, kernel 2: 1 * -1 + e * e is 2^-11 + 2^-24 with the product fused,
    // 2^-11 with it rounded first.
    const Shape fused{1, 1, 2, 1, 2, {}};
    const std::vector<float> x_fused{1.0f, e}, w_fused{-1.0f, e};
    // Padding: one channel [tiny, 3], kernel 3, padding 1, two outputs. oc 0, w = [inf, 1, 1]:
    // t=0 is tiny + 3 = 3, NaN were the left padding's tap added (0 * inf). oc 1, w = [-tiny,
    // -0, 1]: t=1 is tiny*-tiny (-0, underflowed) + 3*-0 = -0, +0 were the right padding's tap
    // added (0*1 + -0).
    const Shape padded{1, 1, 2, 2, 3, {1, 1, 1, 1}};
    const std::vector<float> x_padded{tiny, 3.0f}, w_padded{inf, 1.0f, 1.0f, -tiny, -0.0f, 1.0f};
    // The same x at offset 200 of 400 elements of NaN: a tile's reads past x's ends then lie in
    // the buffer (read without a mask by the spread point), and its padding's taps are still
    // skipped, not added.
    std::vector<float> x_inside(400, std::numeric_limits<float>::quiet_NaN());
    std::copy(x_padded.begin(), x_padded.end(), x_inside.begin() + 200);
    const ops::Conv1dView at_200{200, 2, 2};
    for (Device* d : devices())
        for (const auto* p : points) {
            SCOPED_TRACE(d->info().id + " " + p->name);
            const auto y = run_f32(*d, *p, x_order, ones, order);
            ASSERT_EQ(y.size(), 5u);
            EXPECT_EQ(y[0], 0.0f);  // big - big: the padding's taps skipped
            EXPECT_EQ(y[1], 1.0f);
            EXPECT_EQ(y[2], big);
            EXPECT_EQ(y[3], big);
            EXPECT_EQ(y[4], 1.0f);  // 0 + 1
            const auto f = run_f32(*d, *p, x_fused, w_fused, fused);
            EXPECT_EQ(f[0], std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
            for (const auto& g : {run_f32(*d, *p, x_padded, w_padded, padded),
                                  run_f32(*d, *p, x_inside, w_padded, padded, at_200)}) {
                ASSERT_EQ(g.size(), 4u);
                EXPECT_EQ(g[0], 3.0f);
                EXPECT_EQ(g[1], inf);
                EXPECT_EQ(g[2], 3.0f);
                EXPECT_EQ(g[3], 0.0f);
                EXPECT_TRUE(std::signbit(g[3])) << "the right padding's tap was added";
            }
        }
}

// The sums of support/chunk_cases.hpp: one channel of x (the column) under a kernel as long as x,
// two output channels (the rows), so each output's taps are the k terms.
Shape chunk_shape(const ChunkCase& c) {
    return {1, 1, c.k, 2, c.k, {}};
}

void expect_the_chunks(const Points& points) {
    for (const ChunkCase& c : kChunkCases) {
        const auto [w, x] = chunk_operands(c.k);
        for (Device* d : devices())
            for (const auto* p : points) {
                SCOPED_TRACE(fmt::format("{} {} k={}", d->info().id, p->name, c.k));
                const auto y = run_f32(*d, *p, x, w, chunk_shape(c));
                ASSERT_EQ(y.size(), 2u);
                expect_chunk_sums(c, y[0], y[1]);
            }
    }
}

TEST(Conv1d, TheOracleAddsTheChunksOfTheTermsInOrder) {
    for (const ChunkCase& c : kChunkCases) {
        SCOPED_TRACE(c.k);
        const auto [w, x] = chunk_operands(c.k);
        const Shape s = chunk_shape(c);
        expect_chunk_sums(
            c, oracle::conv1d(DType::f32, DType::f32, encode_floats(DType::f32, x).bytes, dense(s),
                              encode_floats(DType::f32, w).bytes, s));
    }
}

TEST(Conv1d, TheOracleFollowsTheOrder) {
    // The same values as expect_the_order, through the oracle: it is the definition.
    const float big = std::ldexp(1.0f, 24);
    const Shape order{1, 2, 4, 1, 2, {1, 1, 1, 1}};
    const std::vector<float> x{big, 1.0f, big, 0.0f, -big, 1.0f, 1.0f, 1.0f}, w(4, 1.0f);
    const auto bytes = [](const std::vector<float>& v) {
        Bytes b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    const Bytes y = oracle::conv1d(DType::f32, DType::f32, bytes(x), dense(order), bytes(w), order);
    std::vector<float> got(5);
    std::memcpy(got.data(), y.data(), y.size());
    EXPECT_EQ(got, (std::vector<float>{0.0f, 1.0f, big, big, 1.0f}));
}

TEST(Conv1d, PointsOfPart0MatchTheOracleAndTheOrderOnEveryDevice) {
    expect_ragged_shapes(part_of_the_points(0), DType::f32, DType::f32, 1);
    expect_the_order(part_of_the_points(0));
    expect_the_chunks(part_of_the_points(0));
}

TEST(Conv1d, PointsOfPart1MatchTheOracleAndTheOrderOnEveryDevice) {
    expect_ragged_shapes(part_of_the_points(1), DType::f32, DType::f32, 1);
    expect_the_order(part_of_the_points(1));
    expect_the_chunks(part_of_the_points(1));
}

// f16 and bf16 inputs, each to its own dtype (its loads' conversion and the output's rounding),
// f16 through a staged point and bf16 through a direct one; the inputs to an f32 output are the
// same loads with f32's store. One compile each on the CPU and PoCL; NVRTC compiles every pair.
TEST(Conv1d, F16AndBf16InputsMatchTheOracleOnEveryDevice) {
    expect_ragged_shapes({&ops::conv1d_variant("s32x32_k16_t2x2")}, DType::f16, DType::f16, 100);
    expect_ragged_shapes({&ops::conv1d_variant("d8x64")}, DType::bf16, DType::bf16, 200);
}

// x as a view of a larger buffer (an offset, channels 5 elements further apart than the length,
// batches 7 further apart than needed), and one batch shared by every batch (batch stride 0).
TEST(Conv1d, StridedAndBroadcastViewsOfXMatchTheOracleOnEveryDevice) {
    const Points points{&ops::conv1d_variant("d1x128"), &ops::conv1d_variant("s64x64_k8_t4x4")};
    uint64_t seed = 1000;
    for (const Shape& s : {kShapes[1], kShapes[3]}) {
        const int64_t cs = s.length + 5;
        const ops::Conv1dView strided{3, s.in_channels * cs + 7, cs};
        const size_t count = static_cast<size_t>(strided.offset + s.batch * strided.batch_stride);
        const HostBuffer w = random_values(DType::f32, w_count(s), seed++);
        expect_points(points, DType::f32, DType::f32, random_values(DType::f32, count, seed++),
                      strided, w, s);
        const ops::Conv1dView shared{0, 0, 0};
        const HostBuffer one = random_values(DType::f32, x_count(s) / s.batch, seed++);
        Shape three = s;
        three.batch = 3;
        expect_points(points, DType::f32, DType::f32, one, shared, w, three);
    }
}

// The spread point's three paths: blocks whose tile lies inside its group and y with every tap
// inside x (stride 1) read x and w as they are; the other blocks with stride 1 read x only where
// a position is inside y and its tap inside x (the first and last blocks along x, ragged ones,
// channel tiles past the group's end); with another stride every block reads clamped and tests
// each tap. Each shape names which of its blocks (bm x bn = 8 x 128; 4 x 128 splits each channel
// tile in two) take the whole-tile path.
TEST(Conv1d, SpreadPointsWholeTilesAndEdgesMatchTheOracleOnEveryDevice) {
    const Shape shapes[] = {
        // Both blocks whole, their taps reaching x's first and last elements (the tightest
        // tiles that pass).
        {1, 3, 258, 8, 3, {}},
        // The same with 100 channels: 300 terms, the second chunk starting at channel 85's second
        // tap inside whole tiles.
        {1, 100, 258, 8, 3, {}},
        // One position more (length 259, l_out 257): the same two whole blocks and a ragged
        // third; one channel more (9) puts every block of the second channel tile at an edge.
        {2, 3, 259, 9, 3, {}},
        // Padding 2 and dilation 2: block 0 reads the padding (an edge), block 1 (positions 128
        // to 255, taps 126 to 257) is whole, block 2 ragged.
        {1, 2, 300, 8, 3, {1, 2, 2, 1}},
        // Two groups of 8 input and 8 output channels: block 1 of each group whole, x's channels
        // of group 1 from its base.
        {1, 16, 300, 16, 3, {1, 1, 1, 2}},
        // Stride 2: every block tests its taps, even where they lie inside x.
        {1, 3, 600, 8, 3, {2, 1, 1, 1}},
    };
    uint64_t seed = 2000;
    for (const Shape& s : shapes) {
        const HostBuffer x = random_values(DType::f32, x_count(s), seed++);
        const HostBuffer w = random_values(DType::f32, w_count(s), seed++);
        expect_points(
            {&ops::conv1d_variant("d8x128_t8x4_s"), &ops::conv1d_variant("d4x128_t4x4_s")},
            DType::f32, DType::f32, x, dense(s), w, s);
    }
}

TEST(Conv1d, OracleAgreesWithADoubleSum) {
    const Shape s{2, 6, 50, 4, 5, {2, 3, 2, 2}};
    const HostBuffer x = random_values(DType::f32, x_count(s), 3);
    const HostBuffer w = random_values(DType::f32, w_count(s), 4);
    const Bytes y = oracle::conv1d(DType::f32, DType::f32, x.bytes, dense(s), w.bytes, s);
    auto f = [](const Bytes& bytes, int64_t i) {
        float v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        return static_cast<double>(v);
    };
    const int64_t l_out = s.out_length(), cg = 3, og = 2;
    ASSERT_EQ(l_out, 24);
    for (int64_t n = 0; n < s.batch; ++n)
        for (int64_t oc = 0; oc < s.out_channels; ++oc)
            for (int64_t t = 0; t < l_out; ++t) {
                double sum = 0, mag = 0;
                for (int64_t ic = 0; ic < cg; ++ic)
                    for (int64_t r = 0; r < s.kernel; ++r) {
                        const int64_t pos = t * 2 - 3 + r * 2;
                        if (pos < 0 || pos >= s.length) continue;
                        const int64_t c = oc / og * cg + ic;
                        const double term = f(x.bytes, (n * s.in_channels + c) * s.length + pos) *
                                            f(w.bytes, (oc * cg + ic) * s.kernel + r);
                        sum += term;
                        mag += std::fabs(term);
                    }
                EXPECT_NEAR(f(y, (n * s.out_channels + oc) * l_out + t), sum,
                            cg * s.kernel * 0x1p-24 * mag);
            }
}

TEST(Conv1d, OutLengthIsTorchs) {
    EXPECT_EQ((Shape{1, 1, 1024, 1, 5, {1, 2, 1, 1}}.out_length()), 1024);
    EXPECT_EQ((Shape{1, 1, 10, 1, 3, {2, 0, 1, 1}}.out_length()), 4);
    EXPECT_EQ((Shape{1, 1, 10, 1, 3, {3, 1, 2, 1}}.out_length()), 3);
    EXPECT_EQ((Shape{1, 1, 3, 1, 5, {}}.out_length()), -1);
    EXPECT_EQ((Shape{1, 1, 3, 1, 5, {2, 0, 1, 1}}.out_length()), 0);
}

TEST(Conv1d, DenseEntryTunesOnceThenHitsAndMatchesTheOracle) {
    Device& cpu = cpu_device();
    const Shape s = kShapes[3];
    const HostBuffer x = random_values(DType::f32, x_count(s), 11);
    const HostBuffer w = random_values(DType::f32, w_count(s), 12);
    const Buffer xb = upload(cpu, x), wb = upload(cpu, w);
    const HostBuffer want{DType::f32,
                          oracle::conv1d(DType::f32, DType::f32, x.bytes, dense(s), w.bytes, s)};
    const ops::Conv1dInput dx{xb, s.batch, s.in_channels, s.length};
    const ops::Conv1dWeight dw{wb, s.out_channels, s.in_channels / s.params.groups, s.kernel};
    test::expect_tunes_once_then_hits(
        "conv1d", cpu,
        [&](Tuner& tuner) {
            return download(
                ops::conv1d(cpu, dx, dw, s.params, DType::f32, MatmulClass::exact, tuner));
        },
        want, ops::conv1d_variants().size(),
        "batch=2,c_in=6,length=41,c_out=4,kernel=3,stride=1,padding=3,dilation=2,groups=2,in=f32,"
        "out=f32",
        [](const std::string& winner) { EXPECT_NO_THROW(ops::conv1d_variant(winner)); });
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    test::expect_error_naming("conv1d", f, needles);
}

TEST(Conv1d, BadInputsAreErrorsNamingWhatWasWrong) {
    Device& cpu = cpu_device();
    // x is 2 x 4 x 10, w 6 x 2 x 3 (groups 2).
    Buffer x(cpu, DType::f32, 80), w(cpu, DType::f32, 36), h(cpu, DType::f16, 36),
        i(cpu, DType::i32, 80), hx(cpu, DType::f16, 80);
    const ops::Conv1dInput dx{x, 2, 4, 10};
    const ops::Conv1dWeight dw{w, 6, 2, 3};
    const ops::Conv1dParams g2{1, 1, 1, 2};
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, dw, {1, 1, 1, 3});
        },
        {"in_channels 4 and out_channels 6 in groups of 3", "expected groups to divide"});
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, dw, {1, 1, 1, 4});
        },
        {"in_channels 4 and out_channels 6 in groups of 4"});
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, dw, {1, 1, 1, 1});
        },
        {"w has 2 input channels per group but x has 4 channels in 1 groups",
         "expected w's in_channels = 4"});
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, ops::Conv1dWeight{w, 3, 4, 3}, {1, 0, 5, 1});
        },
        {"spans 11 positions but the padded input has 10 (length 10 + 2*padding 0)",
         "expected a kernel that fits the padded input"});
    expect_error([&] { ops::conv1d(cpu, dx, dw, {0, 1, 1, 2}); }, {"stride 0; expected >= 1"});
    expect_error([&] { ops::conv1d(cpu, dx, dw, {1, 1, 0, 2}); }, {"dilation 0; expected >= 1"});
    expect_error([&] { ops::conv1d(cpu, dx, dw, {1, -1, 1, 2}); }, {"padding -1; expected >= 0"});
    expect_error([&] { ops::conv1d(cpu, dx, dw, {1, 1, 1, 0}); }, {"groups 0; expected >= 1"});
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, ops::Conv1dWeight{h, 6, 2, 3}, g2);
        },
        {"w is f16 but x is f32", "expected the same dtype"});
    expect_error(
        [&] {
            ops::conv1d(cpu, ops::Conv1dInput{i, 2, 4, 10}, dw, g2);
        },
        {"x is i32", "expected f32, f16 or bf16"});
    expect_error([&] { ops::conv1d(cpu, dx, dw, g2, DType::bf16); },
                 {"output dtype bf16 for f32 inputs"});
    expect_error(
        [&] {
            ops::conv1d(cpu, ops::Conv1dInput{x, 2, 4, 11}, dw, g2);
        },
        {"x has 80 elements", "2 x 4 x 11"});
    expect_error(
        [&] {
            ops::conv1d(cpu, dx, ops::Conv1dWeight{w, 6, 2, 4}, g2);
        },
        {"w has 36 elements", "6 x 2 x 4"});
    expect_error(
        [&] {
            ops::conv1d(cpu, ops::Conv1dInput{x, 2, 0, 10}, dw, g2);
        },
        {"x is 2 x 0 x 10", "expected every size >= 1"});
    // The view entry: views and buffers too small, indices past 32 bits, devices.
    const Shape s{2, 4, 10, 6, 3, g2};
    expect_error(
        [&] {
            ops::conv1d(cpu, x, {1, 40, 10}, w, s);
        },
        {"x view of 2 x 4 x 10", "offset 1", "reaches element 80", "80 elements"});
    expect_error(
        [&] {
            ops::conv1d(cpu, x, {0, 40, 11}, w, s);
        },
        {"channel stride 11", "reaches element 82"});
    expect_error([&] { ops::conv1d(cpu, x, {-1, 40, 10}, w, s); }, {"x view has offset -1"});
    Buffer w_small(cpu, DType::f32, 35);
    expect_error(
        [&] {
            ops::conv1d(cpu, x, {0, 40, 10}, w_small, s);
        },
        {"w has 35 elements", "6 x 2 x 3 = 36"});
    Shape long_x = s;
    long_x.length = int64_t{1} << 31;
    expect_error([&] { ops::conv1d(cpu, x, {}, w, long_x); },
                 {"length=2147483648", "at most 2147483647"});
    Shape padded = s;
    padded.params.padding = int64_t{1} << 30;
    expect_error([&] { ops::conv1d(cpu, x, {}, w, padded); },
                 {"length 10 + 2*padding 1073741824", "32-bit indices"});
    Shape wide = s;
    wide.batch = 1 << 16;
    wide.out_channels = 1 << 16;
    expect_error([&] { ops::conv1d(cpu, x, {}, w, wide); },
                 {"batch x out_channels x l_out (65536 x 65536 x 10)", "32-bit indices"});
    Shape empty = s;
    empty.out_channels = 0;
    expect_error(
        [&] { ops::conv1d(cpu, x, {}, w, empty); },
        {"out_channels=0", "expected batch, in_channels, length, out_channels and kernel"});
    for (Device* d : devices())
        if (d != &cpu) {
            Buffer other(*d, DType::f32, 36);
            expect_error(
                [&] {
                    ops::conv1d(cpu, x, {0, 40, 10}, other, s);
                },
                {"x lives on", "but w on", "expected one device"});
            expect_error(
                [&] {
                    ops::conv1d(*d, x, {0, 40, 10}, w, s);
                },
                {"x lives on " + cpu.info().id});
        }
    ops::Conv1dSchedule bad = ops::conv1d_variants()[3];
    bad.tm = 3;
    expect_error([&] { ops::conv1d_kernel({}, bad); }, {"thread tile 3x4"});
    bad = ops::conv1d_variants()[0];
    bad.tn = 2;
    bad.bn = 128;
    expect_error([&] { ops::conv1d_kernel({}, bad); }, {"direct point with 2 positions"});
    bad = ops::conv1d_variants()[3];
    bad.spread = true;
    expect_error([&] { ops::conv1d_kernel({}, bad); }, {"spread positions with shared tiles"});
    expect_error([&] { ops::conv1d_variant("s7x7"); }, {"no schedule named 's7x7'"});
    // The kernel's own launch contract, for callers that launch it directly (a planner).
    const auto compiled = compile(cpu, ops::conv1d_kernel({}, ops::conv1d_variants()[0]));
    const auto launch = [&](const Shape& shape, size_t y_count, const ops::Conv1dView& yv) {
        Buffer y(cpu, DType::f32, y_count);
        std::vector<Arg> args{x, w, y};
        for (const Arg& a : ops::conv1d_scalars(shape, {0, 40, 10}, yv)) args.push_back(a);
        compiled->launch(1, args);
    };
    EXPECT_NO_THROW(launch(s, 120, {0, 60, 10}));
    expect_error([&] { launch(s, 119, {0, 60, 10}); }, {"y's view", "lies inside y"});
    expect_error([&] { launch(s, 120, {0, 50, 10}); }, {"y's channels and batches do not overlap"});
    Shape too_long = s;
    too_long.kernel = 13;  // w holds 36 = 6 x 2 x 3 elements; the contract looks at the kernel
    too_long.params.padding = 0;
    expect_error(
        [&] {
            launch(too_long, 120, {0, 60, 10});
        },
        {"dilation*(kernel-1) + 1 is at most length + 2*padding"});
}

TEST(Conv1d, PointsAreDistinctKernels) {
    expect_distinct_kernels(
        ops::conv1d_variants(), [](const auto& s) { return s.name; },
        [](const auto& s) { return ops::conv1d_kernel({}, s); });
}

// As CUDA C, compiled by NVRTC for sm_90 (no GPU needed): every point (f32), and every dtype
// pair on a direct point (the loads' conversions and the output's rounding; the staged points
// convert their loads in the same way, and the CPU and PoCL cases build them for f16).
TEST(Conv1d, EveryPointAndDtypeCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& s : ops::conv1d_variants()) kernels.push_back(ops::conv1d_kernel({}, s));
    for (const auto& [input, out] :
         {std::pair{DType::f16, DType::f32}, std::pair{DType::bf16, DType::f32},
          std::pair{DType::f16, DType::f16}, std::pair{DType::bf16, DType::bf16}})
        kernels.push_back(ops::conv1d_kernel({input, out}, ops::conv1d_variant("d8x64")));
    expect_compiles_for_cuda(kernels);
}

// On CUDA the staged points read their thread's runs of the tiles in 16-byte loads, with no
// run-time alignment test (the tiles are 16-byte aligned, the runs start at multiples of 4).
TEST(Conv1d, CudaReadsTileRunsInAlignedFloat4s) {
    const std::string source = generate_source(
        Backend::cuda, std::vector{ops::conv1d_kernel({}, ops::conv1d_variant("s64x64_k8_t4x4"))},
        CompileOptions{});
    const std::string kernel = source.substr(source.find("__global__"));
    EXPECT_NE(kernel.find("__shared__ __align__(16) float"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("& 15ull"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("*(const float4*)"), std::string::npos) << kernel;
}

}  // namespace
