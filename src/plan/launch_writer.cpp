// LaunchWriter's shared machinery (launch_writer.hpp): buffers, the fault record, node values
// at an index, thread groups and canonical folds.
#include "plan/launch_writer.hpp"

#include <algorithm>
#include <bit>
#include <cctype>

#include <fmt/format.h>

#include "graph/fold_order.hpp"
#include "ir/lower_folds.hpp"
#include "kiln/error.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/map_ops.hpp"
#include "plan/read_index.hpp"

namespace kiln::plan {

using graph::Node;

namespace {

int log2_of(int v) {
    return std::countr_zero(static_cast<unsigned>(v));
}

std::string kernel_name(const Launch& l) {
    std::string n = std::string("graph_") + name(l.kind);
    for (char c : l.label) n += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    return n;
}

}  // namespace

Fold fold_of(graph::FoldKind kind) {
    switch (kind) {
        case graph::FoldKind::sum:
            return Fold::sum();
        case graph::FoldKind::prod:
            return Fold::prod();
        case graph::FoldKind::max:
            return Fold::max();
        case graph::FoldKind::min:
            return Fold::min();
    }
    fail("internal: unknown fold");
}

LaunchWriter::LaunchWriter(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& l, const Schedule& s)
    : g_(g), materialized_(materialized), l_(l), s_(s), k_(kernel_name(l), s.block) {
    for (int o : l.outputs) is_output_[o] = true;
    index_type_ = index_type_of(g, l, s);
}

LoweredLaunch LaunchWriter::lower() {
    // Outputs first, so a launch's parameters start with what it writes.
    for (int o : l_.outputs) {
        const bool inout = l_.kind == LaunchKind::scatter;
        buffer_for(o, inout ? Access::read_write : Access::write);
    }
    (this->*rules(l_.kind).write)();
    LoweredLaunch out{k_.finish(),         grid_of(l_, g_, s_),        std::move(bound_),
                      std::move(scalars_), size_bucket(largest_size_), std::move(scalar_sites_)};
    return out;
}

Expr LaunchWriter::as_index(const Expr& e) const {
    return plan::as_index(index_type_, e);
}

std::string LaunchWriter::node_name(int n, std::string_view suffix) {
    const auto [it, added] = local_numbers_.try_emplace(n, static_cast<int>(local_numbers_.size()));
    return fmt::format("n{}{}", it->second, suffix);
}

// The buffer parameter of node n (declared on first use).
Memory LaunchWriter::buffer_for(int n, Access access) {
    auto found = buffers_.find(n);
    if (found != buffers_.end()) return found->second;
    const Node& node = g_.node(n);
    const std::string pname = node_name(n);
    Memory m = access == Access::read    ? k_.input(pname, node.dtype)
               : access == Access::write ? k_.output(pname, node.dtype)
                                         : k_.inout(pname, node.dtype);
    buffers_.emplace(n, m);
    bound_.push_back(n);
    return m;
}

Memory LaunchWriter::faults() {
    if (!faults_) {
        faults_ = k_.inout("faults", DType::i64);
        // Known, the record's length proves its constant indices in range (no checks).
        k_.require(faults_->len64() == Expr(int64_t{kFaultWords}),
                   fmt::format("the fault record has {} words", kFaultWords));
        bound_.push_back(kFaultBuffer);
    }
    return *faults_;
}

Expr LaunchWriter::fault_site(int n) {
    if (auto found = fault_site_params_.find(n); found != fault_site_params_.end())
        return found->second;
    Expr p = k_.scalar(fmt::format("fault_site{}", fault_site_params_.size()), DType::i64);
    bind_scalar(int64_t{n} + 1, n);
    fault_site_params_.emplace(n, p);
    return p;
}

Expr LaunchWriter::runtime_size(const std::string& name, int64_t value, DType type) {
    if (auto found = size_params_.find(name); found != size_params_.end()) return found->second;
    Expr p = k_.scalar(name, type);
    bind_scalar(type == DType::i64 ? Arg(value) : Arg(static_cast<int32_t>(value)));
    // The kernel serves the sizes of value's range: bounded so, its index arithmetic is known
    // not to wrap (ir/no_wrap.hpp), and the compilers keep it plain and vectorizable.
    const int64_t top = size_bucket(value);
    k_.require(
        p >= index_const(type, 0) && p <= index_const(type, top),
        fmt::format("{} is at most {} (the size range the kernel was written for)", name, top));
    largest_size_ = std::max(largest_size_, value);
    size_params_.emplace(name, p);
    return p;
}

Expr LaunchWriter::runtime_count(const std::string& name, int64_t count, int64_t lead) {
    if (lead <= 0 || count % lead != 0) return runtime_size(name, count);
    const Expr p = runtime_size(name, lead);
    return count == lead ? p : p * it(count / lead);
}

int64_t LaunchWriter::leading_row_extent() const {
    for (size_t a = 0; a < l_.full.size(); ++a)
        if (std::find(l_.axes.begin(), l_.axes.end(), static_cast<int>(a)) == l_.axes.end())
            return l_.full[a];
    return 1;
}

void LaunchWriter::bind_scalar(Arg value, int fault_site_of) {
    bound_.push_back(scalar_binding(static_cast<int>(scalars_.size())));
    scalars_.push_back(value);
    scalar_sites_.push_back(fault_site_of);
}

// The scratch buffer of lane partials k.
Memory LaunchWriter::scratch(int k, DType dtype, Access access) {
    auto found = scratch_.find(k);
    if (found != scratch_.end()) return found->second;
    const std::string pname = fmt::format("partials{}", scratch_.size());  // local, as node_name
    Memory m = access == Access::write ? k_.output(pname, dtype) : k_.input(pname, dtype);
    scratch_.emplace(k, m);
    bound_.push_back(scratch_binding(k));
    return m;
}

// Records a bad index: the first fault record wins where several threads race.
void LaunchWriter::record_fault(int n, const Expr& bad, Index& at, const Expr& value) {
    Memory f = faults();
    k_.if_(bad, [&] {
        k_.if_(f[0] == Expr(int64_t{0}), [&] {
            f[0] = fault_site(n);
            f[1] = cast(DType::i64, at.linear());
            f[2] = cast(DType::i64, value);
        });
    });
}

Expr LaunchWriter::value_at(int n, Index idx) {
    const Node& node = g_.node(n);
    if (!element_cache_.empty() && idx.has_linear())
        if (auto c = element_cache_.find({n, idx.linear().node().get()}); c != element_cache_.end())
            return c->second.value;
    if (auto row = row_values_.find(n); row != row_values_.end()) {
        // The fusion legality check (fusion_legality.cpp) refuses such groups before lowering.
        if (!same_element(idx, row->second.index))
            fail(
                "internal: node %{} ({}) is read at another row than the one its launch "
                "computes, in a launch the fusion legality check passed",
                n, graph::describe(node));
        return row->second.value;
    }
    const bool here = is_output_.count(n) && l_.kind != LaunchKind::scatter;
    if (materialized_[static_cast<size_t>(n)] && !here) return load(n, idx);
    // Values are remembered per (node, linear index expression); the entry keeps that
    // expression alive, so its address is never reused for another while it is a key.
    if (!idx.has_linear()) return compute(n, idx);
    const ir::ExprRef& key = idx.linear().node();
    if (auto m = memo_.find({n, key.get()}); m != memo_.end()) return m->second.value;
    Expr v = compute(n, idx);
    memo_.emplace(std::make_pair(n, key.get()), Memo{key, v});
    return v;
}

namespace {

// Where a load reads element idx, or its vector group (from `lane` elements before it). A
// block's part (Index::Split) in i32 is added in i64: g++ sees a uniform value plus the thread's
// offset as contiguous only so (an i32 sum of the two is not affine to it) and loads it without
// a gather.
Expr load_at(Index& idx, bool group) {
    if (!idx.split || idx.type() != DType::i32) return group ? idx.lanes->base : idx.linear();
    Expr offset = idx.split->offset;
    if (group && idx.lanes->lane) offset = offset - index_const(DType::i32, idx.lanes->lane);
    return cast(DType::i64, idx.split->base) + cast(DType::i64, offset);
}

}  // namespace

Expr LaunchWriter::load(int n, Index& idx) {
    const Node& node = g_.node(n);
    Memory m = buffer_for(n, Access::read);
    if (idx.lanes && size_of(node.dtype) == 4) {
        // One wide load per buffer, base and element group (write_map starts each group
        // afresh).
        auto found = std::find_if(vector_loads_.begin(), vector_loads_.end(), [&](const auto& v) {
            return v.node == n && same_expr(v.base, idx.lanes->base);
        });
        if (found == vector_loads_.end())
            found = vector_loads_.insert(
                vector_loads_.end(),
                {n, idx.lanes->base,
                 k_.load_vector(m, load_at(idx, true), idx.lanes->width, node_name(n, "v"))});
        return found->lanes[static_cast<size_t>(idx.lanes->lane)];
    }
    if (!caching_ || !idx.has_linear()) return m[load_at(idx, false)];
    // A cached row: the element's load is made once, at the row's scope.
    Var v = k_.let(m[idx.linear()], node_name(n, "c"));
    remember(n, idx, v);
    return v;
}

void LaunchWriter::remember(int n, Index& idx, const Expr& value) {
    const ir::ExprRef& key = idx.linear().node();
    element_cache_.emplace(std::make_pair(n, key.get()), Memo{key, value});
}

Expr LaunchWriter::compute(int n, Index& idx) {
    const Node& node = g_.node(n);
    const auto& in = g_.inputs[static_cast<size_t>(n)];
    namespace op = graph::op;
    if (node.resolved()) return load(n, idx);
    if (const auto* c = node.as<op::Constant>()) return constant(node.dtype, c->value);
    if (const auto* gen = node.as<op::Generate>()) return generate(*gen, node.dtype, idx.linear());
    if (const auto* m = node.as<op::Map>()) {
        std::vector<Expr> args;
        for (int i : in) args.push_back(value_at(i, idx));
        return apply_map(m->op, args, node.dtype);
    }
    if (const auto* v = node.as<op::View>()) return view(n, *v, idx);
    if (const auto* c = node.as<op::Concat>()) return concat(n, *c, idx);
    if (const auto* gt = node.as<op::Gather>()) return gather(n, *gt, idx);
    if (node.as<op::ScatterAdd>()) {
        // Its launch writes the base; the scatter launch after it adds the sources.
        return value_at(in[0], idx);
    }
    fail("internal: node %{} ({}) is not computed in a launch the fusion legality check passed", n,
         graph::describe(node));
}

Expr LaunchWriter::view(int n, const graph::op::View& v, Index& idx) {
    ViewRead r = view_read(g_, n, v, idx);
    Expr x = value_at(g_.inputs[static_cast<size_t>(n)][0], r.index);
    return r.inside ? select(*r.inside, x, constant(g_.node(n).dtype, v.pad_value)) : x;
}

Expr LaunchWriter::concat(int n, const graph::op::Concat& c, Index& idx) {
    const Expr at = idx.coords()[static_cast<size_t>(c.axis)];
    std::optional<Expr> result;
    for (ConcatRead& part : concat_reads(g_, n, c, idx)) {
        Expr value = value_at(part.input, part.index);
        result = result ? select(at < it(part.end), value, *result) : value;
    }
    return *result;
}

Expr LaunchWriter::gather(int n, const graph::op::Gather& gt, Index& idx) {
    const auto& in = g_.inputs[static_cast<size_t>(n)];
    const graph::Shape& src = g_.node(in[0]).shape;
    // The position in the index tensor an element takes its index from.
    Index at = gather_index_at(g_, n, gt, idx);
    Var value = k_.let(cast(DType::i64, value_at(in[1], at)), "index");
    Expr bad =
        value < Expr(int64_t{0}) || value >= Expr(int64_t{src[static_cast<size_t>(gt.axis)]});
    record_fault(n, bad, at, value);
    return value_at(in[0], gather_source_at(g_, n, gt, idx, select(bad, it(0), as_index(value))));
}

Index LaunchWriter::full_index(const Expr& row, const Expr& i) {
    return row_element(l_, index_type_, row, i);
}

// `count` thread groups of s_.threads threads: body(group, t, inside) for each, where group
// is clamped to the last one (every thread reaches the folds' barriers; past the end a
// group recomputes the last one and must write nothing) and `inside` says it is not past it.
void LaunchWriter::thread_groups(
    int64_t count, const std::function<void(const Expr&, const Expr&, const Expr&)>& body) {
    const int T = s_.threads;
    const Expr tid = k_.thread_index();
    Expr first = as_index(k_.block_index()) * it(s_.block / T);
    Var raw =
        k_.let(T == 1 ? first + as_index(tid) : first + as_index(tid >> Expr(log2_of(T))), "group");
    Var t = k_.let(T == 1 ? Expr(ir::int_const(DType::i32, 0)) : tid & Expr(T - 1), "t");
    const Expr groups = runtime_count("lead", count, leading_row_extent());
    const Expr inside = raw < groups;
    if (T == 1) {
        k_.if_(inside, [&] { body(raw, t, inside); });
    } else {
        Var group = k_.let(min(raw.expr(), groups - it(1)), "group_c");
        body(group, t, inside);
    }
}

// The canonical fold (graph/fold_order.hpp) of n elements, element(i) giving element i (an
// index-typed i): the one-level order as one fold of `threads` threads, or segments folded by
// one thread each inside the fold of their values.
Var LaunchWriter::canonical_fold(DType type, ir::FoldOp op, int64_t n, int threads,
                                 const std::function<Expr(Expr)>& element) {
    if (!graph::segmented(n)) {
        Fold f = Fold{{op}}.lanes(graph::level_lanes(n)).threads(threads);
        f.spec.unroll = s_.unroll;
        return k_.fold(type, Expr(ir::int_const(DType::i32, n)), f,
                       [&](Expr i) { return element(as_index(i)); });
    }
    return canonical_fold(type, op, graph::segment_count(n), threads,
                          [&](Expr s) { return Expr(segment_fold(type, op, n, s, 1, element)); });
}

// Segment s of a segmented fold of n elements (kSegmentLanes lanes, its last elements absent
// past n), folded by `threads` threads.
Var LaunchWriter::segment_fold(DType type, ir::FoldOp op, int64_t n, const Expr& s, int threads,
                               const std::function<Expr(Expr)>& element) {
    const Expr first = s * it(graph::kSegment);
    Var length = k_.let(cast(DType::i32, min(it(graph::kSegment), it(n) - first)), "segment");
    Fold f = Fold{{op}}.lanes(graph::kSegmentLanes).threads(threads);
    f.spec.unroll = threads > 1 ? s_.unroll : 1;
    return k_.fold(type, length, f, [&](Expr i) { return element(first + as_index(i)); });
}

}  // namespace kiln::plan
