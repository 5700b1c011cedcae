// The ops' entry points reject shapes whose sizes overflow int64 or pass what their kernels
// index, with a kiln::Error naming the values and the limit, before anything is sized from them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "kiln/buffer.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "support/errors.hpp"

using namespace kiln;
using kiln::test::error_of;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kHuge = int64_t{1} << 62;

TEST(RmsNormShape, ProductsBeyondInt64AreErrors) {
    EXPECT_THAT(error_of([] { ops::rms_norm_check_shape(DType::f32, kHuge, 4); }),
                HasSubstr("rows = 4611686018427387904 x n = 4 overflows int64 in elements"));
    // Elements fit, bytes do not.
    EXPECT_THAT(error_of([] { ops::rms_norm_check_shape(DType::f32, kHuge / 4, 2); }),
                HasSubstr("overflows int64 in bytes"));
    EXPECT_THAT(error_of([] { ops::rms_norm_check_shape(DType::f32, 1 << 20, 1 << 20); }),
                HasSubstr("is 1099511627776 elements; expected at most 2147483647"));
    EXPECT_THAT(error_of([] { ops::rms_norm_check_shape(DType::f32, -1, 4); }),
                HasSubstr("rows = -1; expected at least 0"));
    EXPECT_THAT(error_of([] { ops::rms_norm_check_shape(DType::bf16, 3, int64_t{1} << 31); }),
                HasSubstr("n = 2147483648; expected 1 to 2147483647"));
    EXPECT_EQ(ops::rms_norm_check_shape(DType::f16, 3, 5), 15);
}

TEST(RmsNormShape, TheBenchEntryPointChecksRowsTimesN) {
    // rows * n wraps to 0 elements in size_t: x with no elements must not pass for 2^62 rows.
    Device& d = cpu_device();
    Buffer x(d, DType::f32, 0), w(d, DType::f32, 4);
    const auto& schedule = ops::rms_norm_variants().front();
    EXPECT_THAT(error_of([&] { ops::rms_norm_bench(d, x, w, kHuge, 4, 1e-6f, schedule, 1); }),
                HasSubstr("overflows int64"));
    Buffer x8(d, DType::f32, 8);
    EXPECT_THAT(error_of([&] { ops::rms_norm_bench(d, x8, w, 3, 4, 1e-6f, schedule, 1); }),
                HasSubstr("3 rows of n = 4 but x has 8 elements"));
}

TEST(MatvecQ8Shape, ProductsBeyondInt64AreErrors) {
    EXPECT_THAT(error_of([] { ops::matvec_q8_check_shape(kHuge, 64); }),
                HasSubstr("rows = 4611686018427387904 x k = 64 overflows int64"));
    // k alone: k/32*34 bytes a row overflows.
    EXPECT_THAT(error_of([] { ops::matvec_q8_check_shape(1, INT64_MAX - 63); }),
                HasSubstr("overflows int64"));
    EXPECT_THAT(error_of([] { ops::matvec_q8_check_shape(2, kHuge); }),
                HasSubstr("overflows int64"));
    EXPECT_THAT(error_of([] { ops::matvec_q8_check_shape(1 << 20, 4096); }),
                HasSubstr("is 4563402752 bytes of Q8_0; the kernel indexes at most 2147483647"));
    EXPECT_EQ(ops::matvec_q8_check_shape(3, 128), 3 * 4 * 34);
}

TEST(MatvecQ8Shape, EveryEntryPointChecks) {
    Device& d = cpu_device();
    Buffer w(d, DType::u8, 68), x(d, DType::u8, 68);
    const auto& schedule = ops::matvec_q8_variants().front().schedule;
    EXPECT_THAT(error_of([&] { ops::matvec_q8_bench(d, w, x, kHuge, 64, schedule, 1); }),
                HasSubstr("overflows int64"));
    EXPECT_THAT(error_of([&] { ops::matvec_q8_tuned(d, w, x, kHuge, 64); }),
                HasSubstr("overflows int64"));
    EXPECT_THAT(error_of([&] { ops::matvec_q8(d, w, x, 1, INT64_MAX - 63); }),
                HasSubstr("overflows int64"));
}

}  // namespace
