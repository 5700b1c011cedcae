// The compile pipeline: IR -> source (codegen) -> binary (disk cache or the device's compiler)
// -> loaded module (memory cache), and checked launches of the result.
#include "kiln/compile.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "cache/kernel_cache.hpp"
#include "codegen/emit_c.hpp"
#include "core/arg.hpp"
#include "core/compile_units.hpp"
#include "core/dump_source.hpp"
#include "core/fault_record.hpp"
#include "ir/check_bounds.hpp"
#include "ir/eval.hpp"
#include "ir/hash.hpp"
#include "ir/length_reads.hpp"

namespace kiln {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const codegen::Dialect& dialect_for(Backend b) {
    switch (b) {
        case Backend::cpu:
            return codegen::cpu_dialect();
        case Backend::cuda:
            return codegen::cuda_dialect();
        case Backend::opencl:
            return codegen::opencl_dialect();
    }
    fail("unknown backend");
}

struct MemoryCache {
    std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<CompiledKernel>> kernels;
    CompileCounters counters;
};
MemoryCache& memory_cache() {
    static MemoryCache cache;
    return cache;
}

// Whether `options` build without the device compiler's optimizer on `d`.
bool unoptimized(const Device& d, const CompileOptions& options) {
    return !options.optimize && d.has_unoptimized_build();
}

// `hash`: the kernel's ir::structural_hash.
std::string memory_key(const Device& d, uint64_t hash, const CompileOptions& options,
                       codegen::Grids grids) {
    return d.info().id + "/" + ir::hex(hash) + (options.check_bounds ? "/checked" : "") +
           (unoptimized(d, options) ? "/O0" : "") +
           (grids == codegen::Grids::every ? "/every-grid" : "");
}

// A switch read from the environment: "1" true, "0" false, unset or empty `otherwise`.
bool switch_from_environment(const char* name, bool otherwise, const char* meaning) {
    const char* env = std::getenv(name);
    const std::string value = env ? env : "";
    if (value.empty()) return otherwise;
    if (value == "1" || value == "0") return value == "1";
    fail("{} is '{}'; expected 1 ({}) or 0", name, value, meaning);
}

CompileOptions options_from_environment() {
    CompileOptions options;
    options.check_bounds =
        switch_from_environment("KILN_CHECK_BOUNDS", false, "check every memory access");
    options.optimize = switch_from_environment("KILN_OPTIMIZE", true,
                                               "build kernels with the compilers' optimizers");
    return options;
}

// The kernel compiled with code for every grid (CompiledKernel::for_every_grid).
std::shared_ptr<CompiledKernel> compile_for_every_grid(Device& device, const ir::Kernel& kernel,
                                                       const CompileOptions& options);

std::string param_list(const ir::Kernel& k) {
    std::vector<std::string> parts;
    for (const auto& p : k.params)
        parts.push_back(
            fmt::format("{}: {}{}", p.name, name(p.dtype), p.is_buffer ? " buffer" : ""));
    return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

const CompileOptions& default_compile_options() {
    static const CompileOptions options = options_from_environment();
    return options;
}

Arg::Arg(float v) : dtype(DType::f32) {
    std::memcpy(&bits, &v, 4);
}
Arg::Arg(int32_t v) : dtype(DType::i32), bits(static_cast<uint32_t>(v)) {}
Arg::Arg(uint32_t v) : dtype(DType::u32), bits(v) {}
Arg::Arg(int64_t v) : dtype(DType::i64), bits(static_cast<uint64_t>(v)) {}
Arg::Arg(bool v) : dtype(DType::boolean), bits(v ? 1 : 0) {}
Arg::Arg(Half v) : dtype(DType::f16), bits(v.bits) {}
Arg::Arg(BFloat16 v) : dtype(DType::bf16), bits(v.bits) {}
Arg Arg::scalar(DType dtype, uint64_t bits) {
    Arg a(int32_t{0});
    a.dtype = dtype;
    a.bits = bits;
    return a;
}

CompiledKernel::CompiledKernel(Device& device, ir::Kernel kernel, std::shared_ptr<Module> module,
                               std::string entry, CompileInfo info, const CompileOptions& options,
                               std::string identity, int64_t max_grid)
    : device_(&device),
      kernel_(std::move(kernel)),
      module_(std::move(module)),
      entry_(std::move(entry)),
      identity_(std::move(identity)),
      info_(std::move(info)),
      options_(options),
      max_grid_(max_grid),
      reads_i32_length_(ir::reads_i32_length(kernel_)),
      fault_(options.check_bounds ? std::make_shared<FaultRecord>(device) : nullptr) {}

const CompiledKernel& CompiledKernel::for_every_grid() const {
    std::lock_guard lock(every_grid_mutex_);
    if (!every_grid_) every_grid_ = compile_for_every_grid(*device_, kernel_, options_);
    return *every_grid_;
}

void CompiledKernel::launch(int64_t grid, std::span<const Arg> given) const {
    const ir::Kernel& k = kernel_;
    std::vector<Arg> converted;  // only when a scalar needs converting to its parameter's dtype
    const std::span<const Arg> args = converted_scalars(k, given, converted);
    if (args.size() != k.params.size())
        fail("kernel {} takes {} arguments ({}); got {}", k.name, k.params.size(), param_list(k),
             args.size());
    if (grid < 0 || grid > INT32_MAX)
        fail("kernel {}: grid of {} blocks; expected 0 to {}", k.name, grid, INT32_MAX);
    std::vector<KernelArg> raw;
    raw.reserve(2 * args.size() + 2);  // a buffer is two arguments; the fault record two more
    std::vector<ir::HostValue> scalars(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
        const ir::Param& p = k.params[i];
        const Arg& a = args[i];
        if (p.is_buffer) {
            if (!a.buffer)
                fail("kernel {}: argument {} ('{}') must be a {} buffer; got a {} scalar", k.name,
                     i, p.name, name(p.dtype), name(a.dtype));
            if (a.buffer->dtype() != p.dtype)
                fail("kernel {}: buffer '{}' must hold {}; got a {} buffer", k.name, p.name,
                     name(p.dtype), name(a.buffer->dtype()));
            if (&a.buffer->device() != device_)
                fail("kernel {}: buffer '{}' lives on {}, but the kernel was compiled for {}",
                     k.name, p.name, a.buffer->device().info().id, device_->info().id);
            if (a.buffer->count() > static_cast<size_t>(INT32_MAX) && reads_i32_length_[i])
                fail(
                    "kernel {}: buffer '{}' has {} elements, but the kernel reads its length as "
                    "i32 (len()), which holds at most {}; read it with len64()",
                    k.name, p.name, a.buffer->count(), INT32_MAX);
            for (size_t j = 0; j < i; ++j) {
                const ir::Param& q = k.params[j];
                if (q.is_buffer && args[j].buffer &&
                    &args[j].buffer->memory() == &a.buffer->memory() &&
                    (p.access != ir::Access::read || q.access != ir::Access::read))
                    fail(
                        "kernel {}: the same buffer is passed as '{}' and '{}', and one of them is "
                        "written; use one inout parameter instead",
                        k.name, q.name, p.name);
            }
            raw.push_back(KernelArg::buffer(a.buffer->memory()));
            raw.push_back(KernelArg::value(a.buffer->count(), 8));
        } else {
            if (a.buffer)
                fail("kernel {}: argument {} ('{}') must be a {} scalar; got a buffer", k.name, i,
                     p.name, name(p.dtype));
            if (a.dtype != p.dtype)
                fail("kernel {}: scalar '{}' must be {}; got {}", k.name, p.name, name(p.dtype),
                     name(a.dtype));
            raw.push_back(KernelArg::value(a.bits, static_cast<uint8_t>(size_of(p.dtype))));
            ir::HostValue v;
            if (p.dtype == DType::f32) {
                float f;
                uint32_t b32 = static_cast<uint32_t>(a.bits);
                std::memcpy(&f, &b32, 4);
                v.f = f;
            } else if (p.dtype == DType::i8)
                v.i = static_cast<int8_t>(a.bits);
            else if (p.dtype == DType::i32)
                v.i = static_cast<int32_t>(a.bits);
            else
                v.i = static_cast<int64_t>(a.bits);
            scalars[i] = v;
        }
    }
    // Each argument's bits for the requirements: a buffer's length, a scalar's value. Compared
    // in place with the last passing signature, so a repeated launch allocates nothing here.
    auto bits_of = [&](size_t i) -> uint64_t {
        return args[i].buffer ? args[i].buffer->count() : args[i].bits;
    };
    bool known_to_hold;
    {
        std::lock_guard lock(passed_mutex_);
        known_to_hold = passed_valid_ && passed_.size() == args.size();
        for (size_t i = 0; known_to_hold && i < args.size(); ++i)
            known_to_hold = passed_[i] == bits_of(i);
    }
    if (!known_to_hold) {
        for (const auto& r : k.requirements) {
            auto value = ir::eval_host(
                r.cond, [&](int p) { return scalars.at(static_cast<size_t>(p)); },
                [&](int p) {
                    return static_cast<int64_t>(args[static_cast<size_t>(p)].buffer->count());
                });
            if (!value.i)
                fail("kernel {}: launch arguments break its requirement: {}", k.name, r.what);
        }
        std::lock_guard lock(passed_mutex_);
        passed_.resize(args.size());
        for (size_t i = 0; i < args.size(); ++i) passed_[i] = bits_of(i);
        passed_valid_ = true;
    }
    if (grid == 0) return;
    // A grid larger than this kernel's code serves runs the kernel compiled for every grid.
    const CompiledKernel& code = grid > max_grid_ ? for_every_grid() : *this;
    if (!fault_) {
        device_->launch(*code.module_, code.entry_, grid, k.block_size, raw);
        return;
    }
    // Checked: the fault record is the last argument, then the launch waits and is checked.
    raw.push_back(KernelArg::buffer(fault_->memory()));
    raw.push_back(KernelArg::value(ir::kFaultWords, 8));
    std::lock_guard lock(fault_->mutex());
    device_->launch(*code.module_, code.entry_, grid, k.block_size, raw);
    if (device_->recording())
        recorded_ = true;
    else
        fault_->check(k, recorded_);
}

namespace {

// The compile unit of `kernels` (entries[i]: kernels[i]'s entry name) in parts.
codegen::SourceParts generate_parts(Backend backend, const std::vector<const ir::Kernel*>& kernels,
                                    const std::vector<std::string>& entries,
                                    const CompileOptions& options,
                                    codegen::Grids grids = codegen::Grids::entry) {
    return codegen::emit_parts(kernels, entries, dialect_for(backend),
                               {.check_bounds = options.check_bounds, .grids = grids});
}

// kernel_identity of a unit's kernel i: the digest of the unit that kernel alone would make.
std::string identity_of(const codegen::SourceParts& parts, size_t i) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, parts.header.data(), parts.header.size());
    XXH3_64bits_update(state, "\n", 1);
    XXH3_64bits_update(state, parts.kernels[i].data(), parts.kernels[i].size());
    const uint64_t digest = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return ir::hex(digest);
}

}  // namespace

std::string generate_source(Backend backend, std::span<const ir::Kernel> kernels,
                            const CompileOptions& options) {
    std::vector<const ir::Kernel*> ptrs;
    for (const auto& k : kernels) ptrs.push_back(&k);
    return codegen::emit_source(ptrs, dialect_for(backend), {.check_bounds = options.check_bounds});
}

std::string kernel_identity(Backend backend, const ir::Kernel& kernel,
                            const CompileOptions& options) {
    return identity_of(generate_parts(backend, {&kernel}, {codegen::entry_name(kernel)}, options),
                       0);
}

namespace {

// On the CPU at most this many kernels share a compile unit: one compiler process per unit keeps
// a large program's first call within the compiler's time limit and spreads its units over the
// cores. NVRTC compiles independent programs from several threads at once, so a batch is spread
// over the cores in units of at least kCudaUnitKernels. The OpenCL drivers build a program at a
// time, so one unit is cheapest there (a unit costs about 0.75 s of PoCL's start-up before its
// kernels' own work).
constexpr size_t kCpuUnitKernels = 48;
constexpr size_t kCudaUnitKernels = 4;
// A program file's units (compile_units.hpp): a split the same on every host.
constexpr size_t kPortableUnitKernels = 16;

size_t build_threads() {
    return std::max<size_t>(1, std::thread::hardware_concurrency());
}

size_t kernels_per_unit(Backend backend, size_t kernels) {
    switch (backend) {
        case Backend::cpu:
            return kCpuUnitKernels;
        case Backend::cuda:
            return std::max(kCudaUnitKernels, (kernels + build_threads() - 1) / build_threads());
        default:
            return kernels;
    }
}

// One compile unit of compile_all: its kernels (indices into compile_all's list), their entries,
// the source, and the binary from the disk cache or the device's compiler.
struct Unit {
    std::vector<size_t> kernels;
    std::vector<std::string> entries;
    codegen::SourceParts parts;
    std::string source;
    CompileInfo info;
    std::vector<uint8_t> binary;
    std::exception_ptr failure;
    // Each entry's identity and largest grid, from its part of the unit (a unit writes an entry
    // once).
    std::unordered_map<std::string, std::pair<std::string, int64_t>> part;
    // Where the unit was assembled from the modules of other cached units (find_in_index): each
    // kernel's module, in order. Empty otherwise.
    std::vector<std::shared_ptr<Module>> modules;
};

std::string cache_key_of(const Device& device, const std::string& source, bool without_optimizer) {
    const std::string toolchain = device.toolchain_id();
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, source.data(), source.size());
    XXH3_64bits_update(state, toolchain.data(), toolchain.size() + 1);
    XXH3_64bits_update(state, KILN_VERSION, sizeof(KILN_VERSION));
    if (without_optimizer) XXH3_64bits_update(state, "O0", 2);
    const std::string key = ir::hex(XXH3_64bits_digest(state));
    XXH3_freeState(state);
    return key;
}

// The kernel cache's index record of one kernel of a unit: the key of a unit that holds its
// code (its entry, and its identity: the same kernel compiled with other options, e.g. checked,
// is other code under the same entry), built for these grids with or without the optimizer.
std::string index_key_of(const Device& device, const Unit& unit, const std::string& entry,
                         codegen::Grids grids, bool without_optimizer) {
    return cache_key_of(device,
                        fmt::format("kiln unit index: {} {} grids {}", entry,
                                    unit.part.at(entry).first, static_cast<int>(grids)),
                        without_optimizer);
}

void record_in_index(Device& device, cache::KernelCache& disk, const Unit& unit,
                     codegen::Grids grids, bool without_optimizer) {
    for (const std::string& entry : unit.entries)
        disk.store_note(device.info().id,
                        index_key_of(device, unit, entry, grids, without_optimizer),
                        unit.info.cache_key, cache::kIndexSuffix);
}

// A unit the disk cache lacks whose every kernel a cached unit holds (a race's winners asked for
// alone by a later run, where the racing run compiled them beside the other candidates): its
// kernels' modules, loaded from those units; empty where any is missing, stale or unreadable.
std::vector<std::shared_ptr<Module>> find_in_index(Device& device, cache::KernelCache& disk,
                                                   const Unit& unit, codegen::Grids grids,
                                                   bool without_optimizer) {
    const std::string& id = device.info().id;
    std::map<std::string, std::shared_ptr<Module>> loaded;  // by unit key
    std::vector<std::shared_ptr<Module>> modules;
    for (const std::string& entry : unit.entries) {
        const auto key = disk.load_note(
            id, index_key_of(device, unit, entry, grids, without_optimizer), cache::kIndexSuffix);
        if (!key || key->size() != unit.info.cache_key.size() ||
            !std::ranges::all_of(
                *key, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }))
            return {};
        std::shared_ptr<Module>& module = loaded[*key];
        try {
            if (!module) {
                const auto binary = disk.load(id, *key);
                if (!binary) return {};
                module = device.load(*binary);
            }
            module->require_entry(entry);
        } catch (const Error&) {
            return {};
        }
        modules.push_back(module);
    }
    return modules;
}

// A unit's source built by the device's compiler, with or without its optimizer.
std::vector<uint8_t> build_source(Device& device, const std::string& source,
                                  bool without_optimizer) {
    return without_optimizer ? device.compile_unoptimized(source) : device.compile(source);
}

// Builds each unit the disk cache did not have: on the CPU, a compiler process per unit, as
// many at once as the machine has threads; elsewhere one after another. A unit that fails keeps
// its exception.
void build_units(Device& device, std::vector<Unit>& units, bool without_optimizer) {
    auto build = [&](Unit& u) {
        const auto t0 = std::chrono::steady_clock::now();
        try {
            u.binary = build_source(device, u.source, without_optimizer);
        } catch (...) {
            u.failure = std::current_exception();
        }
        u.info.compile_ms = ms_since(t0);
    };
    std::vector<Unit*> todo;
    for (Unit& u : units)
        if (!u.info.disk_hit) todo.push_back(&u);
    const Backend backend = device.info().backend;
    const size_t at_once =
        backend == Backend::cpu || backend == Backend::cuda ? build_threads() : 1;
    for (size_t first = 0; first < todo.size(); first += at_once) {
        std::vector<std::future<void>> running;
        for (size_t i = first; i < std::min(todo.size(), first + at_once); ++i)
            if (at_once == 1)
                build(*todo[i]);
            else
                running.push_back(std::async(std::launch::async, build, std::ref(*todo[i])));
        for (auto& r : running) r.get();
    }
}

// compile_all's kernels, their code serving `grids`.
// Whether b is a of copy of a: the same body (one builder's), declarations and requirements.
bool copy_of(const ir::Kernel& a, const ir::Kernel& b) {
    auto same_params = [](const ir::Param& x, const ir::Param& y) {
        return x.name == y.name && x.is_buffer == y.is_buffer && x.dtype == y.dtype &&
               x.access == y.access && x.cache == y.cache;
    };
    auto same_locals = [](const ir::LocalInfo& x, const ir::LocalInfo& y) {
        return x.name == y.name && x.type == y.type;
    };
    auto same_arrays = [](const ir::ArrayInfo& x, const ir::ArrayInfo& y) {
        return x.name == y.name && x.type == y.type && x.size == y.size && x.space == y.space &&
               x.in_memory == y.in_memory;
    };
    auto same_requirements = [](const ir::Requirement& x, const ir::Requirement& y) {
        return x.cond.get() == y.cond.get() && x.what == y.what;
    };
    return a.body == b.body && a.name == b.name && a.block_size == b.block_size &&
           a.min_blocks_per_unit == b.min_blocks_per_unit &&
           std::ranges::equal(a.params, b.params, same_params) &&
           std::ranges::equal(a.locals, b.locals, same_locals) &&
           std::ranges::equal(a.tiles, b.tiles, same_arrays) &&
           std::ranges::equal(a.arrays, b.arrays, same_arrays) &&
           std::ranges::equal(a.requirements, b.requirements, same_requirements);
}

// Where compile_all_for's units come from besides the disk cache and the compiler: a program
// file's binaries (compile_portable). Its units are split by kPortableUnitKernels and every
// kernel is compiled anew, whatever the memory cache holds.
struct PortableUnits {
    std::span<const UnitBinary> given;
    std::vector<UnitBinary>* used = nullptr;
};

std::vector<std::shared_ptr<CompiledKernel>> compile_all_for(
    Device& device, std::span<const ir::Kernel> kernels, const CompileOptions& options,
    codegen::Grids grids, const PortableUnits* portable = nullptr) {
    std::vector<std::shared_ptr<CompiledKernel>> result(kernels.size());
    std::vector<size_t> missing;  // the first of each distinct kernel not in memory
    std::vector<std::pair<size_t, size_t>> repeats;  // (i, j): kernel i equals missing kernel j
    // Each kernel's structural hash, printed and hashed once here for its keys and entry.
    // Copies of one kernel (a plan's repeated launches are lowered once) are hashed once.
    std::vector<uint64_t> hashes(kernels.size());
    std::unordered_map<const ir::StmtNode*, size_t> first_with_body;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const auto [first, added] = first_with_body.try_emplace(kernels[i].body.get(), i);
        hashes[i] = !added && copy_of(kernels[first->second], kernels[i])
                        ? hashes[first->second]
                        : ir::structural_hash(kernels[i]);
    }
    {
        std::unordered_map<std::string, size_t> first_of;
        std::lock_guard lock(memory_cache().mutex);
        for (size_t i = 0; i < kernels.size(); ++i) {
            std::string key = memory_key(device, hashes[i], options, grids);
            if (auto it = memory_cache().kernels.find(key);
                !portable && it != memory_cache().kernels.end()) {
                result[i] = it->second;
                continue;
            }
            // One kernel listed twice is compiled once (a compile unit defines each entry once).
            const auto [first, added] = first_of.try_emplace(std::move(key), i);
            if (added)
                missing.push_back(i);
            else
                repeats.emplace_back(i, first->second);
        }
        memory_cache().counters.memory_misses += missing.size();
        memory_cache().counters.memory_hits += kernels.size() - missing.size();
    }
    if (missing.empty()) return result;

    // The units: source, cache key and disk lookup each.
    const bool without_optimizer = unoptimized(device, options);
    auto& disk = cache::process_kernel_cache();
    const size_t per_unit =
        portable ? kPortableUnitKernels : kernels_per_unit(device.info().backend, missing.size());
    const size_t unit_count = (missing.size() + per_unit - 1) / per_unit;
    std::vector<Unit> units(unit_count);
    for (size_t u = 0; u < unit_count; ++u) {
        Unit& unit = units[u];
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<ir::Kernel> todo;
        std::vector<const ir::Kernel*> todo_ptrs;
        for (size_t j = u * per_unit; j < std::min(missing.size(), (u + 1) * per_unit); ++j) {
            const size_t i = missing[j];
            unit.kernels.push_back(i);
            todo.push_back(kernels[i]);
            todo_ptrs.push_back(&kernels[i]);
            unit.entries.push_back(codegen::entry_name(kernels[i], hashes[i]));
        }
        unit.parts = generate_parts(device.info().backend, todo_ptrs, unit.entries, options, grids);
        unit.source = unit.parts.joined();
        for (size_t p = 0; p < unit.parts.entries.size(); ++p)
            unit.part.emplace(unit.parts.entries[p],
                              std::pair{identity_of(unit.parts, p), unit.parts.max_grids[p]});
        dump_source(device, todo, unit.source, grids == codegen::Grids::every ? ".every-grid" : "");
        unit.info.codegen_ms = ms_since(t0);
        unit.info.cache_key = cache_key_of(device, unit.source, without_optimizer);
        const UnitBinary* carried = nullptr;
        if (portable)
            for (const UnitBinary& b : portable->given)
                if (b.key == unit.info.cache_key) carried = &b;
        if (carried) {
            unit.binary = carried->binary;
            unit.info.disk_hit = true;
        } else if (auto hit = disk.load(device.info().id, unit.info.cache_key)) {
            unit.binary = std::move(*hit);
            unit.info.disk_hit = true;
        }
    }
    if (!portable)
        for (Unit& unit : units)
            if (!unit.info.disk_hit) {
                unit.modules = find_in_index(device, disk, unit, grids, without_optimizer);
                unit.info.disk_hit = !unit.modules.empty();
            }
    build_units(device, units, without_optimizer);

    for (Unit& unit : units) {
        if (unit.failure) {
            const std::string path =
                disk.save_failed_source(device.info().id, unit.info.cache_key,
                                        std::string(device.source_suffix()), unit.source);
            std::vector<std::string> names;
            for (size_t i : unit.kernels) names.push_back(kernels[i].name);
            try {
                std::rethrow_exception(unit.failure);
            } catch (const Error& e) {
                fail("kernel {} failed to compile for {}:\n{}\nsource saved at {}",
                     fmt::join(names, ", "), device.info().id, e.what(),
                     path.empty() ? "(nowhere)" : path);
            }
        }
        if (!unit.info.disk_hit) {
            disk.store(device.info().id, unit.info.cache_key, unit.binary);
            record_in_index(device, disk, unit, grids, without_optimizer);
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::shared_ptr<Module> module;
        // A unit assembled from other units' modules (find_in_index) has nothing to load.
        if (unit.modules.empty()) {
            try {
                module = device.load(unit.binary);
                // A cached binary built from other source lacks the kernels' entries.
                if (unit.info.disk_hit)
                    for (const std::string& entry : unit.entries) module->require_entry(entry);
            } catch (const Error& e) {
                if (!unit.info.disk_hit) throw;
                // A cached binary the device rejects: rebuild it from source.
                warn_once(
                    "reload:" + unit.info.cache_key,
                    fmt::format("kernel cache entry {} was rejected ({}); rebuilding it",
                                disk.entry_path(device.info().id, unit.info.cache_key).string(),
                                e.what()));
                module.reset();
                unit.binary = build_source(device, unit.source, without_optimizer);
                disk.store(device.info().id, unit.info.cache_key, unit.binary);
                record_in_index(device, disk, unit, grids, without_optimizer);
                unit.info.disk_hit = false;
                module = device.load(unit.binary);
            }
        }
        unit.info.load_ms = ms_since(t0);
        if (portable && portable->used)
            portable->used->push_back({unit.info.cache_key, unit.binary});

        std::lock_guard lock(memory_cache().mutex);
        for (size_t j = 0; j < unit.kernels.size(); ++j) {
            const size_t i = unit.kernels[j];
            const auto& [identity, max_grid] = unit.part.at(unit.entries[j]);
            auto compiled = std::make_shared<CompiledKernel>(
                device, kernels[i], unit.modules.empty() ? module : unit.modules[j],
                unit.entries[j], unit.info, options, identity, max_grid);
            memory_cache().kernels[memory_key(device, hashes[i], options, grids)] = compiled;
            result[i] = compiled;
        }
    }
    for (const auto& [i, first] : repeats) result[i] = result[first];
    return result;
}

std::shared_ptr<CompiledKernel> compile_for_every_grid(Device& device, const ir::Kernel& kernel,
                                                       const CompileOptions& options) {
    return compile_all_for(device, std::span<const ir::Kernel>(&kernel, 1), options,
                           codegen::Grids::every)
        .front();
}

}  // namespace

std::vector<std::shared_ptr<CompiledKernel>> compile_all(Device& device,
                                                         std::span<const ir::Kernel> kernels,
                                                         const CompileOptions& options) {
    return compile_all_for(device, kernels, options, codegen::Grids::entry);
}

std::shared_ptr<CompiledKernel> compile(Device& device, const ir::Kernel& kernel,
                                        const CompileOptions& options) {
    return compile_all(device, std::span<const ir::Kernel>(&kernel, 1), options).front();
}

void clear_memory_cache() {
    std::lock_guard lock(memory_cache().mutex);
    memory_cache().kernels.clear();
}

std::vector<std::shared_ptr<CompiledKernel>> compile_portable(Device& device,
                                                              std::span<const ir::Kernel> kernels,
                                                              const CompileOptions& options,
                                                              std::span<const UnitBinary> given,
                                                              std::vector<UnitBinary>* used) {
    const PortableUnits portable{given, used};
    return compile_all_for(device, kernels, options, codegen::Grids::entry, &portable);
}

CompileCounters compile_counters() {
    std::lock_guard lock(memory_cache().mutex);
    return memory_cache().counters;
}

}  // namespace kiln
