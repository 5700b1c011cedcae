// Emitter, the CPU's block as thread loops: prints a ThreadPlan's steps (codegen/cpu_threads.hpp).
// A thread loop with no loop inside it is marked `omp simd`: its iterations are the block's
// threads, which share nothing between barriers in a race-free kernel, so the compiler may run
// adjacent threads as SIMD lanes. A thread loop whose body is one test of the thread index
// against a bound runs the threads below the bound alone, so the compiler needs no masks.
#include <algorithm>

#include <fmt/format.h>

#include "codegen/emitter.hpp"
#include "ir/visit.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

bool holds_loop(const std::vector<StmtRef>& body) {
    for (const auto& s : body)
        if (contains(s,
                     [](const StmtNode& n) { return std::holds_alternative<stmt::For>(n.node); }))
            return true;
    return false;
}

}  // namespace

void Emitter::block_steps(const BlockSteps& steps) {
    for (const BlockStep& s : steps) {
        switch (s.kind) {
            case BlockStep::Kind::threads: {
                // Threads bounded by their only if's test run alone, below a count taken once.
                const bool bounded =
                    s.below && (!std::holds_alternative<expr::Binary>(s.below->node) ||
                                (no_wrap && no_wrap->ops.count(s.below.get())));
                // In strips, a thread loop runs over the strip's threads.
                std::string end = plan->strips
                                      ? fmt::format("KILN_STRIP_END(kiln_s, {})", k.block_size)
                                      : std::to_string(k.block_size);
                if (bounded) {
                    named.clear();
                    open("");
                    line(fmt::format("const int32_t kiln_threads = kiln_threads_below({}, {}, {});",
                                     expr(s.below_end), expr(s.below_offset), end));
                    end = "kiln_threads";
                }
                if (!holds_loop(s.body)) line("#pragma omp simd");
                if (plan->strips) {
                    // The loop counts the strip's lanes (kiln_l, the index of the strip's
                    // per-thread values) and derives the thread from it: GCC then sees those
                    // values' addresses as consecutive, even in a lane-masked statement.
                    open(fmt::format("for (int32_t kiln_l = 0; kiln_l < {} - kiln_s; ++kiln_l)",
                                     end));
                    line("const int32_t kiln_t = kiln_s + kiln_l;");
                } else {
                    open(fmt::format("for (int32_t kiln_t = 0; kiln_t < {}; ++kiln_t)", end));
                }
                in_thread_loop = true;
                const auto& mine = plan->loop_locals[static_cast<size_t>(s.id)];
                declare_locals(
                    [&](int l) { return std::find(mine.begin(), mine.end(), l) != mine.end(); });
                const auto& arrays = plan->loop_arrays[static_cast<size_t>(s.id)];
                declare_arrays(
                    [&](int a) {
                        return std::find(arrays.begin(), arrays.end(), a) != arrays.end();
                    },
                    false);
                if (bounded) {
                    stmt(s.guarded);
                } else {
                    for (const auto& b : s.body) stmt(b);
                }
                in_thread_loop = false;
                close();
                if (bounded) close();
                break;
            }
            case BlockStep::Kind::uniform:
                stmt(s.stmt);
                break;
            case BlockStep::Kind::loop:
                for_loop(std::get<stmt::For>(s.stmt->node), [&] { block_steps(s.inner); });
                break;
            case BlockStep::Kind::branch:
                if_else(
                    std::get<stmt::If>(s.stmt->node), [&] { block_steps(s.inner); },
                    [&] { block_steps(s.else_inner); });
                break;
        }
    }
}

}  // namespace kiln::codegen
