// lower: the pass list of codegen.
#include "codegen/lower.hpp"

#include "ir/lower_folds.hpp"
#include "ir/range_index.hpp"
#include "ir/simplify.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::codegen {

Lowered lower(const ir::Kernel& kernel, const Dialect& dialect, const EmitOptions& options) {
    if (!dialect.has_mma && ir::contains(kernel.body, [](const ir::StmtNode& n) {
            return std::holds_alternative<ir::stmt::Mma>(n.node) ||
                   std::holds_alternative<ir::stmt::LoadMatrix>(n.node);
        }))
        fail(
            "kernel {}: a tensor-core mma step or ldmatrix; the {} backend has no tensor cores "
            "(the "
            "tensor-core class runs its exact kernels there); expected a CUDA device",
            kernel.name, dialect.name);
    // Index arithmetic rewritten where the ranges allow (ir/range_index.hpp), after the folding
    // that makes constants of what the planner wrote as expressions.
    Lowered out{ir::simplify(ir::simplify_indices(ir::simplify(
                    ir::lower_folds(kernel, dialect.warp_size, dialect.threads_as_loops)))),
                {}};
    if (options.check_bounds) {
        ir::CheckedKernel checked = ir::check_bounds(out.kernel);
        out.kernel = std::move(checked.kernel);
        out.checks = checked.counts;
    }
    return out;
}

}  // namespace kiln::codegen
