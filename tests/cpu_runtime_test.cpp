// Tests of the CPU runtime (compile, load, launch, memory, toolchain errors) and the device
// registry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/cpu/host_info.hpp"
#include "runtime/discover.hpp"
#include "support/scoped_env.hpp"

namespace kiln::runtime::cpu {
namespace {

using ::testing::HasSubstr;

// Follows src/runtime/ABI.md: (a, n_a, b, n_b, out, n_out, visits, n_visits, scale: f32,
// bias: i8). Blocks of 32 threads walk the data grid-stride; every call adds, so a block range
// run twice or skipped shows in `out` and `visits`.
constexpr const char* add_source = R"(
#include <cstdint>
extern "C" void add_kernel(void* const* args, int64_t block_begin, int64_t block_end,
                           int64_t grid_size) {
    const float* a = *static_cast<float* const*>(args[0]);
    const float* b = *static_cast<float* const*>(args[2]);
    float* out = *static_cast<float* const*>(args[4]);
    int32_t n = *static_cast<const int32_t*>(args[5]);
    int32_t* visits = *static_cast<int32_t* const*>(args[6]);
    float scale = *static_cast<const float*>(args[8]);
    int8_t bias = *static_cast<const int8_t*>(args[9]);
    const int64_t block = 32;
    for (int64_t blk = block_begin; blk < block_end; ++blk) {
        visits[blk] += 1;
        for (int64_t t = 0; t < block; ++t)
            for (int64_t i = blk * block + t; i < n; i += grid_size * block)
                out[i] += a[i] + b[i] * scale + static_cast<float>(bias);
    }
}
)";

// A kernel that writes one constant everywhere, to tell modules apart.
std::string constant_source(int value) {
    return "#include <cstdint>\nextern \"C\" void put(void* const* args, int64_t bb, int64_t be, "
           "int64_t) {\n  int32_t* out = *static_cast<int32_t* const*>(args[0]);\n"
           "  for (int64_t i = bb; i < be; ++i) out[i] = " +
           std::to_string(value) + ";\n}\n";
}

KernelArg length(int32_t n) {
    return KernelArg::value(static_cast<uint32_t>(n), 4);
}
KernelArg f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return KernelArg::value(bits, 4);
}

class CpuRuntime : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        CpuDeviceOptions options;
        options.threads = 3;
        device_ = new CpuDevice(options);
        binary_ = new std::vector<uint8_t>(device_->compile(add_source));
    }
    static void TearDownTestSuite() {
        delete binary_;
        delete device_;
    }

    // Runs add_kernel over n elements with `grid` blocks and checks every element and visit.
    static void run_add(Module& module, int32_t n, int64_t grid, float scale, int8_t bias) {
        CpuDevice& dev = *device_;
        std::vector<float> a(n), b(n), expected(n);
        for (int32_t i = 0; i < n; ++i) {
            a[i] = static_cast<float>(i % 101) * 0.25f;
            b[i] = static_cast<float>(i % 13) - 6.5f;
            expected[i] = a[i] + b[i] * scale + static_cast<float>(bias);
        }
        auto ma = dev.allocate(n * 4), mb = dev.allocate(n * 4), mo = dev.allocate(n * 4);
        auto mv = dev.allocate(grid * 4);
        dev.write(*ma, 0, a.data(), n * 4);
        dev.write(*mb, 0, b.data(), n * 4);
        float zero = 0.0f;
        dev.fill(*mo, &zero, 4);
        int32_t none = 0;
        dev.fill(*mv, &none, 4);
        KernelArg args[] = {KernelArg::buffer(*ma),
                            length(n),
                            KernelArg::buffer(*mb),
                            length(n),
                            KernelArg::buffer(*mo),
                            length(n),
                            KernelArg::buffer(*mv),
                            length(static_cast<int32_t>(grid)),
                            f32(scale),
                            KernelArg::value(static_cast<uint8_t>(bias), 1)};
        dev.launch(module, "add_kernel", grid, 32, args);
        std::vector<float> out(n);
        std::vector<int32_t> visits(grid);
        dev.read(*mo, 0, out.data(), n * 4);
        dev.read(*mv, 0, visits.data(), grid * 4);
        for (int32_t i = 0; i < n; ++i)
            ASSERT_EQ(out[i], expected[i]) << "element " << i << " grid " << grid;
        for (int64_t g = 0; g < grid; ++g) ASSERT_EQ(visits[g], 1) << "block " << g;
    }

    static CpuDevice* device_;
    static std::vector<uint8_t>* binary_;
};
CpuDevice* CpuRuntime::device_ = nullptr;
std::vector<uint8_t>* CpuRuntime::binary_ = nullptr;

TEST_F(CpuRuntime, AddOverRaggedSizeAndManyGridSizes) {
    auto module = device_->load(*binary_);
    for (int64_t grid : {1, 2, 3, 7, 12, 33, 100, 1000}) run_add(*module, 1037, grid, 2.0f, -3);
    run_add(*module, 1, 5, 0.5f, 7);
}

TEST_F(CpuRuntime, EmptyGridRunsNothing) {
    auto module = device_->load(*binary_);
    auto out = device_->allocate(4);
    float sentinel = 42.0f;
    device_->fill(*out, &sentinel, 4);
    KernelArg args[] = {KernelArg::buffer(*out),
                        length(1),
                        KernelArg::buffer(*out),
                        length(1),
                        KernelArg::buffer(*out),
                        length(1),
                        KernelArg::buffer(*out),
                        length(1),
                        f32(1.0f),
                        KernelArg::value(0, 1)};
    device_->launch(*module, "add_kernel", 0, 32, args);
    float got = 0;
    device_->read(*out, 0, &got, 4);
    EXPECT_EQ(got, 42.0f);
    EXPECT_THROW(device_->launch(*module, "add_kernel", -1, 32, args), Error);
    EXPECT_THROW(device_->launch(*module, "add_kernel", 1, 0, args), Error);
    KernelArg bad_scalar[] = {KernelArg::value(1, 3)};
    EXPECT_THROW(device_->launch(*module, "add_kernel", 1, 32, bad_scalar), Error);
}

TEST_F(CpuRuntime, SameKernelFromFourHostThreads) {
    auto module = device_->load(*binary_);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 10; ++rep) {
                run_add(*module, 517 + 64 * t, 3 + t + rep, static_cast<float>(t + 1), int8_t(t));
                if (::testing::Test::HasFailure()) failures++;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(CpuRuntime, CompileErrorCarriesDiagnostics) {
    try {
        device_->compile("extern \"C\" void broken() { undeclared_thing_xyz(1); }\n");
        FAIL() << "expected a compile error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("undeclared_thing_xyz"));
        EXPECT_THAT(e.what(), HasSubstr("-ffp-contract=off"));
        EXPECT_THAT(e.what(), HasSubstr(device_->toolchain().path));
    }
}

TEST_F(CpuRuntime, GarbageBinaryAndUnknownEntry) {
    std::vector<uint8_t> garbage(4096, 0x5a);
    EXPECT_THROW(device_->load(garbage), Error);
    EXPECT_THROW(device_->load(std::span<const uint8_t>()), Error);
    auto module = device_->load(*binary_);
    try {
        KernelArg none[1];
        device_->launch(*module, "no_such_entry", 1, 1, std::span<const KernelArg>(none, 0));
        FAIL() << "expected an unknown-entry error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("no_such_entry"));
    }
}

TEST_F(CpuRuntime, ModulesLoadedTogetherStayDistinct) {
    auto one = device_->compile(constant_source(1));
    auto two = device_->compile(constant_source(2));
    ASSERT_NE(one, two);
    auto out = device_->allocate(16 * 4);
    KernelArg args[] = {KernelArg::buffer(*out), length(16)};
    std::vector<std::unique_ptr<Module>> modules;
    for (int round = 0; round < 3; ++round) {
        modules.push_back(device_->load(one));
        modules.push_back(device_->load(two));
    }
    for (size_t m = 0; m < modules.size(); ++m) {
        device_->launch(*modules[m], "put", 16, 1, args);
        std::vector<int32_t> got(16);
        device_->read(*out, 0, got.data(), 64);
        EXPECT_THAT(got, ::testing::Each(m % 2 == 0 ? 1 : 2)) << "module " << m;
    }
    modules.erase(modules.begin());  // unload one; a later load must not be confused with it
    modules.push_back(device_->load(two));
    device_->launch(*modules.back(), "put", 16, 1, args);
    int32_t first = 0;
    device_->read(*out, 0, &first, 4);
    EXPECT_EQ(first, 2);
}

TEST_F(CpuRuntime, MemoryBoundsFillAndCopy) {
    CpuDevice& dev = *device_;
    auto m = dev.allocate(24);
    EXPECT_EQ(m->bytes(), 24u);
    auto* raw = static_cast<CpuMemory*>(m.get())->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(raw) % 64, 0u);
    // 4 MiB and more (a 1024 x 1024 f32 operand) start on a 2 MiB boundary, for huge pages.
    auto big = dev.allocate(size_t{4} << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(static_cast<CpuMemory*>(big.get())->data()) % (2u << 20),
              0u);
    auto empty = dev.allocate(0);
    EXPECT_EQ(empty->bytes(), 0u);
    uint8_t byte = 0;
    dev.write(*empty, 0, &byte, 0);
    EXPECT_THROW(dev.write(*empty, 0, &byte, 1), Error);

    uint8_t buf[32] = {};
    EXPECT_THROW(dev.write(*m, 20, buf, 5), Error);
    EXPECT_THROW(dev.read(*m, 25, buf, 0), Error);
    EXPECT_THROW(dev.read(*m, SIZE_MAX, buf, 2), Error);
    EXPECT_THROW(dev.write(*m, 8, buf, SIZE_MAX), Error);
    dev.write(*m, 20, buf, 4);

    const uint8_t p1 = 0xab;
    dev.fill(*m, &p1, 1);
    dev.read(*m, 0, buf, 24);
    for (int i = 0; i < 24; ++i) EXPECT_EQ(buf[i], 0xab);
    const uint16_t p2 = 0x1234;
    dev.fill(*m, &p2, 2);
    uint16_t halves[12];
    dev.read(*m, 0, halves, 24);
    for (uint16_t h : halves) EXPECT_EQ(h, 0x1234);
    const uint64_t p8 = 0x0102030405060708ull;
    dev.fill(*m, &p8, 8);
    uint64_t words[3];
    dev.read(*m, 0, words, 24);
    for (uint64_t w : words) EXPECT_EQ(w, p8);
    const uint32_t p4 = 0xdeadbeef;
    dev.fill(*m, &p4, 4);
    uint32_t quads[6];
    dev.read(*m, 0, quads, 24);
    for (uint32_t q : quads) EXPECT_EQ(q, 0xdeadbeefu);
    EXPECT_THROW(dev.fill(*m, &p4, 3), Error);
    auto odd = dev.allocate(6);
    EXPECT_THROW(dev.fill(*odd, &p4, 4), Error);

    auto dst = dev.allocate(16);
    dev.fill(*dst, &p1, 1);
    dev.copy(*dst, *m, 8);
    uint32_t copied[4];
    dev.read(*dst, 0, copied, 16);
    EXPECT_EQ(copied[0], 0xdeadbeefu);
    EXPECT_EQ(copied[1], 0xdeadbeefu);
    EXPECT_EQ(copied[2], 0xababababu);
    EXPECT_THROW(dev.copy(*dst, *m, 20), Error);    // larger than dst
    EXPECT_THROW(dev.copy(*odd, *dst, 10), Error);  // larger than ... dst=odd (6)
    EXPECT_THROW(dev.copy(*m, *odd, 7), Error);     // larger than src
}

// A copy of 1 MiB or more between memories that do not overlap is shared among the pool's
// threads (3 here): every byte arrives, shares that are not a multiple of 64 bytes included; one
// into memory that overlaps its source (host memory the device wraps) is a memmove.
TEST_F(CpuRuntime, LargeCopiesAreSharedAmongThreadsAndOverlappingOnesMove) {
    CpuDevice& dev = *device_;
    const size_t bytes = (size_t{3} << 20) + 13;
    std::vector<uint8_t> values(bytes);
    for (size_t i = 0; i < bytes; ++i) values[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
    auto src = dev.allocate(bytes), dst = dev.allocate(bytes + 7);
    dev.write(*src, 0, values.data(), bytes);
    dev.copy(*dst, *src, bytes);
    std::vector<uint8_t> got(bytes);
    dev.read(*dst, 0, got.data(), bytes);
    EXPECT_EQ(got, values);

    auto host = std::make_shared<std::vector<uint8_t>>(values);
    host->resize(bytes + 4096);
    const auto whole = dev.wrap(reinterpret_cast<uintptr_t>(host->data()), host->size(), host);
    const auto later = dev.wrap(reinterpret_cast<uintptr_t>(host->data() + 4096), bytes, host);
    dev.copy(*later, *whole, bytes);  // forward by 4 KiB onto itself
    EXPECT_TRUE(std::equal(values.begin(), values.end(), host->begin() + 4096));
}

TEST_F(CpuRuntime, InfoAndToolchainId) {
    const DeviceInfo& info = device_->info();
    EXPECT_EQ(info.backend, Backend::cpu);
    EXPECT_EQ(info.compute_units, 3);
    EXPECT_EQ(info.warp_size, 1);
    EXPECT_GT(info.memory_bytes, 0u);
    EXPECT_THAT(info.arch, HasSubstr(device_->toolchain().march));
    EXPECT_NE(device_->toolchain().march, "");
    EXPECT_EQ(info.id.rfind("cpu-", 0), 0u);
    EXPECT_EQ(info.id, sanitize_id(info.id));
    std::string id = device_->toolchain_id();
    EXPECT_THAT(id, HasSubstr("-march=native"));
    EXPECT_THAT(id, HasSubstr("march=" + device_->toolchain().march));
    EXPECT_THAT(id, HasSubstr(device_->toolchain().version_line));
    EXPECT_EQ(device_->source_suffix(), ".cpp");
    double ms = device_->time_ms([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    EXPECT_GE(ms, 1.0);
}

TEST(CpuHostInfo, SanitizeId) {
    EXPECT_EQ(sanitize_id("Intel(R) Xeon(R)  CPU @ 2.1GHz"), "Intel_R_Xeon_R_CPU_2.1GHz");
    EXPECT_EQ(sanitize_id("g++ 12.2.0"), "g_12.2.0");
    EXPECT_EQ(sanitize_id("a-b.c_d"), "a-b.c_d");
}

TEST(CpuToolchain, MissingCompilerGivesClearError) {
    CpuDeviceOptions options;
    options.compiler = "/nonexistent/kiln-cxx";
    options.threads = 1;
    CpuDevice dev(options);
    EXPECT_FALSE(dev.toolchain().usable());
    EXPECT_EQ(dev.info().compiler, "none");
    try {
        dev.compile("int x;");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("no C++ compiler found (set KILN_CXX or install g++)"));
        EXPECT_THAT(e.what(), HasSubstr("/nonexistent/kiln-cxx"));
    }
    EXPECT_THROW(dev.toolchain_id(), Error);
    auto m = dev.allocate(8);  // memory still works without a compiler
    EXPECT_EQ(m->bytes(), 8u);
}

TEST(CpuToolchain, EnvironmentIsHonoured) {
    {
        test::ScopedEnv cxx("KILN_CXX", "/nonexistent/from-env-cxx");
        test::ScopedEnv threads("KILN_CPU_THREADS", "2");
        std::string reason;
        auto found = discover_cpu(&reason);
        ASSERT_EQ(found.size(), 1u) << reason;
        EXPECT_EQ(found[0]->info().compute_units, 2);
        try {
            found[0]->compile("int x;");
            FAIL() << "expected an error";
        } catch (const Error& e) {
            EXPECT_THAT(e.what(), HasSubstr("/nonexistent/from-env-cxx"));
        }
    }
    {
        test::ScopedEnv threads("KILN_CPU_THREADS", "many");
        std::string reason;
        EXPECT_TRUE(discover_cpu(&reason).empty());
        EXPECT_THAT(reason, HasSubstr("KILN_CPU_THREADS"));
    }
}

TEST(CpuToolchain, HungCompilerTimesOut) {
    char dir_template[] = "/tmp/kiln-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    std::filesystem::path dir = dir_template;
    std::filesystem::path script = dir / "fake-cxx";
    {
        std::ofstream out(script);
        out << "#!/bin/sh\n"
               "case \"$1\" in\n"
               "  --version) echo 'fake-cxx 9.8.7'; exit 0;;\n"
               "  -march=native) echo '  -march=                     fakearch'; exit 0;;\n"
               "esac\n"
               "exec sleep 30\n";
    }
    ::chmod(script.c_str(), 0755);
    CpuDeviceOptions options;
    options.compiler = script.string();
    options.threads = 1;
    options.compile_timeout = std::chrono::milliseconds(500);
    CpuDevice dev(options);
    EXPECT_EQ(dev.toolchain().march, "fakearch");
    EXPECT_EQ(dev.toolchain().version, "9.8.7");
    EXPECT_THAT(dev.toolchain_id(), HasSubstr("fake-cxx 9.8.7"));
    try {
        dev.compile("int x;");
        ADD_FAILURE() << "expected a timeout";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("timed out"));
    }
    std::filesystem::remove_all(dir);
}

TEST(Registry, CpuFirstAndLookups) {
    auto all = devices();
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all[0]->info().backend, Backend::cpu);
    EXPECT_EQ(&cpu_device(), all[0]);
    EXPECT_EQ(&find_device("cpu"), all[0]);
    EXPECT_EQ(&find_device("0"), all[0]);
    EXPECT_EQ(&find_device(all[0]->info().id), all[0]);
    if (all.size() > 1) {
        EXPECT_EQ(&find_device("1"), all[1]);
    }
    try {
        find_device("no-such-device");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("no-such-device"));
        for (Device* d : all) EXPECT_THAT(e.what(), HasSubstr(d->info().id));
    }
    EXPECT_THROW(find_device(std::to_string(all.size())), Error);

    auto status = backend_status();
    ASSERT_EQ(status.size(), 3u);
    EXPECT_EQ(status[0].backend, Backend::cpu);
    EXPECT_TRUE(status[0].available);
    EXPECT_EQ(status[1].backend, Backend::cuda);
    EXPECT_EQ(status[2].backend, Backend::opencl);
    for (const BackendStatus& s : status) {
        if (!s.available) {
            EXPECT_FALSE(s.reason.empty()) << name(s.backend);
        }
        bool has_device = false;
        for (Device* d : all) has_device |= d->info().backend == s.backend;
        EXPECT_EQ(has_device, s.available) << name(s.backend);
    }
    Device& best = best_device();
    if (status[1].available) {
        EXPECT_EQ(best.info().backend, Backend::cuda);
    } else if (best.info().backend == Backend::opencl) {
        EXPECT_THAT(best.info().arch, HasSubstr("GPU"));
        EXPECT_TRUE(best.info().simt);
    }
    for (Device* d : all) {
        if (d->info().backend != Backend::cpu) continue;
        EXPECT_FALSE(d->info().simt);
        EXPECT_FALSE(d->info().tensor_cores);
    }
}

TEST(Registry, BackendNames) {
    EXPECT_EQ(name(Backend::cpu), "cpu");
    EXPECT_EQ(name(Backend::cuda), "cuda");
    EXPECT_EQ(name(Backend::opencl), "opencl");
}

}  // namespace
}  // namespace kiln::runtime::cpu
