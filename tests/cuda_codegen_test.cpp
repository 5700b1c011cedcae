// CUDA without a GPU: every conformance kernel's CUDA C, compiled by NVRTC for sm_90.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <regex>

#include "ir/hash.hpp"
#include "ir/print.hpp"
#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/device.hpp"
#include "kiln/dsl.hpp"
#include "kiln/interpret.hpp"
#include "ops/test_kernels.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/test_kernel_list.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::every_test_kernel;
using ::testing::HasSubstr;

namespace {

size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// Each source compiles with NVRTC for sm_90 (the test is skipped where NVRTC is missing).
// A CUDA source's kernels, without the prelude.
std::string kernel_of(const std::string& source) {
    return source.substr(source.find("__global__"));
}

void expect_nvrtc_compiles(std::initializer_list<std::string> sources) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    for (const std::string& source : sources) {
        std::string log;
        EXPECT_NO_THROW(cuda::nvrtc_compile(source, "sm_90", &log)) << log;
    }
}

// CPU and OpenCL source of two kernels that differ only in a CUDA-only hint are the same but for
// the kernel's hashed name.
void expect_same_source_off_cuda(const ir::Kernel& hinted, const ir::Kernel& plain) {
    const std::regex hashed_name(plain.name + "_[0-9a-f]+");
    for (Backend b : {Backend::cpu, Backend::opencl})
        EXPECT_EQ(std::regex_replace(generate_source(b, std::vector{hinted}), hashed_name, "k"),
                  std::regex_replace(generate_source(b, std::vector{plain}), hashed_name, "k"))
            << name(b);
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
    // A block fold: one barrier to publish the lanes; every warp then finishes the tree with
    // shuffles (no broadcast), and none frees the exchange tile, since no fold follows.
    EXPECT_EQ(count_of(b, "__syncthreads();"), 1u);
    // Each butterfly level shuffles once, outside the select that orders its operands: a
    // shuffle in each arm would be a divergent shuffle to NVCC (branches around every one).
    EXPECT_EQ(count_of(w, "__shfl_xor_sync("), 5u);
    EXPECT_EQ(count_of(b, "__shfl_xor_sync("), 5u);
    EXPECT_EQ(count_of(w, "? (__shfl"), 0u);
    // OpenCL has no shuffles: the same warp fold goes through local memory and barriers.
    const std::string o = generate_source(Backend::opencl, std::vector{warp});
    EXPECT_NE(o.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
}

// Only the kernel's last block fold outside any loop may skip the barrier that frees the
// exchange tile: a fold followed by another, or one inside a loop, keeps it.
TEST(CudaCodegen, OnlyTheLastBlockFoldOutsideLoopsSkipsTheTileBarrier) {
    auto kernel = [](bool in_loop) {
        KernelBuilder k("two_folds", 256);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        const Fold fold = Fold::sum().lanes(256).threads(256);
        auto body = [&] {
            Var a = k.fold(DType::f32, x.len(), fold, [&](Expr i) { return x[i]; });
            Var b = k.fold(DType::f32, x.len(), fold, [&](Expr i) { return x[i] * a; });
            k.if_(k.thread_index() == 0, [&] { y[k.block_index()] = b; });
        };
        if (in_loop)
            k.for_(0, 2, [&](Expr) { body(); });
        else
            body();
        return k.finish();
    };
    const std::string once = generate_source(Backend::cuda, std::vector{kernel(false)});
    EXPECT_EQ(count_of(once, "__syncthreads();"), 3u);  // 2 for the first fold, 1 for the last
    const std::string looped = generate_source(Backend::cuda, std::vector{kernel(true)});
    EXPECT_EQ(count_of(looped, "__syncthreads();"), 4u);
    // Run on every device: with x all ones, a = 1000 and y = 1000 * 1000 exactly. Without the
    // first fold's tile barrier, threads would read the second fold's partials as a.
    for (Device* d : devices()) {
        for (bool in_loop : {false, true}) {
            Buffer x(*d, DType::f32, 1000), y(*d, DType::f32, 1);
            x.upload(std::vector<float>(1000, 1.0f));
            compile(*d, kernel(in_loop))->launch(1, {x, y});
            EXPECT_EQ(y.download<float>()[0], 1e6f) << d->info().id << " in_loop=" << in_loop;
        }
    }
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

TEST(CudaCodegen, StreamingBuffersLoadAndStoreEvictFirstOnCudaOnly) {
    auto build = [](bool streaming) {
        KernelBuilder k("stream_hint", 64);
        auto x = k.input("x", DType::u32);
        auto w = k.input("w", DType::u32);
        auto y = k.output("y", DType::u32);
        if (streaming) {
            k.streaming(x);
            k.streaming(y);
        }
        Var i = k.let(k.absolute_pos() * 4, "i");
        k.if_(i + 3 < x.len(), [&] {
            const std::vector<Var> v = k.load_vector(x, i, 4, "v");
            y[i] = v[0] ^ v[3] ^ x[i + 1] ^ w[i];
        });
        return k.finish();
    };
    const ir::Kernel plain = build(false), streamed = build(true);
    EXPECT_NE(ir::print(streamed).find("buffer x: u32 read streaming"), std::string::npos);
    EXPECT_NE(ir::structural_hash(plain), ir::structural_hash(streamed));
    const std::string cuda = generate_source(Backend::cuda, std::vector{streamed});
    // The 16-byte load (at a multiple of 4: no element-wise fallback) and the scalar load of x;
    // w stays plain.
    EXPECT_EQ(count_of(cuda, "__ldcs("), 2u) << cuda;
    EXPECT_NE(cuda.find("__ldcs((const uint4*)kiln_at)"), std::string::npos);
    EXPECT_EQ(cuda.find("__ldcs(&p_w"), std::string::npos);
    EXPECT_EQ(count_of(cuda, "__stcs(&p_y["), 1u);
    // Elsewhere the hint changes nothing but the kernel's hashed name.
    expect_same_source_off_cuda(streamed, plain);
    EXPECT_EQ(generate_source(Backend::cuda, std::vector{plain}).find("__ldcs"), std::string::npos);
    expect_nvrtc_compiles({cuda});
}

TEST(CudaCodegen, MinimumBlocksPerUnitBoundTheLaunchOnCudaOnly) {
    auto build = [](int min_blocks) {
        KernelBuilder k("occupancy", 128);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        if (min_blocks > 0) k.min_blocks_per_unit(min_blocks);
        Expr i = k.absolute_pos();
        k.if_(i < y.len(), [&] { y[i] = x[i] * 2.0f; });
        return k.finish();
    };
    const ir::Kernel plain = build(0), bounded = build(6);
    EXPECT_EQ(plain.min_blocks_per_unit, 0);
    EXPECT_EQ(bounded.min_blocks_per_unit, 6);
    EXPECT_NE(ir::print(bounded).find("block 128 min_blocks_per_unit 6 {"), std::string::npos);
    EXPECT_EQ(ir::print(plain).find("min_blocks_per_unit"), std::string::npos);
    EXPECT_NE(ir::structural_hash(plain), ir::structural_hash(bounded));
    EXPECT_NE(ir::structural_hash(bounded), ir::structural_hash(build(5)));
    const std::string cuda = generate_source(Backend::cuda, std::vector{bounded});
    EXPECT_NE(cuda.find("__launch_bounds__(128, 6) occupancy_"), std::string::npos) << cuda;
    EXPECT_NE(generate_source(Backend::cuda, std::vector{plain}).find("__launch_bounds__(128) "),
              std::string::npos);
    // Elsewhere the hint changes nothing but the kernel's hashed name.
    expect_same_source_off_cuda(bounded, plain);
    expect_nvrtc_compiles({cuda});
}

TEST(CudaCodegen, VectorAccessesTestAlignmentOnlyWhereItIsNotKnown) {
    // off = 0: the index is a multiple of 4 by construction (ir/divisibility), so the accesses
    // are one wide load and one wide store; a scalar offset leaves a run-time test with an
    // element-wise fallback.
    auto build = [](bool streaming, bool known) {
        KernelBuilder k("vector_access", 64);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        Expr off = k.scalar("off", DType::i32);
        if (streaming) k.streaming(y);
        Var i = k.let(known ? k.absolute_pos() * 4 : k.absolute_pos() * 4 + off, "i");
        k.if_(i + 3 < y.len(), [&] {
            const std::vector<Var> v = k.load_vector(x, i, 4, "v");
            k.store_vector(y, i, {v[3], v[2], v[1], v[0]});
        });
        return generate_source(Backend::cuda, std::vector{k.finish()});
    };
    const std::string known = build(false, true), tested = build(false, false);
    const std::string streamed = build(true, false);
    EXPECT_EQ(count_of(kernel_of(known), "& 15ull"), 0u) << known;
    EXPECT_EQ(count_of(kernel_of(known), "*(const float4*)kiln_at;"), 1u) << known;
    EXPECT_EQ(count_of(kernel_of(known), "*(float4*)kiln_at = kiln_v;"), 1u) << known;
    EXPECT_EQ(count_of(kernel_of(known), "kiln_at["), 0u) << known;
    // One make_float4 evaluates the values once; the aligned path stores it whole, the other
    // element by element.
    EXPECT_EQ(count_of(kernel_of(tested), "& 15ull"), 2u) << tested;
    EXPECT_EQ(count_of(kernel_of(tested), "make_float4("), 1u) << tested;
    EXPECT_EQ(count_of(kernel_of(tested), "*(float4*)kiln_at = kiln_v;"), 1u) << tested;
    EXPECT_EQ(count_of(kernel_of(tested), "kiln_at[3] = kiln_v.w;"), 1u) << tested;
    EXPECT_EQ(count_of(kernel_of(streamed), "__stcs((float4*)kiln_at, kiln_v);"), 1u) << streamed;
    EXPECT_EQ(count_of(kernel_of(streamed), "__stcs(&kiln_at["), 4u) << streamed;
    expect_nvrtc_compiles({known, tested, streamed});
}

TEST(CudaCodegen, TilesAreDeclaredAlignedSoTheirVectorAccessesNeedNoTest) {
    // The tile's index is a multiple of 4 by construction; an offset scalar leaves it unknown.
    auto build = [](bool known) {
        KernelBuilder k("tile_vector_access", 64);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        Expr off = k.scalar("off", DType::i32);
        auto tile = k.shared(DType::f32, 4 * 64 + 4);
        Var t = k.let(known ? k.thread_index() * 4 : k.thread_index() * 4 + off, "t");
        k.store_vector(tile, t, {x[0], x[1], x[2], x[3]});
        k.barrier();
        const std::vector<Var> v = k.load_vector(tile, t, 4, "v");
        k.if_(k.absolute_pos() < y.len(), [&] { y[k.absolute_pos()] = v[0] + v[3]; });
        return generate_source(Backend::cuda, std::vector{k.finish()});
    };
    const std::string known = build(true), tested = build(false);
    const std::string kernel = known.substr(known.find("__global__"));
    EXPECT_EQ(count_of(kernel, "__shared__ __align__(16) float sh0[260];"), 1u) << kernel;
    EXPECT_EQ(count_of(kernel, "& 15ull"), 0u) << kernel;
    EXPECT_EQ(count_of(kernel, "*(float4*)kiln_at = kiln_v;"), 1u) << kernel;
    EXPECT_EQ(count_of(kernel, "*(const float4*)kiln_at;"), 1u) << kernel;
    EXPECT_EQ(count_of(tested.substr(tested.find("__global__")), "& 15ull"), 2u) << tested;
    expect_nvrtc_compiles({known, tested});
}

// 2-byte elements: CUDA loads 8 of them as one uint4 (4 words, element 2w in word w's low
// half), behind a 16-byte alignment test where the index's alignment is not known; OpenCL as one
// ushort8.
TEST(CudaCodegen, TwoByteVectorLoadsAreOneWideLoad) {
    auto build = [](bool known) {
        KernelBuilder k("half_vector", 64);
        auto x = k.input("x", DType::bf16);
        auto y = k.output("y", DType::f32);
        Expr off = k.scalar("off", DType::i32);
        Var i = k.let(known ? k.absolute_pos() * 8 : k.absolute_pos() * 8 + off, "i");
        k.if_(i + 7 < x.len(), [&] {
            const std::vector<Var> v = k.load_vector(x, i, 8, "v");
            y[i] = cast(DType::f32, v[0]) + cast(DType::f32, v[7]);
        });
        return k.finish();
    };
    const ir::Kernel known = build(true), tested = build(false);
    const std::string cuda_known = generate_source(Backend::cuda, std::vector{known});
    const std::string cuda_tested = generate_source(Backend::cuda, std::vector{tested});
    EXPECT_EQ(count_of(kernel_of(cuda_known), "*(const uint4*)kiln_at;"), 1u) << cuda_known;
    EXPECT_EQ(count_of(kernel_of(cuda_known), "& 15ull"), 0u) << cuda_known;
    EXPECT_EQ(count_of(kernel_of(cuda_known), "= (uint16_t)(kiln_v.x >> 0);"), 1u) << cuda_known;
    EXPECT_EQ(count_of(kernel_of(cuda_known), "= (uint16_t)(kiln_v.w >> 16);"), 1u) << cuda_known;
    EXPECT_EQ(count_of(kernel_of(cuda_tested), "& 15ull"), 1u) << cuda_tested;
    EXPECT_EQ(count_of(kernel_of(cuda_tested), "kiln_at[7]"), 1u) << cuda_tested;
    const std::string opencl = generate_source(Backend::opencl, std::vector{tested});
    EXPECT_EQ(count_of(opencl, "const ushort8 kiln_v = vload8(0, kiln_at);"), 1u) << opencl;
    expect_nvrtc_compiles({cuda_known, cuda_tested});
}

TEST(CudaCodegen, OpenClWritesVectorStoresWithVstore) {
    KernelBuilder k("vector_store_cl", 64);
    auto y = k.output("y", DType::u32);
    Var i = k.let(k.absolute_pos() * 2, "i");
    k.if_(i + 1 < y.len(), [&] { k.store_vector(y, i, {Expr(1u), Expr(2u)}); });
    const std::string opencl = generate_source(Backend::opencl, std::vector{k.finish()});
    EXPECT_EQ(count_of(opencl, "vstore2((uint2)("), 1u) << opencl;
}

TEST(CudaCodegen, KeptBuffersLoadEvictLastOnCudaOnly) {
    // Every storage dtype's scalar load, and 8- and 16-byte vector loads, of kept inputs; the
    // output's stores stay plain.
    auto build = [](bool keep) {
        KernelBuilder k("keep_hint", 64);
        std::vector<Memory> ins;
        for (DType t : {DType::f32, DType::u32, DType::i32, DType::f16, DType::u8, DType::i8,
                        DType::i64, DType::boolean})
            ins.push_back(k.input(fmt::format("in_{}", name(t)), t));
        auto y = k.output("y", DType::f32);
        for (const auto& in : ins)
            if (keep) k.keep_cached(in);
        Var i = k.let(k.absolute_pos() * 4, "i");
        k.if_(i + 3 < y.len(), [&] {
            Var acc = k.let(DType::f32, 0.0f, "acc");
            for (const auto& in : ins) acc = acc + cast(DType::f32, in[i]);
            const auto v4 = k.load_vector(ins[0], i, 4, "v4");      // aligned: one 16-byte load
            const auto v2 = k.load_vector(ins[1], i + 2, 2, "v2");  // an 8-byte load
            y[i] = acc + v4[3] + cast(DType::f32, v2[1]);
        });
        return k.finish();
    };
    const ir::Kernel plain = build(false), kept = build(true);
    EXPECT_NE(ir::print(kept).find("buffer in_f32: f32 read keep"), std::string::npos);
    const std::string cuda = generate_source(Backend::cuda, std::vector{kept});
    const std::string kernel = cuda.substr(cuda.find("__global__"));
    EXPECT_EQ(count_of(kernel, "kiln_keep(&p_in_"), 8u) << kernel;
    EXPECT_EQ(count_of(kernel, "kiln_keep((const float4*)kiln_at)"), 1u) << kernel;
    EXPECT_EQ(count_of(kernel, "kiln_keep((const uint2*)kiln_at)"), 1u) << kernel;
    EXPECT_EQ(count_of(kernel, "p_y[") - count_of(kernel, "kiln_keep(&p_y"), 1u) << kernel;
    EXPECT_EQ(generate_source(Backend::cuda, std::vector{plain}).find("kiln_keep(&"),
              std::string::npos);
    expect_same_source_off_cuda(kept, plain);
    expect_nvrtc_compiles({cuda});
}

TEST(CudaCodegen, CacheHintsNeedABufferAndKeepNeedsAnInput) {
    KernelBuilder k("hint_errors", 32);
    auto tile = k.shared(DType::f32, 32);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    auto z = k.inout("z", DType::f32);
    EXPECT_THAT(error_of([&] { k.keep_cached(tile); }),
                HasSubstr("only a buffer parameter can be kept cached"));
    EXPECT_THAT(error_of([&] { k.keep_cached(y); }),
                HasSubstr("buffer 'y' is write; only an input (read only) buffer can be kept"));
    EXPECT_THAT(error_of([&] { k.keep_cached(z); }), HasSubstr("buffer 'z' is read_write"));
    k.streaming(x);
    EXPECT_THAT(error_of([&] { k.keep_cached(x); }),
                HasSubstr("buffer 'x' is already streaming; a buffer takes one cache hint"));
    EXPECT_NO_THROW(k.streaming(x));  // the same hint twice is no conflict
}

TEST(CudaCodegen, OnlyBufferParametersCanBeStreaming) {
    KernelBuilder k("stream_tile", 32);
    auto tile = k.shared(DType::f32, 32);
    try {
        k.streaming(tile);
        FAIL() << "a tile was accepted as streaming";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("only a buffer parameter can be streaming"),
                  std::string::npos);
    }
}

// device_exp2 (the tensor-core class's hardware 2^x) is the ex2 unit on CUDA, std::exp2 in the
// interpreter, refused by the CPU and OpenCL dialects and for anything but f32.
TEST(CudaCodegen, DeviceExp2IsTheEx2UnitOnCudaAndRefusedElsewhere) {
    KernelBuilder k("ex2", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    y[k.thread_index()] = device_exp2(x[k.thread_index()]);
    const std::vector kernels{k.finish()};
    const std::string cuda = generate_source(Backend::cuda, kernels);
    EXPECT_NE(kernel_of(cuda).find("kiln_ex2("), std::string::npos);
    EXPECT_NE(cuda.find("ex2.approx.ftz.f32"), std::string::npos);
    std::string why, log;
    if (cuda::nvrtc_available(&why)) {
        EXPECT_NO_THROW(cuda::nvrtc_compile(cuda, "sm_90", &log)) << log;
    }
    for (Backend backend : {Backend::cpu, Backend::opencl})
        test::expect_error_naming("ex2", [&] { (void)generate_source(backend, kernels); },
                                  {"device_exp2", "expected a CUDA device"});
    std::vector<float> in(64), want(64);
    for (int i = 0; i < 64; ++i) in[size_t(i)] = float(i - 32) * 0.37f;
    for (int i = 0; i < 64; ++i) want[size_t(i)] = std::exp2(in[size_t(i)]);
    const auto out =
        interpret(kernels[0], 1, {HostBuffer::of(in), HostBuffer::of(std::vector<float>(64))});
    EXPECT_EQ(out[1].values<float>(), want);
    KernelBuilder h("ex2_half", 32);
    auto hx = h.input("x", DType::f16);
    test::expect_error_naming("device_exp2", [&] { (void)device_exp2(hx[h.thread_index()]); },
                              {"needs an f32", "got f16"});
}

}  // namespace
