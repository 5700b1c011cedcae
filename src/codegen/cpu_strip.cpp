// cpu_strip: the strip width of a CPU block (cpu_strip.hpp).
#include "codegen/cpu_strip.hpp"

#include <algorithm>

#include "ir/visit.hpp"

namespace kiln::codegen {

bool byte_strips(const ThreadPlan& plan) {
    if (!plan.strips) return false;
    if (std::count(plan.array_home.begin(), plan.array_home.end(), Home::per_thread) > 0 ||
        std::count(plan.local_home.begin(), plan.local_home.end(), Home::per_thread) >
            kMaxByteStripValues)
        return false;
    bool bytes = false;
    ir::for_each_stmt(plan.kernel.body, [&](const ir::StmtNode& s) {
        ir::for_each_expr(s, [&](const ir::ExprRef& root) {
            ir::walk(root, [&](const ir::ExprRef& e) {
                const auto* l = std::get_if<ir::expr::Load>(&e->node);
                bytes = bytes || (l && l->mem.space == ir::MemSpace::global &&
                                  size_of(ir::mem_dtype(plan.kernel, l->mem)) == 1);
            });
        });
    });
    return bytes;
}

}  // namespace kiln::codegen
