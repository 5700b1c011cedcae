// checked_access: kiln_in_bounds and its calls, for every dialect.
#include "codegen/checked_access.hpp"

#include <fmt/format.h>

#include "ir/check_bounds.hpp"

namespace kiln::codegen {

std::string checked_prelude(const Dialect& d) {
    const std::string word = d.global_space + "uint32_t*";
    return fmt::format(
        R"(
KILN_FN bool kiln_claim_fault({0} word, uint32_t site) {{ {1} }}
// The first fault claims the record and writes itself there.
{9} void kiln_record_fault({0} record, uint32_t site, int64_t index, int64_t length,
                            int32_t block, int32_t thread) {{
    if (!kiln_claim_fault(&record[{2}], site)) return;
    record[{3}] = (uint32_t)(uint64_t)index;
    record[{4}] = (uint32_t)((uint64_t)index >> 32);
    record[{5}] = (uint32_t)(uint64_t)length;
    record[{6}] = (uint32_t)((uint64_t)length >> 32);
    record[{7}] = (uint32_t)block;
    record[{8}] = (uint32_t)thread;
}}
// Whether index ... index+width-1 lie in [0, length); where not, and `when` holds, a fault.
KILN_FN bool kiln_in_bounds({0} record, uint32_t site, int64_t index, int64_t length,
                            int64_t width, bool when, int32_t block, int32_t thread) {{
    if (index >= 0 && index <= length - width) return true;
    if (when) kiln_record_fault(record, site, index, length, block, thread);
    return false;
}}
)",
        word, d.claim_fault, static_cast<int>(ir::fault_site), static_cast<int>(ir::fault_index_lo),
        static_cast<int>(ir::fault_index_hi), static_cast<int>(ir::fault_length_lo),
        static_cast<int>(ir::fault_length_hi), static_cast<int>(ir::fault_block),
        static_cast<int>(ir::fault_thread), d.cold_function);
}

std::string in_bounds_call(const ir::expr::InBounds& n, const std::string& record,
                           const std::string& index, const std::string& length,
                           const std::string& when, const std::string& block,
                           const std::string& thread) {
    return fmt::format("kiln_in_bounds({}, 0x{:08x}u, (int64_t)({}), {}, {}, {}, {}, {})", record,
                       n.site, index, length, n.width, when, block, thread);
}

}  // namespace kiln::codegen
