// The OpenCL runtime on a real device (PoCL in CI): discovery, info, memory, compile, load,
// launch and timing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/error.hpp"
#include "runtime/discover.hpp"
#include "runtime/opencl/binary_format.hpp"
#include "runtime/opencl/opencl_device.hpp"

namespace {

using kiln::Device;
using kiln::KernelArg;

// Discovery runs once; the tests share PoCL's device.
struct Discovered {
    std::string reason;
    std::vector<std::unique_ptr<Device>> devices = kiln::runtime::discover_opencl(&reason);
};
Discovered& discovered() {
    static Discovered d;
    return d;
}

// PoCL's device, or the first whose driver names $KILN_TEST_OPENCL_PLATFORM (to run these tests
// on another OpenCL platform by hand; the PoCL-specific info checks then fail).
Device& pocl() {
    const char* wanted = std::getenv("KILN_TEST_OPENCL_PLATFORM");
    std::string platform = wanted ? wanted : "Portable Computing Language";
    for (auto& d : discovered().devices) {
        if (d->info().driver.find(platform) != std::string::npos) return *d;
    }
    throw kiln::Error("no " + platform + " device; OpenCL reason: " + discovered().reason);
}

const char* add_source = R"(
__kernel void add(__global float* a, int a_len, __global const float* b, int b_len) {
    int i = (int)get_global_id(0);
    if (i < a_len && i < b_len) a[i] = a[i] + b[i];
}
__kernel void scalars(__global long* out, int out_len, char c, short s, long l, float f) {
    if (get_global_id(0) == 0 && out_len >= 4) {
        out[0] = c;
        out[1] = s;
        out[2] = l;
        out[3] = (long)as_uint(f);
    }
}
)";

std::unique_ptr<kiln::Module> build_add(Device& dev) {
    return dev.load(dev.compile(add_source));
}

uint64_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

TEST(OpenClRuntime, DiscoverFindsPocl) {
    EXPECT_NO_THROW(pocl()) << discovered().reason;
}

TEST(OpenClRuntime, InfoIsFilled) {
    const auto& info = pocl().info();
    EXPECT_EQ(info.backend, kiln::Backend::opencl);
    EXPECT_FALSE(info.name.empty());
    EXPECT_EQ(info.arch.rfind("CPU OpenCL ", 0), 0u) << info.arch;
    EXPECT_EQ(info.driver.rfind("Portable Computing Language ", 0), 0u) << info.driver;
    EXPECT_EQ(info.compiler.rfind("OpenCL C ", 0), 0u) << info.compiler;
    EXPECT_GT(info.memory_bytes, 0u);
    EXPECT_GT(info.compute_units, 0);
    EXPECT_EQ(info.warp_size, 1);
    EXPECT_FALSE(info.simt);  // PoCL's device is the CPU
    EXPECT_FALSE(info.tensor_cores);
    EXPECT_TRUE(std::regex_match(info.id, std::regex("opencl-pocl-[A-Za-z0-9._-]+"))) << info.id;
}

TEST(OpenClRuntime, ToolchainIdNamesStrictOptions) {
    Device& dev = pocl();
    std::string id = dev.toolchain_id();
    EXPECT_NE(id.find("-cl-std=CL1.2"), std::string::npos) << id;
    EXPECT_NE(id.find("-cl-fp32-correctly-rounded-divide-sqrt"), std::string::npos) << id;
    EXPECT_NE(id.find(dev.info().name), std::string::npos) << id;
    EXPECT_NE(id.find(dev.info().compiler), std::string::npos) << id;
    for (const char* relaxed : {"mad-enable", "fast-relaxed", "denorms-are-zero", "unsafe-math"}) {
        EXPECT_EQ(id.find(relaxed), std::string::npos) << id;
    }
    EXPECT_EQ(dev.source_suffix(), ".cl");
}

// Adds b into a over a ragged n with grid * block > n; the guard must leave a's tail alone.
void check_add(Device& dev, kiln::Module& module) {
    const int n = 1000, tail = 16, block = 64;
    std::vector<float> a(n + tail), b(n);
    for (int i = 0; i < n + tail; ++i) a[i] = static_cast<float>(i) * 0.37f - 11.0f;
    for (int i = 0; i < n; ++i) b[i] = 1.0f / static_cast<float>(i + 3);
    auto da = dev.allocate(a.size() * 4), db = dev.allocate(b.size() * 4);
    dev.write(*da, 0, a.data(), a.size() * 4);
    dev.write(*db, 0, b.data(), b.size() * 4);
    KernelArg args[] = {KernelArg::buffer(*da), KernelArg::value(n, 4), KernelArg::buffer(*db),
                        KernelArg::value(n, 4)};
    int64_t grid = (n + block - 1) / block + 1;
    dev.launch(module, "add", grid, block, args);
    dev.launch(module, "add", 0, block, args);  // a grid of 0 does nothing
    dev.synchronize();
    std::vector<float> out(a.size());
    dev.read(*da, 0, out.data(), out.size() * 4);
    for (int i = 0; i < n; ++i) ASSERT_EQ(float_bits(out[i]), float_bits(a[i] + b[i])) << i;
    for (int i = n; i < n + tail; ++i) ASSERT_EQ(float_bits(out[i]), float_bits(a[i])) << i;
}

TEST(OpenClRuntime, CompileLoadLaunchAddsExactly) {
    Device& dev = pocl();
    auto module = build_add(dev);
    check_add(dev, *module);
    check_add(dev, *module);  // the cached kernel, arguments set again
}

TEST(OpenClRuntime, SourcePayloadRebuildsFromSource) {
    Device& dev = pocl();
    std::string text = add_source;
    auto binary = kiln::runtime::opencl::wrap_payload(
        kiln::runtime::opencl::PayloadKind::source,
        std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    auto module = dev.load(binary);
    check_add(dev, *module);
}

TEST(OpenClRuntime, ScalarArgumentsOfEveryWidth) {
    Device& dev = pocl();
    auto module = build_add(dev);
    auto out = dev.allocate(4 * 8);
    KernelArg args[] = {KernelArg::buffer(*out),
                        KernelArg::value(4, 4),
                        KernelArg::value(static_cast<uint8_t>(-3), 1),
                        KernelArg::value(static_cast<uint16_t>(-1234), 2),
                        KernelArg::value(static_cast<uint64_t>(-123456789012345LL), 8),
                        KernelArg::value(float_bits(-2.5f), 4)};
    dev.launch(*module, "scalars", 1, 1, args);
    int64_t got[4];
    dev.read(*out, 0, got, sizeof(got));
    EXPECT_EQ(got[0], -3);
    EXPECT_EQ(got[1], -1234);
    EXPECT_EQ(got[2], -123456789012345LL);
    EXPECT_EQ(static_cast<uint64_t>(got[3]), float_bits(-2.5f));
}

TEST(OpenClRuntime, FillEveryPatternWidth) {
    Device& dev = pocl();
    for (size_t width : {1, 2, 4, 8}) {
        for (size_t bytes : {size_t{64}, size_t{37}}) {
            const uint8_t pattern[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
            auto m = dev.allocate(bytes);
            dev.fill(*m, pattern, width);
            std::vector<uint8_t> out(bytes);
            dev.read(*m, 0, out.data(), bytes);
            for (size_t i = 0; i < bytes; ++i) {
                ASSERT_EQ(out[i], pattern[i % width]) << "width " << width << " byte " << i;
            }
        }
    }
    auto m = dev.allocate(16);
    const uint8_t p[3] = {};
    EXPECT_THROW(dev.fill(*m, p, 3), kiln::Error);
}

TEST(OpenClRuntime, CopyAndOffsets) {
    Device& dev = pocl();
    std::vector<uint8_t> src(100), dst(100, 0xEE);
    for (int i = 0; i < 100; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    auto a = dev.allocate(100), b = dev.allocate(100);
    dev.write(*a, 0, src.data(), 100);
    dev.write(*b, 0, dst.data(), 100);
    dev.copy(*b, *a, 60);
    dev.write(*b, 90, src.data(), 10);
    std::vector<uint8_t> out(100);
    dev.read(*b, 0, out.data(), 100);
    for (int i = 0; i < 60; ++i) ASSERT_EQ(out[i], src[i]) << i;
    for (int i = 60; i < 90; ++i) ASSERT_EQ(out[i], 0xEE) << i;
    for (int i = 90; i < 100; ++i) ASSERT_EQ(out[i], src[i - 90]) << i;
    uint8_t part[5];
    dev.read(*a, 95, part, 5);
    EXPECT_EQ(part[4], src[99]);
}

TEST(OpenClRuntime, ZeroBytesWork) {
    Device& dev = pocl();
    auto m = dev.allocate(0);
    EXPECT_EQ(m->bytes(), 0u);
    dev.write(*m, 0, nullptr, 0);
    dev.read(*m, 0, nullptr, 0);
    const uint32_t p = 1;
    dev.fill(*m, &p, 4);
    dev.copy(*m, *m, 0);
}

TEST(OpenClRuntime, OutOfRangeAccessThrows) {
    Device& dev = pocl();
    auto m = dev.allocate(64), small = dev.allocate(8);
    std::vector<uint8_t> buf(128);
    EXPECT_THROW(dev.write(*m, 0, buf.data(), 65), kiln::Error);
    EXPECT_THROW(dev.write(*m, 60, buf.data(), 8), kiln::Error);
    EXPECT_THROW(dev.read(*m, 65, buf.data(), 0), kiln::Error);
    EXPECT_THROW(dev.read(*m, SIZE_MAX, buf.data(), 2), kiln::Error);
    EXPECT_THROW(dev.copy(*small, *m, 64), kiln::Error);
    try {
        dev.read(*m, 32, buf.data(), 64);
        FAIL() << "expected kiln::Error";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("64-byte buffer"), std::string::npos) << e.what();
    }
}

TEST(OpenClRuntime, BuildErrorCarriesDiagnostics) {
    Device& dev = pocl();
    try {
        dev.compile("__kernel void broken(__global float* a) { a[0] = undeclared_thing_xyz; }");
        FAIL() << "expected kiln::Error";
    } catch (const kiln::Error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("undeclared_thing_xyz"), std::string::npos) << what;
        EXPECT_NE(what.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << what;
    }
}

TEST(OpenClRuntime, BlockOverDeviceMaximumThrows) {
    Device& dev = pocl();
    auto& cl = dynamic_cast<kiln::runtime::opencl::OpenClDevice&>(dev);
    auto module = build_add(dev);
    auto a = dev.allocate(64);
    KernelArg args[] = {KernelArg::buffer(*a), KernelArg::value(16, 4), KernelArg::buffer(*a),
                        KernelArg::value(16, 4)};
    int block = static_cast<int>(cl.max_work_group_size()) + 1;
    try {
        dev.launch(*module, "add", 1, block, args);
        FAIL() << "expected kiln::Error";
    } catch (const kiln::Error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find(std::to_string(block)), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(cl.max_work_group_size())), std::string::npos) << what;
    }
    EXPECT_THROW(dev.launch(*module, "add", 1, 0, args), kiln::Error);
    EXPECT_THROW(dev.launch(*module, "add", -1, 1, args), kiln::Error);
}

TEST(OpenClRuntime, BadLaunchesThrow) {
    Device& dev = pocl();
    auto module = build_add(dev);
    auto a = dev.allocate(64);
    KernelArg three[] = {KernelArg::buffer(*a), KernelArg::value(16, 4), KernelArg::buffer(*a)};
    EXPECT_THROW(dev.launch(*module, "add", 1, 16, three), kiln::Error);
    KernelArg four[] = {KernelArg::buffer(*a), KernelArg::value(16, 4), KernelArg::buffer(*a),
                        KernelArg::value(16, 4)};
    EXPECT_THROW(dev.launch(*module, "no_such_kernel", 1, 16, four), kiln::Error);
    KernelArg wide[] = {KernelArg::buffer(*a), KernelArg::value(16, 3), KernelArg::buffer(*a),
                        KernelArg::value(16, 4)};
    EXPECT_THROW(dev.launch(*module, "add", 1, 16, wide), kiln::Error);
}

TEST(OpenClRuntime, TimeOfLaunchIsPositive) {
    Device& dev = pocl();
    auto module = build_add(dev);
    const int n = 1 << 16;
    auto a = dev.allocate(n * 4), b = dev.allocate(n * 4);
    const float zero = 0.0f;
    dev.fill(*a, &zero, 4);
    dev.fill(*b, &zero, 4);
    KernelArg args[] = {KernelArg::buffer(*a), KernelArg::value(n, 4), KernelArg::buffer(*b),
                        KernelArg::value(n, 4)};
    double ms = dev.time_ms([&] { dev.launch(*module, "add", n / 64, 64, args); });
    EXPECT_GT(ms, 0.0);
    EXPECT_EQ(dev.time_ms([] {}), 0.0);  // nothing enqueued, nothing timed
}

// Threads share one module (so one cl_kernel per entry) and each launches with its own buffers
// and scalars; each thread's time_ms() sees only its own commands.
TEST(OpenClRuntime, ConcurrentLaunchesOnOneModule) {
    Device& dev = pocl();
    auto module = build_add(dev);
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            const int n = 300 + 97 * t;
            std::vector<float> a(n, static_cast<float>(t)), b(n, 0.5f);
            auto da = dev.allocate(n * 4), db = dev.allocate(n * 4);
            dev.write(*da, 0, a.data(), n * 4);
            dev.write(*db, 0, b.data(), n * 4);
            KernelArg args[] = {KernelArg::buffer(*da), KernelArg::value(n, 4),
                                KernelArg::buffer(*db), KernelArg::value(n, 4)};
            for (int r = 0; r < 20; ++r) {
                double ms =
                    dev.time_ms([&] { dev.launch(*module, "add", (n + 31) / 32, 32, args); });
                if (!(ms > 0.0)) ++bad[t];
            }
            dev.read(*da, 0, a.data(), n * 4);
            for (float v : a) bad[t] += v != static_cast<float>(t) + 10.0f;
        });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(OpenClRuntime, GarbageBinaryThrows) {
    using kiln::runtime::opencl::PayloadKind;
    using kiln::runtime::opencl::wrap_payload;
    Device& dev = pocl();
    std::vector<uint8_t> garbage(256);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 31 + 7);
    EXPECT_THROW(dev.load(garbage), kiln::Error);
    EXPECT_THROW(dev.load({}), kiln::Error);
    // Garbage in an intact envelope reaches the driver, which refuses it (PoCL when creating
    // the program, NVIDIA when building it).
    EXPECT_THROW(dev.load(wrap_payload(PayloadKind::driver_binary, garbage)), kiln::Error);
    // A real binary cut short or with a flipped byte is caught before the driver (PoCL aborts
    // the process on a truncated binary of its own format).
    auto binary = dev.compile(add_source);
    auto cut = binary;
    cut.resize(cut.size() / 2);
    EXPECT_THROW(dev.load(cut), kiln::Error);
    auto flipped = binary;
    flipped[flipped.size() / 2 + 13] ^= 0x40;
    EXPECT_THROW(dev.load(flipped), kiln::Error);
    EXPECT_NO_THROW(dev.load(binary));
}

}  // namespace
