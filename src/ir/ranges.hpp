// ranges: the values integer expressions can take, as intervals, from the kernel's structure and
// from facts known where they are evaluated (conditions of enclosing ifs, loop bounds, the
// kernel's requirements). check_bounds uses it to leave out the checks of accesses it proves in
// range. Every answer is sound under kiln's semantics: where an operation may wrap, its interval
// is its type's whole range.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "kiln/ir.hpp"

namespace kiln::ir {

// [lo, hi], inclusive; lo > hi is empty (code that cannot run where the facts hold).
struct Interval {
    int64_t lo = 0, hi = -1;
    bool empty() const { return lo > hi; }
};

// The values of an integer (or bool: 0, 1) type.
Interval type_range(DType t);

// `a op b` known to hold, with op one of lt, le, eq (gt and ge are stored swapped).
struct Fact {
    ExprRef a;
    BinOp op;
    ExprRef b;
};

// The facts a bool expression gives where it is true (holds = true) or false: its conjuncts
// that compare integers. Other conjuncts give nothing.
std::vector<Fact> facts_of(const ExprRef& cond, bool holds);

// Whether e or any expression under it satisfies pred.
bool mentions(const ExprRef& e, const std::function<bool(const ExprNode&)>& pred);

// The locals a statement tree gives values to.
std::set<int> assigned_in(const StmtRef& s);

// The facts of `list` that still hold throughout `body`: those that read no memory (which the
// body or other threads may write) and no local the body changes.
std::vector<Fact> lasting(const std::vector<Fact>& list, const StmtRef& body);

// Whether a and b compute the same value wherever both are evaluated: the same node, or the
// same operation on the same operands. The lengths of one buffer are one value, read as i32
// or i64 (an i32 length past INT32_MAX is refused at launch).
bool same_value(const ExprRef& a, const ExprRef& b);

// e = base + offset, with the offset a constant taken from + and - of constants.
struct Linear {
    ExprRef base;
    int64_t offset = 0;
};
Linear linear(const ExprRef& e);

class Ranges {
  public:
    // Learns each local's values (from every statement giving it one) and the requirements'
    // facts, which hold in every launch, for launches of at most `max_grid` blocks.
    explicit Ranges(const Kernel& kernel, int64_t max_grid = INT32_MAX);

    // The values e takes in any thread of any launch, where `facts` hold as well.
    Interval of(const ExprRef& e, const std::vector<Fact>& facts) const;

    const std::vector<Fact>& requirement_facts() const { return requirements_; }

    // The expression a local always equals, or null: the value of its one definition, where that
    // value reads only constants, parameters, lengths, positions and other such locals, so it is
    // the same wherever the thread evaluates it.
    ExprRef fixed_value(int local) const;
    // e, or the fixed value of the local e reads.
    ExprRef look_through(const ExprRef& e) const;

  private:
    struct Definition {
        ExprRef value;             // a let or assignment
        ExprRef begin, end, step;  // a loop variable
        bool opaque = false;       // a vector load
    };
    Interval local(int id) const;
    Interval eval(const ExprRef& e, const std::vector<Fact>& facts, int depth) const;
    Interval refine(const ExprRef& e, Interval r, const std::vector<Fact>& facts, int depth) const;

    const Kernel& kernel_;
    int64_t max_grid_;
    std::vector<std::vector<Definition>> definitions_;  // by local id
    std::vector<Fact> requirements_;
    mutable std::vector<int> local_state_;  // 0 unknown, 1 computing, 2 known
    mutable std::vector<Interval> local_range_;
    mutable std::vector<int> fixed_state_;  // 0 unknown, 1 computing, 2 known
    mutable std::vector<ExprRef> fixed_;
};

}  // namespace kiln::ir
