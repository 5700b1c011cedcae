// shared_nodes: reference counting over expression DAGs.
#include "ir/shared_nodes.hpp"

#include <unordered_map>
#include <unordered_set>

#include "ir/visit.hpp"

namespace kiln::ir {

bool is_trivial(const ExprNode& e) {
    return std::holds_alternative<expr::Const>(e.node) ||
           std::holds_alternative<expr::Local>(e.node) ||
           std::holds_alternative<expr::ScalarParam>(e.node) ||
           std::holds_alternative<expr::BufferLen>(e.node) ||
           std::holds_alternative<expr::Builtin>(e.node);
}

std::vector<const ExprNode*> shared_nodes(const std::vector<ExprRef>& roots,
                                          const std::function<bool(const ExprNode&)>& eligible) {
    std::unordered_map<const ExprNode*, int> uses;
    std::vector<const ExprNode*> order;  // post-order of first visits
    std::function<void(const ExprRef&)> count = [&](const ExprRef& e) {
        if (is_trivial(*e) || !eligible(*e)) return;
        if (++uses[e.get()] > 1) return;  // children already counted on the first visit
        for_each_child(e, count);
        order.push_back(e.get());
    };
    for (const auto& r : roots)
        if (r) count(r);
    std::vector<const ExprNode*> shared;
    for (const ExprNode* n : order)
        if (uses[n] > 1) shared.push_back(n);
    return shared;
}

}  // namespace kiln::ir
