// Checked mode (CompileOptions::check_bounds, KILN_CHECK_BOUNDS): an access out of range of a
// buffer, a shared tile or a per-thread array becomes a kiln::Error naming the kernel, the memory,
// the index and the length, on every device, and the device keeps working; guarded accesses never
// fault; accesses proved in range keep no check; the unchecked source is the same as before.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "codegen/emit_c.hpp"
#include "codegen/lower.hpp"
#include "core/fault_record.hpp"
#include "ir/check_bounds.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/math.hpp"
#include "kiln/ops/matvec_kquant.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/test_kernel_list.hpp"

using namespace kiln;
using kiln::test::error_of;

namespace {

const CompileOptions kChecked{.check_bounds = true};
const CompileOptions kUnchecked{};

// y[i + off_out] = x[i + off_in] for i < n.
ir::Kernel shift_copy() {
    KernelBuilder k("shift_copy", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr off_in = k.scalar("off_in", DType::i32);
    Expr off_out = k.scalar("off_out", DType::i32);
    Expr n = k.scalar("n", DType::i32);
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < n, [&] { y[i + off_out] = x[i + off_in]; });
    return k.finish();
}

// y[i] = value(load) for i < len(y), where each load() is a new load of x[i + off].
ir::Kernel of_x_at_offset(const std::string& name,
                          const std::function<Expr(const std::function<Expr()>&)>& value) {
    KernelBuilder k(name, 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr off = k.scalar("off", DType::i32);
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < y.len(), [&] { y[i] = value([&] { return x[i + off]; }); });
    return k.finish();
}

std::vector<float> iota_floats(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 1.5f + static_cast<float>(i);
    return v;
}

// The checked kernel's counts on the CPU, of one memory space: {accesses, those that keep a
// check of their index, those that keep a test of the grid}.
std::tuple<int, int, int> counts(const ir::Kernel& kernel, ir::MemSpace space) {
    const auto c = codegen::lower(kernel, codegen::cpu_dialect(), {.check_bounds = true}).checks;
    const auto s = static_cast<size_t>(space);
    return {c.accesses[s], c.checked[s], c.grid_tested[s]};
}

}  // namespace

TEST(CheckBounds, GlobalLoadAndStorePastTheEndAreErrorsOnEveryDevice) {
    const ir::Kernel kernel = shift_copy();
    const size_t n = 1000;
    const auto host = iota_floats(n);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer x(*d, DType::f32, n), y(*d, DType::f32, n);
        x.upload(host);
        y.fill(-1.0);
        auto c = compile(*d, kernel, kChecked);
        ASSERT_TRUE(c->checks_bounds());
        const int64_t grid = (n + 63) / 64;
        const int32_t count = static_cast<int32_t>(n);
        // Only thread 999 (block 15, thread 39) reads past x.
        EXPECT_EQ(error_of([&] {
                      c->launch(grid, {x, y, 1, 0, count});
                  }),
                  "kernel shift_copy: out-of-bounds load from buffer 'x' at index 1000; its "
                  "length is 1000 (block 15, thread 39). The access was skipped and read as 0 "
                  "(KILN_CHECK_BOUNDS)");
        auto out = y.download<float>();
        for (size_t i = 0; i + 1 < n; ++i) ASSERT_EQ(out[i], host[i + 1]) << i;
        EXPECT_EQ(out[n - 1], 0.0f);
        // Only thread 0 writes before y.
        EXPECT_EQ(error_of([&] {
                      c->launch(grid, {x, y, 0, -1, count});
                  }),
                  "kernel shift_copy: out-of-bounds store to buffer 'y' at index -1; its length "
                  "is 1000 (block 0, thread 0). The access was skipped (KILN_CHECK_BOUNDS)");
        out = y.download<float>();
        for (size_t i = 0; i + 1 < n; ++i) ASSERT_EQ(out[i], host[i + 1]) << i;
        // The kernel and the device keep working, and the fault does not linger.
        EXPECT_NO_THROW(c->launch(grid, {x, y, 0, 0, count}));
        EXPECT_EQ(y.download<float>(), host);
    }
}

TEST(CheckBounds, SharedTileAccessesPastTheTileAreErrorsOnEveryDevice) {
    KernelBuilder k("tile_shift", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr store_off = k.scalar("store_off", DType::i32);
    Expr load_off = k.scalar("load_off", DType::i32);
    auto tile = k.shared(DType::f32, 64, "tile");
    Var t = k.let(k.thread_index(), "t");
    tile[t + store_off] = x[t];
    k.barrier();
    y[t] = tile[t - load_off].expr();
    const ir::Kernel kernel = k.finish();
    const auto host = iota_floats(64);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, 64), by(*d, DType::f32, 64);
        bx.upload(host);
        auto c = compile(*d, kernel, kChecked);
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {bx, by, 1, 1});
                  }),
                  "kernel tile_shift: out-of-bounds store to shared tile 'tile' at index 64; its "
                  "length is 64 (block 0, thread 63). The access was skipped "
                  "(KILN_CHECK_BOUNDS)");
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {bx, by, 0, 1});
                  }),
                  "kernel tile_shift: out-of-bounds load from shared tile 'tile' at index -1; its "
                  "length is 64 (block 0, thread 0). The access was skipped and read as 0 "
                  "(KILN_CHECK_BOUNDS)");
        auto out = by.download<float>();
        EXPECT_EQ(out[0], 0.0f);
        for (size_t i = 1; i < 64; ++i) ASSERT_EQ(out[i], host[i - 1]) << i;
        EXPECT_NO_THROW(c->launch(1, {bx, by, 0, 0}));
        EXPECT_EQ(by.download<float>(), host);
    }
}

TEST(CheckBounds, PerThreadArrayAccessesPastTheArrayAreErrorsOnEveryDevice) {
    KernelBuilder k("array_shift", 32);
    auto y = k.output("y", DType::i32);
    Expr store_off = k.scalar("store_off", DType::i32);
    Expr load_off = k.scalar("load_off", DType::i32);
    auto arr = k.local_array(DType::i32, 4, "arr");
    Var t = k.let(k.thread_index(), "t");
    for (int j = 0; j < 4; ++j) arr[j] = t * 10 + j;
    arr[select(t == 9, 0 - store_off, 1)] = t * 10 + 1;  // thread 9 stores at -store_off
    y[t] = arr[select(t == 7, 3 + load_off, 0)].expr();  // thread 7 loads at 3 + load_off
    const ir::Kernel kernel = k.finish();
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        std::vector<int32_t> want(32);
        for (int32_t j = 0; j < 32; ++j) want[static_cast<size_t>(j)] = j * 10 + (j == 7 ? 3 : 0);
        // Thread 9's store, where made, lands on arr[0], which threads other than 7 read.
        Buffer by(*d, DType::i32, 32);
        auto c = compile(*d, kernel, kChecked);
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {by, 2, 0});
                  }),
                  "kernel array_shift: out-of-bounds store to per-thread array 'arr' at index -2; "
                  "its length is 4 (block 0, thread 9). The access was skipped "
                  "(KILN_CHECK_BOUNDS)");
        EXPECT_EQ(by.download<int32_t>(), want);
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {by, 0, 1});
                  }),
                  "kernel array_shift: out-of-bounds load from per-thread array 'arr' at index 4; "
                  "its length is 4 (block 0, thread 7). The access was skipped and read as 0 "
                  "(KILN_CHECK_BOUNDS)");
        want[7] = 0;
        want[9] = 91;
        EXPECT_EQ(by.download<int32_t>(), want);
        want[7] = 73;
        EXPECT_NO_THROW(c->launch(1, {by, 0, 0}));
        EXPECT_EQ(by.download<int32_t>(), want);
    }
}

TEST(CheckBounds, VectorAccessesPastTheEndAreErrorsOnEveryDevice) {
    KernelBuilder k("vector_shift", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr load_off = k.scalar("load_off", DType::i32);
    Expr store_off = k.scalar("store_off", DType::i32);
    Expr vectors = k.scalar("vectors", DType::i32);
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < vectors, [&] {
        auto v = k.load_vector(x, i * 4 + load_off, 4, "v");
        k.store_vector(y, i * 4 + store_off, {v[0], v[1], v[2], v[3]});
    });
    const ir::Kernel kernel = k.finish();
    const auto host = iota_floats(256);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, 256), by(*d, DType::f32, 256);
        bx.upload(host);
        auto c = compile(*d, kernel, kChecked);
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {bx, by, 2, 0, 64});
                  }),
                  "kernel vector_shift: out-of-bounds vector load of 4 elements from buffer 'x' "
                  "at index 254; its length is 256 (block 0, thread 63). The access was skipped "
                  "and read as 0 (KILN_CHECK_BOUNDS)");
        auto out = by.download<float>();
        for (size_t j = 0; j < 252; ++j) ASSERT_EQ(out[j], host[j + 2]) << j;
        for (size_t j = 252; j < 256; ++j) EXPECT_EQ(out[j], 0.0f) << j;
        EXPECT_EQ(error_of([&] {
                      c->launch(1, {bx, by, 0, 1, 64});
                  }),
                  "kernel vector_shift: out-of-bounds vector store of 4 elements to buffer 'y' at "
                  "index 253; its length is 256 (block 0, thread 63). The access was skipped "
                  "(KILN_CHECK_BOUNDS)");
        EXPECT_NO_THROW(c->launch(1, {bx, by, 0, 0, 64}));
        EXPECT_EQ(by.download<float>(), host);
    }
}

// Loads guarded by a select or by && / || are checked only where they are evaluated, also where
// the code generator names a shared value before the statement that uses it.
TEST(CheckBounds, GuardedLoadsNeverFaultOnEveryDevice) {
    KernelBuilder k("guarded", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr n = k.scalar("n", DType::i32);
    Expr off = k.scalar("off", DType::i32);
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < y.len(), [&] {
        const Expr j = i + off;
        const Expr v = x[j] * 2.0f;  // used three times in one arm: named before the statement
        const Expr in_select = select(j < n, v * v + v, 0.0f);
        const Expr in_and = select(j < n && x[j] > 0.0f, 1.0f, 0.0f);
        const Expr in_or = select(j >= n || x[j] > 2.0f, 10.0f, 0.0f);
        y[i] = in_select + in_and + in_or;
    });
    const ir::Kernel kernel = k.finish();
    const std::string cpu = generate_source(Backend::cpu, std::vector{kernel}, kChecked);
    ASSERT_NE(cpu.find("kiln_in_bounds(p_kiln_fault"), std::string::npos)
        << "the guarded loads must keep their checks, or this test shows nothing";
    const size_t count = 1000;
    const auto host = iota_floats(count);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, count), by(*d, DType::f32, count);
        bx.upload(host);
        auto c = compile(*d, kernel, kChecked);
        ASSERT_NO_THROW(c->launch((count + 63) / 64, {bx, by, static_cast<int32_t>(count), 5}));
        const auto out = by.download<float>();
        for (size_t i = 0; i < count; ++i) {
            float want = 10.0f;
            if (i + 5 < count) {
                const float v = host[i + 5] * 2.0f;
                want = (v * v + v) + 1.0f + (host[i + 5] > 2.0f ? 10.0f : 0.0f);
            }
            ASSERT_EQ(out[i], want) << i;
        }
    }
}

// A load the statement makes wherever it runs is checked there once: its other uses in arms of
// selects and right sides of && / ||, and other loads of the same element, are that load (its
// value and its check), so a chain of selects over x[j] (every math function is one) does not
// copy x[j] and its check into each arm. x[j] still faults, as the unchecked kernel reads it.
TEST(CheckBounds, ALoadMadeAnywayIsCheckedOnceWhereverItRecurs) {
    const ir::Kernel kernel = of_x_at_offset("recurring", [](const auto& load) {
        const Expr a = load(), b = load();  // two loads of one element
        return select(a > 1.0f, b * 2.0f, select(b < 0.5f || a > 0.75f, a + b, 0.0f));
    });
    // x: one access, checked; y: proved in range where positions fit in i32.
    EXPECT_EQ(counts(kernel, ir::MemSpace::global), std::make_tuple(2, 1, 1));
    const size_t count = 1000;
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 8) * 0.25f;
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, count), by(*d, DType::f32, count);
        bx.upload(host);
        auto c = compile(*d, kernel, kChecked);
        ASSERT_NO_THROW(c->launch((count + 63) / 64, {bx, by, 0}));
        const auto out = by.download<float>();
        for (size_t i = 0; i < count; ++i) {
            const float v = host[i];
            ASSERT_EQ(out[i], v > 1.0f ? v * 2.0f : (v < 0.5f || v > 0.75f) ? v + v : 0.0f) << i;
        }
        EXPECT_EQ(error_of([&] {
                      c->launch((count + 63) / 64, {bx, by, 1});
                  }),
                  "kernel recurring: out-of-bounds load from buffer 'x' at index 1000; its "
                  "length is 1000 (block 15, thread 39). The access was skipped and read as 0 "
                  "(KILN_CHECK_BOUNDS)");
    }
}

// Checking a kernel of math functions (each a tree of selects over its argument) costs its
// source a little, not a copy of the function per arm: compile time follows the source's size.
TEST(CheckBounds, CheckedMathFunctionsKeepTheSizeOfTheirSource) {
    const ir::Kernel kernel = of_x_at_offset("checked_math", [](const auto& load) {
        const Expr v = load();
        return sin(v) + pow(abs(v), cos(v)) * rsqrt(abs(v) + 1.0f) + erf(v) - round(v);
    });
    for (Backend backend : {Backend::cpu, Backend::opencl}) {
        const size_t unchecked = generate_source(backend, std::vector{kernel}, kUnchecked).size();
        const size_t checked = generate_source(backend, std::vector{kernel}, kChecked).size();
        EXPECT_LT(checked, unchecked * 5 / 4) << name(backend);
    }
}

TEST(CheckBounds, AccessesProvedInRangeKeepNoCheck) {
    {  // An index below the buffer's length by an enclosing if; another buffer unrelated. The
       // i32 position is >= 0 only where it does not wrap: the access keeps a test of the grid.
        KernelBuilder k("guard", 64);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        Var i = k.let(k.absolute_pos(), "i");
        k.if_(i < y.len(), [&] { y[i] = x[i]; });
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(2, 1, 1));
    }
    {  // ... and with x as long as y by a requirement; a select's guard; a loop's bound.
        KernelBuilder k("guard_required", 64);
        auto x = k.input("x", DType::f32);
        auto y = k.output("y", DType::f32);
        auto z = k.output("z", DType::f32);
        k.require(x.len() == y.len(), "x is as long as y");
        Var i = k.let(k.absolute_pos(), "i");
        k.if_(i < y.len(), [&] { y[i] = x[i]; });
        k.if_(i < z.len(), [&] { z[i] = select(i < x.len(), x[i], 0.0f); });
        k.for_(0, y.len(), [&](Expr j) { y[j] = x[j]; });
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(6, 0, 4));
    }
    {  // A local given several values, here the loop's: its value where it is read.
        KernelBuilder k("assigned", 64);
        auto y = k.output("y", DType::f32);
        Var j = k.let(DType::i32, 0, "j");
        k.for_(0, y.len(), [&](Expr i) {
            j = i;
            y[j] = 1.0f;
            j = i + 1;
            y[j] = 2.0f;  // may be len(y)
        });
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(2, 1, 0));
    }
    {  // An i64 position does not wrap: no test at all.
        KernelBuilder k("wide", 64);
        auto y = k.output("y", DType::f32);
        Var i = k.let(cast(DType::i64, k.block_index()) * 64 + cast(DType::i64, k.thread_index()));
        k.if_(i < y.len64(), [&] { y[i] = 1.0f; });
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(1, 0, 0));
    }
    {  // Rows of n: row * n + j with row <= len / n - 1 and 0 <= j < n, in out and (required
       // as long) in x; not where j may reach n.
        const int n = 100;
        KernelBuilder k("rows", 64);
        auto x = k.input("x", DType::f32);
        auto out = k.output("out", DType::f32);
        k.require(x.len() == out.len(), "x is as long as out");
        k.require(out.len() >= n, "out holds a row or more");
        Var rows = k.let(out.len() / n, "rows");
        Var row = k.let(min(k.block_index(), rows - 1), "row");
        Var base = k.let(row * n, "base");
        Var t = k.let(k.thread_index(), "t");
        out[base + t] = x[base + t];
        out[base + t + 36] = x[base + t + 36];
        out[base + t + 37] = 1.0f;
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(5, 1, 0));
    }
    {  // Not proved: an index that may be negative, or past the guard's bound, or i with
       // i + 1 < len, which holds for i = INT32_MAX, where i + 1 wraps.
        KernelBuilder k("unproved", 64);
        auto y = k.output("y", DType::f32);
        Var i = k.let(k.absolute_pos(), "i");
        k.if_(i < y.len(), [&] {
            y[i - 1] = 1.0f;
            y[i + 1] = 2.0f;
        });
        k.if_(i + 1 < y.len(), [&] { y[i] = 3.0f; });
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::global), std::make_tuple(3, 3, 0));
    }
    {  // Tiles: the thread's index, a constant, a guarded offset; not: an offset past the end.
        KernelBuilder k("tiles", 64);
        auto y = k.output("y", DType::f32);
        auto tile = k.shared(DType::f32, 64, "tile");
        Var t = k.let(k.thread_index(), "t");
        tile[t] = 1.0f;
        tile[63] = 2.0f;
        k.barrier();
        k.if_(t < 32, [&] { tile[t + 32] = 3.0f; });
        k.barrier();
        y[0] = tile[t + 1].expr();
        EXPECT_EQ(counts(k.finish(), ir::MemSpace::shared), std::make_tuple(4, 1, 0));
    }
}

// A grid whose positions pass INT32_MAX skips the accesses proved in range only below it (a
// launch of 2^31 threads takes too long for a test: the record it leaves is described here).
TEST(CheckBounds, GridTooLargeForTheProofsIsDescribed) {
    KernelBuilder k("guard", 64);
    auto y = k.output("y", DType::f32);
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < y.len(), [&] { y[i] = 1.0f; });
    const ir::Kernel kernel = k.finish();
    const std::string source = codegen::emit_source(
        {&kernel}, codegen::cpu_dialect(), {.check_bounds = true, .grids = codegen::Grids::every});
    const std::string grid_test = fmt::format(
        "kiln_in_bounds(p_kiln_fault, 0x{:08x}u, (int64_t)(((int64_t)kiln_grid_size)), "
        "((int64_t)33554433)",
        ir::kGridSite);
    // Once per thread in each copy of the kernel (the CPU writes copies for larger grids where
    // that changes what wraps).
    size_t tests = 0;
    for (size_t at = source.find(grid_test); at != std::string::npos;
         at = source.find(grid_test, at + 1))
        ++tests;
    size_t copies = 1;
    for (const char* copy : {"_any_grid(", "_larger_grid("})
        copies += source.find(codegen::entry_name(kernel) + copy) == std::string::npos ? 0 : 1;
    EXPECT_EQ(tests, copies) << "tested once per thread";
    uint32_t record[ir::kFaultWords] = {ir::kGridSite, 33554433, 0, 33554433, 0, 7, 0, 0};
    EXPECT_EQ(describe_fault(kernel, record),
              "kernel guard: a grid of 33554433 blocks of 64 threads has positions past "
              "INT32_MAX, where the kernel's i32 positions wrap; checked mode proved accesses in "
              "range assuming they do not, and skipped them in this launch: launch at most "
              "33554432 blocks or compute positions in i64 (KILN_CHECK_BOUNDS)");
}

TEST(CheckBounds, UncheckedSourceHasNoChecksAndCheckedKernelsAreDistinct) {
    const ir::Kernel kernel = shift_copy();
    for (Backend b : {Backend::cpu, Backend::cuda, Backend::opencl}) {
        const std::string plain = generate_source(b, std::vector{kernel}, kUnchecked);
        const std::string checked = generate_source(b, std::vector{kernel}, kChecked);
        EXPECT_EQ(plain.find("kiln_in_bounds"), std::string::npos) << name(b);
        EXPECT_EQ(plain.find("kiln_fault"), std::string::npos) << name(b);
        EXPECT_NE(checked.find("kiln_in_bounds(p_kiln_fault"), std::string::npos) << name(b);
        EXPECT_NE(kernel_identity(b, kernel, kUnchecked), kernel_identity(b, kernel, kChecked));
    }
    Device& cpu = cpu_device();
    auto plain = compile(cpu, kernel, kUnchecked);
    auto checked = compile(cpu, kernel, kChecked);
    EXPECT_NE(plain.get(), checked.get());
    EXPECT_FALSE(plain->checks_bounds());
    EXPECT_NE(plain->info().cache_key, checked->info().cache_key);
}

// Exits with the default of one switch of CompileOptions under `name`=`value`: 1 on, 0 off, 2
// (printing the error) when the value is refused. Read once per process: each case in a fresh one.
[[noreturn]] static void exit_with_default(const char* name, const char* value,
                                           bool CompileOptions::*field) {
    setenv(name, value, 1);
    try {
        std::exit(default_compile_options().*field ? 1 : 0);
    } catch (const Error& e) {
        std::fprintf(stderr, "%s", e.what());
        std::exit(2);
    }
}

TEST(CheckBounds, TheEnvironmentSetsTheDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto default_with = [](const char* value) {
        exit_with_default("KILN_CHECK_BOUNDS", value, &CompileOptions::check_bounds);
    };
    EXPECT_EXIT(default_with("1"), ::testing::ExitedWithCode(1), "");
    EXPECT_EXIT(default_with("0"), ::testing::ExitedWithCode(0), "");
    EXPECT_EXIT(default_with(""), ::testing::ExitedWithCode(0), "");
    EXPECT_EXIT(default_with("yes"), ::testing::ExitedWithCode(2),
                "KILN_CHECK_BOUNDS is 'yes'; expected 1 \\(check every memory access\\) or 0");
    // The test suite runs checked (tests/CMakeLists.txt sets it for every test).
    const char* suite = std::getenv("KILN_CHECK_BOUNDS");
    if (!suite || std::string(suite) != "1") GTEST_SKIP() << "not run by ctest";
    EXPECT_TRUE(default_compile_options().check_bounds);
}

// KILN_OPTIMIZE: kernels build with the compilers' optimizers unless it is 0
// (CompileOptions::optimize; cache_test checks what the option does).
TEST(Optimize, TheEnvironmentSetsTheDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto default_with = [](const char* value) {
        exit_with_default("KILN_OPTIMIZE", value, &CompileOptions::optimize);
    };
    EXPECT_EXIT(default_with("1"), ::testing::ExitedWithCode(1), "");
    EXPECT_EXIT(default_with(""), ::testing::ExitedWithCode(1), "");
    EXPECT_EXIT(default_with("0"), ::testing::ExitedWithCode(0), "");
    EXPECT_EXIT(default_with("off"), ::testing::ExitedWithCode(2),
                "KILN_OPTIMIZE is 'off'; expected 1 \\(build kernels with the compilers' "
                "optimizers\\) or 0");
}

TEST(CheckBounds, CheckedCudaSourceCompilesWithNvrtc) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels{
        shift_copy(), ops::tiled_matmul(17, 29, 8), ops::block_reverse(DType::f16, 64),
        ops::row_fold(DType::f32, 4099, Fold::sum().lanes(256).threads(256), 256)};
    for (const char* v :
         {"b64_r2", "warp_b256_u2", "block_b256_u4_cw", "block_b512_rw2", "vec4_b64_w"})
        kernels.push_back(ops::rms_norm_kernel(DType::f32, 4096, ops::rms_norm_variant(v)));
    for (const auto& v : ops::matvec_q8_variants())
        if (std::string_view(v.name) == "s128_v2_s" || std::string_view(v.name) == "w128_v1_r4" ||
            std::string_view(v.name) == "p256_v1_c2_k16k" || std::string_view(v.name) == "b64_v4")
            kernels.push_back(ops::matvec_q8_kernel(v.schedule));
    for (const char* v : {"d8x64", "s32x32_k16_t2x2"})
        kernels.push_back(ops::conv1d_kernel({}, ops::conv1d_variant(v)));
    const std::string source = generate_source(Backend::cuda, kernels, kChecked);
    std::string log;
    EXPECT_NO_THROW(cuda::nvrtc_compile(source, "sm_90", &log)) << log;
}

// The unchecked source of every shipped kernel and of the conformance kernels, on every backend,
// pinned by a digest: checked mode leaves it as it was. A change to codegen that changes the
// source on purpose updates these digests in the same commit.
TEST(CheckBounds, UncheckedSourceOfEveryShippedKernelIsPinned) {
    std::vector<ir::Kernel> kernels = test::every_test_kernel();
    for (DType t : {DType::f32, DType::f16, DType::bf16})
        for (const auto& s : ops::rms_norm_variants())
            kernels.push_back(ops::rms_norm_kernel(t, 4096, s));
    for (const auto& s : ops::rms_norm_variants())
        kernels.push_back(ops::rms_norm_kernel(DType::f32, 1000, s));
    for (const auto& v : ops::matvec_q8_variants())
        kernels.push_back(ops::matvec_q8_kernel(v.schedule));
    for (ops::KQuant f : {ops::KQuant::q4_k, ops::KQuant::q6_k})
        for (const auto& v : ops::matvec_kquant_variants())
            kernels.push_back(ops::matvec_kquant_kernel(f, v.schedule));
    for (const ops::MatmulTypes& t :
         {ops::MatmulTypes{}, ops::MatmulTypes{DType::bf16, DType::f32, true, true}})
        for (const auto& s : ops::matmul_variants()) kernels.push_back(ops::matmul_kernel(t, s));
    for (DType t : {DType::f32, DType::bf16}) kernels.push_back(ops::matmul_chunk_sum_kernel(t));
    for (const ops::Conv1dTypes& t :
         {ops::Conv1dTypes{}, ops::Conv1dTypes{DType::bf16, DType::bf16}})
        for (const auto& s : ops::conv1d_variants()) kernels.push_back(ops::conv1d_kernel(t, s));
    for (const ops::AttentionTypes& t : {ops::AttentionTypes{DType::f32, DType::f32, 64},
                                         ops::AttentionTypes{DType::bf16, DType::bf16, 128}})
        for (const auto& s : ops::attention_variants())
            kernels.push_back(ops::attention_kernel(t, s));
    const std::pair<Backend, const char*> pinned[] = {{Backend::cpu, "38ea7206b4f17762"},
                                                      {Backend::cuda, "17256f6a71c0de77"},
                                                      {Backend::opencl, "be29abace10974a0"}};
    auto digest_of = [](const std::string& source) {
        return fmt::format("{:016x}", XXH3_64bits(source.data(), source.size()));
    };
    for (const auto& [backend, digest] : pinned)
        EXPECT_EQ(digest_of(generate_source(backend, kernels, kUnchecked)), digest)
            << name(backend);
    // The CPU's code with its copies for larger grids, compiled for launches that need them.
    std::vector<const ir::Kernel*> all;
    for (const ir::Kernel& k : kernels) all.push_back(&k);
    EXPECT_EQ(digest_of(codegen::emit_source(all, codegen::cpu_dialect(),
                                             {.grids = codegen::Grids::every})),
              "fe851b22144e3c71");
}
