// sort, argsort, topk and boolean_mask: orders against std::stable_sort on the host (ties, NaN,
// -0.0 and +0.0, infinities, integers and bool), masks against a loop, through the graph oracle;
// every device bit-identical to the oracle; and the errors bad arguments get.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::expect_error_naming;
using ::testing::ElementsAre;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

graph::HostTensor oracle(const Tensor& t) {
    return graph::evaluate({t.node()})[0];
}

// The stable order of each row of a [rows, n] matrix: NaN above every number.
std::vector<int64_t> host_order(const std::vector<float>& x, int64_t rows, int64_t n,
                                bool descending) {
    const auto less = [](float p, float q) { return std::isnan(q) ? !std::isnan(p) : p < q; };
    std::vector<int64_t> out;
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> idx(static_cast<size_t>(n));
        std::iota(idx.begin(), idx.end(), 0);
        const float* row = x.data() + r * n;
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
            return descending ? less(row[b], row[a]) : less(row[a], row[b]);
        });
        out.insert(out.end(), idx.begin(), idx.end());
    }
    return out;
}

std::vector<uint32_t> bits(const std::vector<float>& v) {
    std::vector<uint32_t> out;
    for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
    return out;
}

// Rows with ties, both zeros, NaNs and infinities, 11 long (ragged).
const std::vector<float> kRows = {
    3,    -0.0f, 1, 0.0f, kNaN, 3,    -kInf, 2,  kNaN, 1,  -0.0f,  //
    5,    4,     3, 2,    1,    0,    -1,    -2, -3,   -4, -5,     //
    kInf, 7,     7, kNaN, 7,    0.0f, -0.0f, 7,  kInf, -1, 7,      //
};

TEST(SortOps, SortAndArgsortFollowAStableHostSort) {
    const Tensor x = Tensor::from_host(kRows, {3, 11});
    for (bool descending : {false, true}) {
        SCOPED_TRACE(descending ? "descending" : "ascending");
        const auto want = host_order(kRows, 3, 11, descending);
        const Sorted s = sort(x, -1, descending);
        EXPECT_EQ(s.indices.dtype(), DType::i32);
        EXPECT_EQ(oracle(s.indices).i, want);
        EXPECT_EQ(oracle(argsort(x, 1, descending)).i, want);
        std::vector<float> values;
        for (size_t k = 0; k < want.size(); ++k)
            values.push_back(kRows[k / 11 * 11 + static_cast<size_t>(want[k])]);
        EXPECT_EQ(bits(oracle(s.values).f), bits(values));
    }
    // Along the first axis: the columns of the transpose, sorted.
    std::vector<float> t(kRows.size());
    for (size_t r = 0; r < 3; ++r)
        for (size_t c = 0; c < 11; ++c) t[c * 3 + r] = kRows[r * 11 + c];
    const auto want = host_order(t, 11, 3, false);
    const auto got = oracle(argsort(x, 0)).i;
    for (size_t r = 0; r < 3; ++r)
        for (size_t c = 0; c < 11; ++c) EXPECT_EQ(got[r * 11 + c], want[c * 3 + r]);
}

TEST(SortOps, IntegersBoolAndHalfSort) {
    const Tensor i8 = Tensor::from_host<int8_t>({5, -128, 127, 0, -1, 5, -128}, {7});
    EXPECT_THAT(oracle(argsort(i8)).i, ElementsAre(1, 6, 4, 3, 0, 5, 2));
    EXPECT_THAT(oracle(sort(i8, 0, true).values).i, ElementsAre(127, 5, 5, 0, -1, -128, -128));
    const Tensor u8 = Tensor::from_host<uint8_t>({200, 3, 255, 3}, {4});
    EXPECT_THAT(oracle(sort(u8).values).i, ElementsAre(3, 3, 200, 255));
    const Tensor i64 = Tensor::from_host<int64_t>({int64_t{1} << 40, -(int64_t{1} << 40), 0}, {3});
    EXPECT_THAT(oracle(argsort(i64)).i, ElementsAre(1, 2, 0));
    const Tensor b = Tensor::from_host<uint8_t>({1, 0, 1, 0}, {4}).to(DType::boolean);
    EXPECT_THAT(oracle(argsort(b)).i, ElementsAre(1, 3, 0, 2));
    EXPECT_THAT(oracle(argsort(b, 0, true)).i, ElementsAre(0, 2, 1, 3));
    const Tensor h = Tensor::from_host(std::vector<float>{2, kNaN, -1, 2}, {4}).to(DType::f16);
    EXPECT_THAT(oracle(argsort(h)).i, ElementsAre(2, 0, 3, 1));
    // One element and no elements.
    const Sorted one = sort(Tensor::full({}, 4.0));
    EXPECT_TRUE(one.values.shape().empty());
    EXPECT_THAT(oracle(one.indices).i, ElementsAre(0));
    EXPECT_EQ(sort(Tensor::zeros({2, 0})).indices.shape(), (Shape{2, 0}));
}

TEST(SortOps, TopkGivesTheLargestOrSmallestWithIndices) {
    const Tensor x = Tensor::from_host(kRows, {3, 11});
    for (bool largest : {true, false}) {
        const auto order = host_order(kRows, 3, 11, largest);
        const Sorted t = topk(x, 4, -1, largest);
        ASSERT_EQ(t.indices.shape(), (Shape{3, 4}));
        const auto got = oracle(t.indices).i;
        const auto values = oracle(t.values).f;
        for (size_t r = 0; r < 3; ++r)
            for (size_t c = 0; c < 4; ++c) {
                EXPECT_EQ(got[r * 4 + c], order[r * 11 + c]);
                EXPECT_EQ(std::bit_cast<uint32_t>(values[r * 4 + c]),
                          std::bit_cast<uint32_t>(kRows[r * 11 + size_t(order[r * 11 + c])]));
            }
    }
    EXPECT_EQ(topk(x, 0).values.shape(), (Shape{3, 0}));
    EXPECT_THAT(oracle(topk(x, 2, 0).indices).i.size(), 22u);
    const Sorted scalar = topk(Tensor::full({}, 2.0), 1);
    EXPECT_TRUE(scalar.values.shape().empty());
    EXPECT_THAT(oracle(scalar.values).f, ElementsAre(2));
}

TEST(SortOps, BooleanMaskSelectsInRowMajorOrder) {
    std::vector<float> x(3 * 5 * 2);
    std::iota(x.begin(), x.end(), 0.0f);
    const Tensor t = Tensor::from_host(x, {3, 5, 2});
    const std::vector<uint8_t> m = {1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0};
    const Tensor mask = Tensor::from_host(m, {3, 5}).to(DType::boolean);
    const Tensor rows = boolean_mask(t, mask);
    ASSERT_EQ(rows.shape(), (Shape{6, 2}));
    std::vector<float> want;
    for (size_t i = 0; i < m.size(); ++i)
        if (m[i]) want.insert(want.end(), {x[2 * i], x[2 * i + 1]});
    EXPECT_EQ(oracle(rows).f, want);
    // A mask of every axis gives the elements; an all-false one gives none.
    const Tensor odd = Tensor::from_host(x, {30}) % 3.0 == 1.0;
    EXPECT_THAT(oracle(boolean_mask(t.flatten(), odd)).f,
                ElementsAre(1, 4, 7, 10, 13, 16, 19, 22, 25, 28));
    EXPECT_EQ(boolean_mask(t, t < -1.0).shape(), (Shape{0}));
}

TEST(SortOps, BadArgumentsAreErrorsNamingThem) {
    const Tensor x = Tensor::zeros({3, 4});
    expect_error_naming("sort", [&] { sort(x, 2); }, {"axis 2"});
    expect_error_naming("argsort", [&] { argsort(x, -3); }, {"axis -3"});
    expect_error_naming("topk", [&] { topk(x, 5); }, {"k = 5", "0 <= k <= 4"});
    expect_error_naming("topk", [&] { topk(x, -1, 0); }, {"k = -1", "0 <= k <= 3"});
    expect_error_naming("topk", [] { topk(Tensor::full({}, 1.0), 2); }, {"k = 2"});
    expect_error_naming("boolean_mask", [&] { boolean_mask(x, Tensor::zeros({3})); },
                        {"f32", "expected bool"});
    expect_error_naming("boolean_mask", [&] { boolean_mask(x, Tensor::zeros({4}) > 0.0); },
                        {"[4]", "[3, 4]", "leading extents"});
    expect_error_naming("boolean_mask",
                        [&] {
                            boolean_mask(x, Tensor::zeros({3, 4, 1}) > 0.0);
                        },
                        {"[3, 4, 1]"});
}

// Every device gives the oracle's bits (one resolve per device).
TEST(SortOps, EveryDeviceMatchesTheOracle) {
    test::expect_graph_everywhere([](Device& d) {
        std::vector<Tensor> out;
        const Tensor rows = Tensor::from_host(kRows, {3, 11}, d);
        for (bool flag : {false, true}) {
            const Sorted s = sort(rows, -1, flag);
            const Sorted t = topk(rows, 3, 0, flag);
            out.insert(out.end(),
                       {s.values, s.indices, t.values, t.indices, argsort(rows, 0, flag)});
        }
        for (DType t : {DType::u8, DType::i64, DType::bf16}) {
            const Tensor a = test::random_tensor(d, t, {2, 3, 13}, 41);
            out.push_back(argsort(a, 2));
            out.push_back(sort(a, 1, true).values);
        }
        const Tensor r = test::random_tensor(d, DType::f32, {4, 7}, 42);
        out.push_back(boolean_mask(r, r > 0.0));
        out.push_back(boolean_mask(r, r.slice(1, 0, 1).squeeze(1) < 0.0));
        return out;
    });
}

}  // namespace
}  // namespace kiln
