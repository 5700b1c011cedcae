// CpuDevice: host memory operations, compile/load through the toolchain, and launches split
// into contiguous block ranges on the thread pool.
#include "runtime/cpu/cpu_device.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <sys/mman.h>

#include "kiln/error.hpp"
#include "runtime/cpu/cpu_module.hpp"
#include "runtime/cpu/host_info.hpp"

namespace kiln::runtime::cpu {
namespace {

constexpr size_t alignment = 64;
constexpr size_t huge_page = size_t{2} << 20;
constexpr size_t huge_threshold = 2 * huge_page;  // rounding up wastes at most a third

CpuMemory& cpu_memory(DeviceMemory& m, const char* what) {
    auto* cpu = dynamic_cast<CpuMemory*>(&m);
    if (!cpu) fail("CPU backend: {} is not memory of the CPU device", what);
    return *cpu;
}

const CpuMemory& cpu_memory(const DeviceMemory& m, const char* what) {
    auto* cpu = dynamic_cast<const CpuMemory*>(&m);
    if (!cpu) fail("CPU backend: {} is not memory of the CPU device", what);
    return *cpu;
}

void check_range(const char* op, size_t offset, size_t bytes, size_t size) {
    if (offset > size || bytes > size - offset)
        fail("CPU backend: {} of {} bytes at offset {} is out of range for memory of {} bytes", op,
             bytes, offset, size);
}

// Launches split the grid into a few ranges per thread, so uneven blocks still balance.
constexpr int64_t ranges_per_thread = 4;
// Copies from this size on are shared among the pool's threads.
constexpr size_t kParallelCopyBytes = size_t{1} << 20;

}  // namespace

CpuMemory::CpuMemory(size_t bytes) : bytes_(bytes) {
    if (bytes > SIZE_MAX - alignment)
        fail("CPU backend: cannot allocate {} bytes (too large)", bytes);
    // Buffers of a few huge pages or more start on a 2 MiB boundary and ask for transparent huge
    // pages: a kernel walking an operand's columns (matmul's B, rows 16 KiB apart at n = 4096)
    // touches a new 4 KiB page every element, past what the TLB holds.
    const size_t align = bytes >= huge_threshold ? huge_page : alignment;
    size_t rounded = std::max(align, (bytes + align - 1) / align * align);
    data_ = std::aligned_alloc(align, rounded);
    if (!data_) fail("CPU backend: out of host memory allocating {} bytes", bytes);
    if (align == huge_page) madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
}

CpuMemory::CpuMemory(void* data, size_t bytes, std::shared_ptr<void> owner)
    : data_(data), bytes_(bytes), owner_(std::move(owner)) {
    if (data == nullptr && bytes != 0)
        fail("CPU backend: memory of {} bytes at a null address; expected a valid host pointer",
             bytes);
    if (!owner_) fail("CPU backend: memory at {} wrapped without an owner to keep it alive", data);
}

CpuMemory::~CpuMemory() {
    if (!owner_) std::free(data_);
}

CpuDevice::CpuDevice(const CpuDeviceOptions& options)
    : toolchain_(probe_toolchain(options.compiler)), compile_timeout_(options.compile_timeout) {
    int threads = options.threads;
    if (threads <= 0) threads = usable_cpus();
    pool_ = std::make_unique<ThreadPool>(threads);

    std::string march = toolchain_.usable() ? toolchain_.march : "unknown";
    info_.backend = Backend::cpu;
    info_.name = cpu_model_name();
    info_.arch = machine_name() + " " + march;
    info_.driver = kernel_release();
    info_.compiler = toolchain_.compiler_name();
    info_.memory_bytes = physical_memory_bytes();
    info_.compute_units = pool_->size();
    info_.warp_size = 1;
    info_.vector_registers = toolchain_.avx512 || machine_name() == "aarch64" ? 32 : 16;
    info_.id = sanitize_id("cpu-" + info_.name + "-" + march + "-" + info_.compiler);
}

std::shared_ptr<DeviceMemory> CpuDevice::allocate(size_t bytes) {
    return std::make_shared<CpuMemory>(bytes);
}

std::shared_ptr<DeviceMemory> CpuDevice::wrap(uintptr_t address, size_t bytes,
                                              std::shared_ptr<void> owner) {
    // Launches run to completion before they return, so nothing queued outlives the owner.
    return std::make_shared<CpuMemory>(reinterpret_cast<void*>(address), bytes, std::move(owner));
}

uintptr_t CpuDevice::address(const DeviceMemory& memory) {
    return reinterpret_cast<uintptr_t>(cpu_memory(memory, "exported memory").data());
}

void CpuDevice::write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) {
    CpuMemory& m = cpu_memory(dst, "the write destination");
    check_range("write", offset, bytes, m.bytes());
    if (bytes) std::memcpy(static_cast<char*>(m.data()) + offset, src, bytes);
}

void CpuDevice::read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) {
    const CpuMemory& m = cpu_memory(src, "the read source");
    check_range("read", offset, bytes, m.bytes());
    if (bytes) std::memcpy(dst, static_cast<const char*>(m.data()) + offset, bytes);
}

void CpuDevice::fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) {
    CpuMemory& m = cpu_memory(dst, "the fill destination");
    if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8)
        fail("CPU backend: fill pattern of {} bytes; expected 1, 2, 4 or 8", pattern_bytes);
    if (m.bytes() % pattern_bytes != 0)
        fail("CPU backend: cannot fill memory of {} bytes with a {}-byte pattern (not a multiple)",
             m.bytes(), pattern_bytes);
    auto* out = static_cast<char*>(m.data());
    if (pattern_bytes == 1) {
        std::memset(out, *static_cast<const unsigned char*>(pattern), m.bytes());
        return;
    }
    for (size_t at = 0; at < m.bytes(); at += pattern_bytes)
        std::memcpy(out + at, pattern, pattern_bytes);
}

void CpuDevice::copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) {
    CpuMemory& d = cpu_memory(dst, "the copy destination");
    const CpuMemory& s = cpu_memory(src, "the copy source");
    check_range("copy from source", 0, bytes, s.bytes());
    check_range("copy to destination", 0, bytes, d.bytes());
    if (bytes == 0) return;
    auto* to = static_cast<char*>(d.data());
    const auto* from = static_cast<const char*>(s.data());
    // A large copy between ranges that do not overlap runs on every thread, one share each (one
    // thread does not reach the memory's bandwidth); anything else is one memmove.
    const bool apart = to + bytes <= from || from + bytes <= to;
    if (!apart || bytes < kParallelCopyBytes || pool_->size() == 1) {
        std::memmove(to, from, bytes);
        return;
    }
    const int64_t shares = pool_->size();
    const size_t share = (bytes / size_t(shares) + 63) / 64 * 64;
    pool_->run(shares, [&](int64_t i) {
        const size_t begin = std::min(bytes, size_t(i) * share);
        const size_t end = std::min(bytes, begin + share);
        if (begin < end) std::memcpy(to + begin, from + begin, end - begin);
    });
}

std::string CpuDevice::toolchain_id() const {
    return toolchain_.id();
}

std::vector<uint8_t> CpuDevice::compile(const std::string& source) {
    return compile_shared_object(toolchain_, source, compile_timeout_, Optimization::full);
}

std::vector<uint8_t> CpuDevice::compile_unoptimized(const std::string& source) {
    return compile_shared_object(toolchain_, source, compile_timeout_, Optimization::short_build);
}

std::unique_ptr<Module> CpuDevice::load(std::span<const uint8_t> binary) {
    return std::make_unique<CpuModule>(binary);
}

void CpuDevice::launch(Module& module, const std::string& entry, int64_t grid, int block,
                       std::span<const KernelArg> args) {
    auto* cpu_module = dynamic_cast<CpuModule*>(&module);
    if (!cpu_module)
        fail("CPU backend: launch of '{}' with a module not loaded by the CPU device", entry);
    if (grid < 0) fail("CPU backend: launch of '{}' with grid {}; expected >= 0", entry, grid);
    if (block < 1) fail("CPU backend: launch of '{}' with block {}; expected >= 1", entry, block);
    KernelEntry fn = cpu_module->entry(entry);

    // values[i] points at argument i's value: a void* holding a buffer's address, or a scalar's
    // bytes (the low bytes of a little-endian uint64_t). On the stack for the usual few arguments:
    // a small launch should cost little more than the call.
    union Slot {
        uint64_t scalar;
        void* pointer;
    };
    constexpr size_t kArgsOnStack = 32;
    std::array<Slot, kArgsOnStack> slots_on_stack;
    std::array<void*, kArgsOnStack> values_on_stack;
    std::vector<Slot> slots_on_heap;
    std::vector<void*> values_on_heap;
    Slot* slots = slots_on_stack.data();
    void** values = values_on_stack.data();
    if (args.size() > kArgsOnStack) {
        slots_on_heap.resize(args.size());
        values_on_heap.resize(args.size());
        slots = slots_on_heap.data();
        values = values_on_heap.data();
    }
    for (size_t i = 0; i < args.size(); ++i) {
        const KernelArg& a = args[i];
        if (a.memory) {
            slots[i].pointer = cpu_memory(*a.memory, "a buffer argument").data();
            values[i] = &slots[i].pointer;
        } else {
            if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8)
                fail(
                    "CPU backend: launch of '{}': argument {} is a scalar of {} bytes; expected 1, "
                    "2, 4 or 8",
                    entry, i, a.size);
            slots[i].scalar = a.scalar;
            values[i] = &slots[i].scalar;
        }
    }
    if (grid == 0) return;

    void* const* argv = values;
    int64_t ranges = std::min<int64_t>(grid, pool_->size() * ranges_per_thread);
    int64_t base = grid / ranges;
    int64_t extra = grid % ranges;
    pool_->run(ranges, [&](int64_t r) {
        int64_t begin = r * base + std::min(r, extra);
        int64_t end = begin + base + (r < extra ? 1 : 0);
        fn(argv, begin, end, grid);
    });
}

double CpuDevice::time_ms(const std::function<void()>& work) {
    auto start = std::chrono::steady_clock::now();
    work();
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(end - start).count();
}

}  // namespace kiln::runtime::cpu
