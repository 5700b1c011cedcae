// copy_to_shared (asynchronous 16-byte copies into shared memory, waited for by the barriers'
// copies_in_flight) and load_matrix (a warp's ldmatrix): a three-stage copy pipeline gives the
// buffer's bytes on every device, at aligned and unaligned source indices; ldmatrix gives each
// lane its words in the interpreter and on CUDA devices with tensor cores, and is refused
// elsewhere; the CUDA C uses cp.async and ldmatrix and compiles for sm_90; bad uses are errors.
#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/interpret.hpp"
#include "ops/matmul/matmul.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using kiln::test::HostBuffer;

namespace {

constexpr int kBlock = 64;
constexpr int kStages = 3;
constexpr int kSteps = 5;  // steps a block copies
constexpr int kGrid = 3;
constexpr int kWords = kBlock * 4;  // u32 words a step copies

// Each block copies kSteps steps of kBlock x 16 bytes of x (from element `off` on) through a
// three-stage pipeline of shared tiles: step i+2 is copied while step i is read. Each thread
// writes the words its neighbour copied, so a word read before it landed shows.
ir::Kernel copy_pipeline(DType t) {
    KernelBuilder k(fmt::format("copy_pipeline_{}", name(t)), kBlock);
    auto x = k.input("x", t);
    auto y = k.output("y", DType::u32);
    Expr off = k.scalar("off", DType::i32);
    auto tile = k.shared(DType::u32, int64_t{kStages} * kWords, "stages");
    const int per_copy = 16 / static_cast<int>(size_of(t));  // elements a thread copies a step
    Var thread = k.let(k.thread_index(), "t");
    Var first = k.let(k.block_index() * kSteps, "first");
    auto issue = [&](const Expr& step) {
        k.copy_to_shared(tile, step % kStages * kWords + thread * 4, x,
                         off + (first + step) * (kBlock * per_copy) + thread * per_copy);
    };
    for (int i = 0; i + 1 < kStages; ++i) {
        issue(i);
        k.barrier(kStages - 1);
    }
    k.for_(0, kSteps, [&](Expr step) {
        k.barrier(kStages - 2);
        k.if_(step + (kStages - 1) < kSteps, [&] { issue(step + (kStages - 1)); });
        Var from = k.let(step % kStages * kWords + (thread + 1) % kBlock * 4, "from");
        for (int j = 0; j < 4; ++j) y[(first + step) * kWords + thread * 4 + j] = tile[from + j];
    });
    return k.finish();
}

HostBuffer pattern(DType t, size_t n) {
    HostBuffer b{t, test::Bytes(n * size_of(t))};
    for (size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = static_cast<uint8_t>(i * 167 + 13);
    return b;
}

TEST(WarpCopies, ThreeStageCopiesGiveTheBuffersBytesOnEveryDevice) {
    for (DType t : {DType::bf16, DType::f32}) {
        const size_t bytes = size_t{kGrid} * kSteps * kWords * 4;
        const size_t n = bytes / size_of(t) + 1;
        const HostBuffer x = pattern(t, n);
        const ir::Kernel kernel = copy_pipeline(t);
        for (int off : {0, 1}) {  // off 1: no source address is 16-byte aligned
            SCOPED_TRACE(fmt::format("{} off {}", name(t), off));
            HostBuffer want{DType::u32, test::Bytes(bytes)};
            for (size_t w = 0; w < bytes / 4; ++w) {
                const size_t step = w / kWords, word = w % kWords;
                const size_t from = step * kWords + (word / 4 + 1) % kBlock * 4 + word % 4;
                std::memcpy(&want.bytes[w * 4], &x.bytes[off * size_of(t) + from * 4], 4);
            }
            const std::vector<HostBuffer> args{x, test::poisoned(DType::u32, bytes / 4)};
            const auto got = interpret(kernel, kGrid, args, {off});
            EXPECT_TRUE(test::identical(got[1], want));
            test::expect_everywhere(kernel, kGrid, args, 1, want, {off});
        }
    }
}

// Each lane gives the row of its ldmatrix at a scattered multiple of 8 words; every matrix
// count's words, plain then transposed, go to y (14 a thread: 4, 2, 1, twice).
ir::Kernel matrix_loads() {
    KernelBuilder k("matrix_loads", kBlock);
    auto x = k.input("x", DType::u32);
    auto y = k.output("y", DType::u32);
    auto tile = k.shared(DType::u32, 512, "tile");
    Var thread = k.let(k.thread_index(), "t");
    for (int r = 0; r < 512 / kBlock; ++r) tile[thread + r * kBlock] = x[thread + r * kBlock];
    k.barrier();
    Var row = k.let(thread / 32 * 256 + (thread % 32 * 7 % 32) * 8, "row");
    int out = 0;
    for (bool trans : {false, true})
        for (int matrices : {4, 2, 1})
            for (const Var& v : k.load_matrix(tile, row, matrices, "m", trans))
                y[thread * 14 + out++] = v;
    return k.finish();
}

HostBuffer matrix_loads_want(const HostBuffer& x) {
    const auto words = x.values<uint32_t>();
    std::vector<uint32_t> want(size_t{kBlock} * 14);
    auto row = [](int t) { return t / 32 * 256 + (t % 32 * 7 % 32) * 8; };
    for (int t = 0; t < kBlock; ++t) {
        const int warp = t / 32 * 32, lane = t % 32;
        // Element (r, c) of matrix j: half c % 2 of word c / 2 of the row lane 8j + r gave.
        auto element = [&](int j, int r, int c) {
            return (words[size_t(row(warp + 8 * j + r) + c / 2)] >> (16 * (c % 2))) & 0xffffu;
        };
        int out = 0;
        for (int matrices : {4, 2, 1})
            for (int j = 0; j < matrices; ++j)
                want[size_t(t * 14 + out++)] = element(j, lane / 4, 2 * (lane % 4)) |
                                               (element(j, lane / 4, 2 * (lane % 4) + 1) << 16);
        for (int matrices : {4, 2, 1})
            for (int j = 0; j < matrices; ++j)
                want[size_t(t * 14 + out++)] = element(j, 2 * (lane % 4), lane / 4) |
                                               (element(j, 2 * (lane % 4) + 1, lane / 4) << 16);
    }
    return HostBuffer::of(want);
}

TEST(WarpCopies, LoadMatrixGivesEachLaneItsWordsWhereTensorCoresAre) {
    const HostBuffer x = test::random_buffer(DType::u32, 512, 3);
    const ir::Kernel kernel = matrix_loads();
    const std::vector<HostBuffer> args{x, test::poisoned(DType::u32, size_t{kBlock} * 14)};
    const HostBuffer want = matrix_loads_want(x);
    EXPECT_TRUE(test::identical(interpret(kernel, 1, args)[1], want));
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        if (d->info().tensor_cores)
            EXPECT_TRUE(test::identical(test::run_on(*d, kernel, 1, args)[1], want));
        else
            test::expect_error_naming(kernel.name, [&] { (void)compile(*d, kernel); },
                                      {"ldmatrix", "expected a CUDA device"});
    }
}

TEST(WarpCopies, CudaWritesCpAsyncAndLdmatrixAndCompilesForSm90) {
    const std::vector kernels{copy_pipeline(DType::bf16), matrix_loads()};
    const std::string cuda = generate_source(Backend::cuda, kernels);
    EXPECT_NE(cuda.find("kiln_copy16(kiln_to, kiln_from);"), std::string::npos);
    EXPECT_NE(cuda.find("kiln_copies_wait(2);"), std::string::npos);
    EXPECT_NE(cuda.find("kiln_copies_wait(1);"), std::string::npos);
    EXPECT_NE(cuda.find("kiln_ldmatrix_x4("), std::string::npos);
    EXPECT_NE(cuda.find("kiln_ldmatrix_x1("), std::string::npos);
    EXPECT_NE(cuda.find("kiln_ldmatrix_trans_x2("), std::string::npos);
    // The CPU and OpenCL store the copied values; their barriers wait for nothing.
    const std::string cpu = generate_source(Backend::cpu, std::vector{kernels[0]});
    EXPECT_EQ(cpu.find("kiln_copy"), std::string::npos);
    std::string why, log;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    EXPECT_NO_THROW(cuda::nvrtc_compile(cuda, "sm_90", &log)) << log;
}

TEST(WarpCopies, BadUsesAreErrors) {
    KernelBuilder k("bad_copies", 64);
    auto x = k.input("x", DType::bf16);
    auto words = k.shared(DType::u32, 256, "words");
    auto floats = k.shared(DType::f32, 256, "floats");
    test::expect_error_naming("bad_copies", [&] { k.barrier(8); },
                              {"8 copy groups in flight", "expected 0 to 7"});
    test::expect_error_naming("bad_copies", [&] { k.copy_to_shared(floats, 0, x, 0); },
                              {"copy_to_shared into f32", "expected a u32 shared tile"});
    test::expect_error_naming("bad_copies", [&] { k.copy_to_shared(words, 0, words, 0); },
                              {"copy_to_shared from u32 shared", "expected a buffer"});
    test::expect_error_naming("bad_copies", [&] { (void)k.load_matrix(words, 0, 3); },
                              {"load_matrix of 3 matrices", "expected 1, 2 or 4"});
    test::expect_error_naming("bad_copies", [&] { (void)k.load_matrix(floats, 0, 4); },
                              {"load_matrix from f32", "expected a u32 shared tile"});
    // A row that is not 16-byte aligned: the interpreter names it; CUDA cannot write it.
    KernelBuilder m("ragged_rows", 32);
    auto y = m.output("y", DType::u32);
    auto tile = m.shared(DType::u32, 256, "tile");
    Var t = m.let(m.thread_index(), "t");
    tile[t] = cast(DType::u32, t);
    m.barrier();
    y[t] = m.load_matrix(tile, t * 6, 1, "v")[0];
    const ir::Kernel ragged = m.finish();
    test::expect_error_naming("ragged_rows",
                              [&] { (void)interpret(ragged, 1, {test::poisoned(DType::u32, 32)}); },
                              {"ldmatrix row at word 6", "expected a multiple of 4"});
    test::expect_error_naming("ragged_rows",
                              [&] { (void)generate_source(Backend::cuda, std::vector{ragged}); },
                              {"ldmatrix row", "expected 16-byte aligned rows"});
}

}  // namespace
