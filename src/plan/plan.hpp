// A Plan: the launches that compute a graph, each a fused group of nodes with its schedule
// domain and the point chosen in it. Nodes are positions in the GraphView the plan was made for,
// so a plan replays on any graph of the same structure.
//
// Launch kinds:
//   map      outputs of one shape, each element computed by inlining every map, view, constant
//            and generator behind it down to materialized nodes (leaves and earlier launches'
//            outputs). A ScatterAdd output here is its base's copy (the scatter launch follows).
//   row      a group of folds over the same input shape and reduced axes ("rows" of n elements),
//            computed one row per thread group in the canonical order, with the maps that
//            depend on them: row-space outputs (one value per row) and full-space outputs (one per
//            element of the rows), e.g. softmax or layer_norm in one pass.
//   segments the first half of a long fold (graph/fold_order.hpp): one thread group per segment
//            of 4096 elements of a row writes the segment's value; a `row` launch then folds each
//            row's segment values, giving the same bits as one launch.
//   scatter  a ScatterAdd's additions, in place into its output (already holding the base).
//   contract a Matmul node (ops::matmul's kernel at one of its schedule points) reading its
//            operands in place through their views (contract.hpp), with the maps after it
//            that read it element for element computed in its store (an epilogue: bias,
//            activation, residual); the Matmul itself is written only where something else
//            needs it.
//   conv1d   a Conv1d node (ops::conv1d's kernel at one of its schedule points) reading dense
//            operands, with the maps after it fused into its store as for contract (bias,
//            activation).
//   attention an Attention node (ops::attention's kernel at one of its schedule points) reading
//            dense q, k and v, with the maps after it fused into its store.
//   contract_chunks  the first half of a Matmul whose k has several chunks
//            (kiln/ops/contraction_order.hpp): ops::matmul's kernel at one of its split points,
//            reading its operands as `contract` does, each block one chunk of one tile, writing
//            the chunk sums into the plan's scratch;
//   chunk_sum the second half: each output's chunk sums added in the op's order, then stored with
//            the epilogue as `contract` stores it, giving the same bits as one launch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/shape.hpp"
#include "kiln/compile.hpp"

namespace kiln::plan {

enum class LaunchKind : uint8_t {
    map,
    row,
    segments,
    scatter,
    contract,
    conv1d,
    attention,
    contract_chunks,
    chunk_sum
};
const char* name(LaunchKind k);

// One point of a launch's schedule domain. Which fields matter depends on the kind:
//   map:     block, per_thread (elements per thread, a grid apart), vector (1 or 4 consecutive)
//   row:     block, threads (per row: 1 = a thread per row, a warp, or the block), unroll (the
//            fold's rounds of loads in flight per step)
//   segments: block, threads (per segment), unroll
//   scatter: block
//   contract, contract_chunks: variant (an index into ops::matmul_all_variants()); block is its
//            threads
//   chunk_sum: block
//   conv1d, attention: variant (into ops::conv1d_all_variants(), ops::attention_all_variants());
//   block
//            is its threads
struct Schedule {
    int block = 256;
    int per_thread = 1;
    int vector = 1;
    int threads = 1;
    int unroll = 1;
    bool cache = false;     // row: each thread keeps its elements of the row (threads = the lanes)
    bool row_loop = false;  // map: each thread loops over whole rows of the last axis (CPU)
    int variant = 0;
    bool operator==(const Schedule&) const = default;
};
std::string to_string(LaunchKind kind, const Schedule& s);  // "b256_t4_v1"

struct Launch {
    LaunchKind kind = LaunchKind::map;
    std::vector<int> outputs;  // nodes this launch writes (materialized)
    // row and segments launches: the folds (in order) and the row-space maps computed once per row
    // between them, in topological order; the fold input's shape and the reduced axes.
    std::vector<int> row_steps;
    graph::Shape full;
    std::vector<int> axes;
    int64_t rows = 0, extent = 0;  // rows, and elements per row
    int scatter = -1;              // scatter launches: the ScatterAdd node
    int contraction = -1;  // contraction launches (contract, chunks, chunk_sum ...): the node
    int group = -1;        // row, segments and contraction launches: the group (partition.hpp)
    // Segments launches: the scratch buffer each fold writes its segment values to. Row launches
    // after them: the scratch each fold folds instead of its input (segment_count(extent) a row).
    // Contract_chunks and chunk_sum launches: the scratch of the Matmul's chunk sums
    // (contraction_chunks(k) x its elements, chunk-major).
    std::map<int, int> partials;
    std::vector<Schedule> domain;  // never a single point
    size_t chosen = 0;             // index into domain
    std::string label;             // names of the composite ops inside, for profiles
};

// The materialized nodes of a plan: leaves (given), outputs of launches (allocated per run).
struct Plan {
    std::vector<Launch> launches;
    std::vector<std::pair<DType, int64_t>> scratch;  // buffers of segment values
    std::vector<int> materialized;                   // every node a launch writes, in launch order
    bool has_faults = false;                         // some launch checks indices (gather, scatter)
};

}  // namespace kiln::plan
