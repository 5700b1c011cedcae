// The contraction kinds' cost terms (cost.hpp; roofline.hpp states the model): each op's flops,
// the share of the rate its points reach, how many times it reads its operands, and for
// matmul the edges' padding and the k-steps' latency of its staged points.
#include <algorithm>
#include <cmath>

#include "base/ceil_div.hpp"
#include "graph/map_op_table.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/kinds/cost.hpp"

namespace kiln::plan::cost {

namespace op = graph::op;

namespace {

const ops::MatmulSchedule& matmul_point(const Schedule& s) {
    return ops::matmul_all_variants().at(size_t(s.variant));
}
const ops::Conv1dSchedule& conv1d_point(const Schedule& s) {
    return ops::conv1d_all_variants().at(size_t(s.variant));
}
const ops::AttentionSchedule& attention_point(const Schedule& s) {
    return ops::attention_all_variants().at(size_t(s.variant));
}

double tiles(int64_t extent, int tile) {
    return double(ceil_div(extent, int64_t{tile}));
}

// A staged SIMT point's share grows with its thread's tile, up to the full rate.
double staged_share(double tile) {
    return std::clamp(tile / 64.0, 0.1, 1.0);
}

// A CPU's spread point runs a strip of threads as vectors: its tm x tn accumulators, tn vectors
// of B and a broadcast of A fit the CPU's vector registers (32 with AVX-512, 16 with AVX2) at
// the full rate; past them the accumulators spill to the stack every term (8 x 4 measured at
// 0.6-0.8x the time of 6 x 4 on an AVX-512 EPYC, 6 x 4 at 0.7x of 6 x 2 on an AVX2 one). Within
// the registers, a larger tile spends fewer of a term's instructions on loads (tm + tn loads
// for tm x tn fma).
double spread_register_share(int tm, int tn, const DeviceFacts& f) {
    const double fmas = tm * tn, registers = fmas + tn + 1;
    return std::min(1.0, f.vector_registers / registers) * fmas / (fmas + tm + tn);
}

// 2 flops per product term.
double matmul_flops(const GraphView& g, int node) {
    const ContractShape c = contract_shape(g, node);
    return 2.0 * double(c.batch) * double(c.m) * double(c.n) * double(c.k);
}

// The terms of the outputs the last tiles compute past the edges count too (a chunk-major
// point skips its row tiles wholly past m).
double matmul_padded_flops(const GraphView& g, int node, const Schedule& s) {
    const ContractShape c = contract_shape(g, node);
    const ops::MatmulSchedule& p = matmul_point(s);
    const int64_t rows = p.chunk_major ? p.tm : p.bm;
    return 2.0 * double(c.batch) * double(ceil_div(c.m, rows) * rows) *
           double(ceil_div(c.n, int64_t{p.bn}) * p.bn) * double(c.k);
}

double matmul_rate_share(const Schedule& s, const DeviceFacts& f) {
    const ops::MatmulSchedule& p = matmul_point(s);
    // A tensor-core point (CUDA only) reaches about twice the f32 rate with 128 outputs a
    // thread (a 64 x 64 warp tile), which reads each shared pair for the most of them; each
    // further stage of copies in flight hides more of the loads' latency.
    if (p.tensor_core())
        return 2.0 * std::clamp(p.wm * p.wn / 32.0 / 128.0, 0.1, 1.0) *
               (1.0 + 0.5 * (p.stages - 1));
    // A staged thread reads tm + tn shared values for its tm x tn terms, and a unit reads
    // shared memory at a quarter of its fma rate.
    const double shared_bound = p.tm * p.tn / (4.0 * (p.tm + p.tn));
    return f.gpu ? (p.staged ? std::clamp(shared_bound, 0.1, 1.0) : 0.02)
                 : (p.spread ? spread_register_share(p.tm, p.tn, f) : 0.15);
}

// A CPU core's cache for a direct point's column panel of B (bn columns over all of k, as f32):
// the 1-2 MiB L2 of the CPUs measured (notes/cpu-chunk-major-2026-12-06.md).
constexpr double kCpuPanelCacheBytes = 1 << 20;

// Each operand once per block tile along the other side for a staged point, once per thread
// tile there for a direct one. A chunk-major point reads B's chunks once per block (a chunk
// stays in the cache while its row tiles pass), which saves reads where the whole panel does
// not fit the cache; where it does, it counts as the direct points (measured: no faster at
// k = 384, 5-12 % slower).
std::vector<double> matmul_operand_reads(const GraphView& g, int node, const Schedule& s) {
    const ContractShape c = contract_shape(g, node);
    const ops::MatmulSchedule& p = matmul_point(s);
    const bool panel_spills = double(c.k) * p.bn * 4 > kCpuPanelCacheBytes;
    // A chunk-major point over column tiles keeps a chunk of its rows of A while they pass.
    return {tiles(c.n, p.staged || p.column_tiles > 1 ? p.bn : p.tn),
            tiles(c.m, p.staged || (p.chunk_major && panel_spills) ? p.bm : p.tm)};
}

// A staged point's block waits for each k-step's tiles in turn (its prefetch hides one step's
// loads behind the step before, not more): a latency a step, in waves of the blocks resident
// at once.
double matmul_simt_steps_us(const GraphView& g, int node, const Schedule& s, int64_t grid,
                            const DeviceFacts& f) {
    const ops::MatmulSchedule& p = matmul_point(s);
    if (!p.staged) return 0;
    const double resident_blocks = f.units * std::max(1, kResidentThreads / s.block);
    // A split point's block walks one chunk of k.
    const int64_t k = contract_shape(g, node).k;
    const double steps = double(ceil_div(p.split_k ? std::min(k, ops::kChunkTerms) : k, p.bk));
    return std::ceil(double(grid) / resident_blocks) * steps * kLatencyUs;
}

double conv1d_flops(const GraphView& g, int node) {
    const ops::Conv1dShape c = conv1d_shape(g, node);
    return 2.0 * double(c.batch) * double(c.out_channels) * double(c.out_length()) *
           double(c.in_channels / c.params.groups) * double(c.kernel);
}

double conv1d_rate_share(const Schedule& s, const DeviceFacts& f) {
    const ops::Conv1dSchedule& p = conv1d_point(s);
    // A tensor-core point: matmul's tensor-core kernel on the implicit GEMM.
    if (p.tensor_core()) return 2.0 * std::clamp(p.wm * p.wn / 32.0 / 128.0, 0.1, 1.0);
    return f.gpu ? (p.staged ? staged_share(p.tm * p.tn) : 0.02)
                 : (p.spread ? spread_register_share(p.tm, p.tn, f) : 0.15);
}

// As matmul's, and x once more per tap.
std::vector<double> conv1d_operand_reads(const GraphView& g, int node, const Schedule& s) {
    const ops::Conv1dShape c = conv1d_shape(g, node);
    const ops::Conv1dSchedule& p = conv1d_point(s);
    return {tiles(c.out_channels / c.params.groups, p.staged ? p.bm : p.tm) * double(c.kernel),
            tiles(c.out_length(), p.staged ? p.bn : p.tn) * double(c.batch)};
}

// The scores' and the values' terms of the keys each row sees, and an exp per score.
double attention_flops(const GraphView& g, int node) {
    const ops::AttentionShape a = attention_shape(g, node);
    const double keys = g.node(node).as<op::Attention>()->causal
                            ? double(a.seq_k) - double(a.seq_q - 1) / 2.0
                            : double(a.seq_k);
    const double scores = double(a.batch) * double(a.heads) * double(a.seq_q) * keys;
    return scores * (4.0 * double(a.head_dim) + graph::info(graph::MapOp::exp).weight);
}

double attention_rate_share(const Schedule& s, const DeviceFacts& f) {
    const ops::AttentionSchedule& p = attention_point(s);
    if (!f.gpu) return p.lockstep ? 1.0 : 0.15;
    // A tensor-core point: mma steps for both products, a warp's 16 rows a step.
    if (p.tensor_core()) return 1.0;
    return p.staged ? staged_share(4.0 * p.tq * p.tk) : (p.lockstep ? 0.1 : 0.02);
}

// q once; k and v once per block of query rows, or per row where each thread walks the keys
// alone.
std::vector<double> attention_operand_reads(const GraphView& g, int node, const Schedule& s) {
    const ops::AttentionShape a = attention_shape(g, node);
    const ops::AttentionSchedule& p = attention_point(s);
    const int64_t kv_heads = a.kv_heads > 0 ? a.kv_heads : a.heads;
    const double per_kv = tiles(a.seq_q, p.staged || p.lockstep || p.tensor_core() ? p.rows : 1) *
                          double(a.heads) / double(kv_heads);
    return {1.0, per_kv, per_kv};
}

}  // namespace

// A staged point's thread issues its share of a step's tiles before the barrier.
double matmul_simt_bytes_in_flight(const Launch&, const Schedule& s) {
    const ops::MatmulSchedule& p = matmul_point(s);
    if (!p.staged) return 4;
    return double(p.bm + p.bn) * p.bk * (p.tensor_core() ? 2 : 4) / p.threads();
}

// Fewer threads for tensor cores, and fewer for a staged thread whose tile's independent sums
// (up to 4) each take a lane's issue slot.
double matmul_simt_threads_needed(const Schedule& s) {
    const ops::MatmulSchedule& p = matmul_point(s);
    const double needed = kResidentThreads / 2;
    return p.tensor_core() ? kTensorCoreThreads
           : p.staged      ? needed / std::min(p.tm * p.tn, 4)
                           : needed;
}

const ContractionCost kMatmulCost{matmul_flops, matmul_padded_flops, matmul_rate_share,
                                  matmul_operand_reads, matmul_simt_steps_us};
const ContractionCost kConv1dCost{conv1d_flops, nullptr, conv1d_rate_share, conv1d_operand_reads,
                                  nullptr};
const ContractionCost kAttentionCost{attention_flops, nullptr, attention_rate_share,
                                     attention_operand_reads, nullptr};

}  // namespace kiln::plan::cost
