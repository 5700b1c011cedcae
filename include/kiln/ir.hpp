// kiln's intermediate representation.
//
// A Kernel is a SIMT program: `grid` blocks of `block_size` threads each run `body`. The block size
// is a comptime value of the kernel; the number of blocks is chosen at launch. Expressions are
// immutable, typed DAGs (a node may be reached along many paths: passes visit each distinct node
// once); statements are structured (sequence, let/assign, store, counted for, if/else, barrier,
// fold) so every pass is a plain recursive walk.
//
// Semantics every backend implements bit for bit (see scalar_semantics.h and docs/numerics.md):
//   - f32 arithmetic is IEEE single precision, round to nearest even, no contraction: only an
//     explicit Fma fuses. Division and sqrt are correctly rounded.
//   - f16 / bf16 values are computed in f32 and rounded back after every operation.
//   - integer arithmetic wraps; / and % by zero and shifts by the width have one meaning.
//   - a Fold computes its value in the canonical order fixed by its lanes and chunk, whatever
//     number of threads the schedule gives it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln::ir {

struct ExprNode;
struct StmtNode;
using ExprRef = std::shared_ptr<const ExprNode>;
using StmtRef = std::shared_ptr<const StmtNode>;

// exp2_device: 2^x of an f32 as the target's hardware computes it (kiln::device_exp2), for the
// tensor-core class's kernels only.
enum class UnOp : uint8_t { neg, bit_not, logical_not, sqrt, abs, exp2_device };
enum class BinOp : uint8_t {
    add,
    sub,
    mul,
    div,
    rem,
    min,
    max,
    bit_and,
    bit_or,
    bit_xor,
    shl,
    shr,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
};
enum class BuiltinKind : uint8_t { thread_index, block_index, grid_size };
enum class MemSpace : uint8_t { global, shared, local };
enum class Access : uint8_t { read, write, read_write };
enum class FoldOp : uint8_t { sum, max, min, prod };
// How long a buffer's lines should stay in the caches: a hint that never changes a result.
// streaming: read or written about once per launch, the first lines given up (loads and stores);
// keep: read again soon, the last lines given up (loads; stores stay plain).
enum class CacheHint : uint8_t { normal, streaming, keep };

const char* name(UnOp op);
const char* name(BinOp op);
const char* name(BuiltinKind b);
const char* name(MemSpace s);
const char* name(Access a);
const char* name(FoldOp op);
const char* name(CacheHint h);
bool is_comparison(BinOp op);  // eq ne lt le gt ge: bool result
bool is_logical(BinOp op);     // logical_and logical_or: bool operands and result

// A memory object: a buffer parameter (global, id = parameter index), a shared tile of the
// block (shared, id = tile index) or a per-thread array (local, id = array index).
struct MemRef {
    MemSpace space;
    int id;
    bool operator==(const MemRef&) const = default;
};

namespace expr {
struct Const {
    double f = 0;
    int64_t i = 0;
};  // f for float types, i otherwise (bool: 0/1)
struct Local {
    int id;
};
struct ScalarParam {
    int param;
};
// The element count of a buffer parameter, as i32 (a launch where it exceeds INT32_MAX is
// refused) or as i64.
struct BufferLen {
    int param;
};
struct Load {
    MemRef mem;
    ExprRef index;
};
struct Unary {
    UnOp op;
    ExprRef a;
};
struct Binary {
    BinOp op;
    ExprRef a, b;
};
struct Select {
    ExprRef cond, a, b;
};
struct Cast {
    ExprRef a;
};  // value conversion to the node's type
struct Bitcast {
    ExprRef a;
};  // same-width reinterpretation
struct Fma {
    ExprRef a, b, c;
};
struct Builtin {
    BuiltinKind which;
};
// Value of `value` in the thread whose index within its group of `width` threads is this
// thread's xor `mask`. Made only by lower_folds for targets with warp shuffles.
struct ShuffleXor {
    ExprRef value;
    int mask;
    int width;
};
// c + the dot product of the four signed bytes packed in a with those in b, wrapping i32.
struct Dp4a {
    ExprRef a, b, c;
};
// Checked mode (ir/check_bounds.hpp): a bool, whether elements index ... index+width-1 lie in
// [0, length). Where they do not and `when` holds (null: always), it also records the access
// (`site`) in the fault record `record`, unless a fault is recorded there already. Made only by
// check_bounds, after every other pass.
struct InBounds {
    ExprRef index, length, when;
    int width;
    uint32_t site;
    MemRef record;
};
}  // namespace expr

struct ExprNode {
    DType type;
    std::variant<expr::Const, expr::Local, expr::ScalarParam, expr::BufferLen, expr::Load,
                 expr::Unary, expr::Binary, expr::Select, expr::Cast, expr::Bitcast, expr::Fma,
                 expr::Builtin, expr::ShuffleXor, expr::Dp4a, expr::InBounds>
        node;
};

// The canonical fold (docs/numerics.md): `lanes` accumulators; lane j folds chunks j, j+lanes, ...
// of `chunk` consecutive indices of [0, extent) left to right from the op's identity, then a fixed
// halving tree combines lane[j] with lane[j+s] for s = lanes/2 ... 1. The op, lanes and chunk
// define the result. `threads` consecutive threads of a block share the lanes (thread t owns
// lanes t, t+threads, ...); threads and unroll are the schedule and never change the result.
// The result is the same in every thread of the group.
struct FoldSpec {
    FoldOp op = FoldOp::sum;
    int lanes = 1;    // power of two, fixed by the op and the extent
    int chunk = 1;    // consecutive elements per chunk, fixed by the op
    int threads = 1;  // power of two dividing lanes and the block size: the schedule
    int unroll = 1;   // rounds of chunks per loop step: the schedule (more loads in flight)
};

namespace stmt {
struct Seq {
    std::vector<StmtRef> items;
};
struct Let {
    int local;
    ExprRef value;
};  // declares local and gives it its first value
struct Assign {
    int local;
    ExprRef value;
};
struct Store {
    MemRef mem;
    ExprRef index, value;
};
struct For {
    int local;
    ExprRef begin, end, step;
    StmtRef body;
};  // local from begin while < end
struct If {
    ExprRef cond;
    StmtRef then_body, else_body;
};  // else_body may be null
// Every thread of the block waits here; shared memory is then consistent. A warp barrier
// promises that threads exchange data only within their group of 32 consecutive threads: CUDA
// syncs just the warp, other backends sync the block (stronger, so equally correct).
//
// Asynchronous copies (StoreVector::from) a thread issues between two of its barriers form one
// group. At a barrier, every group but the last `copies_in_flight` (the one it closes counts) has
// landed; with 0 (the default) all have. A warp barrier neither closes a group nor waits for one
// (copies fill block-shared tiles: read them after a block barrier). Targets that copy
// synchronously ignore the count.
struct Barrier {
    bool warp = false;
    int copies_in_flight = 0;
};
inline constexpr int kMaxCopiesInFlight = 7;
inline constexpr int kWarpBarrierGroup = 32;  // threads a warp barrier syncs
// Declares `locals` (2 or 4 of them for a 4-byte dtype of mem, 4 or 8 for a 2-byte one) and
// gives them the consecutive elements index, index+1, ... of mem: one wide load where the target
// has one and the address is aligned to the whole vector, one load per element otherwise (same
// values).
struct LoadVector {
    MemRef mem;
    ExprRef index;
    std::vector<int> locals;
};
// Stores values[0], values[1], ... (2 or 4, of mem's dtype, which has 4 bytes) into the
// consecutive elements index, index+1, ... of mem: one wide store where the target has one and
// the address is aligned to the whole vector, one store per element otherwise (same effect).
//
// With `from`, the values are the bytes of a buffer's consecutive elements from `from->index`
// (16 bytes into a shared tile; the builder makes them so, and passes keep them so), and a target
// with asynchronous copies (CUDA's cp.async) may copy those bytes into the tile without passing
// them through registers: they land by the barrier Barrier::copies_in_flight says. A pass that
// rebuilds the values drops `from`, which leaves an ordinary store.
struct CopySource {
    MemRef mem;
    ExprRef index;
};
struct StoreVector {
    MemRef mem;
    ExprRef index;
    std::vector<ExprRef> values;
    std::optional<CopySource> from;
};
// A warp's load of 8 x 8 matrices of 16-bit elements from a u32 shared tile (PTX ldmatrix; the
// mma fragments of ir::stmt::Mma): with each group of 32 consecutive threads as one warp, row r
// of matrix j (j < locals.size(): 1, 2 or 4) is the 4 words from word `row` of lane 8j + r, and
// lane l gets word l % 4 of row l / 4 of matrix j in locals[j] (u32). With `trans`, lane l gets
// instead elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4) (row, column) of matrix j, the
// first in the low half: the matrix transposed. `row` is a multiple of 4 (16 bytes). Only
// targets with tensor cores emit it, and every thread of the block reaches it.
struct LoadMatrix {
    MemRef mem;
    ExprRef row;
    std::vector<int> locals;
    bool trans = false;
};
// A warp's tensor-core step (the tensor-core class, docs/numerics.md): with each group of 32
// consecutive threads as one warp, D = A · B + C for a 16 x 16 A and a 16 x 8 B of `input`
// (f16 or bf16), C and D f32. Each thread holds its fragments in PTX's mma.m16n8k16 layout
// (g = lane / 4, t = lane % 4), operands as u32 pairs of 16-bit values, the first in the low half:
//   a[0..3]: A(g, 2t..2t+1), A(g+8, 2t..2t+1), A(g, 2t+8..2t+9), A(g+8, 2t+8..2t+9)
//   b[0..1]: B(2t..2t+1, g), B(2t+8..2t+9, g)
//   acc[0..3] (f32 locals, C in and D out): D(g, 2t), D(g, 2t+1), D(g+8, 2t), D(g+8, 2t+1)
// The hardware fixes how the 16 products and C are added, so the bits are the device's: only
// targets with tensor cores (Dialect::mma) emit it, and every thread of the block reaches it.
struct Mma {
    DType input;
    std::vector<ExprRef> a, b;
    std::vector<int> acc;
};
struct Fold {
    int result;
    FoldSpec spec;
    ExprRef extent;
    int index;
    StmtRef body;
    ExprRef value;
};
}  // namespace stmt

struct StmtNode {
    std::variant<stmt::Seq, stmt::Let, stmt::Assign, stmt::Store, stmt::For, stmt::If,
                 stmt::Barrier, stmt::LoadVector, stmt::StoreVector, stmt::LoadMatrix, stmt::Mma,
                 stmt::Fold>
        node;
};

struct Param {
    std::string name;
    bool is_buffer;
    DType dtype;
    Access access;                        // buffers only
    CacheHint cache = CacheHint::normal;  // buffers only (see KernelBuilder::streaming)
};
struct LocalInfo {
    std::string name;
    DType type;
};
struct ArrayInfo {
    std::string name;
    DType type;
    int64_t size;
    MemSpace space;
    // Local arrays only: kept in memory, never promoted to registers (KernelBuilder::memory_array).
    bool in_memory = false;
};  // shared or local

// A host-checked launch contract: `cond` over buffer lengths, scalar parameters and constants.
struct Requirement {
    ExprRef cond;
    std::string what;
};

// The most blocks a kernel may ask to have on one compute unit at once (a Hopper SM's limit).
inline constexpr int kMaxMinBlocksPerUnit = 32;

struct Kernel {
    std::string name;
    int block_size = 1;
    // At least this many blocks are meant to run at once on one compute unit (0: no promise).
    // A compiler hint (CUDA's __launch_bounds__ minimum): it bounds each thread's registers
    // and, within that bound, lets the compiler keep more loads in flight. Never changes a
    // result.
    int min_blocks_per_unit = 0;
    std::vector<Param> params;
    std::vector<LocalInfo> locals;
    std::vector<ArrayInfo> tiles;   // shared tiles, MemRef{shared, i}
    std::vector<ArrayInfo> arrays;  // per-thread arrays, MemRef{local, i}
    std::vector<Requirement> requirements;
    StmtRef body;
};

// Node makers. They do not check types: the DSL does that with messages for users, verify()
// re-checks whole kernels.
ExprRef make(DType type, decltype(ExprNode::node) node);
StmtRef make(decltype(StmtNode::node) node);
ExprRef constant(DType type, double f, int64_t i = 0);  // i used for non-float types
ExprRef int_const(DType type, int64_t value);
ExprRef float_const(DType type, double value);

// Helpers for passes.
bool is_const(const ExprRef& e, int64_t* value = nullptr);
const ArrayInfo& array_info(const Kernel& k, MemRef mem);  // shared or local memory
DType mem_dtype(const Kernel& k, MemRef mem);
// Whether a LoadVector may read `width` elements of `t`: 2 or 4 of a 4-byte dtype, 4 or 8 of
// a 2-byte one (at most 16 bytes); and whether a StoreVector may write them: 2 or 4 of a 4-byte
// dtype.
bool loadable_vector(DType t, int width);
bool storable_vector(DType t, int width);

}  // namespace kiln::ir
