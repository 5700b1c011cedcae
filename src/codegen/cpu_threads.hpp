// cpu_threads: the CPU's threads-as-loops form of a block (the CPU dialect runs a block as a task
// on the thread pool, src/runtime/ABI.md, and its threads as loops). A block becomes a sequence of
// steps: loops over its threads, and uniform work between them done once for the block —
// statements giving uniform locals their values, and loops and conditions whose bounds every
// thread of the block shares. A barrier ends a thread loop; so does a uniform loop, which then
// runs with the thread loop inside it, so adjacent threads become adjacent SIMD lanes the C++
// compiler vectorizes (PoCL's implicit loop barriers). Splitting a thread loop is a barrier the
// kernel did not ask for, which never changes the result of a race-free kernel.
//
// A loop whose threads start one apart and step together (`for i = u + thread_index; i < e;
// i += s`, u, e and s uniform, s > 0) is rewritten as a uniform loop over i - thread_index with
// `i < e` tested in each thread: the same iterations in every thread, as long as i does not wrap
// (where it would, the original loop would not end).
//
// A varying local given its one value outside loops, from values that read no memory, is
// computed again in each later thread loop that reads it, rather than kept per thread.
//
// Each local lives where it must: a variable of the block (uniform values), a private variable
// of the thread loops that use it, or an array of block_size values indexed by the thread
// (values carried into a thread loop: across a split, or from one trip of a uniform loop to the
// next).
#pragma once

#include <vector>

#include "kiln/ir.hpp"

namespace kiln::codegen {

enum class Home : uint8_t {
    block,        // one variable for the block, written only outside thread loops
    thread_loop,  // private to each thread loop that uses it (declared inside it)
    per_thread,   // block_size values, one per thread, kept across thread loops
};

struct BlockStep;
using BlockSteps = std::vector<BlockStep>;

struct BlockStep {
    enum class Kind : uint8_t {
        threads,  // every thread runs `body`, in a loop over threads
        uniform,  // `stmt` (a Let, Assign or LoadVector of uniform locals) once for the block
        loop,     // `stmt` is a For with uniform bounds; `inner` is its body
        branch,   // `stmt` is an If with a uniform condition; `inner` / `else_inner` its arms
    };
    Kind kind;
    std::vector<ir::StmtRef> body;  // threads
    ir::StmtRef stmt;               // uniform, loop, branch
    BlockSteps inner, else_inner;   // loop, branch
    int id = 0;                     // threads: the loop's number in the block
    // threads: where `body` is one `if (offset + thread_index < end)` without else (offset and
    // end uniform i32 values that read no memory), `below` is the sum and `guarded` the if's
    // body. Where the sum never wraps, the threads that pass the test are the first
    // end - offset, and the loop may run those alone, without the test.
    ir::ExprRef below, below_offset, below_end;
    ir::StmtRef guarded;
};

struct ThreadPlan {
    ir::Kernel kernel;             // the kernel as planned (strided thread loops rewritten)
    BlockSteps steps;              // the block's program
    int thread_loops = 0;          // thread loops in `steps`, numbered by BlockStep::id
    std::vector<Home> local_home;  // by local id
    std::vector<Home> array_home;  // by per-thread array id (block: not used)
    // By thread loop: its private locals and arrays (a local may be private to several loops,
    // none of which it carries a value into).
    std::vector<std::vector<int>> loop_locals, loop_arrays;
    // Whether the block runs in strips of threads (KILN_STRIP, a vector of 4-byte values), the
    // whole program once per strip: where the kernel has no barrier, so its threads never wait
    // for each other, and some value is carried across thread loops. Per-thread values then
    // need a strip's worth of room, which the compiler keeps in registers.
    bool strips = false;
};

// Plans `kernel` (folds already lowered) as thread loops and uniform steps.
ThreadPlan plan_threads(const ir::Kernel& kernel);

}  // namespace kiln::codegen
