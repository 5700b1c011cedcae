// Tensor ops composed of other graph ops (clamp, minimum/maximum with a number, floor_divide and
// remainder, eye, linspace, tril/triu, one_hot, logsumexp, std, argmax/argmin over every element,
// stack, split, chunk, the *_like forms, cumsum, cumprod, einsum): values against hand-computed
// ones through the graph oracle (no kernels compiled), every device bit-identical to the oracle,
// and the errors bad arguments get.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::expect_error_naming;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

// The oracle's values of t (no kernel is compiled).
graph::HostTensor oracle(const Tensor& t) {
    return graph::evaluate({t.node()})[0];
}
std::vector<float> floats(const Tensor& t) {
    return oracle(t).f;
}
std::vector<int64_t> ints(const Tensor& t) {
    return oracle(t).i;
}

// x[i] along the first axis.
Tensor at(const Tensor& x, int64_t i) {
    return x.slice(0, i, i + 1).squeeze(0);
}

template <typename T>
Tensor host(std::vector<T> values, const Shape& shape) {
    return Tensor::from_host(values, shape);
}

// Python's // and %, all four sign pairs, a zero divisor and MIN // -1.
TEST(CompositeOps, FloorDivideAndRemainderOfIntegersFollowPython) {
    const Tensor a = host<int32_t>({7, -7, 7, -7, 0, 5, -5, INT32_MIN, 6, -6}, {10});
    const Tensor b = host<int32_t>({2, 2, -2, -2, 3, 0, 0, -1, 3, 4}, {10});
    EXPECT_THAT(ints(floor_divide(a, b)), ElementsAre(3, -4, -4, 3, 0, 0, 0, INT32_MIN, 2, -2));
    EXPECT_THAT(ints(a % b), ElementsAre(1, 1, -1, -1, 0, 5, -5, 0, 0, 2));
    EXPECT_THAT(ints(remainder(a, 3.0)), ElementsAre(1, 2, 1, 2, 0, 2, 1, 1, 0, 0));
    EXPECT_THAT(ints(floor_divide(-9.0, b)), ElementsAre(-5, -5, 4, 4, -3, 0, 0, 9, -3, -3));
    const Tensor i8 = host<int8_t>({-128, 127, -1}, {3});
    EXPECT_THAT(ints(floor_divide(i8, 10.0)), ElementsAre(-13, 12, -1));
    EXPECT_THAT(ints(i8 % 10.0), ElementsAre(2, 7, 9));
    const Tensor u8 = host<uint8_t>({255, 7, 0}, {3});
    EXPECT_THAT(ints(floor_divide(u8, 2.0)), ElementsAre(127, 3, 0));
    EXPECT_THAT(ints(u8 % host<uint8_t>({16, 0, 5}, {3})), ElementsAre(15, 7, 0));
}

TEST(CompositeOps, FloorDivideAndRemainderOfFloats) {
    const Tensor a = host<float>({7.5f, -7.5f, 7.5f, -7.5f, 1, -1, 6}, {7});
    const Tensor b = host<float>({2, 2, -2, -2, 0, 0, 3}, {7});
    const auto q = floats(floor_divide(a, b));
    EXPECT_THAT(std::vector<float>(q.begin(), q.begin() + 6),
                ElementsAre(3, -4, -4, 3, kInf, -kInf));
    EXPECT_EQ(q[6], 2);
    const auto r = floats(a % b);
    EXPECT_THAT(std::vector<float>(r.begin(), r.begin() + 4),
                ElementsAre(1.5f, 0.5f, -0.5f, -1.5f));
    EXPECT_TRUE(std::isnan(r[4]) && std::isnan(r[5]));
    EXPECT_EQ(r[6], 0);
    // a / b rounded up to an integer: the quotient is still the floor, the remainder exact (as
    // numpy's fmod-based ones).
    const Tensor one = host<float>({1, -1, 3e7f}, {3}), tenth = host<float>({0.1f, 0.1f, 7}, {3});
    EXPECT_THAT(floats(floor_divide(one, tenth)), ElementsAre(9, -10, 4285714));
    EXPECT_THAT(floats(one % tenth), ElementsAre(static_cast<float>(1 - 9 * double{0.1f}),
                                                 static_cast<float>(10 * double{0.1f} - 1), 2));
    // f16 widened to f32 and rounded once.
    const Tensor h = cast(host<float>({-5.25f, 5.25f}, {2}), DType::f16);
    EXPECT_THAT(floats(h % 2.0), ElementsAre(0.75f, 1.25f));
    EXPECT_THAT(floats(floor_divide(h, 2.0)), ElementsAre(-3, 2));
}

TEST(CompositeOps, ClampAndMinimumMaximumWithNumbers) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor x = host<float>({-2, 0.5f, 3, nan}, {4});
    const auto c = floats(clamp(x, 0.0, 1.0));
    EXPECT_THAT(std::vector<float>(c.begin(), c.begin() + 3), ElementsAre(0, 0.5f, 1));
    EXPECT_TRUE(std::isnan(c[3]));
    EXPECT_EQ(floats(clamp(x, 0.0, std::nullopt)).at(2), 3);
    EXPECT_EQ(floats(clamp(x, std::nullopt, 0.0)).at(0), -2);
    EXPECT_THAT(floats(clamp(x.slice(0, 0, 3), 2.0, 1.0)), ElementsAre(1, 1, 1));  // lo > hi: hi
    const Tensor lo = host<float>({0, 1}, {2, 1}), hi = host<float>({2, 2, 2}, {3});
    EXPECT_THAT(floats(clamp(x.slice(0, 0, 3), &lo, &hi)), ElementsAre(0, 0.5f, 2, 1, 1, 2));
    const Tensor n = host<int32_t>({-5, 0, 9}, {3});
    EXPECT_THAT(ints(clamp(n, -1.0, 4.0)), ElementsAre(-1, 0, 4));
    EXPECT_THAT(ints(maximum(n, 1.0)), ElementsAre(1, 1, 9));
    EXPECT_THAT(ints(minimum(n, 1.0)), ElementsAre(-5, 0, 1));
}

TEST(CompositeOps, EyeLinspaceAndTheLikeForms) {
    EXPECT_THAT(ints(Tensor::eye(3, 4, 1, DType::i32)),
                ElementsAre(0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
    EXPECT_THAT(floats(Tensor::eye(2)), ElementsAre(1, 0, 0, 1));
    EXPECT_THAT(ints(Tensor::eye(2, 3, -1, DType::boolean)), ElementsAre(0, 0, 0, 1, 0, 0));
    EXPECT_THAT(floats(Tensor::eye(2, {}, 7)), ElementsAre(0, 0, 0, 0));
    EXPECT_EQ(Tensor::eye(0, 3).shape(), (Shape{0, 3}));

    EXPECT_THAT(floats(Tensor::linspace(0, 1, 5)), ElementsAre(0, 0.25f, 0.5f, 0.75f, 1));
    const float step = 2.0f / 3.0f;  // f32((1 - -1) / 3)
    EXPECT_THAT(floats(Tensor::linspace(-1, 1, 4)), ElementsAre(-1, -1 + step, 1 - step, 1));
    EXPECT_EQ(floats(Tensor::linspace(0, 0.1, 11)).back(), 0.1f);  // the end exact
    EXPECT_THAT(floats(Tensor::linspace(2, 3, 1)), ElementsAre(2));
    EXPECT_EQ(Tensor::linspace(2, 3, 0).shape(), (Shape{0}));
    EXPECT_EQ(Tensor::linspace(0, 1, 3, DType::bf16).dtype(), DType::bf16);

    const Tensor x = Tensor::randn({2, 3}, 1, DType::f16);
    for (const Tensor& t : {zeros_like(x), ones_like(x), full_like(x, 2.5)}) {
        EXPECT_EQ(t.shape(), x.shape());
        EXPECT_EQ(t.dtype(), DType::f16);
    }
    EXPECT_THAT(floats(full_like(x, 2.5)), ::testing::Each(2.5f));
    EXPECT_THAT(ints(ones_like(x, DType::i64)), ElementsAre(1, 1, 1, 1, 1, 1));
}

TEST(CompositeOps, TrilTriuAndOneHot) {
    const Tensor x = Tensor::arange(1, 13, 1, DType::i32).reshape({3, 4});
    EXPECT_THAT(ints(tril(x)), ElementsAre(1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0));
    EXPECT_THAT(ints(triu(x)), ElementsAre(1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12));
    EXPECT_THAT(ints(tril(x, -1)), ElementsAre(0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0));
    EXPECT_THAT(ints(triu(x, 2)), ElementsAre(0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0));
    EXPECT_THAT(ints(tril(x, 100)), ElementsAreArray(ints(x)));
    EXPECT_THAT(ints(triu(x, -100)), ElementsAreArray(ints(x)));
    EXPECT_THAT(ints(tril(x, -100)), ::testing::Each(0));
    const Tensor batch = Tensor::ones({2, 2, 2}, DType::boolean);
    EXPECT_THAT(ints(triu(batch, 1)), ElementsAre(0, 1, 0, 0, 0, 1, 0, 0));

    const Tensor i32 = host<int32_t>({2, 0, 1, 2}, {2, 2});
    const Tensor h = one_hot(i32, 3);
    EXPECT_EQ(h.shape(), (Shape{2, 2, 3}));
    EXPECT_EQ(h.dtype(), DType::i64);
    EXPECT_THAT(ints(h), ElementsAre(0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1));
    EXPECT_THAT(floats(one_hot(host<int64_t>({1, 0}, {2}), 2, DType::f32)),
                ElementsAre(0, 1, 1, 0));
    EXPECT_THAT(test::error_of([&] { oracle(one_hot(i32, 2)); }), HasSubstr("2"));
    EXPECT_THAT(test::error_of([&] { oracle(one_hot(host<int64_t>({-1}, {1}), 4)); }),
                HasSubstr("-1"));
}

TEST(CompositeOps, LogsumexpStdAndArgOverEveryElement) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor x =
        host<float>({1, 2, 3, -kInf, -kInf, -kInf, kInf, 0, 1, nan, 1, 2, 100, 100, -kInf}, {5, 3});
    const auto l = floats(logsumexp(x, {1}));
    EXPECT_NEAR(l[0], 3.4076059644f, 1e-6);
    EXPECT_EQ(l[1], -kInf);
    EXPECT_EQ(l[2], kInf);
    EXPECT_TRUE(std::isnan(l[3]));
    EXPECT_NEAR(l[4], 100.693147f, 1e-4);  // no overflow: e^100 is never formed
    EXPECT_EQ(logsumexp(x, {1}, true).shape(), (Shape{5, 1}));
    EXPECT_EQ(logsumexp(x).shape(), Shape{});

    const Tensor v = host<float>({1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
    const auto s = floats(std_dev(v, {1}));
    EXPECT_NEAR(s[0], 1.2909944f, 1e-6);
    EXPECT_EQ(s[1], 0);
    EXPECT_NEAR(floats(std_dev(v, {1}, 0))[0], 1.1180340f, 1e-6);
    EXPECT_EQ(std_dev(v, {}, 1, true).shape(), (Shape{1, 1}));
    EXPECT_EQ(std_dev(cast(v, DType::bf16)).dtype(), DType::bf16);

    const Tensor m = host<int32_t>({4, 1, 9, 9, 0, 0}, {2, 3});
    EXPECT_THAT(ints(argmax(m)), ElementsAre(2));  // the first of the ties
    EXPECT_THAT(ints(argmin(m)), ElementsAre(4));
    EXPECT_EQ(argmax(m).shape(), Shape{});
    EXPECT_THAT(ints(argmax(host<float>({1, nan, 3}, {3}))), ElementsAre(1));
    EXPECT_THAT(ints(argmin(Tensor::full({}, 5.0))), ElementsAre(0));
}

TEST(CompositeOps, StackSplitAndChunk) {
    const Tensor a = Tensor::arange(0, 6, 1, DType::i32).reshape({2, 3});
    const Tensor b = a * 10.0;
    EXPECT_EQ(stack({a, b}).shape(), (Shape{2, 2, 3}));
    EXPECT_THAT(ints(stack({a, b}, 1)), ElementsAre(0, 1, 2, 0, 10, 20, 3, 4, 5, 30, 40, 50));
    EXPECT_THAT(ints(stack({a, b}, -1)), ElementsAre(0, 0, 1, 10, 2, 20, 3, 30, 4, 40, 5, 50));
    EXPECT_EQ(stack({Tensor::full({}, 1.0)}).shape(), (Shape{1}));

    const Tensor x = Tensor::arange(0, 10, 1, DType::i32).reshape({5, 2});
    const auto by2 = split(x, 2);
    ASSERT_EQ(by2.size(), 3u);
    EXPECT_THAT(ints(by2[2]), ElementsAre(8, 9));
    EXPECT_EQ(by2[1].shape(), (Shape{2, 2}));
    const auto sized = split(x, std::vector<int64_t>{1, 0, 4});
    ASSERT_EQ(sized.size(), 3u);
    EXPECT_EQ(sized[1].shape(), (Shape{0, 2}));
    EXPECT_THAT(ints(sized[2]), ElementsAre(2, 3, 4, 5, 6, 7, 8, 9));
    const auto cols = split(x, std::vector<int64_t>{1, 1}, -1);
    EXPECT_THAT(ints(cols[1]), ElementsAre(1, 3, 5, 7, 9));
    const auto chunks = chunk(x, 3);
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_EQ(chunks[2].shape(), (Shape{1, 2}));
    EXPECT_EQ(chunk(Tensor::zeros({6}), 4).size(), 3u);  // pieces of 2, as torch.chunk
    EXPECT_EQ(chunk(Tensor::zeros({2}), 5).size(), 2u);
}

// Ragged lengths around the block size (ceil(sqrt(n))), along either axis: integer sums are exact.
TEST(CompositeOps, CumsumAndCumprod) {
    for (int64_t n : {1, 2, 3, 5, 10, 17, 50, 101}) {
        SCOPED_TRACE(n);
        const Tensor x = Tensor::arange(1, static_cast<double>(n + 1), 1, DType::i32);
        std::vector<int64_t> want;
        for (int64_t i = 1; i <= n; ++i) want.push_back(i * (i + 1) / 2);
        EXPECT_THAT(ints(cumsum(x, 0)), ElementsAreArray(want));
        const Tensor columns = x.reshape({n, 1}).expand({n, 2});
        const auto down = ints(cumsum(columns, 0));
        EXPECT_EQ(down.back(), want.back());
        EXPECT_EQ(down[down.size() - 2], want.back());
        EXPECT_THAT(ints(cumsum(x.reshape({1, n}).expand({3, n}), -1)).back(), want.back());
    }
    EXPECT_THAT(ints(cumprod(host<int32_t>({1, 2, 3, 4, 5, 0, 7}, {7}), 0)),
                ElementsAre(1, 2, 6, 24, 120, 0, 0));
    const Tensor i8 = host<int8_t>({100, 100, 100}, {3});
    EXPECT_EQ(cumsum(i8, 0).dtype(), DType::i32);
    EXPECT_THAT(ints(cumsum(i8, 0)), ElementsAre(100, 200, 300));
    EXPECT_THAT(ints(cumsum(host<uint8_t>({1, 0, 1, 1}, {4}).to(DType::boolean), 0)),
                ElementsAre(1, 1, 2, 3));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto s = floats(cumsum(host<float>({1, kInf, 1, nan, 1}, {5}), 0));
    EXPECT_THAT(std::vector<float>(s.begin(), s.begin() + 3), ElementsAre(1, kInf, kInf));
    EXPECT_TRUE(std::isnan(s[3]) && std::isnan(s[4]));
    const auto p = floats(cumprod(host<float>({2, 0.5f, -3, kInf, 0}, {5}), 0));
    EXPECT_THAT(std::vector<float>(p.begin(), p.begin() + 4), ElementsAre(2, 1, -3, -kInf));
    EXPECT_TRUE(std::isnan(p[4]));  // inf * 0
    EXPECT_THAT(floats(cumsum(Tensor::full({}, 2.5), -1)), ElementsAre(2.5f));
    EXPECT_EQ(cumsum(Tensor::zeros({0, 3}, DType::u8), 0).shape(), (Shape{0, 3}));
    EXPECT_EQ(cumsum(Tensor::zeros({0, 3}, DType::u8), 0).dtype(), DType::i32);
    const Tensor f = Tensor::rand({3, 40}, 9);
    const auto got = floats(cumsum(f, 1));
    const auto values = floats(f);
    for (size_t r = 0; r < 3; ++r) {
        double acc = 0;
        for (size_t c = 0; c < 40; ++c) {
            acc += values[r * 40 + c];
            EXPECT_NEAR(got[r * 40 + c], acc, 1e-5) << r << " " << c;
        }
    }
}

// Small integer values (in f32 too, so every summation order is exact) against a plain loop.
TEST(CompositeOps, EinsumAgainstLoopsAndMatmul) {
    const Tensor a = Tensor::arange(0, 24, 1, DType::i32).reshape({2, 3, 4}) % 5.0 - 2.0;
    const Tensor b = Tensor::arange(0, 40, 1, DType::i32).reshape({2, 4, 5}) % 7.0 - 3.0;
    const auto av = ints(a), bv = ints(b);
    // "ijk,ikl->jl": i and k summed, one matmul for floats, the broadcast product for integers.
    std::vector<int64_t> want(3 * 5, 0);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k)
                for (int l = 0; l < 5; ++l)
                    want[size_t(j * 5 + l)] +=
                        av[size_t(i * 12 + j * 4 + k)] * bv[size_t(i * 20 + k * 5 + l)];
    const Tensor ints_out = einsum("ijk,ikl->jl", {a, b});
    EXPECT_EQ(ints_out.shape(), (Shape{3, 5}));
    EXPECT_THAT(ints(ints_out), ElementsAreArray(want));
    const Tensor af = cast(a, DType::f32), bf = cast(b, DType::f32);
    const auto f = floats(einsum(" ijk , ikl -> jl ", {af, bf}));
    EXPECT_THAT(std::vector<int64_t>(f.begin(), f.end()), ElementsAreArray(want));
    // A batched matmul's own bits; implicit output; a transpose; sums; an outer product.
    EXPECT_EQ(oracle(einsum("bij,bjk->bik", {af, bf})).f, oracle(matmul(af, bf)).f);
    EXPECT_EQ(oracle(einsum("bij,bjk", {af, bf})).f, f);  // implicit: b summed, as numpy
    EXPECT_EQ(oracle(einsum("bjk,bij->bik", {bf, af})).f, oracle(matmul(af, bf)).f);
    EXPECT_EQ(oracle(einsum("ij,kj->ik", {at(af, 0), at(af, 1)})).f,
              oracle(matmul(at(af, 0), at(af, 1).transpose(0, 1))).f);
    EXPECT_THAT(ints(einsum("ba", {at(a, 0)})), ElementsAreArray(ints(at(a, 0).transpose(0, 1))));
    EXPECT_THAT(ints(einsum("ijk->", {a})), ElementsAre(ints(sum(a))[0]));
    EXPECT_THAT(ints(einsum("ijk->ki", {a})), ElementsAreArray(ints(sum(a, {1}).transpose(0, 1))));
    const Tensor u = host<int32_t>({1, 2}, {2}), v = host<int32_t>({3, 4, 5}, {3});
    EXPECT_THAT(ints(einsum("i,j->ij", {u, v})), ElementsAre(3, 4, 5, 6, 8, 10));
    EXPECT_THAT(ints(einsum("i,j", {u, v})), ElementsAre(3, 4, 5, 6, 8, 10));
    EXPECT_THAT(ints(einsum("i,i->", {v, v})), ElementsAre(50));
    EXPECT_THAT(floats(einsum("i,i", {cast(v, DType::f32), cast(v, DType::f32)})), ElementsAre(50));
    EXPECT_THAT(ints(einsum("i,i,i->i", {v, v, v})), ElementsAre(27, 64, 125));
    // '...': numpy's right-aligned broadcasting of the axes it stands for.
    const Tensor c = cast(Tensor::arange(0, 8, 1, DType::i32).reshape({2, 1, 4, 1}), DType::f32);
    const Tensor d = Tensor::randn({3, 1, 2}, 5);
    EXPECT_EQ(einsum("...ij,...jk->...ik", {c, d}).shape(), (Shape{2, 3, 4, 2}));
    EXPECT_EQ(oracle(einsum("...ij,...jk->...ik", {c, d})).f, oracle(matmul(c, d)).f);
    EXPECT_EQ(oracle(einsum("...ij,...jk", {c, d})).f, oracle(matmul(c, d)).f);
    EXPECT_EQ(oracle(einsum("...ij,jk->...ik", {af, at(bf, 0)})).f,
              oracle(matmul(af, at(bf, 0))).f);
    EXPECT_THAT(ints(einsum("i...->...", {a})), ElementsAreArray(ints(sum(a, {0}))));
    EXPECT_THAT(ints(einsum("...->...", {a})), ElementsAreArray(ints(a)));
    // A label repeated within an operand: its diagonal (numpy's), summed where the output lacks it.
    const Tensor sq = Tensor::arange(0, 9, 1, DType::i32).reshape({3, 3});
    EXPECT_THAT(ints(einsum("ii->i", {sq})), ElementsAre(0, 4, 8));
    EXPECT_THAT(ints(einsum("ii", {sq})), ElementsAre(12));
    EXPECT_THAT(ints(einsum("iij->ij", {Tensor::arange(0, 18, 1, DType::i32).reshape({3, 3, 2})})),
                ElementsAre(0, 1, 8, 9, 16, 17));
    EXPECT_THAT(ints(einsum("jii->j", {Tensor::arange(0, 18, 1, DType::i32).reshape({2, 3, 3})})),
                ElementsAre(12, 39));
    EXPECT_THAT(
        ints(einsum("ijij->ji", {Tensor::arange(0, 16, 1, DType::i32).reshape({2, 2, 2, 2})})),
        ElementsAre(0, 10, 5, 15));
    const Tensor sqf = cast(sq, DType::f32);
    EXPECT_THAT(floats(einsum("ii,ij->j", {sqf, sqf})), ElementsAre(60, 72, 84));
    const Tensor w = at(b, 0).slice(1, 0, 1).squeeze(1);  // [4]
    EXPECT_THAT(ints(einsum("...i,i", {a, w})), ElementsAreArray(ints(sum(a * w, {2}))));
}

TEST(CompositeOps, BadArgumentsAreErrorsNamingThem) {
    const Tensor f = Tensor::zeros({2, 3});
    const Tensor i = Tensor::zeros({3}, DType::i32);
    const Tensor p = Tensor::zeros({3}, DType::boolean);
    expect_error_naming("clamp", [&] { clamp(f, nullptr, nullptr); }, {"expected at least one"});
    expect_error_naming("clamp", [&] { clamp(f, &i, nullptr); }, {"f32", "i32", "one dtype"});
    expect_error_naming("clamp", [&] { clamp(p, 0.0, 1.0); }, {"bool", "numeric"});
    expect_error_naming("clamp", [&] { clamp(i, 0.5, std::nullopt); }, {"0.5", "i32"});
    expect_error_naming("floor_divide", [&] { floor_divide(f, i); }, {"f32", "i32"});
    expect_error_naming("remainder", [&] { p % p; }, {"bool", "numeric"});
    expect_error_naming("minimum", [&] { minimum(i, 2.5); }, {"2.5"});
    expect_error_naming("eye", [] { Tensor::eye(-1); }, {"-1", ">= 0"});
    expect_error_naming("eye", [] { Tensor::eye(2, -3); }, {"-3", ">= 0"});
    expect_error_naming("eye", [] { Tensor::eye(int64_t{1} << 40); }, {"2^56"});
    expect_error_naming("linspace", [] { Tensor::linspace(0, 1, -2); }, {"-2", "steps >= 0"});
    expect_error_naming("linspace", [] { Tensor::linspace(0, INFINITY, 3); }, {"inf", "finite"});
    expect_error_naming("linspace", [] { Tensor::linspace(0, 1, 3, DType::i32); }, {"i32", "f32"});
    expect_error_naming("tril", [&] { tril(i); }, {"[3]", "two axes"});
    expect_error_naming("triu", [&] { triu(Tensor::full({}, 1.0)); }, {"[]", "two axes"});
    expect_error_naming("one_hot", [&] { one_hot(f, 3); }, {"f32", "i32, u32 or i64"});
    expect_error_naming("one_hot", [&] { one_hot(i, 0); }, {"num_classes 0", "at least 1"});
    expect_error_naming("one_hot", [&] { one_hot(i, int64_t{1} << 55); }, {"2^56"});
    EXPECT_EQ(one_hot(i, int64_t{1} << 40).shape(), (Shape{3, int64_t{1} << 40}));  // built lazily
    expect_error_naming("linspace", [] { Tensor::linspace(0, 1, int64_t{1} << 60); }, {"2^56"});
    expect_error_naming("logsumexp", [&] { logsumexp(i); }, {"i32", "f32"});
    expect_error_naming("logsumexp", [&] { logsumexp(f, {2}); }, {"axis"});
    expect_error_naming("logsumexp", [] { logsumexp(Tensor::zeros({2, 0}), {1}); }, {"empty"});
    expect_error_naming("std", [&] { std_dev(i); }, {"i32", "f32"});
    expect_error_naming("std", [&] { std_dev(f, {0}, 2); }, {"correction 2"});
    expect_error_naming("argmax", [] { argmax(Tensor::zeros({0, 3})); }, {"[0, 3]", "no elements"});
    expect_error_naming("argmin", [&] { argmin(p); }, {"bool"});
    expect_error_naming("stack", [] { stack({}); }, {"no tensors"});
    expect_error_naming("stack",
                        [&] {
                            stack({f, f.transpose(0, 1)});
                        },
                        {"tensor 1", "[3, 2]", "[2, 3]", "one shape"});
    expect_error_naming("stack", [&] { stack({f, f}, 3); }, {"axis 3"});
    expect_error_naming("split", [&] { split(f, 0); }, {"size 0", "at least 1"});
    expect_error_naming("split",
                        [&] {
                            split(f, std::vector<int64_t>{1, 3}, 1);
                        },
                        {"[1, 3]", "add up to 3", "axis 1", "[2, 3]"});
    expect_error_naming("split",
                        [&] {
                            split(f, std::vector<int64_t>{-1, 4}, 1);
                        },
                        {"[-1, 4]", ">= 0"});
    expect_error_naming("split", [&] { split(f, 1, 2); }, {"axis 2"});
    expect_error_naming("chunk", [&] { chunk(f, 0); }, {"0 chunks", "at least 1"});
    expect_error_naming("cumprod", [&] { cumprod(p, 0); }, {"bool", "numeric"});
    expect_error_naming("einsum", [&] { einsum("ij,jk->ik", {f}); }, {"2 operands", "got 1"});
    expect_error_naming("einsum", [&] { einsum("ijk", {f}); }, {"3 labels", "rank 2", "[2, 3]"});
    expect_error_naming("einsum",
                        [&] {
                            einsum("ij,ij", {f, f.transpose(0, 1)});
                        },
                        {"label 'i'", "extent 3", "2 before"});
    expect_error_naming("einsum", [&] { einsum("ii", {f}); },
                        {"label 'i'", "extent 3", "2 before"});
    expect_error_naming("einsum", [&] { einsum("..j", {f}); }, {"'.'", "at most one '...'"});
    expect_error_naming("einsum", [&] { einsum("...j...", {f}); }, {"'.'", "at most one '...'"});
    expect_error_naming("einsum", [&] { einsum("...j->j", {f}); }, {"no '...'"});
    expect_error_naming("einsum", [&] { einsum("...ij", {i}); }, {"2 labels", "rank 1"});
    expect_error_naming("einsum",
                        [&] {
                            einsum("...i,...i", {f, Tensor::zeros({3, 3})});
                        },
                        {"'...' axis 0", "extent 3", "2 before"});
    expect_error_naming("einsum", [&] { einsum("ij->ik", {f}); }, {"'k'", "in no operand"});
    expect_error_naming("einsum", [&] { einsum("ij->ii", {f}); },
                        {"'i' twice", "output label once"});
    expect_error_naming("einsum", [&] { einsum("ij,j", {f, i}); }, {"f32", "i32", "one dtype"});
    expect_error_naming("einsum", [&] { einsum("i", {p}); }, {"bool"});
    expect_error_naming("einsum", [] { einsum("", {}); }, {"no operands"});
    expect_error_naming("cumsum", [&] { cumsum(f, 2); }, {"axis 2"});
    expect_error_naming("cumsum", [] { cumsum(Tensor::full({}, 1.0), 1); }, {"axis 1"});
}

// Every device gives the oracle's bits for the composites (one resolve per device).
TEST(CompositeOps, EveryDeviceMatchesTheOracle) {
    test::expect_graph_everywhere([](Device& d) {
        std::vector<Tensor> out;
        for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64, DType::f32, DType::f16}) {
            Tensor a = test::random_tensor(d, t, {3, 1, 17}, 31);
            Tensor b = test::random_tensor(d, t, {5, 1}, 32);
            out.push_back(floor_divide(a, b));
            out.push_back(a % b);
            out.push_back(clamp(a, 1.0, 3.0));
            out.push_back(cumsum(a, 2));
            out.push_back(cumprod(b, 0));
        }
        Tensor x = test::random_tensor(d, DType::f32, {4, 7, 9}, 33);
        Tensor y = test::finite_tensor(d, DType::bf16, {4, 7, 9}, 34);
        const Tensor index = Tensor::arange(0, 21, 1, DType::i64, d).reshape({3, 7}) % 5.0;
        for (Tensor r :
             {logsumexp(x, {2}), logsumexp(y, {0, 2}, true), std_dev(y, {1}), argmax(x), argmin(y),
              tril(x, 1), triu(y, -2), one_hot(index, 5), Tensor::eye(5, 7, 2, DType::f16, d),
              Tensor::linspace(-3, 5, 37, DType::f32, d), stack(split(x, 2, 0), 1),
              stack(chunk(y, 2, 0), -1) * 2.0, einsum("abc,dbc->ad", {x, x}),
              einsum("abc,c->ba", {y, at(at(y, 0), 0)}), einsum("aab->ba", {x.slice(1, 0, 4)})})
            out.push_back(r);
        return out;
    });
}

}  // namespace
}  // namespace kiln
