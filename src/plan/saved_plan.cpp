// executable_from_plan and portable_binaries (saved_plan.hpp).
#include "plan/saved_plan.hpp"

#include "kiln/error.hpp"
#include "plan/choose.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/lower_launch.hpp"

namespace kiln::plan {

namespace {

// Whether every node position the plan names is one of g's.
void check_fits(const GraphView& g, const Plan& plan) {
    const int nodes = static_cast<int>(g.size());
    auto check = [&](int position, const char* what) {
        if (position < 0 || position >= nodes)
            fail("program file: a saved plan names node {} as {}; its graph has {} nodes", position,
                 what, nodes);
    };
    for (const Launch& l : plan.launches) {
        for (int o : l.outputs) check(o, "an output");
        for (int s : l.row_steps) check(s, "a row step");
        if (l.scatter >= 0) check(l.scatter, "a scatter");
        if (l.contraction >= 0) check(l.contraction, "a contraction");
        for (const auto& [fold, scratch] : l.partials) {
            check(fold, "a fold");
            if (scratch < 0 || size_t(scratch) >= plan.scratch.size())
                fail("program file: a saved plan names scratch buffer {}; it has {}", scratch,
                     plan.scratch.size());
        }
        const KindOrder& order = rules(l.kind).order;
        if ((order.writes_partials || order.reads_partials) && l.contraction >= 0 &&
            !l.partials.count(l.contraction))
            fail("program file: a saved {} launch names no scratch for its contraction (node {})",
                 name(l.kind), l.contraction);
        if (l.chosen >= l.domain.size())
            fail("program file: a saved launch's point {} is past its {} points", l.chosen,
                 l.domain.size());
    }
    for (int m : plan.materialized) check(m, "a written node");
}

}  // namespace

std::shared_ptr<const Executable> executable_from_plan(const GraphView& g, Device& device,
                                                       const Plan& plan,
                                                       std::span<const UnitBinary> given) {
    check_fits(g, plan);
    const auto materialized = materialized_set(g, plan);
    LoweringMemo memo(g, materialized);
    std::vector<LoweredLaunch> lowered;
    std::vector<ir::Kernel> kernels;
    for (const Launch& l : plan.launches) {
        lowered.push_back(memo.lower(l, l.domain[l.chosen]));
        kernels.push_back(lowered.back().kernel);
    }
    const auto compiled =
        compile_portable(device, kernels, default_compile_options(), given, nullptr);
    auto exec = executable_for(plan, g, device);
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const Launch& l = plan.launches[i];
        CompiledLaunch cl =
            compiled_launch(l, l.domain[l.chosen], lowered[i], compiled[i], is_empty(l, g));
        cl.record.not_raced = "the point a program file names";
        exec->launches.push_back(std::move(cl));
    }
    exec->plan = std::make_shared<const Plan>(plan);
    return exec;
}

std::vector<UnitBinary> portable_binaries(const Executable& e) {
    std::vector<ir::Kernel> kernels;
    for (const CompiledLaunch& l : e.launches) kernels.push_back(l.kernel->kernel());
    std::vector<UnitBinary> used;
    compile_portable(*e.device, kernels, default_compile_options(), {}, &used);
    return used;
}

}  // namespace kiln::plan
