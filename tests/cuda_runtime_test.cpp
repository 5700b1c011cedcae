// The CUDA runtime: NVRTC compiles kernels to cubins on any machine; discovery explains a missing
// GPU; on a machine with a GPU, memory, launches, fills, copies and timing round-trip exactly.
#include <dlfcn.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "runtime/discover.hpp"

namespace {

using kiln::Device;
using kiln::DeviceMemory;
using kiln::KernelArg;

const char* const kAddSource = R"(
extern "C" __global__ void add(float* a, int a_len, float* b, int b_len) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a_len && i < b_len) a[i] = a[i] + b[i];
}
)";

// Writes each scalar argument, widened to 64 bits, so the test sees what the kernel received.
const char* const kScalarsSource = R"(
extern "C" __global__ void scalars(unsigned long long* out, int out_len, unsigned char u8,
                                   short i16, float f32, long long i64, double f64) {
    if (threadIdx.x != 0 || out_len < 5) return;
    out[0] = u8;
    out[1] = (unsigned long long)(long long)i16;
    unsigned int f32_bits;
    memcpy(&f32_bits, &f32, 4);
    out[2] = f32_bits;
    out[3] = (unsigned long long)i64;
    unsigned long long f64_bits;
    memcpy(&f64_bits, &f64, 8);
    out[4] = f64_bits;
}
)";

const char* const kOutOfBoundsSource = R"(
extern "C" __global__ void wild(float* a, int a_len) {
    a[(long long)1 << 40] = 1.0f;
}
)";

// Spins for `ns` nanoseconds of device time, then fills `out` with 0xdeadbeef.
const char* const kSpinThenFillSource = R"(
extern "C" __global__ void spin_then_fill(unsigned int* out, int out_len, unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    for (int i = threadIdx.x; i < out_len; i += blockDim.x) out[i] = 0xdeadbeefu;
}
)";

bool has_nvrtc(std::string* reason) {
    return kiln::cuda::nvrtc_available(reason);
}

template <typename T>
uint64_t bits_of(T value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return bits;
}

TEST(CudaNvrtc, CompilesAKernelToACubinForSm90) {
    std::string reason;
    if (!has_nvrtc(&reason)) GTEST_SKIP() << reason;
    std::string log;
    std::vector<uint8_t> cubin = kiln::cuda::nvrtc_compile(kAddSource, "sm_90", &log);
    ASSERT_GT(cubin.size(), 64u);
    EXPECT_EQ(cubin[0], 0x7f);
    EXPECT_EQ(cubin[1], 'E');
    EXPECT_EQ(cubin[2], 'L');
    EXPECT_EQ(cubin[3], 'F');
    EXPECT_EQ(cubin[4], 2) << "a cubin is a 64-bit ELF";
    const int machine = cubin[18] | (cubin[19] << 8);
    EXPECT_EQ(machine, 190) << "ELF machine should be EM_CUDA (a cubin, not PTX text)";
}

TEST(CudaNvrtc, SyntaxErrorCarriesTheCompilersDiagnostic) {
    std::string reason;
    if (!has_nvrtc(&reason)) GTEST_SKIP() << reason;
    const std::string bad = R"(
extern "C" __global__ void broken(float* a, int a_len) {
    a[0] = kiln_undeclared_identifier;
}
)";
    try {
        kiln::cuda::nvrtc_compile(bad, "sm_90", nullptr);
        FAIL() << "compiling a kernel with an undeclared identifier should throw";
    } catch (const kiln::Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("kiln_undeclared_identifier"), std::string::npos) << message;
        EXPECT_NE(message.find("sm_90"), std::string::npos) << message;
    }
}

TEST(CudaNvrtc, OptionsKeepFloatStrict) {
    const std::vector<std::string> options = kiln::cuda::nvrtc_options("sm_90");
    auto has = [&](const std::string& option) {
        for (const std::string& o : options) {
            if (o == option) return true;
        }
        return false;
    };
    EXPECT_TRUE(has("--gpu-architecture=sm_90"));
    EXPECT_TRUE(has("--fmad=false"));
    EXPECT_TRUE(has("--prec-div=true"));
    EXPECT_TRUE(has("--prec-sqrt=true"));
    EXPECT_TRUE(has("--ftz=false"));
    EXPECT_TRUE(has("--std=c++17"));
    for (const std::string& o : options) {
        EXPECT_EQ(o.find("fast"), std::string::npos) << o;
        EXPECT_NE(o.rfind("-I", 0), 0u) << "generated sources include no headers: " << o;
    }
}

TEST(CudaNvrtc, StrictOptionsReachTheCompiler) {
    std::string reason;
    if (!has_nvrtc(&reason)) GTEST_SKIP() << reason;
    // With --fmad=false, a*b+c must stay a separate multiply and add: the two compilations of
    // an explicit fma and of a*b+c must differ.
    const std::string mul_add = R"(
extern "C" __global__ void k(float* a, int a_len) { a[0] = a[1] * a[2] + a[3]; }
)";
    const std::string fused = R"(
extern "C" __global__ void k(float* a, int a_len) { a[0] = fmaf(a[1], a[2], a[3]); }
)";
    EXPECT_NE(kiln::cuda::nvrtc_compile(mul_add, "sm_90", nullptr),
              kiln::cuda::nvrtc_compile(fused, "sm_90", nullptr));
}

TEST(CudaNvrtc, TheDeviceTestKernelsCompile) {
    std::string reason;
    if (!has_nvrtc(&reason)) GTEST_SKIP() << reason;
    for (const char* source : {kAddSource, kScalarsSource, kOutOfBoundsSource}) {
        EXPECT_FALSE(kiln::cuda::nvrtc_compile(source, "sm_90", nullptr).empty()) << source;
    }
}

TEST(CudaNvrtc, VersionIsMajorDotMinor) {
    std::string reason;
    if (!has_nvrtc(&reason)) GTEST_SKIP() << reason;
    const std::string version = kiln::cuda::nvrtc_version();
    const size_t dot = version.find('.');
    ASSERT_NE(dot, std::string::npos) << version;
    EXPECT_GE(std::atoi(version.c_str()), 11) << version;
}

TEST(CudaDiscovery, ExplainsWhyWhenThereIsNoDevice) {
    std::string reason = "unset";
    auto devices = kiln::runtime::discover_cuda(&reason);
    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (libcuda == nullptr) {
        EXPECT_TRUE(devices.empty());
        EXPECT_EQ(reason.rfind("CUDA unavailable: ", 0), 0u) << reason;
        EXPECT_NE(reason.find("libcuda.so.1 not found"), std::string::npos) << reason;
    } else {
        dlclose(libcuda);
        if (devices.empty()) {
            EXPECT_EQ(reason.rfind("CUDA unavailable: ", 0), 0u) << reason;
        } else {
            EXPECT_TRUE(reason.empty()) << reason;
        }
    }
    // Discovery can be repeated and says the same.
    std::string again;
    EXPECT_EQ(kiln::runtime::discover_cuda(&again).size(), devices.size());
    EXPECT_EQ(again, reason);
}

// The first CUDA device, discovered once per process; null when there is none.
Device* cuda_device() {
    static std::vector<std::unique_ptr<Device>> devices = [] {
        std::string reason;
        return kiln::runtime::discover_cuda(&reason);
    }();
    return devices.empty() ? nullptr : devices.front().get();
}

class CudaDeviceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        device = cuda_device();
        if (device == nullptr) {
            std::string reason;
            kiln::runtime::discover_cuda(&reason);
            GTEST_SKIP() << "no CUDA device: " << reason;
        }
    }

    std::unique_ptr<kiln::Module> build(const std::string& source) {
        return device->load(device->compile(source));
    }

    template <typename T>
    std::vector<T> read_all(const DeviceMemory& memory) {
        std::vector<T> out(memory.bytes() / sizeof(T));
        device->read(memory, 0, out.data(), out.size() * sizeof(T));
        return out;
    }

    Device* device = nullptr;
};

TEST_F(CudaDeviceTest, DescribesItself) {
    const kiln::DeviceInfo& info = device->info();
    EXPECT_EQ(info.backend, kiln::Backend::cuda);
    EXPECT_FALSE(info.name.empty());
    EXPECT_EQ(info.arch.rfind("sm_", 0), 0u) << info.arch;
    EXPECT_EQ(info.driver.rfind("CUDA driver ", 0), 0u) << info.driver;
    EXPECT_EQ(info.compiler, "NVRTC " + kiln::cuda::nvrtc_version());
    EXPECT_GT(info.memory_bytes, 0u);
    EXPECT_GT(info.compute_units, 0);
    EXPECT_EQ(info.warp_size, 32);
    EXPECT_TRUE(info.simt);
    int version = 0;  // "sm_90": 90
    ASSERT_EQ(std::sscanf(info.arch.c_str(), "sm_%d", &version), 1) << info.arch;
    EXPECT_EQ(info.tensor_cores, version >= 80) << info.arch;
    EXPECT_EQ(info.id.rfind("cuda-", 0), 0u) << info.id;
    EXPECT_NE(info.id.find("-" + info.arch + "-drv"), std::string::npos) << info.id;
    for (char c : info.id) {
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')
            << info.id;
    }
    EXPECT_EQ(device->source_suffix(), ".cu");
    const std::string toolchain = device->toolchain_id();
    EXPECT_NE(toolchain.find("nvrtc"), std::string::npos) << toolchain;
    EXPECT_NE(toolchain.find(info.arch), std::string::npos) << toolchain;
    EXPECT_NE(toolchain.find("--fmad=false"), std::string::npos) << toolchain;
}

TEST_F(CudaDeviceTest, AddKernelRoundTrips) {
    const int n = 1000;
    std::vector<float> a(n), b(n), expected(n);
    for (int i = 0; i < n; ++i) {
        a[i] = 0.5f * static_cast<float>(i) - 7.0f;
        b[i] = 1.25f * static_cast<float>(i) + 0.1f;
        expected[i] = a[i] + b[i];
    }
    auto da = device->allocate(n * sizeof(float));
    auto db = device->allocate(n * sizeof(float));
    device->write(*da, 0, a.data(), n * sizeof(float));
    device->write(*db, 0, b.data(), n * sizeof(float));
    auto module = build(kAddSource);
    const KernelArg args[] = {KernelArg::buffer(*da), KernelArg::value(n, 4),
                              KernelArg::buffer(*db), KernelArg::value(n, 4)};
    const int block = 128;
    const int64_t grid = (n + block - 1) / block;
    device->launch(*module, "add", grid, block, args);
    device->synchronize();
    EXPECT_EQ(read_all<float>(*da), expected);

    // Timed: a second launch adds b again, and the device measured a positive time.
    const double ms = device->time_ms([&] { device->launch(*module, "add", grid, block, args); });
    EXPECT_GT(ms, 0.0);
    std::vector<float> twice = read_all<float>(*da);
    for (int i = 0; i < n; ++i) ASSERT_EQ(twice[i], expected[i] + b[i]) << i;
}

TEST_F(CudaDeviceTest, ScalarArgumentsArriveWithTheirWidths) {
    auto out = device->allocate(5 * sizeof(uint64_t));
    auto module = build(kScalarsSource);
    const float f32 = -3.5f;
    const double f64 = 1.0 / 3.0;
    const KernelArg args[] = {
        KernelArg::buffer(*out),
        KernelArg::value(5, 4),
        KernelArg::value(0xAB, 1),
        KernelArg::value(static_cast<uint16_t>(-1234), 2),
        KernelArg::value(bits_of(f32), 4),
        KernelArg::value(static_cast<uint64_t>(-5000000000LL), 8),
        KernelArg::value(bits_of(f64), 8),
    };
    device->launch(*module, "scalars", 1, 32, args);
    const std::vector<uint64_t> got = read_all<uint64_t>(*out);
    EXPECT_EQ(got[0], 0xABu);
    EXPECT_EQ(got[1], static_cast<uint64_t>(-1234LL));
    EXPECT_EQ(got[2], bits_of(f32));
    EXPECT_EQ(got[3], static_cast<uint64_t>(-5000000000LL));
    EXPECT_EQ(got[4], bits_of(f64));
}

TEST_F(CudaDeviceTest, FillWritesEveryPatternWidth) {
    auto memory = device->allocate(4096);
    const uint8_t p8 = 0x5A;
    device->fill(*memory, &p8, 1);
    for (uint8_t v : read_all<uint8_t>(*memory)) ASSERT_EQ(v, p8);
    const uint16_t p16 = 0xBEEF;
    device->fill(*memory, &p16, 2);
    for (uint16_t v : read_all<uint16_t>(*memory)) ASSERT_EQ(v, p16);
    const uint32_t p32 = 0xDEADBEEF;
    device->fill(*memory, &p32, 4);
    for (uint32_t v : read_all<uint32_t>(*memory)) ASSERT_EQ(v, p32);
    const uint64_t p64 = 0x1122334455667788ULL;
    device->fill(*memory, &p64, 8);
    for (uint64_t v : read_all<uint64_t>(*memory)) ASSERT_EQ(v, p64);
    const uint64_t same_halves = 0x0102030401020304ULL;
    device->fill(*memory, &same_halves, 8);
    for (uint64_t v : read_all<uint64_t>(*memory)) ASSERT_EQ(v, same_halves);

    auto odd = device->allocate(6);
    EXPECT_THROW(device->fill(*odd, &p32, 4), kiln::Error);
    EXPECT_THROW(device->fill(*memory, &p32, 3), kiln::Error);
}

TEST_F(CudaDeviceTest, CopyMovesThePrefixOnly) {
    std::vector<uint32_t> src_values(64), dst_values(128, 7u);
    for (uint32_t i = 0; i < 64; ++i) src_values[i] = i * 2654435761u;
    auto src = device->allocate(64 * 4);
    auto dst = device->allocate(128 * 4);
    device->write(*src, 0, src_values.data(), 64 * 4);
    device->write(*dst, 0, dst_values.data(), 128 * 4);
    device->copy(*dst, *src, 32 * 4);
    const std::vector<uint32_t> got = read_all<uint32_t>(*dst);
    for (int i = 0; i < 128; ++i) ASSERT_EQ(got[i], i < 32 ? src_values[i] : 7u) << i;
    EXPECT_THROW(device->copy(*dst, *src, 65 * 4), kiln::Error);
}

// Memory freed behind queued work is released in stream order: the free returns at once (it
// does not wait for the kernel still writing that memory), and memory allocated afterwards, very
// likely the same block, holds what was written to it after the kernel, not the kernel's late
// writes.
TEST_F(CudaDeviceTest, FreeingMemoryNeitherWaitsForTheDeviceNorLetsQueuedWorkCorruptItsReuse) {
    auto module = build(kSpinThenFillSource);
    const size_t count = 1 << 16, bytes = count * 4;
    device->allocate(bytes).reset();  // the pool now holds a block of this size
    device->synchronize();
    auto busy = device->allocate(bytes);
    const uint64_t spin_ns = 400'000'000;
    const KernelArg args[] = {KernelArg::buffer(*busy), KernelArg::value(int32_t{count}, 4),
                              KernelArg::value(spin_ns, 8)};
    const auto start = std::chrono::steady_clock::now();
    device->launch(*module, "spin_then_fill", 1, 256, args);
    busy.reset();
    const double free_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(free_ms, 200.0) << "freeing memory waited for the 400 ms kernel still using it";

    std::vector<uint32_t> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = static_cast<uint32_t>(i * 2654435761u);
    auto reused = device->allocate(bytes);
    device->write(*reused, 0, mine.data(), bytes);
    EXPECT_EQ(read_all<uint32_t>(*reused), mine);
}

// The driver's free device memory in bytes (cuMemGetInfo on the context the device made
// current on this thread), looked up directly so the test sees what other libraries would.
size_t driver_free_bytes() {
    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (libcuda == nullptr) return 0;
    using MemGetInfo = int (*)(size_t*, size_t*);
    auto mem_get_info = reinterpret_cast<MemGetInfo>(dlsym(libcuda, "cuMemGetInfo_v2"));
    size_t free = 0, total = 0;
    if (mem_get_info == nullptr || mem_get_info(&free, &total) != 0) free = 0;
    dlclose(libcuda);
    return free;
}

// A freed buffer's memory stays with the device for reuse until release_cached_memory hands it
// back to the driver; live buffers keep their contents through a release.
TEST_F(CudaDeviceTest, ReleaseCachedMemoryHandsFreedMemoryBack) {
    std::vector<uint32_t> values(4096);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(i * 40503u);
    auto live = device->allocate(values.size() * 4);
    device->write(*live, 0, values.data(), values.size() * 4);
    device->release_cached_memory();
    const size_t before = driver_free_bytes();
    ASSERT_GT(before, 0u) << "cuMemGetInfo unavailable";
    const size_t big = size_t{2} << 30;
    device->allocate(big).reset();
    device->synchronize();
    const size_t kept = driver_free_bytes();
    EXPECT_LT(kept + big / 2, before) << "the freed 2 GiB should stay with the device";
    device->release_cached_memory();
    EXPECT_GT(driver_free_bytes(), kept + big / 2) << "release_cached_memory kept the 2 GiB";
    EXPECT_EQ(read_all<uint32_t>(*live), values);
}

TEST_F(CudaDeviceTest, OffsetsAndSizesAreChecked) {
    auto memory = device->allocate(16);
    std::vector<uint8_t> data(32, 1);
    EXPECT_THROW(device->write(*memory, 8, data.data(), 16), kiln::Error);
    EXPECT_THROW(device->write(*memory, 17, data.data(), 0), kiln::Error);
    EXPECT_THROW(device->read(*memory, 0, data.data(), 17), kiln::Error);
    EXPECT_THROW(device->write(*memory, SIZE_MAX, data.data(), 2), kiln::Error);
    device->write(*memory, 8, data.data(), 8);  // exactly to the end is fine
    std::vector<uint8_t> back(8, 0);
    device->read(*memory, 8, back.data(), 8);
    EXPECT_EQ(back, std::vector<uint8_t>(8, 1));
}

TEST_F(CudaDeviceTest, ZeroByteMemoryWorks) {
    auto memory = device->allocate(0);
    EXPECT_EQ(memory->bytes(), 0u);
    uint8_t byte = 3;
    device->write(*memory, 0, &byte, 0);
    device->read(*memory, 0, &byte, 0);
    const uint32_t pattern = 1;
    device->fill(*memory, &pattern, 4);
    EXPECT_THROW(device->write(*memory, 0, &byte, 1), kiln::Error);
}

TEST_F(CudaDeviceTest, LaunchChecksEntryAndShape) {
    auto module = build(kAddSource);
    auto memory = device->allocate(16);
    const KernelArg args[] = {KernelArg::buffer(*memory), KernelArg::value(4, 4),
                              KernelArg::buffer(*memory), KernelArg::value(4, 4)};
    try {
        device->launch(*module, "no_such_kernel", 1, 32, args);
        FAIL() << "an unknown entry should throw";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
    }
    EXPECT_THROW(device->launch(*module, "add", 1, 2048, args), kiln::Error);
    EXPECT_THROW(device->launch(*module, "add", 1, 0, args), kiln::Error);
    EXPECT_THROW(device->launch(*module, "add", -1, 32, args), kiln::Error);
    EXPECT_THROW(device->launch(*module, "add", int64_t{1} << 31, 32, args), kiln::Error);
    const KernelArg bad_scalar[] = {KernelArg::buffer(*memory), KernelArg::value(4, 3),
                                    KernelArg::buffer(*memory), KernelArg::value(4, 4)};
    EXPECT_THROW(device->launch(*module, "add", 1, 32, bad_scalar), kiln::Error);
    const uint8_t not_a_cubin[] = {'/', '/', ' ', 'P', 'T', 'X'};
    EXPECT_THROW(device->load(not_a_cubin), kiln::Error);
    device->synchronize();  // none of the rejected launches reached the device
}

TEST_F(CudaDeviceTest, CompileErrorsAreKilnErrors) {
    EXPECT_THROW(device->compile("extern \"C\" __global__ void k( {"), kiln::Error);
}

// Launches a kernel that writes far outside its memory, then exits 0 when synchronize turned the
// fault into a kiln::Error naming the CUDA error, 2 when it threw something else, 1 when nothing.
[[noreturn]] void fault_and_exit(Device* device) {
    int code = 1;
    try {
        auto module = device->load(device->compile(kOutOfBoundsSource));
        auto memory = device->allocate(16);
        const KernelArg args[] = {KernelArg::buffer(*memory), KernelArg::value(4, 4)};
        device->launch(*module, "wild", 1, 1, args);
        device->synchronize();
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        code = std::string(e.what()).find("CUDA_ERROR_") != std::string::npos ? 0 : 2;
    }
    std::_Exit(code);
}

// An illegal address poisons the whole CUDA context, so it runs in a fresh process.
TEST_F(CudaDeviceTest, AsynchronousFaultBecomesAnError) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(fault_and_exit(device), ::testing::ExitedWithCode(0), "CUDA_ERROR_");
}

}  // namespace
