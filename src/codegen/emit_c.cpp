// emit_c: the one C-family code generator's driver. Lowers each kernel for the dialect
// (codegen/lower.hpp, then on the CPU the threads-as-loops plan) and prints it with the
// Emitter, after the dialect's prelude and kiln's scalar semantics, as one compile unit.
#include "codegen/emit_c.hpp"

#include <algorithm>
#include <climits>
#include <unordered_set>

#include <fmt/format.h>

#include "codegen/checked_access.hpp"
#include "codegen/cpu_strip.hpp"
#include "codegen/cpu_threads.hpp"
#include "codegen/emitter.hpp"
#include "ir/hash.hpp"
#include "ir/no_wrap.hpp"
#include "ir/visit.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

// The CPU's function `name` over a range of blocks, each running the plan's steps; `first` is
// its first statement.
std::string emit_block_range(const ThreadPlan& plan, const Dialect& d, const std::string& name,
                             Emitter::RangeFunction kind, const NoWrap& no_wrap,
                             const std::string& first) {
    Emitter e(plan.kernel, d);
    e.plan = &plan;
    e.no_wrap = &no_wrap;
    e.out += e.block_range_function(name, kind) + " {\n";
    if (!first.empty()) e.line(first);
    e.unpack_args();
    e.declare_tiles();
    auto home = [&](int l) { return plan.local_home[static_cast<size_t>(l)]; };
    auto per_thread_locals = [&] {
        e.declare_locals([&](int l) { return home(l) == Home::per_thread; });
        e.declare_arrays(
            [&](int a) { return plan.array_home[static_cast<size_t>(a)] == Home::per_thread; },
            true);
    };
    e.declare_locals([&](int l) { return home(l) == Home::block; });
    if (!plan.strips) per_thread_locals();
    e.open("for (int64_t kiln_b = kiln_block_begin; kiln_b < kiln_block_end; ++kiln_b)");
    e.line("const int32_t kiln_block = (int32_t)kiln_b;");
    e.line("(void)kiln_block;");
    if (plan.strips) {
        e.open(fmt::format("for (int32_t kiln_s = 0; kiln_s < {}; kiln_s += KILN_STRIP)",
                           plan.kernel.block_size));
        per_thread_locals();
    }
    e.block_steps(plan.steps);
    if (plan.strips) e.close();
    e.close();
    e.out += "}\n";
    if (byte_strips(plan))  // the function's strips are vectors of bytes (cpu_strip.hpp)
        return "#pragma push_macro(\"KILN_STRIP\")\n#undef KILN_STRIP\n"
               "#define KILN_STRIP KILN_BYTE_STRIP\n" +
               e.out + "#pragma pop_macro(\"KILN_STRIP\")\n";
    return e.out;
}

struct CpuCode {
    std::string code;
    int64_t max_grid = INT64_MAX;  // the largest grid the code serves
};

// The CPU: one function over a range of blocks; each block runs its plan's steps. Its integer
// arithmetic is plain where it never wraps in the launch's grid. The entry is written for grids
// of at most 2^20 positions (where a block's index times a row's or a head's elements still
// fits); where more wraps in larger grids, those run a copy written for them: one for grids of
// at most 1/16 of the positions that fit in i32 (a thread's elements a few grids apart still fit:
// a grid-stride loop's indices stay affine and its loads contiguous), one for grids whose
// positions fit in i32, one (unoptimized) for any grid. Grids::entry writes the copies up to the
// one for 1/16 of i32 positions; a larger grid runs the code written for every grid.
CpuCode emit_cpu(const Kernel& lowered, const Dialect& d, const std::string& entry, Grids grids) {
    using Kind = Emitter::RangeFunction;
    const ThreadPlan plan = plan_threads(lowered);
    const int64_t small_grid = i32_position_grid(plan.kernel.block_size);
    const int64_t sixteenth = std::max<int64_t>(1, small_grid / 16);
    struct Tier {
        int64_t max_grid;
        NoWrap no_wrap;
    };
    std::vector<Tier> tiers;  // smallest grids first
    for (int64_t grid :
         {std::max<int64_t>(1, small_grid >> 11), sixteenth, small_grid, int64_t{INT32_MAX}})
        tiers.push_back({grid, find_no_wrap(plan.kernel, grid)});
    // A tier whose arithmetic is that of the next larger one is served by that one's copy.
    for (size_t i = tiers.size() - 1; i-- > 0;)
        if (tiers[i].no_wrap == tiers[i + 1].no_wrap) tiers.erase(tiers.begin() + long(i));
    int64_t served = INT64_MAX;
    if (grids == Grids::entry) {
        size_t last = 0;
        while (tiers[last].max_grid < sixteenth) ++last;
        if (last + 1 < tiers.size()) served = tiers[last].max_grid;
        tiers.resize(last + 1);
    }
    std::string out;
    std::string dispatch;
    for (size_t i = tiers.size() - 1; i > 0; --i) {
        const int64_t above = tiers[i - 1].max_grid;  // the copy runs grids larger than this
        const bool beyond_i32 = above >= small_grid;
        const std::string name = entry + (beyond_i32           ? "_any_grid"
                                          : above >= sixteenth ? "_larger_grid"
                                                               : "_large_grid");
        out += emit_block_range(plan, d, name, beyond_i32 ? Kind::any_grid : Kind::larger_grids,
                                tiers[i].no_wrap, "") +
               "\n";
        dispatch += fmt::format(
            "if (kiln_grid > {}) {{ {}(kiln_args, kiln_block_begin, kiln_block_end, kiln_grid); "
            "return; }}",
            above, name);
    }
    return {out + emit_block_range(plan, d, entry, Kind::entry, tiers.front().no_wrap, dispatch),
            served};
}

// GPUs: the kernel as written, one thread of it.
std::string emit_gpu(const Kernel& lowered, const Dialect& d, const std::string& entry) {
    Emitter e(lowered, d);
    e.split_if_else = d.split_if_else && contains_barrier(lowered.body);
    e.opaque_block_index = d.opaque_block_index && contains_barrier(lowered.body);
    e.out += e.signature(entry) + " {\n";
    e.declare_block_index();
    e.declare_tiles();
    e.declare_locals([](int) { return true; });
    e.declare_arrays([](int) { return true; }, false);
    e.stmt(lowered.body);
    e.out += "}\n";
    return e.out;
}

}  // namespace

std::string entry_name(const Kernel& kernel) {
    return entry_name(kernel, structural_hash(kernel));
}

std::string entry_name(const Kernel& kernel, uint64_t hash) {
    return fmt::format("{}_{}", kernel.name, hex(hash).substr(0, 12));
}

std::string SourceParts::joined() const {
    std::string src = header;
    for (const std::string& code : kernels) src += "\n" + code;
    return src;
}

SourceParts emit_parts(const std::vector<const Kernel*>& kernels,
                       const std::vector<std::string>& entries, const Dialect& dialect,
                       const EmitOptions& options) {
    SourceParts parts;
    parts.header = fmt::format("// Generated by kiln for the {} backend.\n", dialect.name);
    parts.header += dialect.prelude;
    parts.header += scalar_semantics_source;
    if (options.check_bounds) parts.header += checked_prelude(dialect);
    parts.header += "\n";
    // A kernel listed twice is written once: its entry name is its content's hash, and a compile
    // unit may define each entry only once.
    std::unordered_set<std::string> written;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const std::string& entry = entries.at(i);
        if (!written.insert(entry).second) continue;
        const Kernel lowered = lower(*kernels[i], dialect, options).kernel;
        CpuCode code = dialect.threads_as_loops ? emit_cpu(lowered, dialect, entry, options.grids)
                                                : CpuCode{emit_gpu(lowered, dialect, entry)};
        parts.entries.push_back(entry);
        parts.kernels.push_back(std::move(code.code));
        parts.max_grids.push_back(code.max_grid);
    }
    return parts;
}

std::string emit_source(const std::vector<const Kernel*>& kernels, const Dialect& dialect,
                        const EmitOptions& options) {
    std::vector<std::string> entries;
    for (const Kernel* kernel : kernels) entries.push_back(entry_name(*kernel));
    return emit_parts(kernels, entries, dialect, options).joined();
}

}  // namespace kiln::codegen
