// Small helpers for walking IR: apply a function to every child expression of a node, and to
// every statement of a body.
#pragma once

#include <functional>

#include "kiln/ir.hpp"

namespace kiln::ir {

// Calls f on each direct child expression of e.
void for_each_child(const ExprRef& e, const std::function<void(const ExprRef&)>& f);
// Calls f once on every distinct expression node of the DAG rooted at e, children first.
void walk(const ExprRef& e, const std::function<void(const ExprRef&)>& f);
// e with each direct child c replaced by f(c); e itself where no child changed.
ExprRef with_children(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f);
// Rebuilds e bottom-up: f gets a node whose children are already rewritten and returns its
// replacement (or the node itself); f runs once per distinct node, so it must depend on the node
// alone. Unchanged subtrees are shared, not copied, and shared nodes stay shared.
ExprRef rewrite(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f);
// Rebuilds statement s with every expression in it passed through rewrite(.., f), recursively
// (one rewrite of each distinct node for the whole statement).
StmtRef rewrite_exprs(const StmtRef& s, const std::function<ExprRef(const ExprRef&)>& f);
// Calls f on each expression of statement s itself, evaluated where s stands: not those of the
// statements inside it, nor a fold's value (which belongs to its body).
void for_each_own_expr(const StmtNode& s, const std::function<void(const ExprRef&)>& f);
// for_each_own_expr and also a fold's value: every expression the node holds.
void for_each_expr(const StmtNode& s, const std::function<void(const ExprRef&)>& f);
// Calls f on every statement node of the tree rooted at s (fold bodies included), parents first.
void for_each_stmt(const StmtRef& s, const std::function<void(const StmtNode&)>& f);
// True when the statement tree contains a node for which pred is true.
bool contains(const StmtRef& s, const std::function<bool(const StmtNode&)>& pred);
bool contains_barrier(const StmtRef& s);    // a Barrier or a Fold over more than one thread
bool assigns(const StmtRef& s, int local);  // a Let or Assign giving `local` a value

}  // namespace kiln::ir
