// Devices: the one interface every runtime (CPU, CUDA, OpenCL) implements, and the process
// registry that discovers them. A Device allocates raw memory, compiles generated source to a
// binary, loads binaries and launches their kernels, and times work with device-side clocks.
// Typed buffers and compiled kernels (buffer.hpp, compile.hpp) are built on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln {

enum class Backend : uint8_t { cpu, cuda, opencl };
std::string_view name(Backend b);

struct DeviceInfo {
    Backend backend = Backend::cpu;
    std::string name;      // "NVIDIA H200", "pthread-skylake-avx512", the host CPU model
    std::string arch;      // "sm_90", "x86_64 skylake-avx512", ...
    std::string driver;    // driver or runtime version ("CUDA driver 13.0", "PoCL 3.1")
    std::string compiler;  // "g++ 12.2.0", "NVRTC 13.0", "OpenCL C 1.2 PoCL"
    uint64_t memory_bytes = 0;
    int compute_units = 0;  // SMs, CUs or cores
    int warp_size = 1;      // threads that can exchange values without a barrier (shuffles)
    // Threads are the SIMT lanes of a GPU (CUDA; an OpenCL device of type GPU): the cost model,
    // the timer's cache flush and the built-in workloads' sizes follow it.
    bool simt = false;
    // Runs the tensor-core class (f16/bf16 contractions) on tensor cores: CUDA, compute
    // capability 8.0 or later. Elsewhere that class runs its exact points.
    bool tensor_cores = false;
    // A CPU's vector registers its kernels use (32 with AVX-512 or on AArch64, 16 with AVX or
    // SSE): the cost model sizes the register tiles of a strip of threads by it. 0 elsewhere.
    int vector_registers = 0;
    int ordinal = 0;  // the driver's index of the device (the CUDA ordinal); 0 on the CPU
    std::string id;   // the cache id: backend, model, arch, driver/compiler; [A-Za-z0-9._-]
};

// Raw device memory. Freed when the last reference goes.
class DeviceMemory {
  public:
    virtual ~DeviceMemory() = default;
    virtual size_t bytes() const = 0;
    // What a kernel argument of this memory carries (a host pointer on the CPU, a CUdeviceptr on
    // CUDA, the cl_mem on OpenCL): two memories alive at once never share it, and a recording
    // (Device::record) that bakes its arguments in reads and writes the memory holding it.
    virtual uintptr_t handle() const = 0;
};

// A loaded binary: one or more kernels, looked up by entry name at launch.
class Module {
  public:
    virtual ~Module() = default;
    // Throws kiln::Error naming `entry` when the module has no kernel of that name (a cached
    // binary that another source built). Where a backend cannot tell before launching, nothing.
    virtual void require_entry(const std::string& entry) { (void)entry; }
};

// One kernel argument as the generated code receives it: a buffer's memory, or a scalar's
// bytes (little-endian, `size` bytes, at most 8).
struct KernelArg {
    const DeviceMemory* memory = nullptr;  // non-null for buffers
    uint64_t scalar = 0;
    uint8_t size = 0;  // scalar width in bytes
    static KernelArg buffer(const DeviceMemory& m) { return {&m, 0, 0}; }
    static KernelArg value(uint64_t bits, uint8_t size) { return {nullptr, bits, size}; }
};

// Device work recorded once by Device::record and submitted again, whole, by each replay().
class Recording {
  public:
    virtual ~Recording() = default;
    // Enqueues the recorded work again: the same kernels, grids and arguments, on the same
    // memory, in the same order. Asynchronous where the device is.
    virtual void replay() = 0;

    // Moves the recorded work onto other memory: from the next replay on, each recorded use of
    // the memory whose handle() is `from` uses `to` instead (memory of the same device, as large
    // as the work needs). Replays already enqueued are unaffected. Returns false, changing
    // nothing, where the recording cannot: the memory is also held other than as a kernel's
    // argument (a fill or a copy), two moves start at one memory, or the device keeps the work
    // to run again (CPU, OpenCL) rather than what it used.
    struct Move {
        uintptr_t from = 0;
        const DeviceMemory* to = nullptr;
    };
    virtual bool rebind(std::span<const Move> moves) {
        (void)moves;
        return false;
    }
};

class Device {
  public:
    virtual ~Device() = default;
    virtual const DeviceInfo& info() const = 0;

    // Memory. Offsets and sizes are in bytes; implementations check them against the memory's
    // size and throw kiln::Error when out of range.
    virtual std::shared_ptr<DeviceMemory> allocate(size_t bytes) = 0;
    virtual void write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) = 0;
    virtual void read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) = 0;
    // Fills the whole memory with repeats of `pattern` (1, 2, 4 or 8 bytes).
    virtual void fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) = 0;
    virtual void copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) = 0;

    // Memory another library owns, seen as this device's memory without a copy (DLPack import):
    // `address` is host memory on the CPU, a CUdeviceptr on CUDA, `bytes` long. `owner` is held
    // until the memory's last reference goes and the device's work queued on it is done, so the
    // producer stays alive while kiln reads it. kiln::Error where the backend cannot (OpenCL:
    // its memory is not addressable) or the address does not suit it (CUDA: memory of another
    // device, or not aligned as kiln's kernels need).
    virtual std::shared_ptr<DeviceMemory> wrap(uintptr_t address, size_t bytes,
                                               std::shared_ptr<void> owner);
    // The address of this device's memory as another library takes it (DLPack export): a host
    // pointer on the CPU, a CUdeviceptr on CUDA. kiln::Error where memory has none (OpenCL).
    virtual uintptr_t address(const DeviceMemory& memory);
    // The native queue the device's work runs on (a CUstream on CUDA), for exchanging data with
    // other libraries in stream order; 0 where there is none (CPU, OpenCL).
    virtual uintptr_t native_stream() { return 0; }

    // Compilation. `toolchain_id` names everything besides the source that changes the binary:
    // compiler identity and version, flags, target arch. `compile` turns generated source into
    // a binary (bytes the disk cache stores) or throws kiln::Error carrying the compiler's
    // diagnostics. `source_suffix` is the file extension for saved sources (".cpp", ".cu", ".cl").
    virtual std::string toolchain_id() const = 0;
    virtual std::string_view source_suffix() const = 0;
    virtual std::vector<uint8_t> compile(const std::string& source) = 0;
    // Whether compile_unoptimized builds differently from compile, for a shorter build with the
    // same bits (OpenCL: the driver's -cl-opt-disable; the CPU: -O1); where not, it is compile
    // (CompileOptions::optimize).
    virtual bool has_unoptimized_build() const { return false; }
    virtual std::vector<uint8_t> compile_unoptimized(const std::string& source) {
        return compile(source);
    }
    virtual std::unique_ptr<Module> load(std::span<const uint8_t> binary) = 0;

    // Launches `grid` blocks of `block` threads of `entry`. Asynchronous where the device is.
    virtual void launch(Module& module, const std::string& entry, int64_t grid, int block,
                        std::span<const KernelArg> args) = 0;
    virtual void synchronize() = 0;
    // Hands the memory the device keeps for reuse (that of freed buffers) back to its driver
    // once the work queued so far is done, so other libraries in the process can allocate it.
    // A no-op where freed memory is not kept (CPU, OpenCL). Live buffers are untouched.
    virtual void release_cached_memory() {}

    // Runs `work` (which enqueues launches) and returns the device-side milliseconds between
    // its start and its end, waiting for completion.
    virtual double time_ms(const std::function<void()>& work) = 0;

    // Records the launches, fills and copies `work` enqueues, without running them, so that
    // replay() submits them all at once: on CUDA a graph, which the device runs without the
    // gaps between separately queued launches. The memory they use must be allocated before
    // recording and outlive the recording. On CUDA, anything else the device is asked to do while
    // recording (allocate, free, read, write, wait, time, record) is a kiln::Error and the
    // recording fails; the device stays usable. A device without such graphs (CPU, OpenCL)
    // keeps `work` and runs it again on each replay.
    virtual std::unique_ptr<Recording> record(std::function<void()> work);
    // Whether the calling thread is inside record() on a device whose recordings do not run the
    // work (CUDA): its launches are recorded, not run, and nothing may wait for them.
    virtual bool recording() const { return false; }
    // Whether record() makes a graph the device runs whole (CUDA), rather than keeping the work
    // to run again.
    virtual bool records_graphs() const { return false; }
};

// The process registry: every device found, CPU first. Discovery runs once; a backend that is
// unavailable is recorded with its reason instead of failing.
struct BackendStatus {
    Backend backend;
    bool available;
    std::string reason;  // why not, when unavailable
};
std::span<Device* const> devices();
std::span<const BackendStatus> backend_status();
Device& cpu_device();
// Finds a device by id, by index ("1") or by backend name ("cuda" = first of that backend).
Device& find_device(std::string_view which);
// The best device: the first CUDA device, else the first OpenCL GPU, else the CPU.
Device& best_device();

}  // namespace kiln
