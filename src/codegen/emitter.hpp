// Emitter: prints one lowered kernel in a dialect. It is one object whose parts live in one file
// per concept: emit_expr.cpp (expressions, names, cache hints), emit_stmt.cpp (statements and
// declarations), emit_vector.cpp (vector loads and stores), emit_abi.cpp (entry signatures and
// argument unpacking) and emit_threads.cpp (the CPU's block as thread loops, from the plan of
// cpu_threads.hpp). emit_c.cpp drives it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpu_threads.hpp"
#include "codegen/dialect.hpp"
#include "ir/divisibility.hpp"
#include "ir/no_wrap.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

struct Emitter {
    const ir::Kernel& k;
    const Dialect& d;
    ir::Divisibility divisibility;
    // CPU: where each local and per-thread array lives (cpu_threads.hpp); null on GPUs, where
    // every local is one variable of its thread.
    const ThreadPlan* plan = nullptr;
    bool in_thread_loop = false;  // CPU: emitting inside a loop over the block's threads
    // CPU: the integer operations and loop steps written as plain signed arithmetic, since they
    // never wrap (ir/no_wrap.hpp); every other one is written to wrap. Null on GPUs, where
    // + - * are written to wrap and loop steps as `+=`.
    const ir::NoWrap* no_wrap = nullptr;
    bool split_if_else = false;  // Dialect::split_if_else, in a kernel with barriers
    // Dialect::async_copy in a kernel with copying vector stores: barriers wait for copy groups.
    bool copies_async = false;
    // Dialect::opaque_block_index in a kernel with barriers: the block index is the variable
    // kiln_block_index, declared by declare_block_index().
    bool opaque_block_index = false;
    std::unordered_map<const ir::ExprNode*, std::string> named;  // shared nodes of a statement
    std::string out;
    int depth = 1;
    int temp_counter = 0;

    Emitter(const ir::Kernel& kernel, const Dialect& dialect)
        : k(kernel), d(dialect), divisibility(kernel) {
        copies_async = !d.async_copy.empty() && has_copies(kernel);
    }
    static bool has_copies(const ir::Kernel& kernel);

    // Source lines at the current depth; open() and close() bracket a block.
    void line(const std::string& s);
    void open(const std::string& head);
    void close();

    // Names (emit_expr.cpp).
    std::string param_name(int i) const;
    std::string local(int id) const;
    std::string mem(ir::MemRef m) const;
    // CPU: a thread's place in per-thread values (in its strip where the block runs in strips).
    std::string thread_slot() const;
    std::string per_thread_count() const;

    // Expressions (emit_expr.cpp).
    std::string expr(const ir::ExprRef& e);
    // An if's condition without the parentheses that enclose all of it.
    std::string condition(const ir::ExprRef& e);
    // Names the shared, memory-free nodes of a statement's expressions as const temporaries.
    void name_shared(const std::vector<ir::ExprRef>& roots);
    ir::CacheHint hint(ir::MemRef m) const;
    bool streamed(ir::MemRef m) const;
    std::string load_at(ir::MemRef m, const std::string& address) const;
    std::string hinted_load(ir::MemRef m, const std::string& element) const;
    std::string cast(DType to, DType from, const std::string& v) const;
    // An f32 value to f16/bf16 bits (identity for other types): the dialect's conversion where
    // it has one, else the semantics file's.
    std::string narrow(DType t, const std::string& v) const;
    // cast(half, lo) | cast(half, hi) << 16 (as u32 bits, lo and hi f32) as the dialect's
    // pack_halves, where it has one.
    std::optional<std::string> packed_halves(const ir::expr::Binary& n);
    std::string builtin(ir::BuiltinKind b) const;
    std::string binary(const ir::ExprRef& e, const ir::expr::Binary& n);
    std::string unary(const ir::ExprRef& e, const ir::expr::Unary& n);
    std::string constant(const ir::ExprRef& e, const ir::expr::Const& c) const;
    std::string shuffle(const ir::ExprRef& e, const ir::expr::ShuffleXor& n);

    // Statements and declarations (emit_stmt.cpp).
    void stmt(const ir::StmtRef& s);
    void for_loop(const ir::stmt::For& n, const std::function<void()>& body);
    void if_else(const ir::stmt::If& n, const std::function<void()>& then_body,
                 const std::function<void()>& else_body);
    // Declares the locals and per-thread arrays for which `which(id)` holds (tiles: all).
    void declare_locals(const std::function<bool(int)>& which);
    void declare_arrays(const std::function<bool(int)>& which, bool per_thread);
    void declare_block_index();  // the opaque block index (opaque_block_index)
    void declare_tiles();

    // Vector loads and stores (emit_vector.cpp).
    void load_vector(const ir::stmt::LoadVector& n);
    void store_vector(const ir::stmt::StoreVector& n);
    void copy_vector(const ir::stmt::StoreVector& n);  // n.from, where the dialect copies async
    void mma(const ir::stmt::Mma& n);  // lower() let it through: the dialect has has_mma
    void load_matrix(const ir::stmt::LoadMatrix& n);  // as mma

    // The entry point's signature and, where arguments come as an array, their unpacking
    // (emit_abi.cpp).
    std::string signature(const std::string& entry) const;
    // CPU: a function over a range of blocks: the entry (exported), a copy of it for larger
    // grids (internal), or the copy for grids whose positions pass i32, which is left
    // unoptimized (such launches are rare, and the copy would otherwise add most of a kernel's
    // compile time again).
    enum class RangeFunction { entry, larger_grids, any_grid };
    std::string block_range_function(const std::string& name, RangeFunction kind) const;
    void unpack_args();

    // CPU: a block as its plan's steps (emit_threads.cpp).
    void block_steps(const BlockSteps& steps);
};

// f16/bf16 bits to f32 (identity for other types).
std::string widen(DType t, const std::string& v);

}  // namespace kiln::codegen
