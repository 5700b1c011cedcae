// Small helpers for walking IR: apply a function to every child expression of a node, and to
// every statement of a body.
#pragma once

#include <functional>

#include "kiln/ir.hpp"

namespace kiln::ir {

// Calls f on each direct child expression of e.
void for_each_child(const ExprRef& e, const std::function<void(const ExprRef&)>& f);
// Calls f on every expression node of the tree rooted at e, children first.
void walk(const ExprRef& e, const std::function<void(const ExprRef&)>& f);
// Rebuilds e bottom-up: f gets a node whose children are already rewritten and returns its
// replacement (or the node itself). Unchanged subtrees are shared, not copied.
ExprRef rewrite(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f);
// Rebuilds statement s with every expression in it passed through rewrite(.., f), recursively.
StmtRef rewrite_exprs(const StmtRef& s, const std::function<ExprRef(const ExprRef&)>& f);
// Calls f on every statement node of the tree rooted at s (fold bodies included), parents first.
void for_each_stmt(const StmtRef& s, const std::function<void(const StmtNode&)>& f);
// True when the statement tree contains a node for which pred is true.
bool contains(const StmtRef& s, const std::function<bool(const StmtNode&)>& pred);
bool contains_barrier(const StmtRef& s);    // a Barrier or a Fold over more than one thread
bool assigns(const StmtRef& s, int local);  // a Let or Assign giving `local` a value

}  // namespace kiln::ir
