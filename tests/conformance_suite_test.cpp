// The conformance suite itself (src/conformance/): its shape generators are reproducible and
// include ragged sizes and 1; its comparison is bitwise with NaNs matched by place; and its
// member sweep catches a broken planner: with KILN_CONFORMANCE_BREAK=map_tiling (tiled map
// launches write only their first element) the sweep reports miscompiles naming the member, the
// schedule point and the element, and so it does for a fold's order and a matmul tile's edge;
// without a switch, none.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <regex>

#include "base/break_switch.hpp"
#include "conformance/compare.hpp"
#include "conformance/shapes.hpp"
#include "conformance/suite.hpp"
#include "support/errors.hpp"

namespace kiln::conformance {
namespace {

// Sets KILN_CONFORMANCE_BREAK for its lifetime.
class BreakSwitch {
  public:
    explicit BreakSwitch(const char* value) { setenv("KILN_CONFORMANCE_BREAK", value, 1); }
    ~BreakSwitch() { unsetenv("KILN_CONFORMANCE_BREAK"); }
    BreakSwitch(const BreakSwitch&) = delete;
    BreakSwitch& operator=(const BreakSwitch&) = delete;
};

TEST(ConformanceShapes, EachRunIsReproducibleAndTheFirstTwoAreRaggedAndOne) {
    const std::vector<Dim> dims{Dim::range(1, 37), Dim::multiple_of(64, 64, 512),
                                Dim::choice({1, 16, 40}), Dim::fixed(5)};
    Rng r0(seed_of("area/case", 0, 0)), r1(seed_of("area/case", 1, 0));
    EXPECT_EQ(draw_shape(dims, r0, 0), (std::vector<int64_t>{37, 512, 40, 5}));
    EXPECT_EQ(draw_shape(dims, r1, 1), (std::vector<int64_t>{1, 64, 1, 5}));
    EXPECT_EQ(Dim::range(1, 40).draw(r0, 0), 39);  // the largest odd value
    for (int run = 2; run < 6; ++run) {
        Rng a(seed_of("area/case", run, 7)), b(seed_of("area/case", run, 7));
        const auto s = draw_shape(dims, a, run);
        EXPECT_EQ(s, draw_shape(dims, b, run));
        EXPECT_GE(s[0], 1);
        EXPECT_LE(s[0], 37);
        EXPECT_EQ(s[1] % 64, 0);
    }
    EXPECT_NE(seed_of("area/case", 2, 0), seed_of("area/case", 3, 0));
    EXPECT_NE(seed_of("area/case", 2, 0), seed_of("area/other", 2, 0));
    EXPECT_NE(seed_of("area/case", 2, 0), seed_of("area/case", 2, 1));
    test::expect_error_naming("Dim::range", [] { Dim::range(5, 4); }, {"lo <= hi"});
    test::expect_error_naming("Dim::multiple_of", [] { Dim::multiple_of(64, 1, 63); },
                              {"multiple"});
}

std::vector<uint8_t> f32_bytes(std::initializer_list<uint32_t> bits) {
    std::vector<uint8_t> out(bits.size() * 4);
    size_t i = 0;
    for (uint32_t b : bits) std::memcpy(out.data() + 4 * i++, &b, 4);
    return out;
}

TEST(ConformanceCompare, BitwiseWithNaNsMatchedByPlace) {
    // Two NaNs of different payloads agree; +0 and -0 do not; the first difference is named.
    EXPECT_FALSE(compare(DType::f32, f32_bytes({0x7fc00000, 0x3f800000}),
                         f32_bytes({0x7fc00001, 0x3f800000})));
    const auto m = compare(DType::f32, f32_bytes({0x3f800000, 0x80000000, 0x7fc00000}),
                           f32_bytes({0x3f800000, 0x00000000, 0x3f800000}));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->index, 1);
    EXPECT_EQ(m->count, 2);
    EXPECT_EQ(m->got, "-0 (0x80000000)");
    EXPECT_EQ(m->want, "0 (0x00000000)");
    const std::vector<uint8_t> a{1, 2, 0xff}, b{1, 2, 0xfe};
    const auto i = compare(DType::i8, a, b);
    ASSERT_TRUE(i);
    EXPECT_EQ(i->got, "-1");
    EXPECT_EQ(i->want, "-2");
    EXPECT_TRUE(compare(DType::u8, a, {1, 2}));  // sizes differ
}

TEST(ConformanceCompare, WithinABoundPerElementWithNaNsMatchedByPlace) {
    // 1 vs 1.0000001 (one f32 ulp, 1.19e-7) within 2e-7; 2 vs 2.5 within 0.5; NaN vs NaN.
    const auto want = f32_bytes({0x3f800000, 0x40000000, 0x7fc00000});
    EXPECT_FALSE(
        compare_within(f32_bytes({0x3f800001, 0x40200000, 0x7fc00001}), want, {2e-7, 0.5, 0}));
    // Outside: the ulp against a bound of 1e-7, 2.5 against 0.25, a number where a NaN is due.
    const auto m =
        compare_within(f32_bytes({0x3f800001, 0x40200000, 0x3f800000}), want, {1e-7, 0.25, 1e9});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->index, 0);
    EXPECT_EQ(m->count, 3);
    EXPECT_EQ(m->want, "1 (0x3f800000) within 1e-07");
    EXPECT_TRUE(compare_within(f32_bytes({0x7fc00000}), f32_bytes({0x3f800000}), {1e9}));
    EXPECT_TRUE(compare_within(want, want, {1, 1}));  // a bound per element
}

TEST(ConformanceSuite, BadOptionsNameWhatIsKnown) {
    Options o;
    o.areas = {"nosuch"};
    test::expect_error_naming("conformance", [&] { run_suite(o); },
                              {"nosuch", "smoke", "matmul", "fusion"});
    o.areas = {};
    o.runs = 0;
    test::expect_error_naming("conformance", [&] { run_suite(o); }, {"--runs 0"});
}

TEST(ConformanceSuite, SummaryLine) {
    std::vector<Result> r(4);
    r[1].status = Status::skipped;
    r[2].status = Status::failed;
    r[3].status = Status::failed;
    r[3].miscompile = true;
    EXPECT_EQ(summary_line(summarize(r)),
              "4 results: 1 passed, 1 skipped, 2 failed; 1 miscompiles");
}

TEST(ConformanceSweep, FindsTheBrokenMapTilingAndNothingWithoutIt) {
    Options o;
    o.areas = {"smoke"};
    o.filter = "add_square";
    o.runs = 1;  // run 0: 3001 elements, past every block and elements-per-thread
    o.sweep = true;
    const auto clean = run_suite(o);
    const auto ok = summarize(clean);
    EXPECT_EQ(ok.failed, 0);
    EXPECT_EQ(ok.miscompiles, 0);
    EXPECT_GT(ok.results, static_cast<int64_t>(devices().size()) * 4);  // members, not one plan

    const BreakSwitch broken("map_tiling");
    ASSERT_TRUE(break_switch("map_tiling"));
    const auto bad = run_suite(o);
    const auto s = summarize(bad);
    EXPECT_EQ(s.results, ok.results);  // the same members, now some of them wrong
    EXPECT_GT(s.miscompiles, 0);
    for (Device* d : devices()) {
        bool found = false;
        for (const auto& r : bad) {
            if (!r.miscompile || r.device != d->info().id) continue;
            found = true;
            // A miscompile names the member, its schedule point (more than one element per
            // thread) and the first wrong element, whose value is the poison left unwritten.
            EXPECT_FALSE(r.member.empty());
            EXPECT_TRUE(std::regex_search(r.schedule, std::regex("_t[248]_"))) << describe(r);
            EXPECT_GT(r.index, 0);
            EXPECT_NE(r.got, r.want);
            EXPECT_NE(describe(r).find("MISCOMPILE"), std::string::npos);
        }
        EXPECT_TRUE(found) << d->info().id;
    }
    // Points with one element per thread are untouched by the switch.
    for (const auto& r : bad) {
        if (r.schedule == "default" || r.schedule.find("_t1_") != std::string::npos) {
            EXPECT_FALSE(r.miscompile) << describe(r);
        }
    }
}

// The other switches, on the CPU alone (the map test above covers every backend): each makes the
// sweep report miscompiles where it breaks. The clean run goes first: a plan resolved while a
// switch is on stays in the process's replay cache.
std::vector<Result> run_broken(const char* what, const std::string& area, const std::string& filter,
                               bool sweep) {
    Options o;
    o.devices = {&cpu_device()};
    o.areas = {area};
    o.filter = filter;
    o.runs = 1;  // run 0: the largest ragged shapes
    o.sweep = sweep;
    const BreakSwitch broken(what);
    return run_suite(o);
}

TEST(ConformanceSweep, FindsTheFoldOrderBrokenInRowsKeptInRegisters) {
    const auto clean = summarize(run_broken("", "reductions", "rows_f32", true));
    EXPECT_EQ(clean.miscompiles, 0);
    EXPECT_EQ(clean.failed, 0);
    const auto bad = run_broken("fold_order", "reductions", "rows_f32", true);
    int64_t miscompiles = 0;
    for (const auto& r : bad) {
        if (!r.miscompile) continue;
        ++miscompiles;
        // Only the points that keep the row (a "_c" schedule) fold lanes of several elements.
        EXPECT_NE(r.schedule.find("_c"), std::string::npos) << describe(r);
    }
    EXPECT_GT(miscompiles, 0);
}

TEST(ConformanceSweep, FindsTheMatmulTileEdgeBroken) {
    // Run 0's linear has 35 output columns: every tile shape leaves a partial tile at the edge.
    // The resolved plans alone (the sweep of every matmul point takes a minute of compiles); the
    // same case passes unbroken in the conformance_cpu test.
    const auto bad = run_broken("matmul_tile_edge", "matmul", "graph_linear", false);
    ASSERT_FALSE(bad.empty());
    for (const auto& r : bad) {
        EXPECT_TRUE(r.miscompile) << describe(r);
        EXPECT_EQ((r.index + 1) % 35, 0) << describe(r);  // the last column's element
    }
}

TEST(ConformanceBreakSwitch, ReadsACommaSeparatedList) {
    EXPECT_FALSE(break_switch("map_tiling"));
    const BreakSwitch broken("fold_tree,map_tiling");
    EXPECT_TRUE(break_switch("map_tiling"));
    EXPECT_TRUE(break_switch("fold_tree"));
    EXPECT_FALSE(break_switch("map"));
}

}  // namespace
}  // namespace kiln::conformance
