// ir/range_index: flattened indices cut apart again (x / c, x % c) rewritten from their
// non-negative terms with no division of the flattened index left, the same values as before on
// the interpreter, and nothing rewritten where a term may be negative or the sum may wrap. (The
// graph's case, a Q8_0 weight stored [in, out] read in a matmul's prologue, is
// graph_contract_test's.)
#include <gtest/gtest.h>

#include "ir/range_index.hpp"
#include "ir/ranges.hpp"
#include "ir/visit.hpp"
#include "kiln/dsl.hpp"
#include "kiln/interpret.hpp"

namespace kiln {
namespace {

// The divisions and remainders of `k` whose numerator reads the thread index.
int thread_divisions(const ir::Kernel& k) {
    int count = 0;
    ir::for_each_stmt(k.body, [&](const ir::StmtNode& n) {
        ir::for_each_expr(n, [&](const ir::ExprRef& root) {
            ir::walk(root, [&](const ir::ExprRef& e) {
                const auto* b = std::get_if<ir::expr::Binary>(&e->node);
                if (b && (b->op == ir::BinOp::div || b->op == ir::BinOp::rem) &&
                    ir::mentions(b->a, [](const ir::ExprNode& x) {
                        const auto* t = std::get_if<ir::expr::Builtin>(&x.node);
                        return t && t->which == ir::BuiltinKind::thread_index;
                    }))
                    ++count;
            });
        });
    });
    return count;
}

// Element (j, i, t) of a [3, 20, 64] array at x = j*1280 + i*64 + t, cut apart again as its
// block of 256 (x / 256 = j*5 + i/4), its position in a row (x % 64 = t), and x + 70 in rows of
// 64 (the remainder of t + 6 is left to compute: it passes 64).
ir::Kernel flattened_positions() {
    KernelBuilder k("flattened_positions", 64);
    auto out = k.output("out", DType::i32);
    Expr t = k.thread_index();
    k.for_(0, 3, [&](Expr j) {
        k.for_(0, 20, [&](Expr i) {
            const Expr x = j * 1280 + i * 64 + t;
            out[x * 3] = cast(DType::i32, (cast(DType::i64, x) + 0) / 256);
            out[x * 3 + 1] = x % 64;
            out[x * 3 + 2] = (j * 1280 + i * 64 + t + 70) % 64;
        });
    });
    return k.finish();
}

TEST(RangeIndex, TakesAFlattenedIndexApartWithTheSameValues) {
    const ir::Kernel before = flattened_positions();
    const ir::Kernel after = ir::simplify_indices(before);
    EXPECT_EQ(thread_divisions(before), 3);
    // x / 256 keeps i / 4 (no thread index); x % 64 is t; (x + 70) % 64 is (t + 6) % 64.
    EXPECT_EQ(thread_divisions(after), 1);
    const size_t n = 3 * 20 * 64 * 3;
    const auto want = interpret(before, 1, {HostBuffer::of(std::vector<int32_t>(n, -1))});
    const auto got = interpret(after, 1, {HostBuffer::of(std::vector<int32_t>(n, -1))});
    const std::vector<int32_t> values = got[0].values<int32_t>();
    EXPECT_EQ(values, want[0].values<int32_t>());
    for (int x = 0; x < 3 * 1280; ++x) {
        EXPECT_EQ(values[size_t(x) * 3], x / 256);
        EXPECT_EQ(values[size_t(x) * 3 + 1], x % 64);
        EXPECT_EQ(values[size_t(x) * 3 + 2], (x + 70) % 64);
    }
}

TEST(RangeIndex, LeavesTermsThatMayBeNegativeOrWrapAlone) {
    KernelBuilder k("range_index_refusals", 64);
    auto out = k.output("out", DType::i32);
    Expr s = k.scalar("s", DType::i32);
    Expr t = k.thread_index();
    out[t] = (s * 64 + t) % 64;                      // s may be negative
    out[t + 64] = (t - 1 + 128) / 64;                // t - 1 may be negative
    out[t + 128] = (t * (1 << 26) + t * 64) / 64;    // the sum may pass INT32_MAX
    out[t + 192] = (t + k.block_index() * 64) % 64;  // block_index * 64 may wrap
    const ir::Kernel before = k.finish();
    const ir::Kernel after = ir::simplify_indices(before);
    EXPECT_EQ(thread_divisions(after), 4);
}

}  // namespace
}  // namespace kiln
