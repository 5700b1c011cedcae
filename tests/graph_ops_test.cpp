// Graph ops against the graph oracle on every device: elementwise ops in every dtype they accept,
// broadcasting, reductions, composites, views, indexing and generators.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::expect_graph_everywhere;
using test::finite_tensor;
using test::random_tensor;

constexpr DType kFloats[] = {DType::f32, DType::f16, DType::bf16};
constexpr DType kIntegers[] = {DType::i8, DType::u8, DType::i32, DType::u32};

TEST(GraphElementwise, ArithmeticBroadcastsInEveryNumericDtype) {
    expect_graph_everywhere([](Device& d) {
        std::vector<Tensor> out;
        for (DType t :
             {DType::f32, DType::f16, DType::bf16, DType::i8, DType::u8, DType::i32, DType::u32}) {
            Tensor a = random_tensor(d, t, {3, 1, 37}, 1);
            Tensor b = random_tensor(d, t, {5, 1}, 2);
            Tensor c = random_tensor(d, t, {37}, 3);
            for (Tensor y : {a + b, a - c, a * b * c, b / c, -a, abs(a), minimum(a, b),
                             maximum(b, c), square(c), relu(a), a + 3.0, 2.0 * b})
                out.push_back(y);
        }
        return out;
    });
}

TEST(GraphElementwise, ComparisonsWhereAndLogic) {
    expect_graph_everywhere([](Device& d) {
        Tensor a = random_tensor(d, DType::f32, {4, 33}, 4);
        Tensor b = random_tensor(d, DType::f32, {33}, 5);
        Tensor p = a < b, q = a >= 0.5;
        return std::vector<Tensor>{
            p,      q,      a == b, a != b,         a <= b,           a > b,
            p && q, p || q, !p,     where(p, a, b), where(q, a, 0.0), isnan(a)};
    });
}

TEST(GraphElementwise, CastsBetweenEveryPairOfDtypes) {
    const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i8,
                         DType::u8,  DType::i32, DType::u32,  DType::boolean};
    expect_graph_everywhere([&](Device& d) {
        std::vector<Tensor> out;
        for (DType from : all) {
            Tensor x = random_tensor(d, from, {67}, 6);
            for (DType to : all) out.push_back(cast(x, to));
        }
        return out;
    });
}

TEST(GraphReductions, EveryKindOverEveryAxisSet) {
    for (DType t : {DType::f32, DType::f16, DType::i32, DType::u8}) {
        SCOPED_TRACE(std::string(name(t)));
        expect_graph_everywhere([t](Device& d) {
            Tensor x = random_tensor(d, t, {3, 17, 5}, 7);
            std::vector<Tensor> out{sum(x),      sum(x, {1}), sum(x, {0, 2}, true), max(x, {2}),
                                    min(x, {0}), max(x),      x.sum({-1}, true)};
            if (is_float(t)) out.push_back(mean(x, {1}));
            return out;
        });
    }
}

TEST(GraphReductions, RaggedRowsAndColumns) {
    expect_graph_everywhere([](Device& d) {
        std::vector<Tensor> out;
        for (int64_t n : {1, 3, 33, 257, 1000}) {
            Tensor x = finite_tensor(d, DType::f32, {5, n}, 8);
            for (Tensor y : {sum(x, {1}), max(x, {1}), sum(x, {0}), x.mean({1}, true)})
                out.push_back(y);
        }
        return out;
    });
}

TEST(GraphElementwise, TranscendentalsInEveryFloatDtype) {
    for (DType t : kFloats) {
        SCOPED_TRACE(std::string(name(t)));
        expect_graph_everywhere([t](Device& d) {
            Tensor x = random_tensor(d, t, {257}, 16);
            Tensor y = finite_tensor(d, t, {257}, 17, 3);
            return std::vector<Tensor>{exp(x),
                                       log(x),
                                       sqrt(x),
                                       rsqrt(x),
                                       sin(y),
                                       cos(y),
                                       tanh(x),
                                       erf(x),
                                       sigmoid(x),
                                       gelu(x),
                                       gelu(x, GeluForm::tanh),
                                       silu(x),
                                       recip(x),
                                       floor(x),
                                       ceil(x),
                                       round(x),
                                       pow(abs(y), y),
                                       pow(y, 2.0)};
        });
    }
}

class GraphNormalizations : public ::testing::TestWithParam<DType> {};

TEST_P(GraphNormalizations, OverRaggedRows) {
    const DType t = GetParam();
    expect_graph_everywhere([t](Device& d) {
        std::vector<Tensor> out;
        const std::vector<int64_t> lengths =
            t == DType::f32 ? std::vector<int64_t>{1, 7, 1000} : std::vector<int64_t>{7, 1000};
        for (int64_t n : lengths) {
            Tensor x = finite_tensor(d, t, {3, n}, 18);
            Tensor w = finite_tensor(d, t, {n}, 19);
            Tensor b = finite_tensor(d, t, {n}, 20);
            for (Tensor y : {rms_norm(x, w, 1e-5), layer_norm(x, 1, &w, &b), layer_norm(x),
                             argmax(x, 1), argmin(x, 0, true), softmax(x, -1), log_softmax(x, 1)})
                out.push_back(y);
            if (n > 1) out.push_back(variance(x, {1}));
        }
        return out;
    });
}
INSTANTIATE_TEST_SUITE_P(EveryFloat, GraphNormalizations, ::testing::ValuesIn(kFloats),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(GraphComposites, LayerNormOverSeveralAxesAndSoftmaxOverAColumn) {
    expect_graph_everywhere([](Device& d) {
        Tensor x = finite_tensor(d, DType::f32, {2, 5, 9}, 21);
        return std::vector<Tensor>{layer_norm(x, 2), softmax(x, 1), variance(x, {0, 2}, 0, true),
                                   prod(x * 0.5 + 1.0, {2})};
    });
}

TEST(GraphViews, ReshapePermuteExpandSlicePadConcat) {
    expect_graph_everywhere([](Device& d) {
        Tensor x = random_tensor(d, DType::f32, {4, 6, 5}, 9);
        Tensor y = random_tensor(d, DType::f32, {4, 2, 5}, 10);
        return std::vector<Tensor>{
            x.reshape({24, 5}) + 1.0,
            x.permute({2, 0, 1}) * 2.0,
            x.transpose(0, 2).reshape({-1}),
            x.slice(1, 1, 6, 2) - 1.0,
            x.slice(2, -3, 100).slice(0, 0, 4, 3),
            x.pad({{1, 0}, {0, 2}, {3, 1}}, 7.5),
            concat({x, y, x.slice(1, 0, 1)}, 1),
            x.sum({1}, true).expand({4, 6, 5}) - x,
            x.unsqueeze(0).squeeze(0).flatten(),
        };
    });
}

// index_select (both axes), gather, embedding and scatter_add of a 6 x 7 tensor with indices of
// type I (repeated rows, every row of the gather's index).
template <typename I>
std::vector<Tensor> indexing_ops(Device& d, uint64_t seed) {
    Tensor x = random_tensor(d, DType::f32, {6, 7}, seed);
    std::vector<I> rows{5, 0, 0, 3, 2};
    Tensor idx = Tensor::from_host(rows, {5}, d);
    std::vector<I> g(6 * 7);
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<I>((i * 5 + 3) % 6);
    Tensor gidx = Tensor::from_host(g, {6, 7}, d);
    Tensor src = finite_tensor(d, DType::f32, {6, 7}, seed + 1);
    return std::vector<Tensor>{index_select(x, 0, idx), index_select(x, 1, idx), gather(x, 0, gidx),
                               embedding(x, idx.reshape({5, 1})), scatter_add(x, 0, gidx, src)};
}

TEST(GraphIndexing, IndexSelectGatherEmbeddingScatterAdd) {
    expect_graph_everywhere([](Device& d) { return indexing_ops<int32_t>(d, 11); });
}

// i64 indices (PyTorch's targets and indices) index as i32 ones do; an index past 2^32 is out of
// range, never wrapped to a small one.
TEST(GraphIndexing, I64IndicesAsPyTorchGivesThem) {
    expect_graph_everywhere([](Device& d) { return indexing_ops<int64_t>(d, 21); });
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = random_tensor(*d, DType::f32, {6, 7}, 23);
        const std::vector<int64_t> far{2, (int64_t{1} << 32) + 1};
        const Tensor idx = Tensor::from_host(far, {2}, *d);
        EXPECT_THAT(test::error_of([&] { index_select(x, 0, idx).resolve(); }),
                    ::testing::HasSubstr("4294967297"));
    }
}

TEST(GraphGenerators, SameValuesOnEveryDevice) {
    expect_graph_everywhere([](Device& d) {
        return std::vector<Tensor>{
            Tensor::zeros({3, 5}, DType::f16, d), Tensor::full({7}, 2.5, DType::bf16, d),
            Tensor::arange(0, 10, 0.5, DType::f32, d), Tensor::arange(100, DType::i32, d),
            Tensor::rand({1000}, 42, DType::f32, d)};
    });
}

TEST(GraphPlans, EveryMemberOfSoftmaxLikeGraphsMatches) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {6, 300}, 13);
            Tensor m = max(x, {1}, true);
            Tensor s = sum(x - m, {1}, true);
            return std::vector<Tensor>{(x - m) / s, m};
        },
        true);
}

TEST(GraphPlans, MapAtEightElementsPerThreadWritesEveryElement) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor a = finite_tensor(d, DType::f32, {8 * 1024 + 3}, 14);
            Tensor b = finite_tensor(d, DType::f32, {8 * 1024 + 3}, 15);
            return std::vector<Tensor>{(a + b) * (a + b)};
        },
        true);
}

TEST(GraphPlans, VectorWidthFourReadsAndWritesEveryElement) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor a = finite_tensor(d, DType::f32, {64, 128}, 16).resolve();
            Tensor b = finite_tensor(d, DType::f32, {128}, 17).resolve();
            Tensor h = finite_tensor(d, DType::f16, {64, 128}, 18).resolve();
            Tensor s = a + b;
            return std::vector<Tensor>{s * s, cast(h, DType::f32) - a, a.reshape({128, 64}) * 3.0,
                                       cast(s, DType::f16)};
        },
        true);
}

// Broadcast reads at every map point: runs of kept axes that a block's span (256 or 1024
// elements) divides and ones it does not, a vector group inside a run, one node expanded two ways
// in one group (its wide loads at two bases), and a broadcast last axis.
TEST(GraphPlans, BroadcastReadsEveryElementAtEveryPoint) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {2, 1, 512}, 19).resolve();
            Tensor y = finite_tensor(d, DType::f32, {2, 3, 512}, 20).resolve();
            Tensor z = finite_tensor(d, DType::f32, {1, 1024}, 21).resolve();
            Tensor w = finite_tensor(d, DType::f32, {3, 1024}, 22).resolve();
            Tensor q = finite_tensor(d, DType::f32, {4, 4}, 23).resolve();
            Tensor a = finite_tensor(d, DType::f32, {3, 1, 2, 256}, 24).resolve();
            Tensor b = finite_tensor(d, DType::f32, {3, 4, 2, 256}, 25).resolve();
            Tensor r = finite_tensor(d, DType::f32, {5, 1, 7}, 26).resolve();
            Tensor c = finite_tensor(d, DType::f32, {6, 1}, 27).resolve();
            return std::vector<Tensor>{
                x * y,
                z + w,
                q.reshape({1, 4, 4}) - q.reshape({4, 1, 4}),
                (a * b).reshape({3, 4, 512}) + x.slice(0, 0, 1).reshape({512}),
                r * r.expand({5, 3, 7}),
                c * w.slice(0, 0, 1).expand({6, 1024}),
                (q.reshape({4, 1, 1, 4}) * 2.0).expand({4, 2, 4, 4}) + 1.0};
        },
        true);
}

}  // namespace
}  // namespace kiln
