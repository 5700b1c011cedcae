// Kernels a new user writes with the public DSL (ops/user_kernels.hpp) — softmax, layer_norm and
// rms_norm over rows at one thread, some threads and a block per row, a register-blocked sgemm
// and (a+b)^2 — on every device, bitwise against the oracle at ragged shapes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kiln/dsl.hpp"
#include "kiln/math.hpp"
#include "ops/user_kernels.hpp"
#include "oracle/test_kernels.hpp"
#include "oracle/user_kernels.hpp"
#include "support/everywhere.hpp"

namespace kiln {
namespace {

using test::HostBuffer;

HostBuffer bytes(const std::vector<float>& v) {
    HostBuffer h{DType::f32, test::Bytes(v.size() * 4)};
    std::memcpy(h.bytes.data(), v.data(), h.bytes.size());
    return h;
}

std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 4.0f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// kiln's exp of each value, from a map kernel on the first device (every device computes the
// same bits: tests/math_test.cpp).
std::vector<float> kiln_exp(const std::vector<float>& x) {
    KernelBuilder k("exp_map", 64);
    auto in = k.input("x", DType::f32);
    auto out = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < out.len(), [&] { out[i] = exp(in[i]); });
    const ir::Kernel kernel = k.finish();
    auto result =
        test::run_on(*devices().front(), kernel, static_cast<int64_t>((x.size() + 63) / 64),
                     {bytes(x), test::poisoned(DType::f32, x.size())})[1];
    std::vector<float> y(x.size());
    std::memcpy(y.data(), result.bytes.data(), result.bytes.size());
    return y;
}

struct RowCase {
    int64_t rows, n;
    int block, threads;
};

// A thread, some threads and the block per row; row counts past a block's rows (a partial last
// block) and extents below and past the fold's lanes.
std::vector<RowCase> row_cases() {
    return {
        {70, 100, 64, 1}, {70, 777, 64, 1}, {5, 777, 64, 16}, {5, 100, 64, 64}, {5, 777, 64, 64}};
}

class UserRows : public ::testing::TestWithParam<RowCase> {};

TEST_P(UserRows, SoftmaxMatchesOracleEverywhere) {
    const RowCase c = GetParam();
    const auto x = random_floats(static_cast<size_t>(c.rows * c.n), 1);
    test::expect_everywhere(ops::softmax_rows(c.n, c.block, c.threads),
                            ops::rows_grid(c.rows, c.block, c.threads),
                            {bytes(x), test::poisoned(DType::f32, x.size())}, 1,
                            bytes(oracle::softmax_rows(c.n, x, kiln_exp)));
}

TEST_P(UserRows, LayerNormMatchesOracleEverywhere) {
    const RowCase c = GetParam();
    const auto x = random_floats(static_cast<size_t>(c.rows * c.n), 2);
    const auto g = random_floats(static_cast<size_t>(c.n), 3, 2.0f);
    const auto b = random_floats(static_cast<size_t>(c.n), 4, 1.0f);
    const float eps = 1e-5f;
    test::expect_everywhere(ops::layer_norm_rows(c.n, c.block, c.threads),
                            ops::rows_grid(c.rows, c.block, c.threads),
                            {bytes(x), bytes(g), bytes(b), test::poisoned(DType::f32, x.size())}, 3,
                            bytes(oracle::layer_norm_rows(c.n, x, g, b, eps)), {eps});
}

TEST_P(UserRows, RmsNormMatchesOracleEverywhere) {
    const RowCase c = GetParam();
    const auto x = random_floats(static_cast<size_t>(c.rows * c.n), 5);
    const auto w = random_floats(static_cast<size_t>(c.n), 6, 2.0f);
    const float eps = 1e-6f;
    test::expect_everywhere(ops::rms_norm_rows(c.n, c.block, c.threads),
                            ops::rows_grid(c.rows, c.block, c.threads),
                            {bytes(x), bytes(w), test::poisoned(DType::f32, x.size())}, 2,
                            bytes(oracle::rms_norm_rows(c.n, x, w, eps)), {eps});
}

INSTANTIATE_TEST_SUITE_P(Schedules, UserRows, ::testing::ValuesIn(row_cases()),
                         [](const auto& info) {
                             const RowCase& c = info.param;
                             return "rows" + std::to_string(c.rows) + "_n" + std::to_string(c.n) +
                                    "_t" + std::to_string(c.threads);
                         });

TEST(UserKernels, AddSquareMatchesOracleEverywhere) {
    const size_t n = 1000;  // not a multiple of the block
    const auto a = random_floats(n, 7), b = random_floats(n, 8);
    test::expect_everywhere(ops::add_square(64), (n + 63) / 64,
                            {bytes(a), bytes(b), test::poisoned(DType::f32, n)}, 2,
                            bytes(oracle::add_square(a, b)));
}

TEST(UserKernels, RegisterBlockedSgemmMatchesOracleEverywhere) {
    struct Shape {
        int tm, tn, block;
    };
    // Blocks of one and two CPU strips of threads, and one ending in a partial strip.
    for (Shape s : {Shape{4, 2, 32}, Shape{2, 3, 16}, Shape{3, 2, 24}}) {
        const int64_t m = 3 * s.tm, n = 2 * s.tn * s.block, k = 37;
        const auto a = random_floats(static_cast<size_t>(m * k), 9);
        const auto b = random_floats(static_cast<size_t>(k * n), 10);
        std::vector<float> c(static_cast<size_t>(m * n));
        oracle::matmul(m, n, k, a, b, c);
        test::expect_everywhere(ops::sgemm_blocked(k, n, s.tm, s.tn, s.block),
                                ops::sgemm_grid(m, n, s.tm, s.tn, s.block),
                                {bytes(a), bytes(b), test::poisoned(DType::f32, c.size())}, 2,
                                bytes(c));
    }
}

}  // namespace
}  // namespace kiln
