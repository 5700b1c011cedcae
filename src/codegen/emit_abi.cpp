// Emitter, the kernel ABI (src/runtime/ABI.md): each dialect's entry signature, chosen by its
// entry_abi, and on the CPU the unpacking of the argument array into named parameters.
#include <fmt/format.h>

#include "codegen/c_types.hpp"
#include "codegen/emitter.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

std::string Emitter::block_range_function(const std::string& name, RangeFunction kind) const {
    const char* linkage = kind == RangeFunction::entry          ? "extern \"C\""
                          : kind == RangeFunction::larger_grids ? "static __attribute__((noinline))"
                                                                : "static __attribute__((cold, "
                                                                  "noinline, optimize(\"O0\")))";
    return fmt::format(
        "{} void {}(void* const* kiln_args, int64_t kiln_block_begin, int64_t kiln_block_end, "
        "int64_t kiln_grid)",
        linkage, name);
}

std::string Emitter::signature(const std::string& entry) const {
    if (d.entry_abi == EntryAbi::argument_array)
        return block_range_function(entry, RangeFunction::entry);
    std::vector<std::string> params;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const Param& p = k.params[i];
        const std::string pn = param_name(static_cast<int>(i));
        if (p.is_buffer) {
            const char* cnst = p.access == Access::read ? "const " : "";
            params.push_back(fmt::format("{}{}{}* {} {}", d.global_space, cnst, c_mem_type(p.dtype),
                                         d.restrict_kw, pn));
            params.push_back(fmt::format("int64_t {}_len", pn));
        } else {
            params.push_back(fmt::format("{} {}", c_mem_type(p.dtype), pn));
        }
    }
    const std::string joined = fmt::format("{}", fmt::join(params, ", "));
    if (d.entry_abi == EntryAbi::cuda_global)
        return fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({})",
                           k.min_blocks_per_unit > 0
                               ? fmt::format("{}, {}", k.block_size, k.min_blocks_per_unit)
                               : fmt::format("{}", k.block_size),
                           entry, joined);
    return fmt::format("__kernel __attribute__((reqd_work_group_size({}, 1, 1))) void {}({})",
                       k.block_size, entry, joined);
}

void Emitter::unpack_args() {
    if (d.entry_abi != EntryAbi::argument_array) return;
    int slot = 0;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const Param& p = k.params[i];
        const std::string pn = param_name(static_cast<int>(i));
        if (p.is_buffer) {
            const char* cnst = p.access == Access::read ? "const " : "";
            line(fmt::format("{0}{1}* {2} {3} = *({0}{1}* const*)kiln_args[{4}];", cnst,
                             c_mem_type(p.dtype), d.restrict_kw, pn, slot));
            line(fmt::format("const int64_t {}_len = *(const int64_t*)kiln_args[{}];", pn,
                             slot + 1));
            slot += 2;
        } else {
            line(fmt::format("const {0} {1} = *(const {0}*)kiln_args[{2}];", c_mem_type(p.dtype),
                             pn, slot));
            slot += 1;
        }
    }
    line("const int32_t kiln_grid_size = (int32_t)kiln_grid;");
    line("(void)kiln_grid_size;");
}

}  // namespace kiln::codegen
