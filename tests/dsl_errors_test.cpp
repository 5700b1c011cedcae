// DSL misuse: each mistake is a kiln::Error naming the kernel, the operation and what was expected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include <fmt/format.h>

#include "kiln/dsl.hpp"
#include "support/errors.hpp"

using namespace kiln;
using kiln::test::error_of;
using ::testing::HasSubstr;

namespace {

TEST(DslErrors, TypeMismatchNamesBothTypes) {
    KernelBuilder k("mismatch");
    auto x = k.input("x", DType::f32);
    auto n = k.input("n", DType::i32);
    const auto msg = error_of([&] { Expr e = x[0] + n[0]; });
    EXPECT_THAT(msg, HasSubstr("type mismatch"));
    EXPECT_THAT(msg, HasSubstr("f32"));
    EXPECT_THAT(msg, HasSubstr("i32"));
    EXPECT_THAT(error_of([&] { Expr e = n[0] + 0.5; }), HasSubstr("float literal"));
    EXPECT_THAT(error_of([&] { Expr e = x[0] % x[0]; }), HasSubstr("integer operands"));
    EXPECT_THAT(error_of([&] { Expr e = select(x[0], x[0], x[0]); }), HasSubstr("bool condition"));
    EXPECT_THAT(error_of([&] { k.if_(n[0], [] {}); }), HasSubstr("bool condition"));
    EXPECT_THAT(error_of([&] { Expr e = bitcast(DType::i64, x[0]); }), HasSubstr("same width"));
    EXPECT_THAT(error_of([&] { Expr e = x[x[0]]; }), HasSubstr("indices are integers"));
}

TEST(DslErrors, AccessModesAreEnforced) {
    KernelBuilder k("access");
    auto in = k.input("in", DType::f32);
    auto out = k.output("out", DType::f32);
    EXPECT_THAT(error_of([&] { in[0] = 1.0f; }), HasSubstr("declared input (read only)"));
    EXPECT_THAT(error_of([&] { Expr e = out[0]; }), HasSubstr("declared output (write only)"));
}

TEST(DslErrors, BarrierInDivergentCode) {
    KernelBuilder k("divergent", 64);
    auto x = k.inout("x", DType::f32);
    k.if_(k.thread_index() < 3, [&] { k.barrier(); });
    const auto msg = error_of([&] { k.finish(); });
    EXPECT_THAT(msg, HasSubstr("kernel divergent"));
    EXPECT_THAT(msg, HasSubstr("barrier in divergent code"));
    EXPECT_THAT(msg, HasSubstr("thread_index"));
    (void)x;
}

TEST(DslErrors, BarrierInALoopWithThreadDependentBounds) {
    KernelBuilder k("divergent_loop", 64);
    k.for_(0, k.thread_index(), [&](Expr) { k.barrier(); });
    EXPECT_THAT(error_of([&] { k.finish(); }), HasSubstr("bounds of `for"));
}

TEST(DslErrors, CooperativeFoldInDivergentCode) {
    KernelBuilder k("fold_divergent", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Var row = k.let(k.absolute_pos() / 32);
    k.if_(row < y.len(), [&] {
        Var s = k.fold(DType::f32, 100, Fold::sum().lanes(32).threads(32),
                       [&](Expr i) { return x[row * 100 + i]; });
        y[row] = s;
    });
    const auto msg = error_of([&] { k.finish(); });
    EXPECT_THAT(msg, HasSubstr("fold over 32 threads"));
    EXPECT_THAT(msg, HasSubstr("divergent"));
}

TEST(DslErrors, WarpBarrierNeedsWholeWarpsAndUniformFlow) {
    KernelBuilder odd("warp_odd", 48);
    odd.warp_barrier();
    const auto msg = error_of([&] { odd.finish(); });
    EXPECT_THAT(msg, HasSubstr("multiple of 32"));
    EXPECT_THAT(msg, HasSubstr("48 threads"));
    KernelBuilder divergent("warp_divergent", 64);
    divergent.if_(divergent.thread_index() < 32, [&] { divergent.warp_barrier(); });
    EXPECT_THAT(error_of([&] { divergent.finish(); }), HasSubstr("warp barrier in divergent code"));
    KernelBuilder fine("warp_fine", 64);
    fine.warp_barrier();
    EXPECT_NO_THROW(fine.finish());
}

TEST(DslErrors, UniformBarrierIsAccepted) {
    KernelBuilder k("uniform", 64);
    auto y = k.output("y", DType::f32);
    k.if_(k.block_index() < 3, [&] { k.barrier(); });
    k.for_(0, y.len(), [&](Expr) { k.barrier(); });
    EXPECT_NO_THROW(k.finish());
}

TEST(DslErrors, FoldScheduleMustFit) {
    KernelBuilder k("fold_bad", 64);
    auto x = k.input("x", DType::f32);
    auto body = [&](Expr i) { return x[i]; };
    EXPECT_THAT(error_of([&] { k.fold(DType::f32, 10, Fold::sum().lanes(24), body); }),
                HasSubstr("power of two"));
    EXPECT_THAT(error_of([&] { k.fold(DType::f32, 10, Fold::sum().lanes(32).threads(64), body); }),
                HasSubstr("divides the lanes"));
    EXPECT_THAT(error_of([&] { k.fold(DType::f32, 10, Fold::sum().lanes(32).threads(3), body); }),
                HasSubstr("power of two"));
}

TEST(DslErrors, VectorLoadsNeedAWidthOf2Or4OfA4ByteTypeOr4Or8OfA2ByteType) {
    KernelBuilder k("vec");
    auto a = k.input("a", DType::u32);
    auto h = k.input("h", DType::f16);
    auto b = k.input("b", DType::u8);
    auto out = k.output("out", DType::u32);
    EXPECT_THAT(error_of([&] { k.load_vector(a, 0, 3); }), HasSubstr("3 u32 elements"));
    EXPECT_THAT(error_of([&] { k.load_vector(a, 0, 8); }), HasSubstr("8 u32 elements"));
    EXPECT_THAT(error_of([&] { k.load_vector(h, 0, 2); }),
                HasSubstr("2 f16 elements; expected 2 or 4 of a 4-byte type, or 4 or 8 of a "
                          "2-byte type"));
    EXPECT_THAT(error_of([&] { k.load_vector(b, 0, 4); }), HasSubstr("4 u8 elements"));
    EXPECT_THAT(error_of([&] { k.load_vector(out, 0, 4); }), HasSubstr("write only"));
    EXPECT_THAT(error_of([&] { k.load_vector(a, Expr(1.5f), 4); }),
                HasSubstr("indices are integers"));
}

TEST(DslErrors, VectorStoresNeedAWidthOf2Or4AndA4ByteTypeAndWritableMemory) {
    KernelBuilder k("vec_store");
    auto a = k.input("a", DType::u32);
    auto h = k.output("h", DType::f16);
    auto out = k.output("out", DType::u32);
    const Expr one = Expr(1u), half = cast(DType::f16, Expr(1.0f));
    EXPECT_THAT(error_of([&] {
                    k.store_vector(out, 0, {one, one, one});
                }),
                HasSubstr("3 u32 elements"));
    EXPECT_THAT(error_of([&] { k.store_vector(h, 0, {half, half}); }), HasSubstr("2 f16 elements"));
    EXPECT_THAT(error_of([&] { k.store_vector(a, 0, {one, one}); }), HasSubstr("read only"));
    EXPECT_THAT(error_of([&] {
                    k.store_vector(out, Expr(1.5f), {one, one});
                }),
                HasSubstr("indices are integers"));
    const Expr f = k.scalar("f", DType::f32);
    EXPECT_THAT(error_of([&] { k.store_vector(out, 0, {one, f}); }), HasSubstr("f32"));
}

TEST(DslErrors, VectorLoadedValuesVaryWithTheirIndex) {
    // A barrier under a value loaded at a per-thread index is divergent; at a per-block index,
    // it is not.
    KernelBuilder divergent("vec_divergent", 64);
    auto a = divergent.input("a", DType::u32);
    auto v = divergent.load_vector(a, divergent.thread_index() * 4, 4);
    divergent.if_(v[2] == 0u, [&] { divergent.barrier(); });
    EXPECT_THAT(error_of([&] { divergent.finish(); }), HasSubstr("barrier in divergent code"));
    KernelBuilder uniform("vec_uniform", 64);
    auto b = uniform.input("b", DType::u32);
    auto u = uniform.load_vector(b, uniform.block_index() * 4, 4);
    uniform.if_(u[2] == 0u, [&] { uniform.barrier(); });
    EXPECT_NO_THROW(uniform.finish());
}

TEST(DslErrors, BuilderMisuse) {
    EXPECT_THAT(error_of([] { KernelBuilder k("x", 2048); }), HasSubstr("block size 2048"));
    EXPECT_THAT(error_of([] { KernelBuilder k("bad name"); }), HasSubstr("letters, digits"));
    for (int blocks : {0, -1, 33})
        EXPECT_THAT(error_of([&] { KernelBuilder("occupancy", 64).min_blocks_per_unit(blocks); }),
                    HasSubstr(fmt::format("minimum blocks per compute unit {} is out of range; "
                                          "expected 1 to 32",
                                          blocks)));
    KernelBuilder k("dup");
    k.input("a", DType::f32);
    EXPECT_THAT(error_of([&] { k.output("a", DType::f32); }),
                HasSubstr("two parameters named 'a'"));
    k.finish();
    EXPECT_THAT(error_of([&] { k.finish(); }), HasSubstr("twice"));
}

}  // namespace

namespace {
TEST(DslLiterals, LiteralArithmeticFoldsAndStaysWeak) {
    KernelBuilder k("literals");
    auto x = k.input("x", DType::i64);
    // Two literals combine into a literal, which then takes the other operand's type.
    Expr c = Expr(3) * 32;
    EXPECT_TRUE(c.weak());
    Expr e = x[0] + c;
    EXPECT_EQ(e.type(), DType::i64);
    k.unroll(0, 2, [&](Expr u) {
        Expr idx = x[0] + u * 32;
        EXPECT_EQ(idx.type(), DType::i64);
    });
}
}  // namespace

namespace {

TEST(DslLet, ABareNumberMustNameItsType) {
    KernelBuilder k("lets", 64);
    auto x = k.input("x", DType::f32);
    EXPECT_THAT(error_of([&] { k.let(0); }),
                HasSubstr("kernel lets: let(0) of a bare number: its type would be a guess; name "
                          "it, k.let(DType::i32, 0) or k.let(constant(DType::i32, 0))"));
    EXPECT_THAT(error_of([&] { k.let(0.5f); }), HasSubstr("k.let(DType::f32, 0.5)"));
    EXPECT_EQ(k.let(DType::f32, 0).type(), DType::f32);
    EXPECT_EQ(k.let(DType::u32, 7u).type(), DType::u32);
    EXPECT_EQ(k.let(constant(DType::bf16, 1)).type(), DType::bf16);
    EXPECT_EQ(k.let(x[0] * 2).type(), DType::f32);  // a typed value names its own type
    EXPECT_THAT(error_of([&] { k.let(DType::i32, 2.5); }), HasSubstr("not an integer"));
    EXPECT_THAT(error_of([&] { k.let(DType::i32, x[0]); }),
                HasSubstr("let of a f32 value as i32; cast it"));
}

TEST(DslScope, AVariableEndsWithTheBodyThatDeclaredIt) {
    KernelBuilder k("scopes", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    std::optional<Var> inner;
    k.if_(i < 10, [&] { inner = k.let(x[i] * 2, "doubled"); });
    const std::string message =
        "kernel scopes: variable 'doubled' is used after the end of the if_, for_ or fold body "
        "that declared it; declare it before that body (k.let) and assign it inside";
    EXPECT_THAT(error_of([&] { y[i] = *inner; }), HasSubstr(message));
    EXPECT_THAT(error_of([&] { *inner = 1.0f; }), HasSubstr(message));
    // An expression read inside the body and used after it: caught where it is used.
    std::optional<Expr> copied;
    k.for_(0, 4, [&](Expr j) {
        Var t = k.let(x[j], "t");
        copied = t.expr() + cast(DType::f32, j);
    });
    EXPECT_THAT(error_of([&] { y[i] = *copied; }), HasSubstr("variable 't' is used after"));
    std::optional<Var> squared;
    Var acc = k.fold(DType::f32, 8, Fold::sum(), [&](Expr j) {
        squared.emplace(k.let(x[j] * x[j], "sq"));
        return squared->expr();
    });
    EXPECT_THAT(error_of([&] { y[i] = *squared + acc; }), HasSubstr("variable 'sq' is used after"));
    // Declared before the body and assigned inside: fine.
    Var kept = k.let(DType::f32, 0, "kept");
    k.if_(i < 10, [&] { kept = x[i]; });
    y[i] = kept + acc;
    EXPECT_NO_THROW(k.finish());
}

TEST(DslConstantIndex, PastATilesOrArraysEndIsAnErrorWhenBuilt) {
    KernelBuilder k("tiles", 64);
    auto tile = k.shared(DType::f32, 64, "tile");
    auto arr = k.local_array(DType::i32, 4, "arr");
    EXPECT_THAT(error_of([&] { tile[64] = 1.0f; }),
                HasSubstr("kernel tiles: index 64 into shared tile 'tile' of 64 elements; "
                          "expected 0 to 63"));
    EXPECT_THAT(error_of([&] { Expr e = arr[2 * 2]; }),
                HasSubstr("index 4 into local array 'arr' of 4 elements"));
    EXPECT_THAT(error_of([&] { Expr e = tile[-1]; }), HasSubstr("index -1 into shared tile"));
    EXPECT_THAT(
        error_of([&] { k.load_vector(tile, 62, 4); }),
        HasSubstr("index 62 (+3) into shared tile 'tile' of 64 elements; expected 0 to 60"));
    tile[63] = 1.0f;
    arr[3] = 2;
    tile[k.thread_index()] = 0.0f;  // not a constant: the range is the kernel's business
}

}  // namespace
