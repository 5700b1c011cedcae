// lower_launch: a launch's kernel written by LaunchWriter (launch_writer.hpp) with its kind's
// body, grid and emptiness (src/plan/kinds/).
#include "plan/lower_launch.hpp"

#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

namespace kiln::plan {

bool is_empty(const Launch& l, const GraphView& g) {
    return rules(l.kind).empty(l, g);
}

int64_t grid_of(const Launch& l, const GraphView& g, const Schedule& s) {
    return rules(l.kind).grid(l, g, s);
}

LoweredLaunch lower_launch(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& launch, const Schedule& s) {
    return LaunchWriter(g, materialized, launch, s).lower();
}

}  // namespace kiln::plan
