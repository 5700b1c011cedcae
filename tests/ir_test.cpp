// IR passes: print is readable and complete, the structural hash follows the IR (and a kernel's
// tuner identity its generated source), simplify folds
// only what stays bit-exact, verify rejects malformed IR built by hand, divisibility knows
// multiples only where the structure proves them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/divisibility.hpp"
#include "ir/hash.hpp"
#include "ir/lower_folds.hpp"
#include "ir/print.hpp"
#include "ir/simplify.hpp"
#include "ir/verify.hpp"
#include "ir/visit.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "ops/test_kernels.hpp"

using namespace kiln;
using ::testing::HasSubstr;

namespace {

TEST(Print, ShowsParametersStatementsAndFolds) {
    const auto k = ops::row_fold(DType::f32, 100, Fold::sum().lanes(32).chunk(4).threads(8), 64);
    const std::string text = ir::print(k);
    EXPECT_THAT(text, HasSubstr("kernel row_sum_f32 block 64"));
    EXPECT_THAT(text, HasSubstr("buffer x: f32 read"));
    EXPECT_THAT(text, HasSubstr("buffer out: f32 write"));
    EXPECT_THAT(text, HasSubstr("fold sum lanes 32 chunk 4 threads 8"));
    EXPECT_THAT(text, HasSubstr("require"));
}

// A value reused at every level: 2^40 nodes as a tree, 80 as the DAG the DSL builds.
ir::Kernel deeply_shared(int levels) {
    KernelBuilder k("deep", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Expr v = x[i];
        for (int l = 0; l < levels; ++l) v = v * v + v;
        y[i] = v;
    });
    return k.finish();
}

TEST(Print, NamesANodeAStatementReachesTwiceOnce) {
    const std::string text = ir::print(deeply_shared(1));
    EXPECT_THAT(text, HasSubstr("    $0 = ((block_index * 64:i32):i32 + thread_index):i32\n"
                                "    $1 = x[$0]\n"
                                "    y[$0] = (($1 * $1):f32 + $1):f32\n"));
}

TEST(Dag, PassesVisitEachSharedNodeOnce) {
    // Verify (in finish), print, hash, simplify and codegen all take time and space linear in
    // the DAG: as a tree these 40 levels would not fit in any memory.
    const ir::Kernel k = deeply_shared(40);
    EXPECT_LT(ir::print(k).size(), 20000u);
    const ir::Kernel simplified = ir::simplify(k);
    size_t nodes = 0;
    ir::for_each_stmt(simplified.body, [&](const ir::StmtNode& n) {
        if (const auto* s = std::get_if<ir::stmt::Store>(&n.node))
            ir::walk(s->value, [&](const ir::ExprRef&) { ++nodes; });
    });
    EXPECT_LT(nodes, 200u);  // sharing kept through the rewrite
    EXPECT_LT(generate_source(Backend::cpu, std::span(&k, 1)).size(), 40000u);
    EXPECT_NE(ir::structural_hash(k), ir::structural_hash(deeply_shared(39)));
}

TEST(Hash, EqualForEqualIrAndDifferentForAnyComptimeChange) {
    auto make = [](int threads, int block, int64_t n) {
        return ir::structural_hash(
            ops::row_fold(DType::f32, n, Fold::sum().lanes(32).threads(threads), block));
    };
    EXPECT_EQ(make(4, 64, 100), make(4, 64, 100));
    EXPECT_NE(make(4, 64, 100), make(8, 64, 100));
    EXPECT_NE(make(4, 64, 100), make(4, 128, 100));
    EXPECT_NE(make(4, 64, 100), make(4, 64, 101));
    EXPECT_NE(ir::structural_hash(ops::elementwise_mix(DType::f32, 64, 1)),
              ir::structural_hash(ops::elementwise_mix(DType::f16, 64, 1)));
}

TEST(Hash, KernelIdentityFollowsTheGeneratedSourceNotOnlyTheIr) {
    auto make = [](int threads) {
        return ops::row_fold(DType::f32, 100, Fold::sum().lanes(32).threads(threads), 64);
    };
    for (Backend b : {Backend::cpu, Backend::cuda, Backend::opencl}) {
        EXPECT_EQ(kernel_identity(b, make(32)), kernel_identity(b, make(32)));
        EXPECT_NE(kernel_identity(b, make(32)), kernel_identity(b, make(8)));
    }
    // One IR, a different identity on each backend: the identity is taken from what the
    // backend compiles (here a warp's shuffles on CUDA, a shared tile on OpenCL, loops on the
    // CPU), not from the IR alone, so a change in lowering or emission re-tunes.
    const ir::Kernel k = make(32);
    EXPECT_NE(kernel_identity(Backend::cuda, k), kernel_identity(Backend::opencl, k));
    EXPECT_NE(kernel_identity(Backend::cuda, k), kernel_identity(Backend::cpu, k));
}

// The planner's races take each candidate's identity from its compiled kernel: it must be the
// identity of the kernel's source alone, also when the kernel was compiled in a unit with others
// and in checked mode.
TEST(Hash, ACompiledKernelKeepsTheIdentityOfItsOwnSource) {
    const std::vector<ir::Kernel> kernels = {
        ops::row_fold(DType::f32, 100, Fold::sum().lanes(32).threads(32), 64),
        ops::row_fold(DType::f32, 100, Fold::sum().lanes(32).threads(8), 64)};
    for (bool checked : {false, true}) {
        CompileOptions options = default_compile_options();
        options.check_bounds = checked;
        const auto compiled = compile_all(cpu_device(), kernels, options);
        for (size_t i = 0; i < kernels.size(); ++i)
            EXPECT_EQ(compiled[i]->identity(), kernel_identity(Backend::cpu, kernels[i], options))
                << "kernel " << i << (checked ? " checked" : "");
    }
}

ir::ExprRef f32c(double v) {
    return ir::float_const(DType::f32, v);
}
ir::ExprRef i32c(int64_t v) {
    return ir::int_const(DType::i32, v);
}
ir::ExprRef bin(ir::BinOp op, ir::ExprRef a, ir::ExprRef b) {
    return ir::make(ir::is_comparison(op) ? DType::boolean : a->type, ir::expr::Binary{op, a, b});
}
const ir::expr::Const* const_value(const ir::ExprRef& e) {
    return std::get_if<ir::expr::Const>(&e->node);
}

TEST(Divisibility, KnowsMultiplesFromStructureOnly) {
    KernelBuilder k("divisors", 64);
    auto x = k.input("x", DType::i32);
    auto y = k.output("y", DType::i32);
    Expr s = k.scalar("s", DType::i32);
    Expr t = k.thread_index();
    Var row = k.let(k.block_index() * 4096, "row");             // 64 (the cap)
    Var lane = k.let(row + t * 4 + 256, "lane");                // 4
    Var odd = k.let(lane + 1, "odd");                           // 1
    Var scaled = k.let(s * 8, "scaled");                        // 8
    Var low = k.let(min(scaled, t * 16), "low");                // 8
    Var shifted = k.let((t + 1) << 3, "shifted");               // 8
    Var masked = k.let(s & ~3, "masked");                       // 4
    Var picked = k.let(select(s > 0, scaled, lane), "picked");  // 4
    Var loaded = k.let(x[t] * 1, "loaded");                     // 1: data
    Var zero = k.let(DType::i32, 0, "zero");                    // 64: every power divides 0
    Var narrow = k.let(cast(DType::u8, t * 256), "narrow");     // 0 mod 256: the cap
    Var grown =
        k.let(DType::i32, 0, "grown");  // +8 in a loop: 8; the greatest fixpoint, by induction
    Var spoiled = k.let(DType::i32, 0, "spoiled");  // +16, then +2 in the loop: 2
    Var stepped = k.let(DType::i32, 0, "stepped");  // the loop variable from 4, step 12: 4
    k.for_(
        4, s,
        [&](Expr i) {
            grown = grown + 8;
            spoiled = spoiled + 16;
            spoiled = spoiled + 2;
            stepped = i;
        },
        12);
    y[t] = row + lane + odd + scaled + low + shifted + masked + picked + loaded + zero +
           cast(DType::i32, narrow) + grown + spoiled + stepped;
    const ir::Kernel kernel = k.finish();
    const ir::Divisibility div(kernel);
    auto of = [&](const Var& v) { return div.of(v.expr().node()); };
    EXPECT_EQ(of(row), 64);
    EXPECT_EQ(of(lane), 4);
    EXPECT_EQ(of(odd), 1);
    EXPECT_EQ(of(scaled), 8);
    EXPECT_EQ(of(low), 8);
    EXPECT_EQ(of(shifted), 8);
    EXPECT_EQ(of(masked), 4);
    EXPECT_EQ(of(picked), 4);
    EXPECT_EQ(of(loaded), 1);
    EXPECT_EQ(of(zero), 64);
    EXPECT_EQ(of(narrow), 64);
    EXPECT_EQ(of(grown), 8);
    EXPECT_EQ(of(spoiled), 2);
    EXPECT_EQ(of(stepped), 4);
    EXPECT_EQ(div.of(s.node()), 1);
    EXPECT_EQ(div.of(k.block_index().node()), 1);
}

TEST(Simplify, FoldsIntegersWithKilnSemantics) {
    using ir::BinOp;
    EXPECT_EQ(const_value(ir::simplify(bin(BinOp::add, i32c(INT32_MAX), i32c(1))))->i, INT32_MIN);
    EXPECT_EQ(const_value(ir::simplify(bin(BinOp::div, i32c(7), i32c(0))))->i, 0);
    EXPECT_EQ(const_value(ir::simplify(bin(BinOp::rem, i32c(7), i32c(0))))->i, 7);
    EXPECT_EQ(const_value(ir::simplify(bin(BinOp::div, i32c(INT32_MIN), i32c(-1))))->i, INT32_MIN);
    EXPECT_EQ(const_value(ir::simplify(bin(BinOp::shl, i32c(1), i32c(33))))->i, 2);
}

TEST(Simplify, FoldsF32InSinglePrecisionAndKeepsInexactIdentities) {
    using ir::BinOp;
    // 0.1f + 0.2f in f32 is not 0.3 in double.
    const ir::ExprRef folded = ir::simplify(bin(BinOp::add, f32c(0.1f), f32c(0.2f)));
    const auto* sum = const_value(folded);
    ASSERT_NE(sum, nullptr);
    EXPECT_EQ(static_cast<float>(sum->f), 0.1f + 0.2f);
    // x + 0 is not x for x = -0: it must stay.
    KernelBuilder k("s");
    auto x = k.input("x", DType::f32);
    Expr load = x[0];
    auto plus_zero = bin(BinOp::add, load.node(), f32c(0));
    EXPECT_EQ(ir::simplify(plus_zero), plus_zero);
    // x * 1 is x for every x, and integer i + 0 is i.
    EXPECT_EQ(ir::simplify(bin(BinOp::mul, load.node(), f32c(1))), load.node());
    // f16 arithmetic is left alone (it rounds after each op).
    auto h = bin(BinOp::add, ir::float_const(DType::f16, 1), ir::float_const(DType::f16, 2));
    EXPECT_EQ(ir::simplify(h), h);
}

TEST(LowerFolds, LeavesNoFoldAndUsesBarriersOnlyWithoutShuffles) {
    const auto k = ops::row_fold(DType::f32, 100, Fold::sum().lanes(32).chunk(4).threads(32), 64);
    auto has_fold = [](const ir::StmtRef& s) {
        return ir::contains(s, [](const ir::StmtNode& n) {
            return std::holds_alternative<ir::stmt::Fold>(n.node);
        });
    };
    auto has_barrier = [](const ir::StmtRef& s) {
        return ir::contains(s, [](const ir::StmtNode& n) {
            return std::holds_alternative<ir::stmt::Barrier>(n.node);
        });
    };
    EXPECT_TRUE(has_fold(k.body));
    const auto shuffled = ir::lower_folds(k, 32);
    const auto shared = ir::lower_folds(k, 1);
    EXPECT_FALSE(has_fold(shuffled.body));
    EXPECT_FALSE(has_fold(shared.body));
    EXPECT_FALSE(has_barrier(shuffled.body));
    EXPECT_TRUE(has_barrier(shared.body));
    EXPECT_EQ(shared.tiles.size(), 1u);
}

TEST(LowerFolds, WritesLoopsThatRunOnceInEveryThreadWithoutTheLoop) {
    // For loops in the lowered kernel (row_fold itself has none around its fold).
    auto loops = [](int64_t n, int threads) {
        const auto k =
            ops::row_fold(DType::f32, n, Fold::sum().lanes(32).chunk(4).threads(threads), 64);
        int count = 0;
        ir::for_each_stmt(ir::lower_folds(k, 32).body, [&](const ir::StmtNode& s) {
            count += std::holds_alternative<ir::stmt::For>(s.node) ? 1 : 0;
        });
        return count;
    };
    // One lane a thread, n = lanes * chunk: one whole step in every thread, no tail.
    EXPECT_EQ(loops(128, 32), 0);
    // n = 100: lane 0 takes a whole step, lane 31 none; the loops stay.
    EXPECT_GT(loops(100, 32), 0);
    // Several lanes a thread start at 0 together: n = 100 is one checked step in every thread.
    EXPECT_EQ(loops(100, 8), 0);
    // n = 1000 takes seven whole steps: the loops stay.
    EXPECT_GT(loops(1000, 8), 0);
}

TEST(Verify, RejectsMalformedIrBuiltByHand) {
    ir::Kernel k;
    k.name = "hand";
    k.block_size = 32;
    k.params.push_back({"x", true, DType::f32, ir::Access::read});
    k.locals.push_back({"v", DType::f32});
    // Uses local 0 before declaring it.
    k.body = ir::make(ir::stmt::Assign{0, ir::make(DType::f32, ir::expr::Local{0})});
    EXPECT_THROW(ir::verify(k), Error);
    // Stores into a read-only buffer.
    k.body = ir::make(ir::stmt::Store{{ir::MemSpace::global, 0}, i32c(0), f32c(1)});
    try {
        ir::verify(k);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("read only"));
    }
    // Mixed operand types.
    k.body = ir::make(
        ir::stmt::Let{0, ir::make(DType::f32, ir::expr::Binary{ir::BinOp::add, f32c(1), i32c(1)})});
    EXPECT_THROW(ir::verify(k), Error);
    // Vector stores: into a read-only buffer, of three elements, of a value of another type.
    auto vector_store_error = [&](ir::Access access, std::vector<ir::ExprRef> values) {
        k.params[0].access = access;
        k.body = ir::make(ir::stmt::StoreVector{{ir::MemSpace::global, 0}, i32c(0), values});
        try {
            ir::verify(k);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_THAT(vector_store_error(ir::Access::read, {f32c(1), f32c(2)}), HasSubstr("read only"));
    EXPECT_THAT(vector_store_error(ir::Access::write, {f32c(1), f32c(2), f32c(3)}),
                HasSubstr("vector store of 3 f32 elements"));
    EXPECT_THAT(vector_store_error(ir::Access::write, {f32c(1), i32c(2)}),
                HasSubstr("vector store of i32 into f32 memory"));
    EXPECT_EQ(vector_store_error(ir::Access::write, {f32c(1), f32c(2)}), "no error");
    // A minimum of blocks per compute unit outside [0, 32].
    for (int blocks : {-1, 33}) {
        k.min_blocks_per_unit = blocks;
        EXPECT_THAT(vector_store_error(ir::Access::write, {f32c(1), f32c(2)}),
                    HasSubstr("minimum blocks per compute unit"));
    }
}

}  // namespace
