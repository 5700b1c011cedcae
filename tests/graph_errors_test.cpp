// Bad input to the tensor API: a kiln::Error naming the op and the shapes, raised when the op is
// built, with nothing the user owns changed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/tensor.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

Tensor ones(const Shape& s, DType t = DType::f32) {
    return Tensor::ones(s, t, cpu_device());
}

TEST(GraphErrors, ShapesThatDoNotBroadcast) {
    EXPECT_THAT(error_of([] {
                    ones({3, 4}) + ones({5});
                }),
                AllOf(HasSubstr("add"), HasSubstr("[3, 4]"), HasSubstr("[5]")));
    EXPECT_THAT(error_of([] {
                    ones({2, 3}).expand({4, 3, 2});
                }),
                AllOf(HasSubstr("expand"), HasSubstr("[2, 3]"), HasSubstr("[4, 3, 2]")));
}

TEST(GraphErrors, BadAxes) {
    EXPECT_THAT(error_of([] {
                    sum(ones({3, 4}), {2});
                }),
                AllOf(HasSubstr("sum"), HasSubstr("axis 2"), HasSubstr("rank 2")));
    EXPECT_THAT(error_of([] { sum(ones({3, 4}), {1, -1}); }), HasSubstr("twice"));
    EXPECT_THAT(error_of([] { ones({3, 4}).permute({0, 0}); }), HasSubstr("twice"));
    EXPECT_THAT(error_of([] {
                    ones({3, 4}).squeeze(0);
                }),
                AllOf(HasSubstr("squeeze"), HasSubstr("extent 3")));
    EXPECT_THAT(error_of([] { softmax(ones({3, 4}), 5); }), HasSubstr("softmax"));
}

TEST(GraphErrors, DtypeMismatches) {
    EXPECT_THAT(error_of([] { ones({3}) + ones({3}, DType::f16); }),
                AllOf(HasSubstr("add"), HasSubstr("f32"), HasSubstr("f16")));
    EXPECT_THAT(error_of([] { exp(ones({3}, DType::i32)); }),
                AllOf(HasSubstr("exp"), HasSubstr("i32")));
    EXPECT_THAT(error_of([] { where(ones({3}), ones({3}), ones({3})); }),
                AllOf(HasSubstr("where"), HasSubstr("bool")));
    EXPECT_THAT(error_of([] { mean(ones({3}, DType::i32)); }), HasSubstr("mean"));
    EXPECT_THAT(error_of([] { ones({3}, DType::u8) + 300.0; }),
                AllOf(HasSubstr("300"), HasSubstr("u8")));
    EXPECT_THAT(error_of([] { index_select(ones({3}), 0, ones({2})); }),
                AllOf(HasSubstr("index_select"), HasSubstr("i32")));
    EXPECT_THAT(error_of([] { ones({3}).to_host<int32_t>(); }), HasSubstr("f32"));
}

TEST(GraphErrors, MixedDevices) {
    if (devices().size() < 2) GTEST_SKIP() << "one device";
    Device& other = *devices()[1];
    EXPECT_THAT(error_of([&] { ones({3}) + Tensor::ones({3}, DType::f32, other); }),
                AllOf(HasSubstr("add"), HasSubstr("different devices")));
}

TEST(GraphErrors, EmptyReductionsAndOverflowingShapes) {
    EXPECT_THAT(error_of([] {
                    max(ones({3, 0}), {1});
                }),
                AllOf(HasSubstr("max"), HasSubstr("empty")));
    EXPECT_THAT(error_of([] { mean(ones({0})); }), HasSubstr("mean"));
    EXPECT_THAT(error_of([] {
                    Tensor::zeros({int64_t{1} << 40, int64_t{1} << 40});
                }),
                AllOf(HasSubstr("full"), HasSubstr("2^56")));
    EXPECT_THAT(error_of([] { ones({4}).reshape({3, -1}); }), HasSubstr("reshape"));
    EXPECT_THAT(error_of([] { ones({4}).reshape({-1, -1}); }), HasSubstr("two -1"));
    EXPECT_THAT(error_of([] {
                    Tensor::from_host(std::vector<float>(5), {2, 3});
                }),
                AllOf(HasSubstr("[2, 3]"), HasSubstr("5")));
}

TEST(GraphErrors, NormalizationOperandsAreChecked) {
    EXPECT_THAT(error_of([] {
                    rms_norm(ones({3, 4}), ones({5}));
                }),
                AllOf(HasSubstr("rms_norm"), HasSubstr("[5]"), HasSubstr("[3, 4]")));
    Tensor w = ones({3});
    EXPECT_THAT(error_of([&] {
                    layer_norm(ones({2, 4}), 1, &w);
                }),
                AllOf(HasSubstr("layer_norm"), HasSubstr("weight")));
    EXPECT_THAT(error_of([] { variance(ones({1, 3}), {0}); }), HasSubstr("variance"));
}

TEST(GraphErrors, AnIndexOutOfRangeIsAnErrorAtResolveAndLeavesTheInputsAlone) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        std::vector<float> data{1, 2, 3, 4, 5, 6};
        Tensor x = Tensor::from_host(data, {3, 2}, *d);
        std::vector<int32_t> bad{0, 3, 1};
        Tensor idx = Tensor::from_host(bad, {3}, *d);
        Tensor y = index_select(x, 0, idx);
        EXPECT_THAT(error_of([&] { y.resolve(); }),
                    AllOf(HasSubstr("index_select"), HasSubstr("index 3"), HasSubstr("position 1"),
                          HasSubstr("3 elements")));
        std::vector<int32_t> scatter{0, 1, -1, 0, 2, 1};
        Tensor sidx = Tensor::from_host(scatter, {3, 2}, *d);
        Tensor z = scatter_add(x, 0, sidx, x);
        EXPECT_THAT(error_of([&] { z.resolve(); }),
                    AllOf(HasSubstr("scatter_add"), HasSubstr("index -1")));
        EXPECT_EQ(x.to_host<float>(), data);
        // The device is still usable.
        EXPECT_EQ((x + 1.0).to_host<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
    }
}

}  // namespace
}  // namespace kiln
