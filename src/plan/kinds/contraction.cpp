// Contraction launches (matmul, conv1d, attention): the op's own body at the point's variant,
// reading operands in place or through a prologue, each result stored with the epilogue; and a
// matmul split by k's chunks (kiln/ops/contraction_order.hpp), its chunks form: contract_chunks
// runs one of ops::matmul's split points (each block one chunk of k for one tile) into the plan's
// scratch, chunk_sum adds each element's chunk sums in the op's order and stores the epilogue.
#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

#include <fmt/format.h>

#include "base/ceil_div.hpp"
#include "kiln/ops/contraction_order.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/fusion_legality.hpp"

namespace kiln::plan {

using graph::Node;

// The contraction's store: its value (f32) at element `linear` of its node, rounded once to
// the node's dtype, then each of the launch's outputs computed there from it (an epilogue).
void LaunchWriter::store_contraction(const Expr& linear, const Expr& acc,
                                     const std::optional<std::vector<Expr>>& coords) {
    const int c = l_.contraction;
    const Node& node = g_.node(c);
    auto index = [&] {
        return coords ? Index(node.shape, index_type_, linear, *coords)
                      : Index(node.shape, index_type_, linear);
    };
    Index at = index();
    row_values_.erase(c);
    row_values_.emplace(c, RowValue{node.dtype == DType::f32 ? acc : cast(node.dtype, acc), at});
    for (int o : l_.outputs) {
        Index here = index();
        buffers_.at(o)[at.linear()] = value_at(o, here);
    }
}

// A contraction's operand as its kernel reads it: a materialized node's buffer, or a
// prologue's value computed at each element read (dense, row-major in the node's shape).
ops::ElementRead LaunchWriter::elements(int source) {
    if (materialized_[size_t(source)])
        return ops::buffer_elements(buffer_for(source, Access::read));
    return [this, source](const Expr& e) {
        Index at(g_.node(source).shape, index_type_, as_index(e));
        return value_at(source, at);
    };
}

// ops::matmul's operands, sizes and types as this launch reads them: the operands in place
// through their views, or through a prologue.
LaunchWriter::MatmulRead LaunchWriter::matmul_read() {
    const int c = l_.contraction;
    const ContractShape sh = contract_shape(g_, c);
    const ContractOperand a = contract_operand(g_, materialized_, c, 0);
    const ContractOperand b = contract_operand(g_, materialized_, c, 1);
    // The batch count and m (the rows of a's matrices: tokens, a batch of rows) are runtime
    // sizes, so one kernel serves every batch; n and k, the other operand's extents, stay
    // constants.
    const Expr batches = runtime_size("batches", sh.batch, DType::i32);
    const Expr m = runtime_size("m", sh.m, DType::i32);
    // An operand's leading dimension: its source's row length where it is a column slice read in
    // place, else that of its dense (or transposed) matrices.
    const auto leading = [&](const ContractOperand& op, const Expr& dense) {
        return op.row_length ? i32(op.row_length) : dense;
    };
    const Expr lda = leading(a, a.transposed ? m : i32(sh.k));
    const Expr ldb = leading(b, i32(b.transposed ? sh.k : sh.n));
    const ops::MatmulViews views{elements(a.source),
                                 elements(b.source),
                                 batches,
                                 m,
                                 i32(sh.n),
                                 i32(sh.k),
                                 i32(0),
                                 a.shared ? i32(0) : m * i32(a.row_length ? a.row_length : sh.k),
                                 lda,
                                 i32(0),
                                 i32(b.shared ? 0 : sh.k * (b.row_length ? b.row_length : sh.n)),
                                 ldb};
    const ops::MatmulTypes types{g_.node(a.source).dtype, DType::f32, a.transposed, b.transposed};
    return {sh, views, types, ops::matmul_all_variants().at(size_t(s_.variant))};
}

// Element (batch, row, col) of the Matmul node: its linear index.
Expr LaunchWriter::matmul_element(const MatmulRead& r, const Expr& batch, const Expr& row,
                                  const Expr& col) {
    return (as_index(batch) * as_index(r.views.m) + as_index(row)) * it(r.shape.n) + as_index(col);
}

// ops::matmul's work at the point's variant.
void LaunchWriter::write_contract() {
    const MatmulRead r = matmul_read();
    ops::matmul_body(k_, r.views, r.types, r.point,
                     [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& acc) {
                         // The node is [batch axes..., m, n]: with at most one batch axis its
                         // coordinates are the kernel's own.
                         const size_t rank = g_.node(l_.contraction).shape.size();
                         std::optional<std::vector<Expr>> coords;
                         if (rank == 2 && r.shape.batch == 1)
                             coords = std::vector{as_index(row), as_index(col)};
                         if (rank == 3)
                             coords = std::vector{as_index(batch), as_index(row), as_index(col)};
                         store_contraction(matmul_element(r, batch, row, col), acc, coords);
                     });
}

// A split point's work, its chunk sums into the scratch (the chunks form's first launch).
void LaunchWriter::write_contract_chunks() {
    const MatmulRead r = matmul_read();
    Memory sums = scratch(l_.partials.at(l_.contraction), DType::f32, Access::write);
    Var outputs = k_.let(as_index(r.views.batch) * as_index(r.views.m) * it(r.shape.n), "outputs");
    ops::matmul_chunks_body(
        k_, r.views, r.types, r.point,
        [&](const Expr& chunk, const Expr& batch, const Expr& row, const Expr& col,
            const Expr& sum) {
            sums[as_index(chunk) * outputs + matmul_element(r, batch, row, col)] = sum;
        });
}

// Each element's chunk sums added in the op's order, then stored with the epilogue (the chunks
// form's second launch).
void LaunchWriter::write_chunk_sum() {
    const int c = l_.contraction;
    const graph::Shape& shape = g_.node(c).shape;
    const int64_t chunks = ops::contraction_chunks(contract_shape(g_, c).k);
    // The element count is a runtime value (its leading extent a runtime size), as a map's.
    Var count = k_.let(runtime_count("lead", graph::element_count(shape), shape[0]), "count");
    Memory sums = scratch(l_.partials.at(c), DType::f32, Access::read);
    Var e = k_.let(as_index(k_.block_index()) * it(s_.block) + as_index(k_.thread_index()), "e");
    k_.if_(e < count, [&] {
        const Expr total =
            ops::chunk_total(k_, it(chunks), [&](const Expr& ch) { return sums[ch * count + e]; });
        // A 2-d node's coordinates, for an epilogue's broadcast operand (a bias).
        std::optional<std::vector<Expr>> coords;
        if (shape.size() == 2) coords = std::vector<Expr>{e / it(shape[1]), e % it(shape[1])};
        store_contraction(e, total, coords);
    });
}

// ops::conv1d's work at the point's variant, x and w dense.
void LaunchWriter::write_conv1d() {
    const int c = l_.contraction;
    const ops::Conv1dShape sh = conv1d_shape(g_, c);
    const int x = g_.inputs[size_t(c)][0], w = g_.inputs[size_t(c)][1];
    // The batch count is a runtime size; channels, lengths and the kernel stay constants.
    const ops::Conv1dViews views{elements(x),
                                 elements(w),
                                 runtime_size("batches", sh.batch, DType::i32),
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
                (as_index(n) * it(sh.out_channels) + as_index(oc)) * it(l_out) + as_index(t), acc);
        });
}

// ops::attention's work at the point's variant, q, k and v dense.
void LaunchWriter::write_attention() {
    const int c = l_.contraction;
    const ops::AttentionShape sh = attention_shape(g_, c);
    const ops::AttentionOptions options = attention_options(g_, c);
    const auto& in = g_.inputs[size_t(c)];
    // The batch count is a runtime size; heads, sequence lengths and head_dim stay constants.
    ops::AttentionViews views{elements(in[0]),
                              elements(in[1]),
                              elements(in[2]),
                              runtime_size("batches", sh.batch, DType::i32),
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
    ops::attention_body(k_, views, types, ops::attention_all_variants().at(size_t(s_.variant)),
                        [&](const Expr& e, const Expr& v) { store_contraction(as_index(e), v); });
}

namespace {

// The points of a class's domain that `fits` keeps (a contiguous part of an op's list of every
// point, `all`), as indices into `all`, their threads as the block.
template <typename Point, typename Fits>
std::vector<Schedule> class_schedules(std::span<const Point> points, const std::vector<Point>& all,
                                      const Fits& fits) {
    std::vector<Schedule> d;
    const size_t first = size_t(points.data() - all.data());
    for (size_t v = 0; v < points.size(); ++v)
        if (fits(points[v])) d.push_back({.block = points[v].threads(), .variant = int(first + v)});
    return d;
}
const auto every = [](const auto&) { return true; };

// Each contraction: its class's points on its device (ops::*_domain).
std::vector<Schedule> contract_domain(const Launch& l, const GraphView& g) {
    const graph::Node& mm = g.node(l.contraction);
    // A split point runs two kernels (the op's entry does); a launch here is one.
    return class_schedules(ops::matmul_domain(*mm.device, mm.as<graph::op::Matmul>()->arithmetic),
                           ops::matmul_all_variants(),
                           [](const ops::MatmulSchedule& p) { return !p.split_k; });
}
std::vector<Schedule> conv1d_domain(const Launch& l, const GraphView& g) {
    const graph::Node& c = g.node(l.contraction);
    return class_schedules(ops::conv1d_domain(*c.device, c.as<graph::op::Conv1d>()->arithmetic),
                           ops::conv1d_all_variants(), every);
}
// Points whose shared tiles do not fit for this head_dim are left out.
std::vector<Schedule> attention_domain(const Launch& l, const GraphView& g) {
    const int D = static_cast<int>(attention_shape(g, l.contraction).head_dim);
    const graph::Node& a = g.node(l.contraction);
    return class_schedules(
        ops::attention_domain(*a.device, attention_options(g, l.contraction).arithmetic, D),
        ops::attention_all_variants(), [D](const auto& p) { return ops::attention_fits(p, D); });
}

// The matmul's split points on its device that apply to its shape.
std::vector<Schedule> chunks_domain(const Launch& l, const GraphView& g) {
    std::vector<Schedule> d;
    for (int v : split_variants(g, l.contraction))
        d.push_back({.block = ops::matmul_all_variants().at(size_t(v)).threads(), .variant = v});
    return d;
}

// A thread per element, in blocks of 64 to 256.
std::vector<Schedule> chunk_sum_domain(const Launch&, const GraphView&) {
    return {{.block = 256}, {.block = 128}, {.block = 64}};
}

std::string chunk_sum_point(const Schedule& s) {
    return fmt::format("b{}", s.block);
}

int64_t chunk_sum_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    return std::max<int64_t>(1, ceil_div(g.node(l.contraction).numel(), int64_t{s.block}));
}

std::string contract_point(const Schedule& s) {
    return ops::matmul_all_variants().at(size_t(s.variant)).name;
}
std::string conv1d_point(const Schedule& s) {
    return ops::conv1d_all_variants().at(size_t(s.variant)).name;
}
std::string attention_point(const Schedule& s) {
    return ops::attention_all_variants().at(size_t(s.variant)).name;
}

int64_t contract_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    const ContractShape sh = contract_shape(g, l.contraction);
    return std::max<int64_t>(1, ops::matmul_grid({sh.batch, sh.m, sh.n, sh.k},
                                                 ops::matmul_all_variants().at(size_t(s.variant))));
}
int64_t conv1d_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    return std::max<int64_t>(1, ops::conv1d_grid(conv1d_shape(g, l.contraction),
                                                 ops::conv1d_all_variants().at(size_t(s.variant))));
}
int64_t attention_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    return std::max<int64_t>(
        1, ops::attention_grid(attention_shape(g, l.contraction),
                               ops::attention_all_variants().at(size_t(s.variant))));
}

bool contraction_empty(const Launch& l, const GraphView& g) {
    return g.node(l.contraction).numel() == 0;
}

// Attention's key lengths are checked as they are read.
bool attention_has_faults(const Launch& l, const GraphView& g) {
    return g.inputs[size_t(l.contraction)].size() > 3;
}

}  // namespace

const KindRules kContractRules{"contract",
                               contract_domain,
                               contract_point,
                               contract_grid,
                               contraction_empty,
                               &LaunchWriter::write_contract,
                               {.simt_bytes_in_flight = cost::matmul_simt_bytes_in_flight,
                                .simt_threads_needed = cost::matmul_simt_threads_needed,
                                .contraction = &cost::kMatmulCost},
                               contraction_launch_refusal};
const KindRules kConv1dRules{"conv1d",
                             conv1d_domain,
                             conv1d_point,
                             conv1d_grid,
                             contraction_empty,
                             &LaunchWriter::write_conv1d,
                             {.contraction = &cost::kConv1dCost},
                             contraction_launch_refusal};
const KindRules kAttentionRules{"attention",
                                attention_domain,
                                attention_point,
                                attention_grid,
                                contraction_empty,
                                &LaunchWriter::write_attention,
                                {.contraction = &cost::kAttentionCost},
                                contraction_launch_refusal,
                                attention_has_faults};

const KindRules kContractChunksRules{"contract_chunks",
                                     chunks_domain,
                                     contract_point,
                                     contract_grid,
                                     contraction_empty,
                                     &LaunchWriter::write_contract_chunks,
                                     {.simt_bytes_in_flight = cost::matmul_simt_bytes_in_flight,
                                      .simt_threads_needed = cost::matmul_simt_threads_needed,
                                      .contraction = &cost::kMatmulCost},
                                     contraction_launch_refusal,
                                     nullptr,
                                     {.writes_partials = true}};
const KindRules kChunkSumRules{"chunk_sum",
                               chunk_sum_domain,
                               chunk_sum_point,
                               chunk_sum_grid,
                               contraction_empty,
                               &LaunchWriter::write_chunk_sum,
                               {.folds_partials = true},
                               contraction_launch_refusal,
                               nullptr,
                               {.reads_partials = true}};

}  // namespace kiln::plan
