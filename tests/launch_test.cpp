// Launch checks and compile failures: wrong dtype, count, size, aliasing, device; a compiler
// error carries the compiler's diagnostics and the path of the saved source.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "support/errors.hpp"

using namespace kiln;
using kiln::test::error_of;
using ::testing::HasSubstr;

namespace {

ir::Kernel axpy() {
    KernelBuilder k("axpy", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.inout("y", DType::f32);
    Expr a = k.scalar("a", DType::f32);
    k.require(x.len() == y.len(), "x and y have the same length");
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = a * x[i] + y[i]; });
    return k.finish();
}

TEST(Launch, ChecksEveryArgument) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto kernel = compile(*d, axpy());
        Buffer x(*d, DType::f32, 100), y(*d, DType::f32, 100), yi(*d, DType::i32, 100),
            short_y(*d, DType::f32, 99);
        x.fill(2.0);
        y.fill(1.0);
        kernel->launch(2, {x, y, 3.0f});
        EXPECT_EQ(y.download<float>()[99], 7.0f);
        EXPECT_THAT(error_of([&] { kernel->launch(2, {x, y}); }), HasSubstr("takes 3 arguments"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {x, yi, 3.0f});
                    }),
                    HasSubstr("buffer 'y' must hold f32; got a i32"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {x, y, true});
                    }),
                    HasSubstr("scalar 'a' must be f32; got bool"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {x, y, 16777217});
                    }),
                    HasSubstr("scalar 'a' is f32; the argument 16777217 (an i32) is not exactly"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {x, short_y, 3.0f});
                    }),
                    HasSubstr("requirement: x and y have the same length"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {x, 3.0f, 3.0f});
                    }),
                    HasSubstr("must be a f32 buffer"));
        EXPECT_THAT(error_of([&] {
                        kernel->launch(2, {y, y, 3.0f});
                    }),
                    HasSubstr("same buffer is passed"));
        EXPECT_THAT(error_of([&] { kernel->launch(-1, {x, y, 3.0f}); }), HasSubstr("grid of -1"));
        // Nothing the user owns changed through the failed launches.
        EXPECT_EQ(y.download<float>()[0], 7.0f);
    }
}

// A launch whose buffer lengths and scalars equal the last passing launch's skips evaluating
// the requirements again; any other launch is checked in full, whatever passed before it.
TEST(Launch, RequirementsAreCheckedForEveryNewShapeAndScalar) {
    KernelBuilder k("scale", 64);
    auto y = k.inout("y", DType::f32);
    Expr a = k.scalar("a", DType::f32);
    k.require(a >= 0.0f, "a is not negative");
    k.require(y.len() % 4 == 0, "y holds whole groups of 4");
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = a * y[i]; });
    Device& d = cpu_device();
    auto kernel = compile(d, k.finish());
    Buffer y8(d, DType::f32, 8), y6(d, DType::f32, 6);
    y8.fill(1.0);
    y6.fill(1.0);
    for (int round = 0; round < 2; ++round) {
        kernel->launch(1, {y8, 2.0f});
        EXPECT_THAT(error_of([&] {
                        kernel->launch(1, {y8, -2.0f});
                    }),
                    HasSubstr("a is not negative"));
        kernel->launch(1, {y8, 2.0f});
        EXPECT_THAT(error_of([&] {
                        kernel->launch(1, {y6, 2.0f});
                    }),
                    HasSubstr("whole groups of 4"));
    }
    EXPECT_EQ(y8.download<float>(), std::vector<float>(8, 16.0f));
    EXPECT_EQ(y6.download<float>(), std::vector<float>(6, 1.0f));
}

TEST(Launch, BuffersFromAnotherDeviceAreRejected) {
    if (devices().size() < 2) GTEST_SKIP() << "one device only";
    Device& a = *devices()[0];
    Device& b = *devices()[1];
    auto kernel = compile(a, axpy());
    Buffer x(b, DType::f32, 10), y(a, DType::f32, 10);
    EXPECT_THAT(error_of([&] { kernel->launch(1, {x, y, 1.0f}); }), HasSubstr("lives on"));
}

TEST(Buffers, TransfersCheckDtypeAndSize) {
    for (Device* d : devices()) {
        Buffer b(*d, DType::f32, 10);
        std::vector<float> nine(9);
        std::vector<int32_t> ints(10);
        EXPECT_THAT(error_of([&] { b.upload(nine); }),
                    HasSubstr("upload of 9 elements into a buffer of 10"));
        EXPECT_THAT(error_of([&] { b.upload(ints); }),
                    HasSubstr("upload of i32 data into a f32 buffer"));
        EXPECT_THAT(error_of([&] { (void)b.download<int32_t>(); }), HasSubstr("as i32"));
        EXPECT_THAT(error_of([&] { b.upload_bytes(std::vector<uint8_t>(39)); }),
                    HasSubstr("39 bytes"));
        Buffer i8(*d, DType::i8, 4);
        EXPECT_THAT(error_of([&] { i8.fill(300); }), HasSubstr("not a value of that type"));
        std::vector<float> ten(10, 1.5f);
        b.upload(ten);
        EXPECT_EQ(b.download<float>(), ten);
    }
}

TEST(CompileFailure, CarriesDiagnosticsAndTheSavedSourcePath) {
    // A real compiler given a flag it rejects: its own diagnostics must reach the user.
    const auto dir = std::filesystem::temp_directory_path() / "kiln-compile-failure-test";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto wrapper = dir / "broken-cxx";
    std::ofstream(wrapper) << "#!/bin/sh\nexec c++ -fkiln-no-such-flag \"$@\"\n";
    std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
    setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
    runtime::cpu::CpuDeviceOptions options;
    options.compiler = wrapper.string();
    runtime::cpu::CpuDevice device(options);
    const auto msg = error_of([&] { compile(device, axpy()); });
    unsetenv("KILN_CACHE_DIR");
    EXPECT_THAT(msg, HasSubstr("kernel axpy failed to compile"));
    EXPECT_THAT(msg, HasSubstr("kiln-no-such-flag"));
    const auto at = msg.find("source saved at ");
    ASSERT_NE(at, std::string::npos) << msg;
    const std::string path = msg.substr(at + 16);
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    std::ifstream in(path);
    const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(saved, HasSubstr("axpy_"));
}

}  // namespace
