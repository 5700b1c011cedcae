// Compiling IR kernels for a device, with the in-memory and on-disk caches, and launching them.
//
//   auto kernel = kiln::compile(device, ir);     // codegen + compile, or a cache hit
//   kernel->launch(grid, {x, y, 2.0f});          // arguments checked against the parameters
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/ir.hpp"

namespace kiln {

// One launch argument: a buffer, or a scalar of a given dtype. A scalar of another dtype than
// its parameter's is converted where that is what the number means (to_parameter below):
// `launch(grid, {x, y, 0.5})` passes 0.5 to an f32, f16 or bf16 parameter rounded once, and an
// integer passes to any integer parameter it fits and to a float parameter that holds it exactly.
struct Arg {
    const Buffer* buffer = nullptr;
    DType dtype = DType::i32;
    uint64_t bits = 0;
    bool is_double = false;  // a C++ double: `number` holds it, dtype and bits are unset
    double number = 0;

    Arg(const Buffer& b) : buffer(&b) {}  // NOLINT: buffers pass as they are
    Arg(float v);                         // NOLINT
    Arg(double v);                        // NOLINT
    Arg(int32_t v);                       // NOLINT
    Arg(uint32_t v);                      // NOLINT
    Arg(int64_t v);                       // NOLINT
    Arg(bool v);                          // NOLINT
    Arg(Half v);                          // NOLINT
    Arg(BFloat16 v);                      // NOLINT
    static Arg scalar(DType dtype, uint64_t bits);

    // This scalar as an argument of `param` (kernel `kernel`'s scalar parameter of dtype
    // `dtype`): the same dtype as it is; a double rounded to nearest (once) for a float dtype,
    // or for an integer dtype an integer in its range; an i32, u32 or i64 for another integer
    // dtype it fits or a float dtype holding it exactly. kiln::Error naming the kernel, the
    // parameter and the value for anything else (bool and the 16-bit floats convert only to
    // their own dtype).
    Arg to_parameter(DType dtype, const std::string& kernel, const std::string& param) const;
};

// How kernels are compiled. Kernels compiled with different options are distinct: different
// source, cache entries and tuner identities.
struct CompileOptions {
    // Checked mode: every memory access is tested against the length of its buffer, tile or
    // array; one out of range is skipped (a load reads 0), and the first is reported by
    // CompiledKernel::launch as a kiln::Error naming the kernel, the memory, the index and the
    // length. Accesses proved in range at compile time keep no test.
    bool check_bounds = false;
    // false: built for a short build rather than fast code where the backend has such a build
    // (OpenCL: the driver's -cl-opt-disable; the CPU: -O1 instead of -O3), as separate cache
    // entries; elsewhere as usual. It never changes a result's bits, only how long a build and
    // its kernels take: the quick test tier builds so, since building kernels is most of its
    // time (README.md, Development).
    bool optimize = true;
};
// The process's default options, read once: check_bounds is KILN_CHECK_BOUNDS ("1" on; "0" or
// unset off), optimize KILN_OPTIMIZE ("0" off; "1" or unset on). kiln::Error for any other
// value.
const CompileOptions& default_compile_options();

class FaultRecord;

// How a compiled kernel was built. A memory-cache hit returns the same CompiledKernel.
struct CompileInfo {
    double codegen_ms = 0;  // IR to source
    double compile_ms = 0;  // source to binary (0 on a disk hit)
    double load_ms = 0;     // binary to loaded module
    bool disk_hit = false;
    std::string cache_key;
};

class CompiledKernel {
  public:
    // `max_grid`: the largest grid the module's code for the kernel serves; a larger one runs
    // the kernel compiled anew for every grid (on the CPU, where larger grids need code whose
    // index arithmetic wraps where the entry's does not: compile_all compiles that only when a
    // launch needs it).
    CompiledKernel(Device& device, ir::Kernel kernel, std::shared_ptr<Module> module,
                   std::string entry, CompileInfo info, const CompileOptions& options,
                   std::string identity, int64_t max_grid);

    const ir::Kernel& kernel() const { return kernel_; }
    Device& device() const { return *device_; }
    const CompileInfo& info() const { return info_; }
    const std::string& entry() const { return entry_; }
    bool checks_bounds() const { return fault_ != nullptr; }
    // kernel_identity of the kernel under the options it was compiled with, taken from its
    // compile unit's source (compile_all's kernels; empty where the constructor was not given it).
    const std::string& identity() const { return identity_; }

    // Checks the arguments (count, buffer dtypes and devices, scalar dtypes, aliasing, the
    // kernel's requirements, buffers past INT32_MAX elements only where the kernel reads no
    // i32 len() of them) and launches `grid` blocks. kiln::Error when anything is off.
    // Checked mode (CompileOptions::check_bounds) waits for the launch to finish and throws the
    // kiln::Error of its first out-of-bounds access, if it made one; a launch recorded by
    // Device::record on a device with graphs (CUDA) cannot wait, so a fault of its replays is
    // reported by the kernel's next launch outside a recording.
    void launch(int64_t grid, std::span<const Arg> args) const;
    void launch(int64_t grid, std::initializer_list<Arg> args) const {
        launch(grid, std::span<const Arg>(args.begin(), args.size()));
    }

  private:
    // This kernel compiled with code for every grid, compiled on first use.
    const CompiledKernel& for_every_grid() const;

    Device* device_;
    ir::Kernel kernel_;
    std::shared_ptr<Module> module_;
    std::string entry_;
    std::string identity_;
    CompileInfo info_;
    CompileOptions options_;
    int64_t max_grid_;
    mutable std::mutex every_grid_mutex_;
    mutable std::shared_ptr<const CompiledKernel> every_grid_;
    std::vector<bool> reads_i32_length_;  // by parameter: the kernel reads its length as i32
    std::shared_ptr<FaultRecord> fault_;  // checked mode only
    mutable std::atomic<bool> recorded_ = false;  // launched while the device was recording
    // The requirements depend only on the buffers' lengths and the scalars' bits: the last
    // such signature they held for, so a launch repeated with the same shapes skips evaluating
    // them (a tuned op's hit launches the same way every call).
    mutable std::mutex passed_mutex_;
    mutable std::vector<uint64_t> passed_;
    mutable bool passed_valid_ = false;
};

// Compiles one kernel for a device (memory cache, then disk cache, then the compiler).
std::shared_ptr<CompiledKernel> compile(Device& device, const ir::Kernel& kernel,
                                        const CompileOptions& options = default_compile_options());
// Compiles several kernels in one compile unit (one compiler run, one cache entry).
std::vector<std::shared_ptr<CompiledKernel>> compile_all(
    Device& device, std::span<const ir::Kernel> kernels,
    const CompileOptions& options = default_compile_options());
// The generated source of a compile unit for a device's backend (for inspection and tests).
std::string generate_source(Backend backend, std::span<const ir::Kernel> kernels,
                            const CompileOptions& options = default_compile_options());
// A kernel's identity for the tuner on a backend: a digest of the source kiln generates for it
// there, so a change to the kernel, to its lowering, to how it is written out or to the options
// gives a new identity (and its tuned ops re-tune), while the same source always gives the same.
std::string kernel_identity(Backend backend, const ir::Kernel& kernel,
                            const CompileOptions& options = default_compile_options());
// Forgets the in-memory cache (the disk cache stays).
void clear_memory_cache();

// What compile and compile_all found in the memory cache since the process started: kernels it
// served, and kernels put in it (built, or loaded from the disk cache). Tests and profiles read
// them to see which launches share kernels.
struct CompileCounters {
    uint64_t memory_hits = 0;
    uint64_t memory_misses = 0;
};
CompileCounters compile_counters();

}  // namespace kiln
