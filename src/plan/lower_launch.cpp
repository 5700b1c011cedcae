// lower_launch: writes a launch's kernel with the DSL, inlining every node down to the buffers it
// reads.
#include "plan/lower_launch.hpp"

#include <bit>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "conformance/break_switch.hpp"
#include "graph/fold_order.hpp"
#include "ir/lower_folds.hpp"
#include "kiln/dsl.hpp"
#include "kiln/error.hpp"
#include "ops/attention.hpp"
#include "ops/conv1d.hpp"
#include "ops/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/index.hpp"
#include "plan/map_ops.hpp"
#include "plan/realize.hpp"

namespace kiln::plan {

using graph::Node;

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

int log2_of(int v) {
    return std::countr_zero(static_cast<unsigned>(v));
}

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

// The largest element count any node the launch touches has: it decides the index type.
int64_t largest_extent(const GraphView& g, const Launch& l) {
    int64_t most = l.rows * std::max<int64_t>(l.extent, 1);
    for (size_t i = 0; i < g.size(); ++i)
        most = std::max(most, g.node(static_cast<int>(i)).numel());
    return most;
}

std::string kernel_name(const Launch& l) {
    std::string n = std::string("graph_") + name(l.kind);
    for (char c : l.label) n += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    return n;
}

class Writer {
  public:
    Writer(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
           const Schedule& s)
        : g_(g), materialized_(materialized), l_(l), s_(s), k_(kernel_name(l), s.block) {
        for (int o : l.outputs) is_output_[o] = true;
        // Index arithmetic in i64 only where some count could pass 2^31 (with a margin for the
        // threads past the end).
        index_type_ =
            options().wide_index ||
                    largest_extent(g, l) + int64_t{s.block} * s.per_thread * s.vector * 4 >=
                        int64_t{INT32_MAX}
                ? DType::i64
                : DType::i32;
    }

    LoweredLaunch lower() {
        // Outputs first, so a launch's parameters start with what it writes.
        for (int o : l_.outputs) {
            const bool inout = l_.kind == LaunchKind::scatter;
            buffer_for(o, inout ? Access::read_write : Access::write);
        }
        switch (l_.kind) {
            case LaunchKind::map:
                write_map();
                break;
            case LaunchKind::row:
                write_row();
                break;
            case LaunchKind::scatter:
                write_scatter();
                break;
            case LaunchKind::segments:
                write_segments();
                break;
            case LaunchKind::contract:
                write_contract();
                break;
            case LaunchKind::conv1d:
                write_conv1d();
                break;
            case LaunchKind::attention:
                write_attention();
                break;
        }
        LoweredLaunch out{k_.finish(), grid_of(l_, g_, s_), std::move(bound_)};
        return out;
    }

  private:
    enum class Access { read, write, read_write };

    Expr it(int64_t v) const { return index_const(index_type_, v); }
    Expr as_index(const Expr& e) const {
        return e.type() == index_type_ ? e : cast(index_type_, e);
    }

    // The buffer parameter of node n (declared on first use).
    Memory buffer_for(int n, Access access) {
        auto found = buffers_.find(n);
        if (found != buffers_.end()) return found->second;
        const Node& node = g_.node(n);
        const std::string pname = fmt::format("n{}", n);
        Memory m = access == Access::read    ? k_.input(pname, node.dtype)
                   : access == Access::write ? k_.output(pname, node.dtype)
                                             : k_.inout(pname, node.dtype);
        buffers_.emplace(n, m);
        bound_.push_back(n);
        return m;
    }

    Memory faults() {
        if (!faults_) {
            faults_ = k_.inout("faults", DType::i64);
            bound_.push_back(kFaultBuffer);
        }
        return *faults_;
    }

    // The scratch buffer of lane partials k.
    Memory scratch(int k, DType dtype, Access access) {
        auto found = scratch_.find(k);
        if (found != scratch_.end()) return found->second;
        const std::string pname = fmt::format("partials{}", k);
        Memory m = access == Access::write ? k_.output(pname, dtype) : k_.input(pname, dtype);
        scratch_.emplace(k, m);
        bound_.push_back(scratch_binding(k));
        return m;
    }

    // Records a bad index: the first fault record wins where several threads race.
    void record_fault(int n, const Expr& bad, Index& at, const Expr& value) {
        Memory f = faults();
        k_.if_(bad, [&] {
            k_.if_(f[0] == Expr(int64_t{0}), [&] {
                f[0] = Expr(int64_t{n + 1});
                f[1] = cast(DType::i64, at.linear());
                f[2] = cast(DType::i64, value);
            });
        });
    }

    // ---- contractions ------------------------------------------------------------------------

    // The contraction's store: its value (f32) at element `linear` of its node, rounded once to
    // the node's dtype, then each of the launch's outputs computed there from it (an epilogue).
    void store_contraction(const Expr& linear, const Expr& acc) {
        const int c = l_.contraction;
        const Node& node = g_.node(c);
        Index at(node.shape, index_type_, linear);
        row_values_.erase(c);
        row_values_.emplace(c,
                            RowValue{node.dtype == DType::f32 ? acc : cast(node.dtype, acc), at});
        for (int o : l_.outputs) {
            Index here(node.shape, index_type_, linear);
            buffers_.at(o)[at.linear()] = value_at(o, here);
        }
    }

    static Expr i32(int64_t v) { return constant(DType::i32, static_cast<int32_t>(v)); }

    // A contraction's operand as its kernel reads it: a materialized node's buffer, or a
    // prologue's value computed at each element read (dense, row-major in the node's shape).
    ops::ElementRead elements(int source) {
        if (materialized_[size_t(source)])
            return ops::buffer_elements(buffer_for(source, Access::read));
        return [this, source](const Expr& e) {
            Index at(g_.node(source).shape, index_type_, as_index(e));
            return value_at(source, at);
        };
    }

    // ops::matmul's work at the point's variant, reading the operands in place.
    void write_contract() {
        const int c = l_.contraction;
        const ContractShape sh = contract_shape(g_, c);
        const ContractOperand a = contract_operand(g_, materialized_, c, 0);
        const ContractOperand b = contract_operand(g_, materialized_, c, 1);
        const ops::MatmulViews views{elements(a.source),
                                     elements(b.source),
                                     i32(sh.batch),
                                     i32(sh.m),
                                     i32(sh.n),
                                     i32(sh.k),
                                     i32(0),
                                     i32(a.shared ? 0 : sh.m * sh.k),
                                     i32(a.transposed ? sh.m : sh.k),
                                     i32(0),
                                     i32(b.shared ? 0 : sh.k * sh.n),
                                     i32(b.transposed ? sh.k : sh.n)};
        const ops::MatmulTypes types{g_.node(a.source).dtype, DType::f32, a.transposed,
                                     b.transposed};
        const ops::MatmulSchedule& point = ops::matmul_all_variants().at(size_t(s_.variant));
        ops::matmul_body(
            k_, views, types, point,
            [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& acc) {
                store_contraction(
                    (as_index(batch) * it(sh.m) + as_index(row)) * it(sh.n) + as_index(col), acc);
            });
    }

    // ops::conv1d's work at the point's variant, x and w dense.
    void write_conv1d() {
        const int c = l_.contraction;
        const ops::Conv1dShape sh = conv1d_shape(g_, c);
        const int x = g_.inputs[size_t(c)][0], w = g_.inputs[size_t(c)][1];
        const ops::Conv1dViews views{elements(x),
                                     elements(w),
                                     i32(sh.batch),
                                     i32(sh.in_channels),
                                     i32(sh.length),
                                     i32(sh.out_channels),
                                     i32(sh.kernel),
                                     i32(sh.params.stride),
                                     i32(sh.params.padding),
                                     i32(sh.params.dilation),
                                     i32(sh.params.groups),
                                     i32(0),
                                     i32(sh.in_channels * sh.length),
                                     i32(sh.length)};
        const ops::Conv1dTypes types{g_.node(x).dtype, DType::f32};
        const int64_t l_out = sh.out_length();
        ops::conv1d_body(
            k_, views, types, ops::conv1d_all_variants().at(size_t(s_.variant)),
            [&](const Expr& n, const Expr& oc, const Expr& t, const Expr& acc) {
                store_contraction(
                    (as_index(n) * it(sh.out_channels) + as_index(oc)) * it(l_out) + as_index(t),
                    acc);
            });
    }

    // ops::attention's work at the point's variant, q, k and v dense.
    void write_attention() {
        const int c = l_.contraction;
        const ops::AttentionShape sh = attention_shape(g_, c);
        const ops::AttentionOptions options = attention_options(g_, c);
        const auto& in = g_.inputs[size_t(c)];
        ops::AttentionViews views{elements(in[0]),
                                  elements(in[1]),
                                  elements(in[2]),
                                  i32(sh.batch),
                                  i32(sh.heads),
                                  i32(sh.kv_heads),
                                  i32(sh.seq_q),
                                  i32(sh.seq_k),
                                  i32(options.causal ? 1 : 0),
                                  constant(DType::f32, *options.scale)};
        if (in.size() > 3) {
            // Batch b's key length, recorded as a fault outside 1 to seq_k and used clamped there
            // (the run then ends in attention_key_length_error).
            views.key_length = [&, lengths = in[3]](const Expr& b) {
                Index at(g_.node(lengths).shape, index_type_, as_index(b));
                Var value = k_.let(cast(DType::i64, value_at(lengths, at)), "key_length");
                const Expr seq_k{int64_t{sh.seq_k}};
                record_fault(c, value < Expr(int64_t{1}) || value > seq_k, at, value);
                return cast(DType::i32, min(max(value.expr(), Expr(int64_t{1})), seq_k));
            };
        }
        const ops::AttentionTypes types{g_.node(in[0]).dtype, DType::f32,
                                        static_cast<int>(sh.head_dim)};
        ops::attention_body(
            k_, views, types, ops::attention_all_variants().at(size_t(s_.variant)),
            [&](const Expr& e, const Expr& v) { store_contraction(as_index(e), v); });
    }

    // ---- values -----------------------------------------------------------------------------

    Expr value_at(int n, Index idx) {
        const Node& node = g_.node(n);
        if (!element_cache_.empty() && idx.has_linear())
            if (auto c = element_cache_.find({n, idx.linear().node().get()});
                c != element_cache_.end())
                return c->second.value;
        if (auto row = row_values_.find(n); row != row_values_.end()) {
            if (!same_element(idx, row->second.index))
                throw NotFusable(
                    fmt::format("node %{} ({}) is read at another row than the one "
                                "its launch computes",
                                n, graph::describe(node)));
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

    Expr load(int n, Index& idx) {
        const Node& node = g_.node(n);
        Memory m = buffer_for(n, Access::read);
        if (idx.lanes && size_of(node.dtype) == 4) {
            // One wide load per buffer and element group (write_map starts each group afresh).
            auto found = vector_loads_.find(n);
            if (found == vector_loads_.end())
                found = vector_loads_
                            .emplace(n, k_.load_vector(m, idx.lanes->base, idx.lanes->width,
                                                       fmt::format("n{}v", n)))
                            .first;
            return found->second[static_cast<size_t>(idx.lanes->lane)];
        }
        if (!caching_ || !idx.has_linear()) return m[idx.linear()];
        // A cached row: the element's load is made once, at the row's scope.
        Var v = k_.let(m[idx.linear()], fmt::format("n{}c", n));
        remember(n, idx, v);
        return v;
    }

    void remember(int n, Index& idx, const Expr& value) {
        const ir::ExprRef& key = idx.linear().node();
        element_cache_.emplace(std::make_pair(n, key.get()), Memo{key, value});
    }

    Expr compute(int n, Index& idx) {
        const Node& node = g_.node(n);
        const auto& in = g_.inputs[static_cast<size_t>(n)];
        namespace op = graph::op;
        if (node.realized()) return load(n, idx);
        if (const auto* c = node.as<op::Constant>()) return constant(node.dtype, c->value);
        if (const auto* gen = node.as<op::Generate>())
            return generate(*gen, node.dtype, idx.linear());
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
        throw NotFusable(
            fmt::format("node %{} ({}) is not computed in this launch", n, graph::describe(node)));
    }

    Expr view(int n, const graph::op::View& v, Index& idx) {
        const int in = g_.inputs[static_cast<size_t>(n)][0];
        const graph::Shape& in_shape = g_.node(in).shape;
        switch (v.kind) {
            case graph::ViewKind::reshape:
                return value_at(in, idx.reshaped(in_shape));
            case graph::ViewKind::permute: {
                std::vector<Expr> out(in_shape.size(), it(0));
                for (size_t i = 0; i < v.a.size(); ++i)
                    out[static_cast<size_t>(v.a[i])] = idx.coords()[i];
                return value_at(in, Index(in_shape, index_type_, out));
            }
            case graph::ViewKind::expand: {
                const size_t offset = idx.shape().size() - in_shape.size();
                std::vector<Expr> out;
                for (size_t j = 0; j < in_shape.size(); ++j)
                    out.push_back(in_shape[j] == 1 ? it(0) : idx.coords()[j + offset]);
                return value_at(in, Index(in_shape, index_type_, out));
            }
            case graph::ViewKind::slice: {
                std::vector<Expr> out;
                for (size_t j = 0; j < in_shape.size(); ++j) {
                    Expr e = idx.coords()[j];
                    if (v.b[j] != 1) e = e * it(v.b[j]);
                    if (v.a[j] != 0) e = e + it(v.a[j]);
                    out.push_back(e);
                }
                return value_at(in, Index(in_shape, index_type_, out));
            }
            case graph::ViewKind::pad: {
                std::vector<Expr> out;
                std::optional<Expr> inside;
                for (size_t j = 0; j < in_shape.size(); ++j) {
                    Expr e = idx.coords()[j];
                    if (v.a[j] == 0 && v.b[j] == 0) {
                        out.push_back(e);
                        continue;
                    }
                    if (v.a[j] != 0) e = e - it(v.a[j]);
                    Expr ok = e >= it(0) && e < it(in_shape[j]);
                    inside = inside ? *inside && ok : ok;
                    // Clamped, so the load stays in range whichever value is kept.
                    out.push_back(min(max(e, it(0)), it(std::max<int64_t>(in_shape[j] - 1, 0))));
                }
                Expr x = value_at(in, Index(in_shape, index_type_, out));
                const Node& node = g_.node(n);
                return inside ? select(*inside, x, constant(node.dtype, v.pad_value)) : x;
            }
        }
        fail("internal: unknown view");
    }

    Expr concat(int n, const graph::op::Concat& c, Index& idx) {
        const auto& in = g_.inputs[static_cast<size_t>(n)];
        const auto axis = static_cast<size_t>(c.axis);
        const Expr at = idx.coords()[axis];
        std::optional<Expr> result;
        int64_t end = g_.node(n).shape[axis];
        // From the last part to the first: part k where at < its end.
        for (size_t k = in.size(); k-- > 0;) {
            const graph::Shape& shape = g_.node(in[k]).shape;
            const int64_t begin = end - shape[axis];
            std::vector<Expr> coords = idx.coords();
            coords[axis] =
                min(max(at - it(begin), it(0)), it(std::max<int64_t>(shape[axis] - 1, 0)));
            if (shape[axis] > 0) {
                Expr part = value_at(in[k], Index(shape, index_type_, coords));
                result = result ? select(at < it(end), part, *result) : part;
            }
            end = begin;
        }
        return *result;
    }

    Expr gather(int n, const graph::op::Gather& gt, Index& idx) {
        const auto& in = g_.inputs[static_cast<size_t>(n)];
        const graph::Shape& src = g_.node(in[0]).shape;
        const auto axis = static_cast<size_t>(gt.axis);
        // The position in the index tensor an element takes its index from.
        Index at = gt.select ? Index(g_.node(in[1]).shape, index_type_,
                                     std::vector<Expr>{idx.coords()[axis]})
                             : Index(idx.shape(), index_type_, idx.coords());
        Var value = k_.let(cast(DType::i64, value_at(in[1], at)), "index");
        Expr bad = value < Expr(int64_t{0}) || value >= Expr(int64_t{src[axis]});
        record_fault(n, bad, at, value);
        std::vector<Expr> coords = idx.coords();
        coords[axis] = select(bad, it(0), as_index(value));
        return value_at(in[0], Index(src, index_type_, coords));
    }

    // ---- launch kinds -----------------------------------------------------------------------

    void write_map() {
        const graph::Shape& shape = g_.node(l_.outputs[0]).shape;
        const int64_t E = graph::element_count(shape);
        const int64_t G = grid_of(l_, g_, s_);
        const int V = s_.vector;
        Expr gid = as_index(k_.block_index()) * it(s_.block) + as_index(k_.thread_index());
        k_.unroll(0, s_.per_thread, [&](Expr q) {
            int64_t qv = 0;
            ir::is_const(q.node(), &qv);
            if (qv > 0 && conformance::break_switch("map_tiling")) return;  // tests of the sweep
            Expr first = qv ? gid + it(qv * G * s_.block) : gid;
            if (V > 1) first = first * it(V);
            Var e = k_.let(first, "e");
            k_.if_(e < it(E), [&] {
                memo_.clear();
                vector_loads_.clear();
                if (V == 1) {
                    for (int o : l_.outputs) {
                        Expr v = value_at(o, Index(shape, index_type_, e));
                        buffers_.at(o)[e] = v;
                    }
                    return;
                }
                for (int o : l_.outputs) {
                    std::vector<Expr> lanes;
                    for (int lane = 0; lane < V; ++lane) {
                        Index idx(shape, index_type_, lane ? e + it(lane) : Expr(e));
                        idx.lanes = Index::Lanes{e, lane, V};
                        lanes.push_back(value_at(o, idx));
                    }
                    const Memory out = buffers_.at(o);
                    if (size_of(g_.node(o).dtype) == 4)
                        k_.store_vector(out, e, lanes);
                    else
                        for (int lane = 0; lane < V; ++lane)
                            out[lane ? e + it(lane) : Expr(e)] = lanes[static_cast<size_t>(lane)];
                }
            });
        });
    }

    // The full-space index of element i of row `row`: its coordinates are the row's (in the
    // launch's row space) and i's (in the reduced axes), so a value broadcast along the reduced
    // axes is read at exactly the row's own index.
    Index full_index(const Expr& row, const Expr& i) {
        const size_t rank = l_.full.size();
        graph::Shape outer, inner;
        for (size_t a = 0; a < rank; ++a) (is_reduced(a) ? inner : outer).push_back(l_.full[a]);
        Index o(outer, index_type_, row), r(inner, index_type_, as_index(i));
        std::vector<Expr> coords;
        size_t oi = 0, ri = 0;
        for (size_t a = 0; a < rank; ++a)
            coords.push_back(is_reduced(a) ? r.coords()[ri++] : o.coords()[oi++]);
        const bool trailing =
            l_.axes.empty() || (l_.axes.back() == static_cast<int>(rank) - 1 &&
                                l_.axes.front() == static_cast<int>(rank - l_.axes.size()));
        if (trailing) return Index(l_.full, index_type_, row * it(l_.extent) + as_index(i), coords);
        return Index(l_.full, index_type_, coords);
    }

    bool is_reduced(size_t axis) const {
        return std::find(l_.axes.begin(), l_.axes.end(), static_cast<int>(axis)) != l_.axes.end();
    }

    // `count` thread groups of s_.threads threads: body(group, t, inside) for each, where group
    // is clamped to the last one (every thread reaches the folds' barriers; past the end a
    // group recomputes the last one and must write nothing) and `inside` says it is not past it.
    void thread_groups(int64_t count,
                       const std::function<void(const Expr&, const Expr&, const Expr&)>& body) {
        const int T = s_.threads;
        const Expr tid = k_.thread_index();
        Expr first = as_index(k_.block_index()) * it(s_.block / T);
        Var raw = k_.let(T == 1 ? first + as_index(tid) : first + as_index(tid >> Expr(log2_of(T))),
                         "group");
        Var t = k_.let(T == 1 ? Expr(ir::int_const(DType::i32, 0)) : tid & Expr(T - 1), "t");
        const Expr inside = raw < it(count);
        if (T == 1) {
            k_.if_(inside, [&] { body(raw, t, inside); });
        } else {
            Var group = k_.let(min(raw.expr(), it(count - 1)), "group_c");
            body(group, t, inside);
        }
    }

    // One thread group per segment of a row: the segment's fold, written as the row's segment
    // value for the row launch that follows.
    void write_segments() {
        const int64_t M = graph::segment_count(l_.extent);
        thread_groups(l_.rows * M, [&](const Expr& group, const Expr& t, const Expr& inside) {
            Var row = k_.let(group / it(M), "row");
            Var segment = k_.let(group % it(M), "segment");
            std::vector<std::pair<int, Var>> values;
            for (int f : l_.row_steps) {
                const auto op = fold_of(g_.node(f).as<graph::op::Fold>()->kind).spec.op;
                const int in = g_.inputs[size_t(f)][0];
                values.emplace_back(f, segment_fold(g_.node(f).dtype, op, l_.extent, segment,
                                                    s_.threads, [&](Expr i) {
                                                        memo_.clear();
                                                        return value_at(in, full_index(row, i));
                                                    }));
            }
            k_.if_(t == 0 && inside, [&] {
                for (const auto& [f, v] : values)
                    scratch(l_.partials.at(f), g_.node(f).dtype, Access::write)[group] = v;
            });
        });
    }

    // A row whose elements each thread keeps (Schedule::cache, threads = the fold's W lanes):
    // thread t holds elements t, t+W, t+2W, ... (its lane's, in order), loads them and computes
    // each fold's inputs once into locals, folds its lane left to right (elements past the row
    // skipped), and the fold over the W lane values (one a thread) makes the halving tree: the
    // canonical order's bits. The epilogue reads the same elements from the locals.
    void write_row_cached() {
        const int W = s_.threads;
        const int64_t n = l_.extent, K = ceil_div(n, W);
        thread_groups(l_.rows, [&](const Expr& row, const Expr& t, const Expr& inside) {
            std::vector<Index> element;
            std::vector<Expr> valid;
            for (int64_t k = 0; k < K; ++k) {
                const Expr j = as_index(t) + it(k * W);
                const bool whole = (k + 1) * W <= n;
                element.push_back(full_index(row, whole ? j : min(j, it(n - 1))));
                valid.push_back(whole ? Expr(ir::int_const(DType::boolean, 1)) : j < it(n));
            }
            caching_ = true;
            for (int step : l_.row_steps) {
                const Node& node = g_.node(step);
                Index at(node.shape, index_type_, row);
                if (const auto* f = node.as<graph::op::Fold>()) {
                    const int in = g_.inputs[size_t(step)][0];
                    const auto op = fold_of(f->kind).spec.op;
                    Var acc = k_.let(Expr(ir::fold_identity(op, node.dtype)), "lane");
                    const bool reversed = conformance::break_switch("fold_order");  // tests only
                    for (int64_t step_k = 0; step_k < K; ++step_k) {
                        const int64_t k = reversed ? K - 1 - step_k : step_k;
                        Expr v = value_at(in, element[size_t(k)]);
                        Var kept = k_.let(v, fmt::format("n{}c", in));
                        remember(in, element[size_t(k)], kept);
                        Expr next(ir::fold_combine(op, acc.expr().node(), kept.expr().node()));
                        acc = (k + 1) * W <= n ? next : select(valid[size_t(k)], next, acc);
                    }
                    // One element a lane: the fold is its tree over the lanes' values.
                    Fold lanes = Fold{{op}}.lanes(W).threads(W);
                    Var v = k_.fold(node.dtype, Expr(ir::int_const(DType::i32, W)), lanes,
                                    [&](Expr) { return Expr(acc); });
                    row_values_.emplace(step, RowValue{v, at});
                } else {
                    Var v = k_.let(compute(step, at), fmt::format("n{}", step));
                    row_values_.emplace(step, RowValue{v, at});
                }
            }
            caching_ = false;
            write_row_outputs(row, t, inside, [&](const std::vector<int>& full_outputs) {
                for (int64_t k = 0; k < K; ++k)
                    k_.if_(valid[size_t(k)], [&] {
                        for (int o : full_outputs)
                            buffers_.at(o)[element[size_t(k)].linear()] =
                                value_at(o, element[size_t(k)]);
                    });
            });
            element_cache_.clear();
        });
    }

    // The row launch's outputs: one value a row (thread 0 of the group) and, through
    // `full`, one per element of the row.
    void write_row_outputs(const Expr& row, const Expr& t, const Expr& inside,
                           const std::function<void(const std::vector<int>&)>& full) {
        memo_.clear();
        std::vector<int> row_outputs, full_outputs;
        for (int o : l_.outputs)
            (g_.node(o).numel() == l_.rows && g_.node(o).shape != l_.full ? row_outputs
                                                                          : full_outputs)
                .push_back(o);
        if (!row_outputs.empty())
            k_.if_(t == 0 && inside, [&] {
                for (int o : row_outputs)
                    buffers_.at(o)[row] = value_at(o, Index(g_.node(o).shape, index_type_, row));
            });
        if (!full_outputs.empty()) k_.if_(inside, [&] { full(full_outputs); });
    }

    void write_row() {
        if (s_.cache) return write_row_cached();
        const int T = s_.threads;
        thread_groups(l_.rows, [&](const Expr& row, const Expr& t, const Expr& inside) {
            for (int step : l_.row_steps) {
                const Node& node = g_.node(step);
                Index at(node.shape, index_type_, row);
                if (const auto* f = node.as<graph::op::Fold>()) {
                    const int in = g_.inputs[static_cast<size_t>(step)][0];
                    const auto op = fold_of(f->kind).spec.op;
                    Var v = l_.partials.count(step)
                                ? fold_partials(step, op, row, T)
                                : canonical_fold(node.dtype, op, l_.extent, T, [&](Expr i) {
                                      memo_.clear();
                                      return value_at(in, full_index(row, i));
                                  });
                    row_values_.emplace(step, RowValue{v, at});
                } else {
                    memo_.clear();
                    Var v = k_.let(compute(step, at), fmt::format("n{}", step));
                    row_values_.emplace(step, RowValue{v, at});
                }
            }
            write_row_outputs(row, t, inside, [&](const std::vector<int>& full_outputs) {
                k_.for_(
                    as_index(t), it(l_.extent),
                    [&](Expr j) {
                        memo_.clear();
                        Index idx = full_index(row, j);
                        for (int o : full_outputs) buffers_.at(o)[idx.linear()] = value_at(o, idx);
                    },
                    it(T));
            });
        });
    }

    // The canonical fold (graph/fold_order.hpp) of n elements, element(i) giving element i (an
    // index-typed i): the one-level order as one fold of `threads` threads, or segments folded by
    // one thread each inside the fold of their values.
    Var canonical_fold(DType type, ir::FoldOp op, int64_t n, int threads,
                       const std::function<Expr(Expr)>& element) {
        if (!graph::segmented(n)) {
            Fold f = Fold{{op}}.lanes(graph::level_lanes(n)).threads(threads);
            f.spec.unroll = s_.unroll;
            return k_.fold(type, Expr(ir::int_const(DType::i32, n)), f,
                           [&](Expr i) { return element(as_index(i)); });
        }
        return canonical_fold(type, op, graph::segment_count(n), threads, [&](Expr s) {
            return Expr(segment_fold(type, op, n, s, 1, element));
        });
    }

    // Segment s of a segmented fold of n elements (kSegmentLanes lanes, its last elements absent
    // past n), folded by `threads` threads.
    Var segment_fold(DType type, ir::FoldOp op, int64_t n, const Expr& s, int threads,
                     const std::function<Expr(Expr)>& element) {
        const Expr first = s * it(graph::kSegment);
        Var length = k_.let(cast(DType::i32, min(it(graph::kSegment), it(n) - first)), "segment");
        Fold f = Fold{{op}}.lanes(graph::kSegmentLanes).threads(threads);
        f.spec.unroll = threads > 1 ? s_.unroll : 1;
        return k_.fold(type, length, f, [&](Expr i) { return element(first + as_index(i)); });
    }

    // A fold of the segment values a segments launch wrote: the segment values' own canonical
    // fold, which completes the canonical order of the row.
    Var fold_partials(int fold, ir::FoldOp op, const Expr& row, int threads) {
        const int64_t M = graph::segment_count(l_.extent);
        Memory p = scratch(l_.partials.at(fold), g_.node(fold).dtype, Access::read);
        return canonical_fold(g_.node(fold).dtype, op, M, threads,
                              [&](Expr i) { return Expr(p[row * it(M) + i]); });
    }

    void write_scatter() {
        const int s = l_.scatter;
        const auto& in = g_.inputs[static_cast<size_t>(s)];
        const auto& sc = *g_.node(s).as<graph::op::ScatterAdd>();
        const graph::Shape& ishape = g_.node(in[1]).shape;
        const auto axis = static_cast<size_t>(sc.axis);
        graph::Shape outer = ishape;
        outer.erase(outer.begin() + static_cast<int64_t>(axis));
        const int64_t columns = graph::element_count(outer);
        Memory out = buffers_.at(s);
        Var col = k_.let(as_index(k_.block_index()) * it(s_.block) + as_index(k_.thread_index()),
                         "column");
        k_.if_(col < it(columns), [&] {
            Index o(outer, index_type_, col);
            const std::vector<Expr> oc = o.coords();
            k_.for_(it(0), it(ishape[axis]), [&](Expr i) {
                memo_.clear();
                std::vector<Expr> coords = oc;
                coords.insert(coords.begin() + static_cast<int64_t>(axis), i);
                Index idx(ishape, index_type_, coords);
                Var value = k_.let(cast(DType::i64, value_at(in[1], idx)), "index");
                Expr bad =
                    value < Expr(int64_t{0}) || value >= Expr(int64_t{g_.node(s).shape[axis]});
                record_fault(s, bad, idx, value);
                k_.if_(!bad, [&] {
                    std::vector<Expr> dst = coords;
                    dst[axis] = as_index(value);
                    Index d(g_.node(s).shape, index_type_, dst);
                    Expr at = d.linear();
                    out[at] = Expr(out[at]) + value_at(in[2], idx);
                });
            });
        });
    }

    struct RowValue {
        Expr value;
        Index index;
    };

    const GraphView& g_;
    const std::vector<char>& materialized_;
    const Launch& l_;
    const Schedule& s_;
    KernelBuilder k_;
    DType index_type_ = DType::i32;
    std::map<int, bool> is_output_;
    std::map<int, Memory> buffers_;
    std::optional<Memory> faults_;
    std::map<int, Memory> scratch_;
    std::vector<int> bound_;
    std::map<int, RowValue> row_values_;
    struct Memo {
        ir::ExprRef key;  // kept alive while it is a key
        Expr value;
    };
    std::map<std::pair<int, const ir::ExprNode*>, Memo> memo_;
    // A cached row's element values, kept in locals for the whole row (write_row_cached).
    std::map<std::pair<int, const ir::ExprNode*>, Memo> element_cache_;
    bool caching_ = false;  // loads at an element's index are kept in element_cache_
    std::map<int, std::vector<Var>> vector_loads_;  // of the current element group
};

}  // namespace

bool is_empty(const Launch& l, const GraphView& g) {
    switch (l.kind) {
        case LaunchKind::map:
            return g.node(l.outputs[0]).numel() == 0;
        case LaunchKind::row:
        case LaunchKind::segments:
            return l.rows == 0;
        case LaunchKind::scatter:
            return graph::element_count(g.node(g.inputs[size_t(l.scatter)][1]).shape) == 0;
        case LaunchKind::contract:
        case LaunchKind::conv1d:
        case LaunchKind::attention:
            return g.node(l.contraction).numel() == 0;
    }
    return false;
}

int64_t grid_of(const Launch& l, const GraphView& g, const Schedule& s) {
    switch (l.kind) {
        case LaunchKind::map: {
            const int64_t E = g.node(l.outputs[0]).numel();
            return std::max<int64_t>(1, ceil_div(E, int64_t{s.block} * s.per_thread * s.vector));
        }
        case LaunchKind::row:
            return std::max<int64_t>(1, ceil_div(l.rows, s.block / s.threads));
        case LaunchKind::segments:
            return std::max<int64_t>(
                1, ceil_div(l.rows * graph::segment_count(l.extent), s.block / s.threads));
        case LaunchKind::scatter: {
            const auto& shape = g.node(g.inputs[static_cast<size_t>(l.scatter)][1]).shape;
            const auto axis =
                static_cast<size_t>(g.node(l.scatter).as<graph::op::ScatterAdd>()->axis);
            return std::max<int64_t>(
                1,
                ceil_div(graph::element_count(shape) / std::max<int64_t>(shape[axis], 1), s.block));
        }
        case LaunchKind::contract: {
            const ContractShape sh = contract_shape(g, l.contraction);
            return std::max<int64_t>(
                1, ops::matmul_grid({sh.batch, sh.m, sh.n, sh.k},
                                    ops::matmul_all_variants().at(size_t(s.variant))));
        }
        case LaunchKind::conv1d:
            return std::max<int64_t>(
                1, ops::conv1d_grid(conv1d_shape(g, l.contraction),
                                    ops::conv1d_all_variants().at(size_t(s.variant))));
        case LaunchKind::attention:
            return std::max<int64_t>(
                1, ops::attention_grid(attention_shape(g, l.contraction),
                                       ops::attention_all_variants().at(size_t(s.variant))));
    }
    return 1;
}

LoweredLaunch lower_launch(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& launch, const Schedule& s) {
    return Writer(g, materialized, launch, s).lower();
}

}  // namespace kiln::plan
