// DSL conveniences: multi-dimensional indexing helpers, for_ with its step first, scalar
// arguments converted to their parameters' dtypes (doubles, integers), KILN_DUMP_SOURCE.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/emit_c.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/interpret.hpp"
#include "kiln/semantics.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using kiln::test::error_of;
using ::testing::HasSubstr;

namespace {

// y = x transposed, for x of shape rows x cols: element i of x is (r, c), written at (c, r).
ir::Kernel transpose(int64_t cols) {
    KernelBuilder k("transpose", 64);
    auto x = k.input("x", DType::i32);
    auto y = k.output("y", DType::i32);
    Expr i = k.absolute_pos();
    Expr rows = x.len() / static_cast<int>(cols);  // a run-time extent beside a comptime one
    k.if_(i < x.len(), [&] {
        const std::vector<Expr> rc = coords(i, {rows, static_cast<int>(cols)});
        y[flat_index({rc[1], rc[0]}, {static_cast<int>(cols), rows})] = x[i];
    });
    return k.finish();
}

TEST(Indexing, CoordsAndFlatIndexTransposeOnEveryDevice) {
    const int64_t rows = 13, cols = 7;
    std::vector<int32_t> x(rows * cols), want(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            x[r * cols + c] = static_cast<int32_t>(1000 * r + c);
            want[c * rows + r] = static_cast<int32_t>(1000 * r + c);
        }
    const std::vector<HostBuffer> args = {HostBuffer::of(x), test::poisoned(DType::i32, x.size())};
    test::expect_everywhere(transpose(cols), 2, args, 1, HostBuffer::of(want));
}

TEST(Indexing, StridedIndexBroadcastsWithAZeroStride) {
    // y[r, c] = x[r, c] + bias[c] over 5 x 6, bias read through strides {0, 1}.
    KernelBuilder k("bias_add", 64);
    auto x = k.input("x", DType::f32);
    auto bias = k.input("bias", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        const std::vector<Expr> rc = coords(i, {5, 6});
        y[i] = x[i] + bias[strided_index(rc, {0, 1})];
    });
    std::vector<float> xs(30), b(6), want(30);
    for (int j = 0; j < 30; ++j) xs[j] = static_cast<float>(j);
    for (int c = 0; c < 6; ++c) b[c] = 100.0f * static_cast<float>(c);
    for (int j = 0; j < 30; ++j) want[j] = xs[j] + b[j % 6];
    const auto out = interpret(
        k.finish(), 1, {HostBuffer::of(xs), HostBuffer::of(b), test::poisoned(DType::f32, 30)});
    EXPECT_EQ(out[2].values<float>(), want);
}

TEST(Indexing, HelpersCheckRanksExtentsAndTypes) {
    KernelBuilder k("bad_index", 64);
    auto x = k.input("x", DType::f32);
    Expr i = k.absolute_pos();
    EXPECT_THAT(error_of([&] { coords(i, {}); }), HasSubstr("coords: the shape has no dimensions"));
    EXPECT_THAT(error_of([&] {
                    coords(i, {4, 0});
                }),
                HasSubstr("coords: dimension 1 has extent 0; extents are at least 1"));
    EXPECT_THAT(error_of([&] {
                    flat_index({i}, {4, 4});
                }),
                HasSubstr("flat_index: 1 coordinates for a shape of 2 dimensions"));
    EXPECT_THAT(error_of([&] {
                    coords(x[0], {4, 4});
                }),
                HasSubstr("coords: indices and extents are integers; got f32"));
    EXPECT_THAT(error_of([&] {
                    strided_index({i, i}, {1});
                }),
                HasSubstr("strided_index: 2 coordinates for a shape of 1 dimensions"));
    // Comptime extents give plain integer arithmetic in the index's type.
    EXPECT_EQ(coords(cast(DType::i64, i), {3, 5})[1].type(), DType::i64);
}

TEST(ForStep, TheStepMayComeBeforeTheBody) {
    KernelBuilder k("every_third", 1);
    auto x = k.input("x", DType::i32);
    auto y = k.output("y", DType::i32);
    Var sum = k.let(DType::i32, 0, "sum");
    k.for_(1, x.len(), 3, [&](Expr j) { sum += x[j]; });
    y[0] = sum;
    std::vector<int32_t> xs(20);
    int32_t want = 0;
    for (int j = 0; j < 20; ++j) {
        xs[j] = j * j;
        if (j % 3 == 1) want += j * j;
    }
    const auto out = interpret(k.finish(), 1, {HostBuffer::of(xs), test::poisoned(DType::i32, 1)});
    EXPECT_EQ(out[1].values<int32_t>()[0], want);
}

// Writes each scalar parameter, converted to f32 or i32, to y.
ir::Kernel echo() {
    KernelBuilder k("echo", 1);
    auto y = k.output("y", DType::f32);
    auto n = k.output("n", DType::i32);
    Expr a = k.scalar("a", DType::f32);
    Expr h = k.scalar("h", DType::f16);
    Expr b = k.scalar("b", DType::bf16);
    Expr i = k.scalar("i", DType::i32);
    Expr u = k.scalar("u", DType::u8);
    y[0] = a;
    y[1] = cast(DType::f32, h);
    y[2] = cast(DType::f32, b);
    n[0] = i;
    n[1] = cast(DType::i32, u);
    return k.finish();
}

TEST(ScalarArguments, DoublesAndIntegersConvertToTheParametersDtypes) {
    // 1 + 2^-11 + 2^-40 rounds to f16 as 1 + 2^-10; through f32 first it would tie to 1.
    const double above_tie = 1.0 + 0x1p-11 + 0x1p-40;
    EXPECT_EQ(Arg(above_tie).to_parameter(DType::f16, "k", "h").bits, 0x3c01u);
    EXPECT_EQ(Arg(0.1).to_parameter(DType::f32, "k", "a").bits, std::bit_cast<uint32_t>(0.1f));
    EXPECT_EQ(Arg(3).to_parameter(DType::f32, "k", "a").bits, std::bit_cast<uint32_t>(3.0f));
    EXPECT_EQ(Arg(7.0).to_parameter(DType::i64, "k", "n").bits, 7u);
    EXPECT_EQ(Arg(-2).to_parameter(DType::i8, "k", "n").bits, static_cast<uint64_t>(-2));
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer y(*d, DType::f32, 3), n(*d, DType::i32, 2);
        compile(*d, echo())->launch(1, {y, n, 0.1, above_tie, 2.5, 7.0, 200});
        const std::vector<float> f = y.download<float>();
        EXPECT_EQ(f[0], 0.1f);
        EXPECT_EQ(f[1], semantics::f16_to_f32(0x3c01));
        EXPECT_EQ(f[2], 2.5f);
        EXPECT_EQ(n.download<int32_t>(), (std::vector<int32_t>{7, 200}));
    }
    const auto out =
        interpret(echo(), 1, {test::poisoned(DType::f32, 3), test::poisoned(DType::i32, 2)},
                  {0.1, above_tie, 2.5, 7.0, 200});
    EXPECT_EQ(out[0].values<float>()[1], semantics::f16_to_f32(0x3c01));
}

TEST(ScalarArguments, InexactOrOutOfRangeConversionsAreErrors) {
    auto error = [](const Arg& a, DType t) {
        return error_of([&] { a.to_parameter(t, "k", "p"); });
    };
    EXPECT_THAT(error(Arg(2.5), DType::i32),
                HasSubstr("kernel k: scalar 'p' is i32; the argument 2.5 (a double) is not a value "
                          "of i32"));
    EXPECT_THAT(error(Arg(1e10), DType::i32), HasSubstr("is not a value of i32"));
    EXPECT_THAT(error(Arg(16777217), DType::f32),
                HasSubstr("the argument 16777217 (an i32) is not exactly a value of f32"));
    EXPECT_THAT(error(Arg(-1), DType::u32), HasSubstr("-1 (an i32) does not fit in u32"));
    EXPECT_THAT(error(Arg(300), DType::u8), HasSubstr("does not fit in u8"));
    EXPECT_THAT(error(Arg(1.0), DType::boolean), HasSubstr("is not a bool"));
    EXPECT_THAT(error(Arg(true), DType::i32), HasSubstr("scalar 'p' must be i32; got bool"));
    EXPECT_THAT(error(Arg(0.5f), DType::f16), HasSubstr("scalar 'p' must be f16; got f32"));
}

TEST(DumpSource, WritesEachCompiledSourceAndItsIrNamedByKernel) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / fmt::format("kiln-dump-{}", ::getpid());
    std::filesystem::remove_all(dir);
    ::setenv("KILN_DUMP_SOURCE", dir.c_str(), 1);
    KernelBuilder k(fmt::format("dumped_{}", ::getpid()), 64);  // new to this process's cache
    auto y = k.output("y", DType::f32);
    y[k.absolute_pos()] = 1.0f;
    const ir::Kernel kernel = k.finish();
    Device& cpu = *devices().front();
    compile(cpu, kernel);
    ::unsetenv("KILN_DUMP_SOURCE");
    const std::string entry = codegen::entry_name(kernel);
    auto read = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    };
    EXPECT_THAT(read(dir / (entry + ".cpu.cpp")), HasSubstr(entry));
    EXPECT_THAT(read(dir / (entry + ".ir")), HasSubstr("kernel " + kernel.name + " block 64"));
    std::filesystem::remove_all(dir);
}

}  // namespace
