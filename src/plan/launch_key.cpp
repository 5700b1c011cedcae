// launch_key: a launch's fields and the materialized bits of the nodes it can reach.
#include "plan/launch_key.hpp"

#include <algorithm>

namespace kiln::plan {

std::vector<int> launch_roots(const Launch& l) {
    std::vector<int> roots = l.outputs;
    roots.insert(roots.end(), l.row_steps.begin(), l.row_steps.end());
    for (int n : {l.contraction, l.scatter})
        if (n >= 0) roots.push_back(n);
    return roots;
}

bool walks_through(const std::vector<char>& materialized, const Launch& l,
                   const std::vector<int>& roots, int n) {
    auto in = [n](const std::vector<int>& v) {
        return std::find(v.begin(), v.end(), n) != v.end();
    };
    return !materialized[size_t(n)] || in(l.outputs) || in(roots);
}

void add_schedule(std::vector<int64_t>& key, const Schedule& s) {
    key.insert(key.end(), {s.block, s.per_thread, s.vector, s.threads, s.unroll, s.cache ? 1 : 0,
                           s.variant, s.row_loop ? 1 : 0});
}

std::vector<int64_t> launch_key(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& l) {
    std::vector<int64_t> key{int64_t(l.kind), l.rows, l.extent, l.contraction, l.scatter};
    auto add = [&](const auto& values) {
        key.push_back(int64_t(values.size()));
        key.insert(key.end(), values.begin(), values.end());
    };
    add(l.outputs);
    add(l.row_steps);
    add(l.full);
    add(l.axes);
    key.push_back(int64_t(l.partials.size()));
    for (const auto& [fold, scratch] : l.partials) key.insert(key.end(), {fold, scratch});
    key.push_back(int64_t(l.domain.size()));
    for (const Schedule& s : l.domain) add_schedule(key, s);
    const std::vector<int> roots = launch_roots(l);
    std::vector<int> region;
    for (int root : roots) {
        const std::vector<int> r =
            reach(g, root, [&](int x) { return !walks_through(materialized, l, roots, x); });
        region.insert(region.end(), r.begin(), r.end());
    }
    std::sort(region.begin(), region.end());
    region.erase(std::unique(region.begin(), region.end()), region.end());
    for (int n : region) key.push_back(2 * int64_t(n) + (materialized[size_t(n)] ? 1 : 0));
    return key;
}

}  // namespace kiln::plan
