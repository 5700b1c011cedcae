// attention (exact class): every schedule point, dtype, causal or not and ragged shape
// bit-identical to the oracle on every device; the key block pinned by values that another block
// size (or no rescaling) turns into other bits; masked keys left out; weights below the floor 0;
// the oracle against a double softmax; the tuner; bad inputs; CUDA C by NVRTC.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <set>

#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "kiln/semantics.hpp"
#include "ops/attention/attention.hpp"
#include "oracle/attention.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"
#include "support/float_values.hpp"
#include "support/op_checks.hpp"

using namespace kiln;
using kiln::test::download;
using kiln::test::expect_compiles_for_cuda;
using kiln::test::expect_distinct_kernels;
using kiln::test::HostBuffer;
using kiln::test::identical;
using kiln::test::upload;

namespace {

using Bytes = std::vector<uint8_t>;

// The head_dim of most cases: not a power of two, a whole staged step of 16 dims and a short one,
// short of the 16 x 2 dims the acc tiles of 16 threads across span (and just the 8 x 3 of 8).
constexpr int kDim = 24;

// A case: a shape and whether it is causal.
struct Case {
    ops::AttentionShape shape;
    bool causal = false;
};

std::string text(const Case& c) {
    const auto& s = c.shape;
    return fmt::format("batch={} heads={} kv_heads={} seq_q={} seq_k={} d={}{}", s.batch, s.heads,
                       s.kv_heads, s.seq_q, s.seq_k, s.head_dim, c.causal ? " causal" : "");
}

// Ragged cases (head_dim d): seq 1; seq_k past seq_q and not a multiple of the key block;
// grouped heads; causal with seq past every query block and with seq_k > seq_q (bottom-right).
std::vector<Case> ragged_cases(int64_t d) {
    return {
        {{1, 1, 0, 1, 1, d}, false},    {{1, 1, 0, 1, 1, d}, true},
        {{1, 2, 1, 5, 70, d}, false},   {{2, 2, 0, 67, 67, d}, true},
        {{1, 3, 1, 20, 150, d}, true},  {{1, 1, 0, 3, 130, d}, false},
        {{1, 1, 0, 130, 130, d}, true},
    };
}

// Values of a normal spread in `t` (so scores spread over a few units once scaled), with signed
// zeros mixed in.
HostBuffer random_values(DType t, size_t count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
        float v = nd(rng);
        if (i % 41 == 7) v = (i % 2) ? -0.0f : 0.0f;
        values[i] = v;
    }
    return test::encode_floats(t, values);
}

size_t count_q(const ops::AttentionShape& s) {
    return static_cast<size_t>(s.batch * s.heads * s.seq_q * s.head_dim);
}

size_t count_kv(const ops::AttentionShape& s) {
    return static_cast<size_t>(s.batch * (s.kv_heads ? s.kv_heads : s.heads) * s.seq_k *
                               s.head_dim);
}

// Q, K and V of a case.
struct Inputs {
    HostBuffer q, k, v;
};

Inputs random_inputs(DType t, const ops::AttentionShape& s, uint64_t seed) {
    return {random_values(t, count_q(s), seed), random_values(t, count_kv(s), seed + 1),
            random_values(t, count_kv(s), seed + 2)};
}

using Points = std::vector<const ops::AttentionSchedule*>;

// Runs the points on every device for one case and compares O with the oracle.
void expect_points(const Points& points, DType out, const Inputs& in, const Case& c) {
    const ops::AttentionOptions options{c.causal, std::nullopt, out};
    const float scale = ops::attention_scale(c.shape, options);
    const HostBuffer want{out, oracle::attention(in.q.dtype, out, in.q.bytes, in.k.bytes,
                                                 in.v.bytes, c.shape, c.causal, scale)};
    for (Device* d : devices()) {
        const Buffer qb = upload(*d, in.q), kb = upload(*d, in.k), vb = upload(*d, in.v);
        for (const auto* p : points) {
            SCOPED_TRACE(fmt::format("{} {} {}->{} {}", d->info().id, p->name, name(in.q.dtype),
                                     name(out), text(c)));
            const auto r = ops::attention_bench(*d, qb, kb, vb, c.shape, options, *p, 1);
            EXPECT_TRUE(identical(download(r.output), want));
        }
    }
}

const ops::AttentionSchedule* point(const char* name) {
    return &ops::attention_variant(name);
}

// Values for which another key block gives other bits (TheKeyBlockIsPartOfTheBits).
const Case kBlockCase{{1, 1, 0, 24, 200, kDim}, false};
Inputs block_case_inputs() {
    return random_inputs(DType::f32, kBlockCase.shape, 300);
}

// Causal, row i sees keys 0 .. i + 3. V is +-inf at keys 70 .. 72, so a row below 67 that touched
// one of them, masked for it (0 * inf, or inf itself), would not be finite. Rows 61 .. 66 see
// part of the second key block, rows below 61 none of it (MaskedKeysAreLeftOut).
const Case kMaskCase{{1, 1, 0, 70, 73, kDim}, true};
constexpr int64_t kFirstInfiniteKey = 70;
Inputs mask_case_inputs() {
    Inputs in = random_inputs(DType::f32, kMaskCase.shape, 400);
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t key = kFirstInfiniteKey; key < kMaskCase.shape.seq_k; ++key)
        for (int64_t d = 0; d < kDim; ++d) {
            const float v = key % 2 ? inf : -inf;
            std::memcpy(in.v.bytes.data() + 4 * (key * kDim + d), &v, 4);
        }
    return in;
}

// Weights on both sides of the floor (head_dim 16: scale 0.25, so the scores are exact). Rows
// 0, 1 see q = e0, e1; key 1 is -350 e0 (row 0's score -87.5: weight +0, where exp would give
// 1e-38) and key 2 is -347.6 e1 (row 1's -86.9: weight exp(-86.9)); V is 1e30 e0 and 1e30 e1 at
// keys 1 and 2, 0 elsewhere, so o[0][0] is 0 only if the weight is, and o[1][1] about 9e-9.
const Case kFloorCase{{1, 1, 0, 2, 3, 16}, false};
Inputs floor_case_inputs() {
    const auto& s = kFloorCase.shape;
    std::vector<float> q(count_q(s)), k(count_kv(s)), v(count_kv(s));
    const size_t D = 16;
    q[0] = 1.0f, q[D + 1] = 1.0f;
    k[D] = -350.0f, k[2 * D + 1] = -347.6f;
    v[D] = 1e30f, v[2 * D + 1] = 1e30f;
    return {test::encode_floats(DType::f32, q), test::encode_floats(DType::f32, k),
            test::encode_floats(DType::f32, v)};
}

// The f32 cases through the points: the ragged shapes, the key block's, the masked keys' and
// the weight floor's.
void expect_f32_cases(const Points& points) {
    uint64_t seed = 1;
    for (const Case& c : ragged_cases(kDim))
        expect_points(points, DType::f32, random_inputs(DType::f32, c.shape, seed += 10), c);
    expect_points(points, DType::f32, block_case_inputs(), kBlockCase);
    expect_points(points, DType::f32, mask_case_inputs(), kMaskCase);
    expect_points(points, DType::f32, floor_case_inputs(), kFloorCase);
}

// One test per group of points, so ctest runs them side by side (each compiles its kernels).
TEST(Attention, DirectPointMatchesTheOracleOnEveryDevice) {
    expect_f32_cases({point("d64")});
}

TEST(Attention, StagedPointsOfOneRowPerThreadMatchTheOracleOnEveryDevice) {
    expect_f32_cases({point("s16_t1x4"), point("s32_t2x4")});
}

TEST(Attention, StagedPointsOfFourRowsPerThreadMatchTheOracleOnEveryDevice) {
    expect_f32_cases({point("s64_t4x4"), point("s64_t4x8")});
}

TEST(Attention, StagedPointsOfHalfTheThreadsMatchTheOracleOnEveryDevice) {
    expect_f32_cases({point("s64_t8x4"), point("s32_t4x4")});
}

// The lockstep point on the f32 cases, and on cases for its two paths: key blocks that every row
// of a block (16 rows) sees whole run without a test, the others test each key against the row's
// limit. (One test: its kernel compiles once.)
TEST(Attention, LockstepPointOnItsWholeAndTestedKeyBlocksMatchesTheOracleOnEveryDevice) {
    expect_f32_cases({point("l16")});
    const std::vector<Case> cases = {
        // Two whole key blocks for every row, nothing tested.
        {{1, 1, 0, 40, 128, kDim}, false},
        // One key more: the third block (one key) tested in every row.
        {{1, 1, 0, 40, 129, kDim}, false},
        // Causal, row i sees i + 41 keys: the block of rows 144 to 159 sees keys 0 to 127 whole
        // and tests 128 to 199; the block of rows 0 to 15 tests its first block.
        {{1, 2, 0, 160, 200, kDim}, true},
    };
    uint64_t seed = 600;
    for (const Case& c : cases)
        expect_points({point("l16")}, DType::f32, random_inputs(DType::f32, c.shape, seed += 10),
                      c);
}

// The lockstep point's tiles (queries, accumulators, a key block's scores) fit the shared memory
// of every backend at every head_dim the op takes: it is the CPU's point for all of them.
TEST(Attention, LockstepPointFitsEveryHeadDim) {
    for (int d = 1; d <= ops::kAttentionMaxHeadDim; ++d)
        EXPECT_TRUE(ops::attention_fits(*point("l16"), d)) << "head_dim " << d;
}

// Every point is in one of the tests above.
TEST(Attention, TheTestsAboveCoverEveryPoint) {
    const std::set<std::string> covered{"d64",      "s16_t1x4", "s32_t2x4", "s64_t4x4",
                                        "s64_t4x8", "l16",      "s64_t8x4", "s32_t4x4"};
    std::set<std::string> all;
    for (const auto& s : ops::attention_variants()) all.insert(s.name);
    EXPECT_EQ(all, covered);
}

// f16 and bf16 inputs (head_dim 16: whole steps) through the direct point and a staged one, to
// their own dtype on one and to f32 on the other (the dtypes change only the loads of Q, K and V
// and the store of O, the same way at every staged point).
void expect_half_inputs(DType input, DType direct_out, DType staged_out, uint64_t seed) {
    for (const Case& c : {Case{{1, 2, 1, 37, 100, 16}, true}, Case{{2, 1, 0, 9, 65, 16}, false}}) {
        const Inputs in = random_inputs(input, c.shape, seed += 10);
        expect_points({point("d64")}, direct_out, in, c);
        expect_points({point("s16_t1x4")}, staged_out, in, c);
    }
}

TEST(Attention, F16InputsToF32OrF16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(DType::f16, DType::f32, DType::f16, 100);
}

TEST(Attention, Bf16InputsToF32OrBf16MatchTheOracleOnEveryDevice) {
    expect_half_inputs(DType::bf16, DType::bf16, DType::f32, 200);
}

// The key block is part of the op: for kBlockCase's values, the online softmax over blocks of 32
// or 128 keys, or over one block of every key (no rescaling: a plain two-pass softmax), each
// gives other bits than the op's 64 (which every point gives, above).
TEST(Attention, TheKeyBlockIsPartOfTheBits) {
    const Inputs in = block_case_inputs();
    const auto& s = kBlockCase.shape;
    const float scale = ops::attention_scale(s, {});
    auto with_block = [&](int64_t kb) {
        return HostBuffer{DType::f32,
                          oracle::attention(DType::f32, DType::f32, in.q.bytes, in.k.bytes,
                                            in.v.bytes, s, false, scale, kb)};
    };
    const HostBuffer op = with_block(ops::kAttentionKeyBlock);
    for (int64_t kb : {int64_t{32}, int64_t{128}, s.seq_k})
        EXPECT_FALSE(identical(with_block(kb), op)) << "key block " << kb;
}

// A weight below the floor is +0 and one above it is exp's (kFloorCase; every point gives the
// oracle's bits, above).
TEST(Attention, WeightsBelowTheFloorAreZero) {
    const Inputs in = floor_case_inputs();
    const auto& s = kFloorCase.shape;
    const Bytes o = oracle::attention(DType::f32, DType::f32, in.q.bytes, in.k.bytes, in.v.bytes, s,
                                      false, ops::attention_scale(s, {}));
    auto at = [&](int64_t row, int64_t d) {
        float v;
        std::memcpy(&v, o.data() + 4 * (row * s.head_dim + d), 4);
        return v;
    };
    EXPECT_EQ(at(0, 0), 0.0f);
    EXPECT_FLOAT_EQ(at(0, 1), 5e29f);
    EXPECT_FLOAT_EQ(at(1, 0), 5e29f);
    EXPECT_NEAR(at(1, 1), std::exp(-86.9) * 1e30 / 2, 1e-12);
    EXPECT_GT(at(1, 1), 0.0f);
}

// For kMaskCase's values, a row that touched a masked key would not be finite; the oracle's rows
// are, up to the first row that sees an infinite value (and every point gives the oracle's bits,
// above).
TEST(Attention, MaskedKeysAreLeftOut) {
    const Inputs in = mask_case_inputs();
    const auto& s = kMaskCase.shape;
    const Bytes o = oracle::attention(DType::f32, DType::f32, in.q.bytes, in.k.bytes, in.v.bytes, s,
                                      true, ops::attention_scale(s, {}));
    const int64_t first_seeing = kFirstInfiniteKey - (s.seq_k - s.seq_q);  // row 67
    for (int64_t i = 0; i < s.seq_q; ++i)
        for (int64_t d = 0; d < kDim; ++d) {
            float x;
            std::memcpy(&x, o.data() + 4 * (i * kDim + d), 4);
            EXPECT_EQ(std::isfinite(x), i < first_seeing) << "row " << i << " d " << d;
        }
}

// The oracle is attention: within a few ulp of a double-precision softmax(q k^T scale) v.
TEST(Attention, OracleAgreesWithADoubleSoftmax) {
    const ops::AttentionShape s{2, 2, 1, 9, 150, 24};
    const Inputs in = random_inputs(DType::f32, s, 500);
    for (bool causal : {false, true}) {
        const float scale = ops::attention_scale(s, {});
        const Bytes o = oracle::attention(DType::f32, DType::f32, in.q.bytes, in.k.bytes,
                                          in.v.bytes, s, causal, scale);
        auto f = [](const Bytes& bytes, int64_t i) {
            float v;
            std::memcpy(&v, bytes.data() + 4 * i, 4);
            return static_cast<double>(v);
        };
        const int64_t D = s.head_dim;
        for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
            for (int64_t i = 0; i < s.seq_q; ++i) {
                const int64_t kv = (bh / s.heads) * s.kv_heads + (bh % s.heads) / 2;
                const int64_t limit = causal ? s.seq_k - s.seq_q + i + 1 : s.seq_k;
                std::vector<double> w(static_cast<size_t>(limit));
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < limit; ++j) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; ++d)
                        dot += f(in.q.bytes, (bh * s.seq_q + i) * D + d) *
                               f(in.k.bytes, (kv * s.seq_k + j) * D + d);
                    w[static_cast<size_t>(j)] = dot * scale;
                    mx = std::max(mx, dot * scale);
                }
                for (double& x : w) sum += (x = std::exp(x - mx));
                for (int64_t d = 0; d < D; ++d) {
                    double want = 0, mag = 0;
                    for (int64_t j = 0; j < limit; ++j) {
                        const double t = w[static_cast<size_t>(j)] / sum *
                                         f(in.v.bytes, (kv * s.seq_k + j) * D + d);
                        want += t;
                        mag += std::fabs(t);
                    }
                    EXPECT_NEAR(f(o, (bh * s.seq_q + i) * D + d), want, 64 * 0x1p-24 * mag + 1e-30)
                        << "row " << i << " d " << d << (causal ? " causal" : "");
                }
            }
    }
}

TEST(Attention, EntryTunesOnceThenHitsAndMatchesTheOracle) {
    const auto root =
        std::filesystem::temp_directory_path() /
        fmt::format("kiln_attention_tune_{}", ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    Tuner tuner(root);
    Device& cpu = cpu_device();
    const ops::AttentionShape s{1, 2, 0, 33, 33, kDim};
    const Inputs in = random_inputs(DType::f32, s, 600);
    const Buffer qb = upload(cpu, in.q), kb = upload(cpu, in.k), vb = upload(cpu, in.v);
    const ops::AttentionOptions options{true, 0.25f, DType::f32};
    const HostBuffer want{DType::f32, oracle::attention(DType::f32, DType::f32, in.q.bytes,
                                                        in.k.bytes, in.v.bytes, s, true, 0.25f)};
    EXPECT_TRUE(identical(download(ops::attention(cpu, qb, kb, vb, s, options, tuner)), want));
    const auto c1 = tuner.counters();
    EXPECT_EQ(c1.misses, 1u);
    EXPECT_EQ(c1.benched, ops::attention_variants().size());
    const auto entries = tuner.entries(cpu.info().id);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].op, "attention");
    EXPECT_EQ(entries[0].key.rfind(
                  "batch=1,heads=2,kv_heads=2,seq_q=33,seq_k=33,d=24,in=f32,out=f32,causal=1#", 0),
              0u)
        << entries[0].key;
    EXPECT_NO_THROW(ops::attention_variant(entries[0].winner));
    EXPECT_TRUE(identical(download(ops::attention(cpu, qb, kb, vb, s, options, tuner)), want));
    const auto c2 = tuner.counters();
    EXPECT_EQ(c2.hits, 1u);
    EXPECT_EQ(c2.benched, c1.benched);
    std::filesystem::remove_all(root);
}

TEST(Attention, TheDefaultScaleIsOneOverTheRootOfHeadDim) {
    EXPECT_EQ(ops::attention_scale({1, 1, 0, 1, 1, 64}, {}), 0.125f);
    EXPECT_EQ(ops::attention_scale({1, 1, 0, 1, 1, 128}, {}), 1.0f / std::sqrt(128.0f));
    EXPECT_EQ(ops::attention_scale({1, 1, 0, 1, 1, 128}, {false, 0.5f}), 0.5f);
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    test::expect_error_naming("attention", f, needles);
}

TEST(Attention, BadInputsAreErrorsNamingWhatWasWrong) {
    Device& cpu = cpu_device();
    // batch 1, heads 2, seq_q 3, seq_k 5, head_dim 4.
    const ops::AttentionShape s{1, 2, 0, 3, 5, 4};
    Buffer q(cpu, DType::f32, 24), k(cpu, DType::f32, 40), v(cpu, DType::f32, 40);
    auto run = [&](const Buffer& qq, const Buffer& kk, const Buffer& vv,
                   const ops::AttentionShape& shape, const ops::AttentionOptions& o = {}) {
        return [&, shape, o] { ops::attention(cpu, qq, kk, vv, shape, o); };
    };
    Buffer k_short(cpu, DType::f32, 36), v_long(cpu, DType::f32, 44);
    expect_error(run(q, k_short, v, s),
                 {"k has 36 elements", "batch x kv_heads x seq_k x head_dim = 1 x 2 x 5 x 4 = 40"});
    expect_error(run(q, k, v_long, s), {"v has 44 elements", "= 40"});
    // head_dim of q vs k and v: q read as head_dim 4 is 24 elements; k of head_dim 3 is 30.
    Buffer k3(cpu, DType::f32, 30);
    expect_error(run(q, k3, v, s), {"k has 30 elements", "1 x 2 x 5 x 4 = 40"});
    Buffer q_big(cpu, DType::f32, 48);
    expect_error(run(q_big, k, v, s),
                 {"q has 48 elements", "batch x heads x seq_q x head_dim = 1 x 2 x 3 x 4 = 24"});
    expect_error(run(q, k, v, {1, 2, 0, 0, 5, 4}), {"seq_q=0", "expected every size >= 1"});
    expect_error(run(q, k, v, {1, 2, 0, 3, 5, 0}), {"head_dim=0"});
    expect_error(run(q, k, v, {1, 2, 0, 3, 5, 300}), {"head_dim 300", "at most 256"});
    expect_error(run(q, k, v, {1, 3, 2, 3, 5, 4}),
                 {"heads 3 is not a multiple of kv_heads 2", "expected kv_heads to divide heads"});
    expect_error(run(q, k, v, {1, 2, 0, 3, 2, 4}, {true}),
                 {"causal with seq_q 3 > seq_k 2", "first 1 query rows", "seq_q <= seq_k"});
    Buffer qi(cpu, DType::i32, 24), kh(cpu, DType::f16, 40);
    expect_error(run(qi, k, v, s), {"q is i32", "expected f32, f16 or bf16"});
    expect_error(run(q, kh, v, s), {"k is f16 but q is f32", "the same dtype"});
    expect_error(run(q, k, v, s, {false, std::nullopt, DType::bf16}),
                 {"output dtype bf16 for f32 inputs", "expected f32"});
    expect_error(run(q, k, v, s, {false, std::numeric_limits<float>::infinity()}),
                 {"scale inf", "finite"});
    expect_error(
        run(q, k, v, {1 << 20, 1 << 10, 0, 1 << 10, 5, 4}),
        {"q is batch x heads x seq_q x head_dim", "past 2147483647 elements", "32-bit indices"});
    expect_error(run(q, k, v, {1, 2, 0, 3, int64_t{1} << 31, 4}), {"seq_k 2147483648"});
    // Different devices, where a second one exists.
    for (Device* d : devices())
        if (d != &cpu) {
            Buffer kd(*d, DType::f32, 40);
            expect_error(run(q, kd, v, s), {"k lives on", "but q on", "expected one device"});
            Buffer qd(*d, DType::f32, 24), vd(*d, DType::f32, 40);
            expect_error(run(qd, kd, vd, s), {"q lives on", "expected " + cpu.info().id});
            break;
        }
    // Schedules and names.
    ops::AttentionSchedule bad = ops::attention_variant("s64_t4x4");
    bad.tq = 3;
    expect_error([&] { ops::attention_kernel({}, bad); }, {"score tile 3x4"});
    bad = ops::attention_variant("s64_t4x4");
    bad.rows = 2048;
    expect_error([&] { ops::attention_kernel({}, bad); }, {"2048 rows a block"});
    bad = ops::attention_variant("s32_t2x4");
    bad.tq = 1;
    bad.tk = 1;
    expect_error([&] { ops::attention_kernel({}, bad); }, {"2048 threads", "expected 32 to 1024"});
    expect_error([&] { ops::attention_variant("s7"); }, {"no schedule named 's7'"});
    // The kernel's own launch contract, for callers that launch it directly (a planner).
    const auto compiled = compile(
        cpu, ops::attention_kernel({DType::f32, DType::f32, 4}, ops::attention_variant("d64")));
    Buffer o_short(cpu, DType::f32, 20);
    std::vector<Arg> args{q, k, v, o_short};
    for (const Arg& x : ops::attention_scalars(s, {})) args.push_back(x);
    expect_error([&] { compiled->launch(1, args); },
                 {"o holds batch x heads x seq_q x head_dim elements"});
    Buffer o(cpu, DType::f32, 24);
    args = {q, k, v, o};
    for (const Arg& x : ops::attention_scalars({1, 2, 0, 3, 2, 4}, {true})) args.push_back(x);
    expect_error([&] { compiled->launch(1, args); }, {"a causal launch has seq_q <= seq_k"});
}

TEST(Attention, PointsAreDistinctKernels) {
    expect_distinct_kernels(
        ops::attention_variants(), [](const auto& s) { return s.name; },
        [](const auto& s) { return ops::attention_kernel({}, s); });
}

// As CUDA C, compiled by NVRTC for sm_90 (no GPU needed): every point for f32 at the figures'
// head_dim 128; bf16 to bf16 at 128 on the direct point and a staged one (the figures' other
// case); f16 to f32 at the ragged head_dim on another staged one.
TEST(Attention, EveryPointAndDtypeCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& s : ops::attention_variants())
        kernels.push_back(ops::attention_kernel({DType::f32, DType::f32, 128}, s));
    for (const char* p : {"d64", "s64_t4x4"})
        kernels.push_back(ops::attention_kernel({DType::bf16, DType::bf16, 128}, *point(p)));
    kernels.push_back(ops::attention_kernel({DType::f16, DType::f32, kDim}, *point("s16_t1x4")));
    expect_compiles_for_cuda(kernels);
}

}  // namespace
