// The OpenCL C kiln emits for kernels with barriers has no if/else: PoCL 5's work-group compiler
// aborts the process (Kernel.cc: region_entry_barrier != NULL) on an if/else whose arms both end
// in control flow right before a barrier, as matvec_q8's staged variants had. Every shipped
// variant is checked, and the form used instead (two ifs on a volatile copy of the condition)
// computes the if/else's result on every device. Such kernels also read the block index once
// through a volatile (PoCL 5 computed a graph's staged attention wrong when it divided the block
// index by a constant: graph_conv_attention_test there).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "ops/test_kernels.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// Each kernel's text in the OpenCL source of `kernels` (from its "__kernel" to the next).
std::vector<std::string> opencl_kernels(const std::vector<ir::Kernel>& kernels) {
    const std::string src = generate_source(Backend::opencl, kernels);
    std::vector<std::string> out;
    for (size_t at = src.find("__kernel"); at != std::string::npos;) {
        const size_t next = src.find("__kernel", at + 1);
        out.push_back(src.substr(at, next == std::string::npos ? std::string::npos : next - at));
        at = next;
    }
    return out;
}

// Every shipped op variant, and the conformance kernels with barriers.
std::vector<ir::Kernel> shipped_kernels() {
    std::vector<ir::Kernel> ks;
    for (const auto& v : ops::matvec_q8_variants()) ks.push_back(ops::matvec_q8_kernel(v.schedule));
    for (DType t : {DType::f32, DType::f16, DType::bf16})
        for (int64_t n : {7, 100, 1000, 4099})
            for (const auto& s : ops::rms_norm_variants())
                ks.push_back(ops::rms_norm_kernel(t, n, s));
    ks.push_back(ops::tiled_matmul(33, 47, 16));
    ks.push_back(ops::block_reverse(DType::f32, 128));
    ks.push_back(ops::row_fold(DType::f32, 1000, Fold::sum().lanes(64).threads(64), 128));
    return ks;
}

TEST(OpenClCodegen, NoKernelWithBarriersHasAnIfElse) {
    const auto kernels = shipped_kernels();
    size_t with_barriers = 0, split = 0;
    for (const std::string& text : opencl_kernels(kernels)) {
        if (text.find("barrier(") == std::string::npos) continue;
        ++with_barriers;
        const std::string name = text.substr(0, text.find('('));
        EXPECT_THAT(text, Not(HasSubstr("else {"))) << name;
        if (text.find("volatile const int kiln_c") != std::string::npos) ++split;
    }
    EXPECT_GE(with_barriers, 19u);  // every matvec variant folds through a tile
    EXPECT_GE(split, 8u);           // the staged, warp_words and streamed variants' if/else
}

TEST(OpenClCodegen, KernelsWithBarriersReadTheBlockIndexOnceThroughAVolatile) {
    size_t with_barriers = 0, without = 0;
    for (const std::string& text : opencl_kernels(shipped_kernels())) {
        const std::string name = text.substr(0, text.find('('));
        size_t reads = 0;
        for (size_t at = text.find("get_group_id(0)"); at != std::string::npos;
             at = text.find("get_group_id(0)", at + 1))
            ++reads;
        if (text.find("barrier(") == std::string::npos) {
            ++without;
            EXPECT_THAT(text, Not(HasSubstr("kiln_block_read"))) << name;
            continue;
        }
        ++with_barriers;
        EXPECT_THAT(text,
                    HasSubstr("volatile int32_t kiln_block_read = ((int32_t)get_group_id(0));"))
            << name;
        EXPECT_LE(reads, 1u) << name;
    }
    EXPECT_GE(with_barriers, 19u);
    EXPECT_GE(without, 1u);
}

// A kernel with barriers whose if/else arms both end in ifs right before a barrier, as the staged
// matvec variants' did: out[i] = the tile value arm A (x[0] > 0) or arm B wrote for the thread
// mirrored in the block, each arm's last store conditional.
ir::Kernel if_else_before_barrier() {
    KernelBuilder k("arms_end_in_ifs", 64);
    auto x = k.input("x", DType::i32);
    auto out = k.output("out", DType::i32);
    auto tile = k.shared(DType::i32, 64, "tile");
    Expr t = k.thread_index();
    Expr i = k.absolute_pos();
    Var v = k.let(x[min(i, max(x.len() - 1, 0))], "v");
    Var sel = k.let(x[0] > 0, "sel");  // uniform: every thread reads x[0]
    k.if_(
        sel,
        [&] {
            tile[t] = v * 2;
            k.if_(v > 10, [&] { tile[t] = v * 3; });
        },
        [&] {
            tile[t] = v - 1;
            k.if_(v < -10, [&] { tile[t] = v - 5; });
        });
    k.barrier();
    k.if_(i < out.len(), [&] { out[i] = tile[63 - t]; });
    return k.finish();
}

TEST(OpenClCodegen, TheSplitIfElseComputesTheIfElseOnEveryDevice) {
    const ir::Kernel kernel = if_else_before_barrier();
    const auto texts = opencl_kernels({kernel});
    ASSERT_EQ(texts.size(), 1u);
    EXPECT_THAT(texts[0], Not(HasSubstr("else {")));
    EXPECT_THAT(texts[0], HasSubstr("volatile const int kiln_c"));
    for (int32_t first : {5, -5}) {  // x[0] picks the arm
        const int n = 200;
        test::HostBuffer x{DType::i32, test::Bytes(n * 4)};
        std::vector<int32_t> xs(n), want(n);
        for (int j = 0; j < n; ++j) xs[j] = j == 0 ? first : (j * 7919) % 41 - 20;
        std::memcpy(x.bytes.data(), xs.data(), x.bytes.size());
        for (int j = 0; j < n; ++j) {
            const int src = j / 64 * 64 + (63 - j % 64);
            const int32_t v = xs[std::min(src, n - 1)];
            want[j] = first > 0 ? (v > 10 ? v * 3 : v * 2) : (v < -10 ? v - 5 : v - 1);
        }
        test::HostBuffer expected{DType::i32, test::Bytes(n * 4)};
        std::memcpy(expected.bytes.data(), want.data(), expected.bytes.size());
        test::expect_everywhere(kernel, (n + 63) / 64, {x, test::poisoned(DType::i32, n)}, 1,
                                expected);
    }
}

}  // namespace
