// CUDA without a GPU: every conformance kernel's CUDA C, compiled by NVRTC for sm_90.
#include <gtest/gtest.h>

#include "ir/print.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "ops/test_kernels.hpp"
#include "runtime/cuda/nvrtc.hpp"

using namespace kiln;

namespace {

std::vector<ir::Kernel> every_test_kernel() {
    std::vector<ir::Kernel> ks;
    for (DType t : all_dtypes) {
        ks.push_back(ops::elementwise_mix(t, 64, 1));
        ks.push_back(ops::elementwise_mix(t, 128, 4));
        ks.push_back(ops::block_reverse(t, 64));
        for (DType to : all_dtypes)
            if (to != t) ks.push_back(ops::cast_kernel(t, to, 128));
    }
    for (int threads : {1, 4, 32})
        ks.push_back(
            ops::row_fold(DType::f32, 1000, Fold::sum().lanes(32).chunk(4).threads(threads), 64));
    ks.push_back(ops::row_fold(DType::f32, 4099, Fold::sum().lanes(256).threads(256), 256));
    ks.push_back(ops::row_fold(DType::f16, 100, Fold::sum().lanes(32).chunk(2).threads(32), 64));
    ks.push_back(ops::row_fold(DType::i64, 100, Fold::max().lanes(8).threads(2), 32));
    ks.push_back(ops::row_fold(DType::u8, 100, Fold::min().lanes(4).chunk(4).threads(4), 16));
    ks.push_back(ops::tiled_matmul(17, 29, 8));
    ks.push_back(ops::comptime_poly(7, 64, 3));
    ks.push_back(ops::packed_bytes(64));
    return ks;
}

TEST(CudaCodegen, EveryTestKernelCompilesWithNvrtcForSm90) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    const auto kernels = every_test_kernel();
    const std::string source = generate_source(Backend::cuda, kernels);
    std::string log;
    std::vector<uint8_t> cubin;
    ASSERT_NO_THROW(cubin = cuda::nvrtc_compile(source, "sm_90", &log)) << log;
    ASSERT_GE(cubin.size(), 4u);
    EXPECT_EQ(cubin[0], 0x7f);
    EXPECT_EQ(cubin[1], 'E');
}

TEST(CudaCodegen, WarpFoldsUseShufflesAndBlockFoldsUseSharedMemory) {
    const auto warp =
        ops::row_fold(DType::f32, 1000, Fold::sum().lanes(32).chunk(4).threads(32), 64);
    const auto block = ops::row_fold(DType::f32, 1000, Fold::sum().lanes(256).threads(256), 256);
    const std::string w = generate_source(Backend::cuda, std::vector{warp});
    const std::string b = generate_source(Backend::cuda, std::vector{block});
    EXPECT_NE(w.find("__shfl_xor_sync"), std::string::npos);
    EXPECT_EQ(w.find("__syncthreads"), std::string::npos);
    EXPECT_NE(b.find("__syncthreads"), std::string::npos);
    // A block fold: one barrier to publish the lanes, one after the first warp has combined the
    // levels down to the warp and shuffled, one before the exchange tile is reused.
    size_t barriers = 0;
    for (size_t at = b.find("__syncthreads();"); at != std::string::npos;
         at = b.find("__syncthreads();", at + 1))
        ++barriers;
    EXPECT_EQ(barriers, 3u);
    // OpenCL has no shuffles: the same warp fold goes through local memory and barriers.
    const std::string o = generate_source(Backend::opencl, std::vector{warp});
    EXPECT_NE(o.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
}

TEST(CudaCodegen, WarpBarriersSyncTheWarpOnCudaAndTheBlockElsewhere) {
    KernelBuilder k("warp_sync", 64);
    auto y = k.output("y", DType::i32);
    auto tile = k.shared(DType::i32, 64);
    tile[k.thread_index()] = k.thread_index();
    k.warp_barrier();
    y[k.absolute_pos()] = tile[k.thread_index() ^ 1];
    const auto kernel = k.finish();
    EXPECT_NE(ir::print(kernel).find("barrier warp"), std::string::npos);
    const std::string cuda = generate_source(Backend::cuda, std::vector{kernel});
    EXPECT_NE(cuda.find("__syncwarp();"), std::string::npos);
    EXPECT_EQ(cuda.find("__syncthreads"), std::string::npos);
    const std::string opencl = generate_source(Backend::opencl, std::vector{kernel});
    EXPECT_NE(opencl.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
}

}  // namespace
