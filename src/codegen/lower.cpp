// lower: the pass list of codegen.
#include "codegen/lower.hpp"

#include "ir/lower_folds.hpp"
#include "ir/simplify.hpp"

namespace kiln::codegen {

Lowered lower(const ir::Kernel& kernel, const Dialect& dialect, const EmitOptions& options) {
    Lowered out{ir::simplify(ir::lower_folds(kernel, dialect.warp_size, dialect.threads_as_loops)),
                {}};
    if (options.check_bounds) {
        ir::CheckedKernel checked = ir::check_bounds(out.kernel);
        out.kernel = std::move(checked.kernel);
        out.checks = checked.counts;
    }
    return out;
}

}  // namespace kiln::codegen
