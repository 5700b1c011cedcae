// Bad input to the tensor API: a kiln::Error naming the op and the shapes, raised when the op is
// built, with nothing the user owns changed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include "graph/build.hpp"
#include "graph/oracle.hpp"
#include "ir/check_bounds.hpp"
#include "ir/visit.hpp"
#include "kiln/dsl.hpp"
#include "kiln/tensor.hpp"
#include "plan/lower_launch.hpp"
#include "plan/map_ops.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

Tensor ones(const Shape& s, DType t = DType::f32) {
    return Tensor::ones(s, t, cpu_device());
}

TEST(GraphErrors, ShapesThatDoNotBroadcast) {
    EXPECT_THAT(error_of([] {
                    ones({3, 4}) + ones({5});
                }),
                AllOf(HasSubstr("add"), HasSubstr("[3, 4]"), HasSubstr("[5]")));
    EXPECT_THAT(error_of([] {
                    ones({2, 3}).expand({4, 3, 2});
                }),
                AllOf(HasSubstr("expand"), HasSubstr("[2, 3]"), HasSubstr("[4, 3, 2]")));
}

TEST(GraphErrors, BadAxes) {
    EXPECT_THAT(error_of([] {
                    sum(ones({3, 4}), {2});
                }),
                AllOf(HasSubstr("sum"), HasSubstr("axis 2"), HasSubstr("rank 2")));
    EXPECT_THAT(error_of([] { sum(ones({3, 4}), {1, -1}); }), HasSubstr("twice"));
    EXPECT_THAT(error_of([] { ones({3, 4}).permute({0, 0}); }), HasSubstr("twice"));
    EXPECT_THAT(error_of([] {
                    ones({3, 4}).squeeze(0);
                }),
                AllOf(HasSubstr("squeeze"), HasSubstr("extent 3")));
    EXPECT_THAT(error_of([] { softmax(ones({3, 4}), 5); }), HasSubstr("softmax"));
}

TEST(GraphErrors, DtypeMismatches) {
    EXPECT_THAT(error_of([] { ones({3}) + ones({3}, DType::f16); }),
                AllOf(HasSubstr("add"), HasSubstr("f32"), HasSubstr("f16")));
    EXPECT_THAT(error_of([] { exp(ones({3}, DType::i32)); }),
                AllOf(HasSubstr("exp"), HasSubstr("i32")));
    EXPECT_THAT(error_of([] { where(ones({3}), ones({3}), ones({3})); }),
                AllOf(HasSubstr("where"), HasSubstr("bool")));
    EXPECT_THAT(error_of([] { mean(ones({3}, DType::i32)); }), HasSubstr("mean"));
    EXPECT_THAT(error_of([] { ones({3}, DType::u8) + 300.0; }),
                AllOf(HasSubstr("300"), HasSubstr("u8")));
    EXPECT_THAT(error_of([] { index_select(ones({3}), 0, ones({2})); }),
                AllOf(HasSubstr("index_select"), HasSubstr("i32")));
    EXPECT_THAT(error_of([] { ones({3}).to_host<int32_t>(); }), HasSubstr("f32"));
}

// The map-op table (graph/map_op_table.cpp) against the two formulas: every dtype a row accepts
// is one the oracle and the emitted code both compute, giving the row's result dtype, so a row
// that accepts more than its formulas handle (or a new op missing a formula) fails here rather
// than at a user's resolve. The builders refuse the others (DtypeMismatches).
TEST(MapOpTable, EveryDtypeARowAcceptsIsOneBothFormulasComputeToTheRowsResult) {
    using graph::MapInputs;
    const DType dtypes[] = {DType::boolean, DType::u8,  DType::i8,  DType::i32,
                            DType::i64,     DType::f32, DType::f16, DType::bf16};
    int checked = 0;
    for (const graph::MapOpInfo& row : graph::map_ops()) {
        if (row.op == graph::MapOp::cast || row.op == graph::MapOp::where) continue;  // own rules
        for (DType t : dtypes) {
            const bool accepted = row.inputs == MapInputs::any       ? true
                                  : row.inputs == MapInputs::numeric ? t != DType::boolean
                                  : row.inputs == MapInputs::floats  ? is_float(t)
                                                                     : t == DType::boolean;
            if (!accepted) continue;
            SCOPED_TRACE(fmt::format("{} of {}", row.name, name(t)));
            const DType out = row.result == graph::MapResult::boolean ? DType::boolean : t;
            std::vector<graph::NodeRef> operands;
            for (int i = 0; i < row.arity; ++i)
                operands.push_back(graph::constant_node(1, t, {2}, &cpu_device(), row.name));
            const graph::NodeRef node = graph::map_node(row.op, out, operands);
            std::vector<graph::HostTensor> host;
            ASSERT_NO_THROW(host = graph::evaluate({node}));
            EXPECT_EQ(host.at(0).dtype, out);
            KernelBuilder k("map_op_table_check");
            std::vector<Expr> args;
            for (int i = 0; i < row.arity; ++i)
                args.push_back(k.input(fmt::format("a{}", i), t)[0]);
            std::optional<Expr> e;
            ASSERT_NO_THROW(e = plan::apply_map(row.op, args, out));
            EXPECT_EQ(e->type(), out);
            ++checked;
        }
    }
    EXPECT_GT(checked, 100);  // every row took part
}

TEST(GraphErrors, MixedDevices) {
    if (devices().size() < 2) GTEST_SKIP() << "one device";
    Device& other = *devices()[1];
    EXPECT_THAT(error_of([&] { ones({3}) + Tensor::ones({3}, DType::f32, other); }),
                AllOf(HasSubstr("add"), HasSubstr("different devices"), HasSubstr("to(device)")));
    // Moved with to(device), the operands meet; the values keep their bits both ways.
    const std::vector<float> values{1.5f, -0.0f, 0x1p-140f};
    const Tensor x = Tensor::from_host(values, {3});
    const Tensor there = (x * 2.0).to(other);
    EXPECT_EQ(&there.device(), &other);
    EXPECT_EQ(there.to_host_bytes(), (x * 2.0).to_host_bytes());
    EXPECT_EQ((there + Tensor::ones({3}, DType::f32, other)).to(cpu_device()).to_host_bytes(),
              (x * 2.0 + 1.0).to_host_bytes());
    EXPECT_EQ(x.to(cpu_device()).node(), x.node());  // already there: itself
}

TEST(GraphErrors, EmptyReductionsAndOverflowingShapes) {
    EXPECT_THAT(error_of([] {
                    max(ones({3, 0}), {1});
                }),
                AllOf(HasSubstr("max"), HasSubstr("empty")));
    EXPECT_THAT(error_of([] { mean(ones({0})); }), HasSubstr("mean"));
    EXPECT_THAT(error_of([] {
                    Tensor::zeros({int64_t{1} << 40, int64_t{1} << 40});
                }),
                AllOf(HasSubstr("full"), HasSubstr("2^56")));
    EXPECT_THAT(error_of([] { ones({4}).reshape({3, -1}); }), HasSubstr("reshape"));
    EXPECT_THAT(error_of([] { ones({4}).reshape({-1, -1}); }), HasSubstr("two -1"));
    EXPECT_THAT(error_of([] {
                    Tensor::from_host(std::vector<float>(5), {2, 3});
                }),
                AllOf(HasSubstr("[2, 3]"), HasSubstr("5")));
}

TEST(GraphErrors, NormalizationOperandsAreChecked) {
    EXPECT_THAT(error_of([] {
                    rms_norm(ones({3, 4}), ones({5}));
                }),
                AllOf(HasSubstr("rms_norm"), HasSubstr("[5]"), HasSubstr("[3, 4]")));
    Tensor w = ones({3});
    EXPECT_THAT(error_of([&] {
                    layer_norm(ones({2, 4}), 1, &w);
                }),
                AllOf(HasSubstr("layer_norm"), HasSubstr("weight")));
    EXPECT_THAT(error_of([] { variance(ones({1, 3}), {0}); }), HasSubstr("variance"));
}

TEST(GraphErrors, AnIndexOutOfRangeIsAnErrorAtResolveAndLeavesTheInputsAlone) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        std::vector<float> data{1, 2, 3, 4, 5, 6};
        Tensor x = Tensor::from_host(data, {3, 2}, *d);
        std::vector<int32_t> bad{0, 3, 1};
        Tensor idx = Tensor::from_host(bad, {3}, *d);
        Tensor y = index_select(x, 0, idx);
        EXPECT_THAT(error_of([&] { y.resolve(); }),
                    AllOf(HasSubstr("index_select"), HasSubstr("index 3"), HasSubstr("position 1"),
                          HasSubstr("3 elements")));
        std::vector<int32_t> scatter{0, 1, -1, 0, 2, 1};
        Tensor sidx = Tensor::from_host(scatter, {3, 2}, *d);
        Tensor z = scatter_add(x, 0, sidx, x);
        EXPECT_THAT(error_of([&] { z.resolve(); }),
                    AllOf(HasSubstr("scatter_add"), HasSubstr("index -1")));
        EXPECT_EQ(x.to_host<float>(), data);
        // The device is still usable.
        EXPECT_EQ((x + 1.0).to_host<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
    }
}

// A gather's fault record has a known length, so its constant indices need no checks in checked
// mode; the gather's reads of the table keep theirs.
TEST(GraphErrors, AFaultRecordKeepsNoChecksOfItsOwn) {
    Tensor x = ones({3, 2});
    std::vector<int32_t> positions{0, 2, 1};
    Tensor y = index_select(x, 0, Tensor::from_host(positions, {3}, cpu_device()));
    const plan::GraphView g = plan::view_graph({y.node()});
    const plan::Plan p = plan::choose_plan(g, test::kTwoCoreFacts, true);
    int record_checks = 0, other_checks = 0;
    for (const plan::Launch& l : p.launches) {
        const ir::Kernel k =
            plan::lower_launch(g, plan::materialized_set(g, p), l, l.domain.at(0)).kernel;
        int faults = -1;
        for (size_t i = 0; i < k.params.size(); ++i)
            if (k.params[i].name == "faults") faults = static_cast<int>(i);
        if (faults < 0) continue;
        const ir::Kernel checked = ir::check_bounds(k).kernel;
        ir::for_each_stmt(checked.body, [&](const ir::StmtNode& s) {
            ir::for_each_expr(s, [&](const ir::ExprRef& e) {
                ir::walk(e, [&](const ir::ExprRef& n) {
                    if (const auto* b = std::get_if<ir::expr::InBounds>(&n->node))
                        ++(ir::decode_site(b->site).mem.id == faults ? record_checks
                                                                     : other_checks);
                });
            });
        });
    }
    EXPECT_EQ(record_checks, 0);
    EXPECT_GT(other_checks, 0) << "no gather with a fault record was lowered";
}

}  // namespace
}  // namespace kiln
