// The CPU backend's integer arithmetic: what the range analysis proves never wraps (ir/no_wrap),
// written plain in launches whose positions fit in i32, and a launch past them running the copy
// written to wrap, with kiln's wrapping results; and where its thread loops go (vector lanes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "codegen/emit_c.hpp"
#include "ir/lower_folds.hpp"
#include "ir/no_wrap.hpp"
#include "ir/ranges.hpp"
#include "ir/visit.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/kernel_parts.hpp"
#include "ops/matmul/matmul.hpp"
#include "ops/test_kernels.hpp"
#include "ops/user_kernels.hpp"
#include "runtime/cpu/toolchain.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// The CPU's code for `k` with its copies for larger grids (what a launch of a grid larger than
// the entry serves compiles).
std::string every_grid_source(const ir::Kernel& k) {
    return codegen::emit_source({&k}, codegen::cpu_dialect(), {.grids = codegen::Grids::every});
}

// The value of the one let of local `id` in `k`.
ir::ExprRef let_value(const ir::Kernel& k, int id) {
    ir::ExprRef value;
    ir::for_each_stmt(k.body, [&](const ir::StmtNode& n) {
        if (const auto* l = std::get_if<ir::stmt::Let>(&n.node); l && l->local == id)
            value = l->value;
    });
    return value;
}

TEST(NoWrap, ProvesWhatFitsItsTypeAndNothingThatMayWrap) {
    KernelBuilder k("no_wrap_cases", 256);
    auto out = k.output("out", DType::i32);
    Expr s = k.scalar("s", DType::i32);
    Var pos = k.let(k.absolute_pos(), "pos");
    Var doubled = k.let(s * 2, "doubled");
    Var scaled = k.let(k.thread_index() * 4096 + 7, "scaled");
    Var in_loop = k.let(DType::i32, 0, "in_loop");
    k.for_(0, 1000, [&](Expr i) { in_loop = i * 3 + 1; });
    k.if_(pos < out.len(), [&] { out[pos] = doubled + scaled + in_loop; });
    const ir::Kernel kernel = k.finish();
    const auto small = ir::find_no_wrap(kernel, ir::i32_position_grid(256));
    const auto any = ir::find_no_wrap(kernel, INT32_MAX);
    auto proven = [](const ir::NoWrap& w, const ir::ExprRef& e) {
        return w.ops.count(e.get()) > 0;
    };
    // block_index * 256 + thread_index: in i32 where the grid has at most 2^31 / 256 blocks.
    const ir::ExprRef p = let_value(kernel, pos.id());
    ASSERT_TRUE(std::holds_alternative<ir::expr::Binary>(p->node));
    EXPECT_TRUE(proven(small, p));
    EXPECT_FALSE(proven(any, p));
    // s * 2 may wrap for any s.
    EXPECT_FALSE(proven(small, let_value(kernel, doubled.id())));
    // thread_index * 4096 + 7 and i * 3 + 1 (i < 1000) fit in every launch.
    EXPECT_TRUE(proven(any, let_value(kernel, scaled.id())));
    ir::ExprRef loop_value;
    ir::for_each_stmt(kernel.body, [&](const ir::StmtNode& n) {
        if (const auto* a = std::get_if<ir::stmt::Assign>(&n.node)) loop_value = a->value;
    });
    ASSERT_TRUE(loop_value);
    EXPECT_TRUE(proven(any, loop_value));
    EXPECT_EQ(any.steps.size(), 1u);  // the loop's i += 1 stays below 1000
}

TEST(NoWrap, AnIfsConditionProvesItsBranchButNotTheSameNodeElsewhere) {
    // s * 4096 fits in i32 under `s < 4096` and `s >= 0`; the same node stored outside the if
    // may wrap, so it is not proven; another node only inside the if is; a local assigned in
    // the branch loses its fact there.
    KernelBuilder k("no_wrap_ifs", 64);
    auto out = k.output("out", DType::i32);
    Expr s = k.scalar("s", DType::i32);
    const Expr shared = s * 4096;
    const Expr inside = s * 8192;
    k.if_(s >= 0 && s < 4096, [&] {
        out[k.thread_index()] = shared;
        out[k.thread_index() + 1] = inside;
    });
    Var changed = k.let(s, "changed");
    Var after = k.let(DType::i32, 0, "after");
    k.if_(changed >= 0 && changed < 4096, [&] {
        changed = changed + (1 << 20);
        after = changed * 4096;
    });
    out[0] = shared;
    const ir::Kernel kernel = k.finish();
    const auto w = ir::find_no_wrap(kernel, INT32_MAX);
    auto proven = [&](const Expr& e) { return w.ops.count(e.node().get()) > 0; };
    EXPECT_FALSE(proven(shared));
    EXPECT_TRUE(proven(inside));
    ir::ExprRef after_value;
    ir::for_each_stmt(kernel.body, [&](const ir::StmtNode& n) {
        if (const auto* a = std::get_if<ir::stmt::Assign>(&n.node); a && a->local == after.id())
            after_value = a->value;
    });
    ASSERT_TRUE(after_value);
    EXPECT_EQ(w.ops.count(after_value.get()), 0u);
}

TEST(Ranges, ALoopGoingOnFromItsVariableStaysInTheRangeItsOtherLoopsGiveIt) {
    // A fold's lanes on the CPU: whole rounds of chunks, then `for c = c; c < n` for the rest.
    const ir::Kernel lowered = ir::lower_folds(
        ops::row_fold(DType::f32, 1000, Fold::sum().lanes(32).chunk(4), 64), 1, true);
    int continuing = -1;
    ir::for_each_stmt(lowered.body, [&](const ir::StmtNode& n) {
        const auto* f = std::get_if<ir::stmt::For>(&n.node);
        const auto* begin = f ? std::get_if<ir::expr::Local>(&f->begin->node) : nullptr;
        if (begin && begin->id == f->local) continuing = f->local;
    });
    ASSERT_GE(continuing, 0) << "the lowered fold has no loop going on from its variable";
    const ir::Ranges ranges(lowered);
    const ir::Interval r = ranges.of(ir::make(DType::i32, ir::expr::Local{continuing}), {});
    EXPECT_GE(r.lo, 0);
    EXPECT_LE(r.hi, 1000 + 32 * 4);
}

TEST(CpuCodegen, WrapFreeIndicesArePlainAndALargeGridRunsTheCopyWrittenToWrap) {
    const ir::Kernel k = ops::add_square(256);
    const std::string src = every_grid_source(k);
    const std::string entry = codegen::entry_name(k);
    const size_t fast = src.find("extern \"C\" void " + entry + "(");
    const size_t copy = src.find(entry + "_any_grid(");
    ASSERT_NE(fast, std::string::npos);
    ASSERT_NE(copy, std::string::npos);
    ASSERT_LT(copy, fast);
    const std::string wrapping = src.substr(copy, fast - copy), plain = src.substr(fast);
    EXPECT_THAT(plain, HasSubstr("if (kiln_grid > 8388608) { " + entry + "_any_grid("));
    EXPECT_THAT(plain, HasSubstr("p_a[((kiln_block * ((int32_t)256)) + kiln_t)]"));
    EXPECT_THAT(plain, Not(HasSubstr("(uint32_t)kiln_block")));
    EXPECT_THAT(wrapping, HasSubstr("(uint32_t)kiln_block * (uint32_t)((int32_t)256)"));
    // GPU sources keep every + - * written to wrap.
    const std::string cuda =
        generate_source(Backend::cuda, std::span<const ir::Kernel>(&k, 1), CompileOptions{});
    EXPECT_THAT(cuda, Not(HasSubstr("_any_grid")));
}

TEST(CpuCodegen, AGridStrideKernelsIndicesArePlainInTheEntryAndLargerGridsRunOptimizedCopies) {
    // Each thread's elements a fixed stride apart (a fused map's grid-stride form): in grids of
    // at most 1/16 of i32 positions, position + 3 strides never wraps, so the entry indexes
    // plainly (contiguous vector loads, not gathers); grids up to i32 positions run an
    // optimized copy written for them, larger grids the unoptimized copy.
    KernelBuilder k("grid_stride_map", 256);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Var i = k.let(k.absolute_pos(), "i");
    for (int r = 0; r < 4; ++r) {
        Var at = k.let(i + r * 32768, "at");
        k.if_(at < 131072, [&] { y[at] = x[at] * 2.0f; });
    }
    const ir::Kernel kernel = k.finish();
    const std::string src = every_grid_source(kernel);
    const std::string entry = codegen::entry_name(kernel);
    const size_t fast = src.find("extern \"C\" void " + entry + "(");
    ASSERT_NE(fast, std::string::npos);
    const std::string plain = src.substr(fast);
    EXPECT_THAT(plain, HasSubstr("if (kiln_grid > 8388608) { " + entry + "_any_grid("));
    EXPECT_THAT(plain, HasSubstr("if (kiln_grid > 524288) { " + entry + "_larger_grid("));
    EXPECT_LT(plain.find("_any_grid("), plain.find("_larger_grid("));
    EXPECT_THAT(plain, Not(HasSubstr("uint32_t"))) << plain;
    EXPECT_THAT(src, HasSubstr("static __attribute__((noinline)) void " + entry + "_larger_grid("));
    const size_t larger = src.find(entry + "_larger_grid(");
    EXPECT_THAT(src.substr(larger, fast - larger), HasSubstr("(uint32_t)"));
}

TEST(CpuCodegen, ARowKernelsIndicesAreAllPlainInGridsOfI32Positions) {
    // A block per row: the folds' rounds (a loop going on from its variable for the last chunks)
    // and the normalize loop, whose threads start one apart (rewritten over its first thread's
    // index); a thread per row: the lanes of each thread's fold.
    for (int threads : {256, 1}) {
        const ir::Kernel k = ops::rms_norm_rows(4096, threads == 1 ? 64 : 256, threads);
        const std::string src =
            generate_source(Backend::cpu, std::span<const ir::Kernel>(&k, 1), CompileOptions{});
        const size_t fast = src.find("extern \"C\" void " + codegen::entry_name(k) + "(");
        ASSERT_NE(fast, std::string::npos);
        EXPECT_THAT(src.substr(fast), Not(HasSubstr("(uint32_t)"))) << src.substr(fast);
    }
}

// 2^21 blocks of 1024 threads reach position 2^31. The blocks from `first` on write their
// positions to out (a test of the block, so the others cost little).
ir::Kernel positions_from_block(int64_t first) {
    KernelBuilder k("positions_from_block", 1024);
    auto out = k.output("out", DType::i32);
    Var pos = k.let(k.absolute_pos(), "pos");
    k.if_(k.block_index() >= static_cast<int>(first), [&] {
        out[(k.block_index() - static_cast<int>(first)) * 1024 + k.thread_index()] = pos;
    });
    return k.finish();
}

Device& the_cpu() {
    for (Device* d : devices())
        if (d->info().backend == Backend::cpu) return *d;
    throw Error("no CPU device");
}

TEST(CpuLaunch, PositionsPastI32WrapAsKilnSaysOnTheCpu) {
    // The last two blocks' positions wrap to INT32_MIN + j.
    const int64_t first = int64_t{1} << 21;
    // Unchecked: checked mode refuses such a grid (its proofs assume i32 positions do not wrap).
    const auto result = test::run_on(the_cpu(), positions_from_block(first), first + 2,
                                     {test::poisoned(DType::i32, 2048)}, {}, CompileOptions{});
    std::vector<int32_t> got(2048);
    std::memcpy(got.data(), result[0].bytes.data(), got.size() * 4);
    for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], INT32_MIN + static_cast<int32_t>(j)) << "element " << j;
}

// A launch of kernel over `grid` blocks into a poisoned i32 buffer of `count` elements: the
// elements, and the kernels compiled meanwhile.
std::pair<std::vector<int32_t>, uint64_t> launch_into(const CompiledKernel& kernel, int64_t grid,
                                                      size_t count) {
    Device& cpu = the_cpu();
    Buffer out(cpu, DType::i32, count);
    out.upload_bytes(test::poisoned(DType::i32, count).bytes);
    const uint64_t misses = compile_counters().memory_misses;
    kernel.launch(grid, {out});
    cpu.synchronize();
    std::vector<int32_t> got(count);
    std::memcpy(got.data(), out.download_bytes().data(), count * 4);
    return {got, compile_counters().memory_misses - misses};
}

TEST(CpuLaunch, TheCopiesForLargerGridsAreCompiledForTheFirstLaunchThatNeedsThem) {
    // The entry serves grids up to 2^21 blocks, where no position wraps; the code with the copy
    // written to wrap is compiled when a launch passes that, once, and gives the same elements
    // as the entry where both run. A kernel of its own, so no other test compiled it.
    const int64_t first = (int64_t{1} << 21) - 1;
    const ir::Kernel kernel = positions_from_block(first);
    EXPECT_THAT(generate_source(Backend::cpu, std::vector{kernel}, CompileOptions{}),
                Not(HasSubstr("_any_grid(")));
    const auto compiled = compile(the_cpu(), kernel, CompileOptions{});
    auto launch = [&](int64_t grid) { return launch_into(*compiled, grid, 3072); };
    const auto [entry, entry_compiles] = launch(first + 1);  // the entry's largest grid
    EXPECT_EQ(entry_compiles, 0u);
    const auto [copies, copies_compiles] = launch(first + 3);
    EXPECT_EQ(copies_compiles, 1u) << "the code for every grid is compiled once, when needed";
    for (size_t j = 0; j < 1024; ++j) {
        ASSERT_EQ(entry[j], INT32_MAX - 1023 + static_cast<int32_t>(j)) << "element " << j;
        ASSERT_EQ(copies[j], entry[j]) << "element " << j;
        ASSERT_EQ(copies[1024 + j], INT32_MIN + static_cast<int32_t>(j)) << "element " << j;
    }
    EXPECT_EQ(launch(first + 3).second, 0u) << "and kept";
}

// Blocks of 16 threads from `first` on write block * 4096 + thread: plain in grids of 2^16
// blocks (2^20 positions), where it stays below 2^28; written to wrap in grids of 1/16 of i32
// positions, where it would not.
ir::Kernel block_rows_from(int64_t first) {
    KernelBuilder k("block_rows_from", 16);
    auto out = k.output("out", DType::i32);
    k.if_(k.block_index() >= static_cast<int>(first), [&] {
        out[(k.block_index() - static_cast<int>(first)) * 16 + k.thread_index()] =
            k.block_index() * 4096 + k.thread_index();
    });
    return k.finish();
}

TEST(CpuLaunch, SmallGridsRunTheirOwnPlainCopyAndLargerOnesTheCopyForThem) {
    // The entry is written for grids of at most 2^20 positions; larger ones up to 1/16 of i32
    // positions run a copy in the same unit (no compile), and both give the same elements.
    const int64_t first = (int64_t{1} << 16) - 1;
    const ir::Kernel kernel = block_rows_from(first);
    const std::string src = generate_source(Backend::cpu, std::vector{kernel}, CompileOptions{});
    const std::string entry = codegen::entry_name(kernel);
    const size_t fast = src.find("extern \"C\" void " + entry + "(");
    ASSERT_NE(fast, std::string::npos);
    EXPECT_THAT(src.substr(fast), HasSubstr("if (kiln_grid > 65536) { " + entry + "_large_grid("));
    EXPECT_THAT(src.substr(fast), HasSubstr("(kiln_block * ((int32_t)4096))"));
    EXPECT_THAT(src.substr(0, fast), HasSubstr("(uint32_t)kiln_block * (uint32_t)((int32_t)4096)"));
    const auto compiled = compile(the_cpu(), kernel, CompileOptions{});
    const auto [small, small_compiles] = launch_into(*compiled, first + 1, 32);
    const auto [large, large_compiles] = launch_into(*compiled, first + 2, 32);
    EXPECT_EQ(small_compiles + large_compiles, 0u);
    for (int j = 0; j < 16; ++j) {
        ASSERT_EQ(small[size_t(j)], int32_t(first) * 4096 + j) << "element " << j;
        ASSERT_EQ(large[size_t(j)], small[size_t(j)]) << "element " << j;
        ASSERT_EQ(large[size_t(16 + j)], int32_t(first + 1) * 4096 + j) << "element " << j;
    }
}

}  // namespace

TEST(CpuCodegen, MatmulsSpreadPointRunsItsThreadsAsLanesInsideTheTermLoop) {
    // Adjacent threads take adjacent columns (t % (bn/tn) with bn/tn the block size is t, a
    // clamp to a uniform bound keeps the distance, i32 -> i64 keeps it): the thread loop moves
    // inside the loop over k as one `omp simd` over a strip, accumulators in strips, B's index
    // plain i64 arithmetic (affine in the thread).
    const ir::Kernel k =
        ops::matmul_kernel(ops::MatmulTypes{}, ops::matmul_variant("d8x128_t8x4_s"));
    const std::string src =
        generate_source(Backend::cpu, std::span<const ir::Kernel>(&k, 1), CompileOptions{});
    const size_t fast = src.find("extern \"C\" void " + codegen::entry_name(k) + "(");
    ASSERT_NE(fast, std::string::npos);
    const std::string body = src.substr(fast);
    EXPECT_THAT(body, HasSubstr("[KILN_STRIP]"));
    const size_t k_loop = body.find("< p_k;");
    ASSERT_NE(k_loop, std::string::npos) << body;
    const size_t b_load = body.find("p_b[", k_loop);
    ASSERT_NE(b_load, std::string::npos) << body;
    EXPECT_THAT(body.substr(k_loop, b_load - k_loop), HasSubstr("#pragma omp simd")) << body;
    const size_t load_end = body.find(']', b_load);
    EXPECT_THAT(body.substr(b_load, load_end - b_load), Not(HasSubstr("uint"))) << body;
}

namespace {

// The disassembly (objdump -d) of `k` built for this CPU with the compiler's full optimizer;
// empty, with `why` set, where there is no objdump or no usable compiler.
std::string disassembly(const ir::Kernel& k, std::string& why) {
    if (std::system("objdump --version > /dev/null 2>&1") != 0) {
        why = "no objdump";
        return "";
    }
    const char* cxx = std::getenv("KILN_CXX");
    const runtime::cpu::Toolchain tc = runtime::cpu::probe_toolchain(cxx && *cxx ? cxx : "c++");
    if (!tc.usable()) {
        why = tc.error;
        return "";
    }
    const std::vector<uint8_t> so = runtime::cpu::compile_shared_object(
        tc, generate_source(Backend::cpu, std::span<const ir::Kernel>(&k, 1), CompileOptions{}),
        std::chrono::seconds(120), runtime::cpu::Optimization::full);
    const std::filesystem::path dir = std::filesystem::temp_directory_path();
    const std::filesystem::path lib = dir / fmt::format("kiln-disassembly-{}.so", getpid());
    const std::filesystem::path dis = dir / fmt::format("kiln-disassembly-{}.txt", getpid());
    std::ofstream(lib, std::ios::binary)
        .write(reinterpret_cast<const char*>(so.data()), static_cast<std::streamsize>(so.size()));
    const int status = std::system(
        fmt::format("objdump -d --no-show-raw-insn {} > {}", lib.string(), dis.string()).c_str());
    std::ifstream in(dis);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(lib);
    std::filesystem::remove(dis);
    if (status != 0) why = "objdump failed";
    return status == 0 ? text.str() : "";
}

// The longest run of consecutive vector fma (on `vectors`: "%zmm", "%ymm") in `text` with no
// operand on the stack.
int longest_register_fma_run(const std::string& text, const char* vectors = "%zmm") {
    std::istringstream in(text);
    std::string line;
    int run = 0, longest = 0;
    while (std::getline(in, line)) {
        if (line.find("vfmadd") == std::string::npos) continue;
        const bool clean =
            line.find(vectors) != std::string::npos && line.find("(%rsp)") == std::string::npos;
        run = clean ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    return longest;
}

}  // namespace

TEST(CpuCodegen, MatmulsRegisterTilePointsKeepTheirAccumulatorsInVectorRegisters) {
    // The term loop in whole tiles of d6x128_t6x4_s and of its chunk-major form: 6 x 4 vector fma
    // (zmm) a term, every operand a register or B's row in memory, none on the stack (8 x 4
    // spills 12 accumulators there; B's columns kept per thread become gathers and spills).
    // Needs AVX-512 (32 vector registers) and objdump; skipped without them.
    if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the CPU lacks AVX-512";
    for (const char* point : {"d6x128_t6x4_s", "d96x128_t6x4_s_kc"}) {
        SCOPED_TRACE(point);
        std::string why;
        const std::string text =
            disassembly(ops::matmul_kernel(ops::MatmulTypes{}, ops::matmul_variant(point)), why);
        if (text.empty()) GTEST_SKIP() << why;
        EXPECT_GE(longest_register_fma_run(text), 24);
    }
}

TEST(CpuCodegen, MatmulsAvx2TileKeepsItsAccumulatorsInVectorRegisters) {
    // d96x64_t6x2_s_kc4 on a CPU with AVX2 and no AVX-512 (16 ymm registers, strips of 8): the
    // term loop is 6 x 2 register-only fma a term (with a term's A values read after B's from
    // the copied tile, B's values went through per-lane arrays on the stack).
    if (!__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx512f"))
        GTEST_SKIP() << "for a CPU with AVX2 and without AVX-512";
    std::string why;
    const std::string text = disassembly(
        ops::matmul_kernel(ops::MatmulTypes{}, ops::matmul_variant("d96x64_t6x2_s_kc4")), why);
    if (text.empty()) GTEST_SKIP() << why;
    EXPECT_GE(longest_register_fma_run(text, "%ymm"), 12);
}

TEST(CpuCodegen, AttentionsLockstepPointKeepsItsScoresAndAccumulatorsInVectorRegisters) {
    // A whole key block: 8 keys' score chains over d (two trips of the loop unrolled), then the
    // value product's 16 accumulators over the keys, every fma's operands registers or K's / V's
    // element broadcast from memory: one run of at least 32 register-only fma. With the tiles
    // declared as arrays, GCC 12 kept the score chains on the stack (a load and a store every
    // fma; the longest run was 23).
    if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the CPU lacks AVX-512";
    std::string why;
    const std::string text =
        disassembly(ops::attention_kernel({}, ops::attention_variant("l16")), why);
    if (text.empty()) GTEST_SKIP() << why;
    EXPECT_GE(longest_register_fma_run(text), 32);
}

TEST(CpuCodegen, AttentionsLockstepPointSkipsKeysWithoutMaskedStoresToItsAccumulators) {
    // A partial key block (the causal diagonal, a short last block) keeps each accumulator or
    // adds its key's term by a select: `a[l] = has ? sum : a[l]`. Unless GCC may store every
    // lane (-fallow-store-data-races), it stores the sum under a mask: a masked store to the
    // stack each fma (AVX-512's {%k}, AVX2's vmaskmovps), the accumulators kept in memory.
    if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "the CPU lacks AVX2";
    std::string why;
    const std::string text =
        disassembly(ops::attention_kernel({}, ops::attention_variant("l16")), why);
    if (text.empty()) GTEST_SKIP() << why;
    std::istringstream in(text);
    int masked_stack_stores = 0;
    for (std::string line; std::getline(in, line);)
        if (line.find("(%rsp){%k") != std::string::npos ||
            (line.find("vmaskmov") != std::string::npos &&
             line.find("(%rsp)") != std::string::npos))
            ++masked_stack_stores;
    EXPECT_EQ(masked_stack_stores, 0);
}

TEST(CpuCodegen, Conv1dsSpreadPointKeepsItsAccumulatorsInRegistersAndStoresWithoutScatters) {
    // d4x128_t4x4_s: 16 register-only fma a term, and its outputs stored as (masked) vector
    // stores. A lane-masked statement that read a strip value as [kiln_t - kiln_s] (GCC then
    // cannot see the lanes' addresses as consecutive) or tested a position in wrapping i32 made
    // each store a gather of the accumulator and a scatter. Needs AVX-512 and objdump; skipped
    // without them.
    if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the CPU lacks AVX-512";
    std::string why;
    const std::string text =
        disassembly(ops::conv1d_kernel({}, ops::conv1d_variant("d4x128_t4x4_s")), why);
    if (text.empty()) GTEST_SKIP() << why;
    EXPECT_GE(longest_register_fma_run(text), 16);
    EXPECT_EQ(text.find("vscatter"), std::string::npos);
}

TEST(CpuCodegen, MatvecQ8sCpuRowsTakeEachBlocksProductsInOneByteDotProduct) {
    // c4_r4: each of its 4 rows' 2 blocks a pair, 32 byte products summed by one vpdpbusd
    // (unsigned by signed bytes, the form the kernel writes), not widened to 16 bits first.
    // Needs AVX-512 VNNI and objdump; skipped without them.
    if (!__builtin_cpu_supports("avx512vnni")) GTEST_SKIP() << "the CPU lacks AVX-512 VNNI";
    const auto variants = ops::matvec_q8_variants();
    const auto c4_r4 = std::find_if(variants.begin(), variants.end(), [](const auto& v) {
        return std::string_view(v.name) == "c4_r4";
    });
    ASSERT_NE(c4_r4, variants.end());
    std::string why;
    const std::string text = disassembly(ops::matvec_q8_kernel(c4_r4->schedule), why);
    if (text.empty()) GTEST_SKIP() << why;
    size_t dot_products = 0;
    for (size_t at = text.find("vpdpbusd"); at != std::string::npos;
         at = text.find("vpdpbusd", at + 1))
        ++dot_products;
    EXPECT_GE(dot_products, 8u) << text.substr(0, 4000);
}

namespace {

// The body of `k`'s entry in its CPU source.
std::string cpu_entry_body(const ir::Kernel& k) {
    const std::string src =
        generate_source(Backend::cpu, std::span<const ir::Kernel>(&k, 1), CompileOptions{});
    const size_t entry = src.find("extern \"C\" void " + codegen::entry_name(k) + "(");
    return entry == std::string::npos ? std::string() : src.substr(entry);
}

// Whether the innermost loop around position `at` of `body` is the thread loop, marked
// `omp simd` (then the threads there are the lanes of one vector, inside whatever uniform loops
// come before).
bool in_thread_loop(const std::string& body, size_t at) {
    const size_t loop = body.rfind("for (", at);
    // In strips the loop counts the strip's lanes (kiln_l); otherwise the threads (kiln_t).
    if (loop == std::string::npos || (body.compare(loop, 19, "for (int32_t kiln_l") != 0 &&
                                      body.compare(loop, 19, "for (int32_t kiln_t") != 0))
        return false;
    const size_t simd = body.rfind("#pragma omp simd", loop);
    return simd != std::string::npos && body.find_first_not_of(" \n", simd + 16) == loop;
}

}  // namespace

TEST(CpuCodegen, Conv1dsSpreadPointRunsItsThreadsAsLanesInsideTheTermLoop) {
    // Whole tiles (the first branch) and the other tiles with stride 1 (the second): the thread
    // loop sits inside the loop over the terms, reading x at an index that is plain i64
    // arithmetic (adjacent threads' positions adjacent addresses: no 32-bit wrap, no clamp); in
    // the second branch only where the tap is inside x (a select: a masked load).
    const ir::Kernel k = ops::conv1d_kernel({}, ops::conv1d_variant("d8x128_t8x4_s"));
    const std::string body = cpu_entry_body(k);
    ASSERT_FALSE(body.empty());
    // The first branch's first read of x, then the second's (the first under a select).
    const size_t whole_load = body.find("p_x[");
    const size_t masked_load = body.find("? p_x[");
    ASSERT_NE(masked_load, std::string::npos) << body;
    size_t at = 0;
    for (const size_t x_load : {whole_load, masked_load + 2}) {
        SCOPED_TRACE(x_load);
        ASSERT_GT(x_load, at) << body;
        EXPECT_TRUE(in_thread_loop(body, x_load)) << body.substr(at, x_load - at);
        const size_t thread_loop = body.rfind("#pragma omp simd", x_load);
        const size_t term_loop = body.rfind("for (v", thread_loop);
        EXPECT_TRUE(term_loop != std::string::npos && term_loop > at)
            << body.substr(at, x_load - at);
        const std::string index = body.substr(x_load, body.find(']', x_load) - x_load);
        EXPECT_THAT(index, Not(HasSubstr("uint32_t"))) << index;
        EXPECT_THAT(index, Not(HasSubstr("kiln_min"))) << index;
        at = x_load + 1;
    }
}

TEST(CpuCodegen, AttentionsLockstepPointRunsItsRowsAsLanesInsideTheKeyLoops) {
    // A whole key block's two loops over its 64 keys: the rows' thread loop sits inside each,
    // reading K's and then V's rows (one value for every row).
    const ir::Kernel k = ops::attention_kernel({}, ops::attention_variant("l16"));
    const std::string body = cpu_entry_body(k);
    ASSERT_FALSE(body.empty());
    size_t at = 0;
    for (const char* load : {"p_k[", "p_v["}) {
        SCOPED_TRACE(load);
        const size_t key_loop = body.find("< ((int32_t)64);", at);
        ASSERT_NE(key_loop, std::string::npos) << body;
        const size_t read = body.find(load, key_loop);
        ASSERT_NE(read, std::string::npos) << body;
        EXPECT_TRUE(in_thread_loop(body, read)) << body.substr(key_loop, read - key_loop);
        at = read;
    }
}

// A uniform if around per-thread work: the thread loop runs inside it, so its stores are not
// masked lane by lane (the compiler's masked scatters).
TEST(CpuCodegen, AUniformIfRunsItsThreadLoopInsideIt) {
    KernelBuilder k("uniform_if", 64);
    auto out = k.output("out", DType::f32);
    Expr n = k.scalar("n", DType::i32);
    Expr t = k.thread_index();
    k.if_(n > 3, [&] { out[t] = cast(DType::f32, t) * 2.0f; });
    const ir::Kernel kernel = k.finish();
    const std::string body = cpu_entry_body(kernel);
    const size_t store = body.find("p_out[");
    ASSERT_NE(store, std::string::npos) << body;
    EXPECT_TRUE(in_thread_loop(body, store)) << body;
    const size_t loop = body.rfind("#pragma omp simd", store);
    EXPECT_NE(body.rfind("if (", loop), std::string::npos) << body;
    EXPECT_EQ(body.find("if (", loop), body.find("if (", store)) << body;  // none in the loop
}

// A graph's linear: n a constant multiple of the block's columns and the batch and rows runtime
// sizes of a known range. Its stores are in the thread loop with no test of the column (one of
// the row, outside the loop) and a plain index, so they are contiguous vector stores.
TEST(CpuCodegen, ALinearsStoresArePlainAndTestOnlyTheRowOutsideTheThreadLoop) {
    const ops::MatmulSchedule& s = ops::matmul_variant("d6x128_t6x4_s");
    KernelBuilder k("linear_store", s.threads());
    auto c = k.output("c", DType::f32);
    auto a = k.input("a", DType::f32);
    auto b = k.input("b", DType::f32);
    Expr batches = k.scalar("batches", DType::i32), m = k.scalar("m", DType::i32);
    k.require(batches >= 1 && batches <= 32, "batches in 1 to 32");
    k.require(m >= 1 && m <= 128, "m in 1 to 128");
    const Expr n = constant(DType::i32, 256), kk = constant(DType::i32, 64);
    const ops::MatmulViews views{ops::buffer_elements(a),
                                 ops::buffer_elements(b),
                                 batches,
                                 m,
                                 n,
                                 kk,
                                 constant(DType::i32, 0),
                                 m * kk,
                                 kk,
                                 constant(DType::i32, 0),
                                 constant(DType::i32, 0),
                                 n};
    ops::matmul_body(k, views, ops::MatmulTypes{}, s,
                     [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& v) {
                         c[(batch * m + row) * n + col] = v;
                     });
    const std::string body = cpu_entry_body(k.finish());
    const size_t store = body.rfind("p_c[");
    ASSERT_NE(store, std::string::npos) << body;
    EXPECT_TRUE(in_thread_loop(body, store)) << body;
    const size_t loop = body.rfind("#pragma omp simd", store);
    EXPECT_EQ(body.find("if (", loop), std::string::npos) << body.substr(loop);
    EXPECT_THAT(body.substr(store, body.find(']', store) - store), Not(HasSubstr("uint")))
        << body.substr(loop);
}
