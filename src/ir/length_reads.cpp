// length_reads: a scan of every expression of a kernel for i32 buffer lengths.
#include "ir/length_reads.hpp"

#include <unordered_set>

#include "ir/visit.hpp"

namespace kiln::ir {

std::vector<bool> reads_i32_length(const Kernel& kernel) {
    std::vector<bool> reads(kernel.params.size(), false);
    std::unordered_set<const ExprNode*> seen;  // expressions are DAGs: visit each node once
    std::function<void(const ExprRef&)> scan = [&](const ExprRef& e) {
        if (!e || !seen.insert(e.get()).second) return;
        if (const auto* len = std::get_if<expr::BufferLen>(&e->node))
            if (e->type == DType::i32) reads.at(static_cast<size_t>(len->param)) = true;
        for_each_child(e, scan);
    };
    for (const auto& r : kernel.requirements) scan(r.cond);
    for_each_stmt(kernel.body, [&](const StmtNode& s) { for_each_expr(s, scan); });
    return reads;
}

}  // namespace kiln::ir
