// Buffer lengths travel as int64 on every backend (src/runtime/ABI.md): len64() reads them whole,
// len() as i32; a buffer past INT32_MAX elements launches unless the kernel reads its i32 length.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"

using namespace kiln;
using kiln::test::error_of;

namespace {

// out[0] = len64(x), out[1] = len(x) widened.
ir::Kernel read_lengths() {
    KernelBuilder k("read_lengths", 1);
    auto x = k.input("x", DType::u8);
    auto out = k.output("out", DType::i64);
    out[0] = x.len64();
    out[1] = cast(DType::i64, x.len());
    return k.finish();
}

// The last `block` elements of b, from the end: b[len64 - 1 - t - back] = t + 1.
ir::Kernel write_tail(int block) {
    KernelBuilder k("write_tail", block);
    auto b = k.inout("b", DType::u8);
    Expr back = k.scalar("back", DType::i64);
    Expr t = k.thread_index();
    b[b.len64() - 1 - cast(DType::i64, t) - back] = cast(DType::u8, t + 1);
    return k.finish();
}

}  // namespace

TEST(Lengths, Len64AndLenReadTheLengthOnEveryDevice) {
    const ir::Kernel kernel = read_lengths();
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
            Buffer x(*d, DType::u8, n), out(*d, DType::i64, 2);
            compile(*d, kernel)->launch(1, {x, out});
            const auto v = out.download<int64_t>();
            EXPECT_EQ(v, (std::vector<int64_t>{static_cast<int64_t>(n), static_cast<int64_t>(n)}));
        }
    }
}

TEST(Lengths, CudaSourceTakesInt64LengthsAndCompilesWithNvrtc) {
    const std::vector<ir::Kernel> kernels{read_lengths(), write_tail(64)};
    const std::string source = generate_source(Backend::cuda, kernels);
    EXPECT_NE(source.find("int64_t p_x_len"), std::string::npos);
    EXPECT_NE(source.find("((int32_t)p_x_len)"), std::string::npos);
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::string log;
    EXPECT_NO_THROW(cuda::nvrtc_compile(source, "sm_90", &log)) << log;
}

// One u8 buffer just over 2^31 elements on the CPU (its pages are touched only where written).
TEST(Lengths, BufferPast2To31ElementsLaunchesWhereTheKernelReadsNoI32Length) {
    Device& cpu = cpu_device();
    const size_t n = (size_t{1} << 31) + 100;
    Buffer big(cpu, DType::u8, n);
    auto tail = [&](size_t bytes) {
        std::vector<uint8_t> v(bytes);
        cpu.read(big.memory(), n - bytes, v.data(), bytes);
        return v;
    };
    for (bool checked : {false, true}) {
        SCOPED_TRACE(checked ? "checked" : "unchecked");
        auto k = compile(cpu, write_tail(64), {.check_bounds = checked});
        ASSERT_NO_THROW(k->launch(1, {big, int64_t{0}}));
        std::vector<uint8_t> want(64);
        for (size_t t = 0; t < 64; ++t) want[63 - t] = static_cast<uint8_t>(t + 1);
        EXPECT_EQ(tail(64), want);
    }
    // Checked: an index past the end, beyond 2^31, is reported whole.
    auto checked = compile(cpu, write_tail(64), {.check_bounds = true});
    EXPECT_EQ(
        error_of([&] {
            checked->launch(1, {big, int64_t{-1}});
        }),
        "kernel write_tail: out-of-bounds store to buffer 'b' at index 2147483748; its length "
        "is 2147483748 (block 0, thread 0). The access was skipped (KILN_CHECK_BOUNDS)");
    // A kernel that reads the i32 length, in its body or in a requirement, is refused.
    Buffer out(cpu, DType::i64, 2);
    EXPECT_EQ(error_of([&] {
                  compile(cpu, read_lengths())->launch(1, {big, out});
              }),
              "kernel read_lengths: buffer 'x' has 2147483748 elements, but the kernel reads its "
              "length as i32 (len()), which holds at most 2147483647; read it with len64()");
    KernelBuilder k("required", 1);
    auto b = k.inout("b", DType::u8);
    k.require(b.len() > 0, "b is not empty");
    b[0] = b[0] + 1;
    const auto required = compile(cpu, k.finish());
    EXPECT_NE(error_of([&] { required->launch(1, {big}); }).find("reads its length as i32"),
              std::string::npos);
}
