// The kiln DSL: C++ that builds kernel IR. Comptime values are plain C++ values (ints, dtypes,
// lambdas) used while the IR is built; each distinct tuple builds a distinct kernel.
//
//   KernelBuilder k("scale", /*block_size=*/128);
//   auto x = k.input("x", DType::f32);
//   auto y = k.output("y", DType::f32);
//   auto a = k.scalar("a", DType::f32);
//   Expr i = k.absolute_pos();
//   k.if_(i < y.len(), [&] { y[i] = a * x[i]; });
//   Kernel kernel = k.finish();
//
// Types are checked as expressions are built; a mismatch throws kiln::Error naming the operation
// and both types. C++ number literals are "weak": they take the type of the other operand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/ir.hpp"

namespace kiln {

class KernelBuilder;

// A typed expression. Converts from C++ numbers (weakly typed literals).
class Expr {
  public:
    Expr(int v);
    Expr(int64_t v);
    Expr(uint32_t v);  // a u32 literal (bit masks)
    Expr(float v);
    Expr(double v);
    explicit Expr(ir::ExprRef node, bool weak = false) : node_(std::move(node)), weak_(weak) {}

    DType type() const { return node_->type; }
    const ir::ExprRef& node() const { return node_; }
    bool weak() const { return weak_; }

  private:
    ir::ExprRef node_;
    bool weak_ = false;
};

// A mutable local variable of the kernel; reads as an Expr, assignment emits a statement.
class Var {
  public:
    Var(KernelBuilder* k, int id, DType type) : k_(k), id_(id), type_(type) {}
    Var(const Var&) = default;  // a copy names the same variable (assignment emits a statement)
    operator Expr() const;      // NOLINT: reads the variable
    Expr expr() const { return *this; }
    Var& operator=(const Expr& value);
    Var& operator=(const Var& other) { return *this = other.expr(); }
    Var& operator+=(const Expr& v);
    Var& operator-=(const Expr& v);
    Var& operator*=(const Expr& v);
    int id() const { return id_; }
    DType type() const { return type_; }

  private:
    KernelBuilder* k_;
    int id_;
    DType type_;
};

// An element of a buffer or tile: reads as a load, assignment stores.
class Element {
  public:
    Element(KernelBuilder* k, ir::MemRef mem, DType type, Expr index)
        : k_(k), mem_(mem), type_(type), index_(std::move(index)) {}
    operator Expr() const;  // NOLINT: loads the element
    Expr expr() const { return *this; }
    Element& operator=(const Expr& value);
    Element& operator=(const Element& other) { return *this = other.expr(); }
    Element& operator+=(const Expr& v);

  private:
    KernelBuilder* k_;
    ir::MemRef mem_;
    DType type_;
    Expr index_;
};

// A buffer parameter, a shared tile or a per-thread array.
class Memory {
  public:
    Memory(KernelBuilder* k, ir::MemRef mem, DType type) : k_(k), mem_(mem), type_(type) {}
    Element operator[](const Expr& index) const { return Element(k_, mem_, type_, index); }
    // Buffers: the element count as i32 (launching with a buffer of more than INT32_MAX
    // elements is then a kiln::Error); tiles and arrays: their comptime size.
    Expr len() const;
    // The element count as i64, for kernels written for buffers past 2^31 elements.
    Expr len64() const;
    DType dtype() const { return type_; }
    ir::MemRef ref() const { return mem_; }

  private:
    KernelBuilder* k_;
    ir::MemRef mem_;
    DType type_;
};

// A fold: its definition and its schedule. The op, `lanes` and `chunk` DEFINE the result: they
// fix the order of every operation (lane j folds chunks j, j+lanes, ... of `chunk` consecutive
// elements from the op's identity, then a halving tree combines the lanes), so changing them
// changes the op and, for floats, its bits. Choose them once per op, from the op and the extent
// alone (never from the device). `threads` (threads sharing the lanes) and `unroll` (rounds of
// chunks per loop step: more loads in flight) are the SCHEDULE: any value gives the same bits,
// so tune them freely.
struct Fold {
    ir::FoldSpec spec;
    static Fold sum() { return Fold{{ir::FoldOp::sum}}; }
    static Fold max() { return Fold{{ir::FoldOp::max}}; }
    static Fold min() { return Fold{{ir::FoldOp::min}}; }
    static Fold prod() { return Fold{{ir::FoldOp::prod}}; }
    // Definition: a power of two from 1 to 1024.
    Fold lanes(int w) const {
        Fold f = *this;
        f.spec.lanes = w;
        return f;
    }
    // Definition: 1 to 64 consecutive elements per chunk.
    Fold chunk(int v) const {
        Fold f = *this;
        f.spec.chunk = v;
        return f;
    }
    // Schedule: a power of two dividing the lanes and the block size.
    Fold threads(int t) const {
        Fold f = *this;
        f.spec.threads = t;
        return f;
    }
    // Schedule: 1 to 16.
    Fold unroll(int u) const {
        Fold f = *this;
        f.spec.unroll = u;
        return f;
    }
};

class KernelBuilder {
  public:
    explicit KernelBuilder(std::string name, int block_size = 64);

    // Parameters, in launch order.
    Memory input(const std::string& name, DType type);   // read only
    Memory output(const std::string& name, DType type);  // write only
    Memory inout(const std::string& name, DType type);   // read and write
    Expr scalar(const std::string& name, DType type);
    // Marks a buffer parameter as streamed: each element is read or written about once per
    // launch, so its lines should be the first the cache gives up (CUDA: ld.global.cs /
    // st.global.cs; other backends: no effect). A hint only: never changes a result.
    void streaming(const Memory& buffer);
    // Marks a buffer parameter as read again soon (by this launch or the next): its lines should
    // be the last the cache gives up (CUDA: loads with L1/L2 evict_last; stores stay plain;
    // other backends: no effect). A hint only: never changes a result. CUDA's assembler cannot
    // tell a kept load's address from the kernel's stores, so it neither moves kept loads past a
    // barrier nor a store: load kept buffers before the kernel stores, not between its stores.
    void keep_cached(const Memory& buffer);
    // Asks for at least `blocks` blocks of this kernel to fit on one compute unit at once
    // (1 to 32). CUDA's assembler then bounds each thread's registers to fit them and, within
    // that bound, issues more loads before it waits for any; without it, it may use fewer
    // registers and wait for each load nearer its issue. Other backends: no effect. A hint
    // only: never changes a result.
    void min_blocks_per_unit(int blocks);

    // Positions. thread_index in [0, block_size), block_index in [0, grid_size), all i32.
    Expr thread_index();
    Expr block_index();
    Expr grid_size();
    Expr absolute_pos();  // block_index * block_size + thread_index
    int block_size() const { return kernel_.block_size; }

    // Locals and control flow. A variable lives until the end of the if_, for_ or fold body
    // that declares it; using it after that is a kiln::Error.
    //
    // A new variable of init's type. A bare number literal has no type of its own here, so
    // k.let(0) is a kiln::Error: name the type, k.let(DType::f32, 0).
    Var let(const Expr& init, const std::string& name = "");
    // A new variable of `type`: a number literal takes it (exactly: an integer type needs an
    // integer); any other init must have that type already.
    Var let(DType type, const Expr& init, const std::string& name = "");
    // for (i = begin; i < end; i += step) body(i). The bounds are read before each iteration
    // (as in C); weak literals take the other bounds' type, i32 if all three are literals.
    void for_(const Expr& begin, const Expr& end, const Expr& step,
              const std::function<void(Expr)>& body);
    void for_(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body,
              const Expr& step = 1);
    // Comptime-unrolled loop: body runs here, in C++, once per i, with i a constant.
    void unroll(int64_t begin, int64_t end, const std::function<void(Expr)>& body);
    void if_(const Expr& cond, const std::function<void()>& then_body);
    void if_(const Expr& cond, const std::function<void()>& then_body,
             const std::function<void()>& else_body);
    // Elements index, index+1, ... of m (width 2 or 4 of a 4-byte dtype; 4 or 8 of a 2-byte
    // one) as new locals: one wide load where the target has one and the address is aligned to
    // the whole vector, element loads otherwise (the same values).
    std::vector<Var> load_vector(const Memory& m, const Expr& index, int width,
                                 const std::string& name = "");
    // Stores values (2 or 4, for a 4-byte dtype) into elements index, index+1, ... of m: one
    // wide store where the target has one and the address is aligned to width*4 bytes, element
    // stores otherwise (the same effect).
    void store_vector(const Memory& m, const Expr& index, const std::vector<Expr>& values);
    // Copies 16 bytes, the elements from `from` on of a buffer of a 2- or 4-byte dtype, into
    // elements index .. index+3 of a u32 shared tile (the first element's bits lowest). Where
    // the target copies asynchronously (CUDA's cp.async, at 16-byte aligned addresses) the
    // bytes land by the barrier that `barrier(copies_in_flight)` says; read them only after it.
    void copy_to_shared(const Memory& tile, const Expr& index, const Memory& buffer,
                        const Expr& from);

    // Cooperation: block-shared tiles, barriers at uniform points, per-thread arrays.
    Memory shared(DType type, int64_t size, const std::string& name = "tile");
    Memory local_array(DType type, int64_t size, const std::string& name = "arr");
    // A per-thread array the target keeps in memory, never in registers: for values a thread
    // touches rarely (a contraction's chunk totals) in a kernel whose speed is its registers.
    Memory memory_array(DType type, int64_t size, const std::string& name = "arr");
    // copies_in_flight: the groups of this thread's copy_to_shared copies (those issued between
    // two of its barriers form one; this barrier closes the last) that may still be landing
    // past the barrier. 0: all have landed.
    void barrier(int copies_in_flight = 0);
    // A barrier among each group of 32 consecutive threads (a CUDA warp): use it where threads
    // exchange shared data only within their group. Reached by the whole block like barrier();
    // needs a block size that is a multiple of 32. Copies (copy_to_shared) stay in flight
    // across it: only barrier() closes and waits for their groups.
    void warp_barrier();

    // A warp's tensor-core step, the tensor-core class (ir::stmt::Mma gives the fragment
    // layout): acc (4 f32 variables) = A · B + acc for a 16 x 16 A and a 16 x 8 B of `input`
    // (f16 or bf16), a as 4 and b as 2 u32 pairs of 16-bit values (the first in the low half).
    // Only CUDA devices with tensor cores (sm_80 and later) compile it; every thread of the
    // block must reach it, as a barrier.
    void mma(DType input, const std::vector<Expr>& a, const std::vector<Expr>& b,
             const std::vector<Var>& acc);
    // A warp's ldmatrix (ir::stmt::LoadMatrix): `matrices` (1, 2 or 4) 8 x 8 matrices of
    // 16-bit elements from a u32 shared tile; lane 8j + r gives, as `row`, the word where row r
    // of matrix j starts (a multiple of 4); each lane gets one u32 of each matrix: word lane % 4
    // of row lane / 4 (mma's fragment layout). CUDA devices with tensor cores only, reached by
    // every thread of the block.
    // With `trans` each lane gets instead the two elements of column lane / 4 in rows
    // 2 (lane % 4) and 2 (lane % 4) + 1 (the matrix transposed; the first in the low half).
    std::vector<Var> load_matrix(const Memory& tile, const Expr& row, int matrices,
                                 const std::string& name = "", bool trans = false);

    // The canonical fold over [0, extent): returns the folded value, the same in every thread
    // of the fold's thread group. `body(i)` may emit statements and returns element i's value.
    Var fold(DType type, const Expr& extent, const Fold& fold,
             const std::function<Expr(Expr)>& body);

    // A launch contract checked on the host before every launch (buffer lengths, scalars).
    void require(const Expr& cond, const std::string& what);

    // Verifies and returns the kernel. The builder is spent afterwards.
    ir::Kernel finish();

    // Used by Var / Element / Memory.
    void emit(ir::StmtRef s);
    const ir::Kernel& kernel() const { return kernel_; }
    int new_local(DType type, const std::string& name);
    void check_in_scope(int local) const;  // kiln::Error when its declaring body has ended
    // kiln::Error when a constant index (and the width - 1 after it) is past a tile's or
    // array's end.
    void check_constant_index(ir::MemRef mem, const Expr& index, int64_t width) const;

  private:
    Memory add_buffer(const std::string& name, DType type, ir::Access access);
    void set_cache_hint(const Memory& buffer, ir::CacheHint hint);
    std::vector<ir::StmtRef> capture(const std::function<void()>& body);

    void check_scope_of(const ir::ExprRef& e) const;  // every variable e reads is in scope

    ir::Kernel kernel_;
    std::vector<std::vector<ir::StmtRef>> scopes_;
    std::vector<bool> in_scope_;  // by local
    bool finished_ = false;
};

// Operators and functions on expressions. All check types (kiln::Error on mismatch).
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator%(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator~(const Expr& a);
Expr operator!(const Expr& a);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator^(const Expr& a, const Expr& b);
Expr operator<<(const Expr& a, const Expr& b);
Expr operator>>(const Expr& a, const Expr& b);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);

Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr select(const Expr& cond, const Expr& a, const Expr& b);
Expr cast(DType type, const Expr& a);
// Same-width reinterpretation; also f16/bf16 from the low 16 bits of a u32/i32, and back
// (zero-extended).
Expr bitcast(DType type, const Expr& a);
Expr fma(const Expr& a, const Expr& b, const Expr& c);  // a*b+c, one rounding
// c + dot(the 4 signed bytes of a, those of b), wrapping; all i32 (__dp4a on CUDA).
Expr dp4a(const Expr& a, const Expr& b, const Expr& c);
Expr sqrt(const Expr& a);
Expr abs(const Expr& a);
// 2^a (f32) as the target's hardware computes it: CUDA's ex2 unit (within 2 ulp; subnormal results
// flushed), the host's std::exp2 in kiln::interpret. Not the same bits on every backend, so it
// belongs only to the tensor-core class's kernels (device-dependent by declaration, within a
// stated bound); the CPU and OpenCL dialects refuse it. Every other kernel uses kiln::exp2.
Expr device_exp2(const Expr& a);
Expr constant(DType type, double value);  // a typed constant (integers: value must be integral)

// Multi-dimensional indexing over row-major shapes (the last dimension varies fastest), so a
// kernel names rows and columns instead of writing / and % by hand. Extents may be comptime
// numbers or expressions; everything runs in the index's integer type (i32 unless a
// non-literal says otherwise). For a shape {R, C}: coords(i, {R, C}) = {i / C, i % C} and
// flat_index({r, c}, {R, C}) = r * C + c.
//
// The coordinates of `linear` in `shape`. The first coordinate is not reduced: an index past
// the end gives a first coordinate past its extent, as flat_index would take it back.
std::vector<Expr> coords(const Expr& linear, const std::vector<Expr>& shape);
// The row-major linear index of `coordinates` in `shape` (one coordinate per dimension).
Expr flat_index(const std::vector<Expr>& coordinates, const std::vector<Expr>& shape);
// sum of coordinates[d] * strides[d] (in elements): strided and broadcast views (a stride of 0
// repeats a dimension, a transposed view swaps two strides).
Expr strided_index(const std::vector<Expr>& coordinates, const std::vector<Expr>& strides);

// Float bit access for f32: the 32 bits as u32, and back.
Expr bits_of(const Expr& f32_value);
Expr f32_from_bits(const Expr& u32_value);

}  // namespace kiln
