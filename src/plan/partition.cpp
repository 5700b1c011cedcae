// partition: fold groups, the materialized set and the launches, in dependency order.
#include "plan/partition.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "graph/fold_order.hpp"
#include "kiln/error.hpp"
#include "kiln/ops/contraction_order.hpp"
#include "plan/contract.hpp"
#include "plan/domain.hpp"
#include "plan/fusion_legality.hpp"
#include "plan/kinds/kind.hpp"

namespace kiln::plan {

namespace op = graph::op;

namespace {

bool is_fold(const GraphView& g, int i) {
    return !g.is_leaf(i) && g.node(i).as<op::Fold>() != nullptr;
}

}  // namespace

namespace {

struct Builder {
    const GraphView& g;
    const std::vector<FoldGroup>& groups;
    const std::vector<GroupForm>& forms;
    const std::vector<int>& stored;
    RefusalMemo* memo;
    std::vector<char> materialized;
    std::map<int, size_t> group_of;  // fold -> group

    int64_t rows_of(const FoldGroup& gr) const { return g.node(gr.folds[0]).numel(); }
    int64_t extent_of(const FoldGroup& gr) const {
        int64_t n = 1;
        for (int a : gr.axes) n *= gr.full[static_cast<size_t>(a)];
        return n;
    }
    // Whether a node's value fits a group's row space or full space (so its launch can write it).
    bool fits(const FoldGroup& gr, int n) const {
        const graph::Node& node = g.node(n);
        if (gr.contraction) return node.shape == gr.full;
        return node.shape == gr.full || node.numel() == rows_of(gr);
    }

    // The group (the latest in topological order) whose folds a node needs; -1 for none.
    int owner(int n) const { return owner_of(folds_needed(g, n, materialized)); }
    // The same from the folds the node needs.
    int owner_of(const std::vector<int>& needed) const {
        int best = -1;
        for (int f : needed) {
            const int gi = static_cast<int>(group_of.at(f));
            if (best < 0 || groups[size_t(gi)].folds[0] > groups[size_t(best)].folds[0]) best = gi;
        }
        return best;
    }

    void materialize(int n) { materialized[static_cast<size_t>(n)] = 1; }

    // One walk from node n through what its launch would compute: the computed buffers it reads
    // (materialized, not leaves) and the folds it needs (folds_needed's: the grouped nodes it
    // reaches through neither a buffer nor another grouped node, n itself when grouped), both
    // ascending. A node's mark says whether this walk met it, and whether directly (through
    // nodes that are neither) or only past another grouped node.
    std::vector<uint64_t> seen;
    uint64_t walks = 0;
    void reads_of(int n, std::vector<int>& buffers, std::vector<int>& needed) {
        if (seen.size() != g.size()) seen.assign(g.size(), 0);
        ++walks;
        const uint64_t past_group = 2 * walks, direct = 2 * walks + 1;
        buffers.clear();
        needed.clear();
        std::vector<std::pair<int, bool>> work{{n, true}};
        while (!work.empty()) {
            const auto [x, is_direct] = work.back();
            work.pop_back();
            uint64_t& mark = seen[size_t(x)];
            const uint64_t now = is_direct ? direct : past_group;
            if (mark >= now) continue;
            const bool first = mark < past_group;
            mark = now;
            if (x != n && materialized[size_t(x)]) {
                if (first && !g.is_leaf(x)) buffers.push_back(x);
                continue;
            }
            const bool grouped = is_grouped(g, x);
            if (grouped && is_direct) needed.push_back(x);
            const bool next = is_direct && (!grouped || x == n);
            for (int in : g.inputs[size_t(x)]) work.push_back({in, next});
        }
        std::sort(buffers.begin(), buffers.end());
        std::sort(needed.begin(), needed.end());
    }

    Partitioned refuse(size_t gi, std::string reason) const {
        return {{}, FusionRefusal{int(gi), forms[gi], std::move(reason)}};
    }

    Partitioned build() {
        // A form the group cannot have in any plan is refused before the plan is worked out.
        for (size_t gi = 0; gi < groups.size(); ++gi)
            if (forms[gi] == GroupForm::segments)
                if (auto why = segments_form_refusal(g, groups[gi])) return refuse(gi, *why);
        materialized.assign(g.size(), 0);
        for (size_t gi = 0; gi < groups.size(); ++gi)
            for (int f : groups[gi].folds) group_of[f] = gi;
        for (size_t i = 0; i < g.size(); ++i) {
            const int n = static_cast<int>(i);
            const graph::Node& node = g.node(n);
            if (g.is_leaf(n) || node.as<op::Gather>() || node.as<op::ScatterAdd>()) materialize(n);
            if (is_grouped(g, n) && forms[group_of.at(n)] == GroupForm::split) materialize(n);
        }
        for (int o : g.outputs) materialize(o);
        for (int n : stored) materialize(n);
        // A contraction reads its operands from buffers, through the views it can read in place;
        // in the fused form (and the chunks form, whose first launch reads them as the fused
        // form does) an operand may instead be a prologue computed as it is read.
        for (size_t gi = 0; gi < groups.size(); ++gi) {
            const FoldGroup& gr = groups[gi];
            if (!gr.contraction) continue;
            for (size_t which = 0; which < g.inputs[size_t(gr.folds[0])].size(); ++which) {
                const int source =
                    contract_operand(g, materialized, gr.folds[0], int(which)).source;
                const bool prologue = forms[gi] != GroupForm::split &&
                                      prologue_fusible(g, materialized, gr.folds[0], source);
                if (!prologue) materialize(source);
            }
        }

        // Settle who computes each materialized node: a map launch needs every fold it reads
        // materialized; a group's launch needs those of other groups materialized and can write
        // only values that fit its spaces. Materializing more can only move nodes to map
        // launches, so this ends.
        // A node that reads a buffer another launch writes after group w's launch stays out of
        // that launch (it would wait for itself): `after[n]`, the groups whose launches node n's
        // writer runs after, its own included.
        std::vector<int> writer;  // per node: group index, or -1 for a map launch
        // Per node, `words` words of bits, one per group.
        const size_t words = (groups.size() + 63) / 64;
        std::vector<uint64_t> after;
        auto after_of = [&](int n) { return after.data() + size_t(n) * words; };
        auto has = [](const uint64_t* bits, int w) { return (bits[w / 64] >> (w % 64)) & 1; };
        std::optional<Partitioned> cycle;  // the group refused for waiting for itself
        std::vector<int> buffers;  // per node below: the computed buffers its launch would read
        std::vector<int> needed;   // and the folds it needs (folds_needed)
        for (bool changed = true; changed;) {
            changed = false;
            cycle.reset();
            writer.assign(g.size(), -2);
            after.assign(g.size() * words, 0);
            for (size_t i = 0; i < g.size(); ++i) {
                const int n = static_cast<int>(i);
                if (!materialized[i] || g.is_leaf(n)) continue;
                const graph::Node& node = g.node(n);
                reads_of(n, buffers, needed);
                // One of those written by another launch after group w's; -1 for none.
                auto waited_for = [&](int w) {
                    for (int b : buffers)
                        if (writer[size_t(b)] != w && has(after_of(b), w)) return b;
                    return -1;
                };
                int w = -1;
                if (is_grouped(g, n))
                    w = static_cast<int>(group_of.at(n));
                else if (!node.as<op::Gather>() && !node.as<op::ScatterAdd>())
                    w = owner_of(needed);
                if (w >= 0 && !is_grouped(g, n) &&
                    (!fits(groups[size_t(w)], n) || waited_for(w) >= 0))
                    w = -1;
                // A fold of a group's one launch (fused or segments) that reads a buffer written
                // after that launch (a gather of an earlier fold's result) would wait for itself.
                if (w >= 0 && is_grouped(g, n) && forms[size_t(w)] != GroupForm::split && !cycle)
                    if (const int b = waited_for(w); b >= 0)
                        cycle = refuse(
                            size_t(w),
                            fmt::format("node %{} ({}) reads node %{} ({}), written by "
                                        "a launch that needs the group's",
                                        n, graph::describe(node), b, graph::describe(g.node(b))));
                writer[i] = w;
                uint64_t* mine = after_of(n);
                for (int b : buffers)
                    for (size_t k = 0; k < words; ++k) mine[k] |= after_of(b)[k];
                if (w >= 0) mine[w / 64] |= uint64_t{1} << (w % 64);
                for (int f : needed) {
                    if (f == n) continue;
                    if (w < 0 || group_of.at(f) != size_t(w)) {
                        materialize(f);
                        changed = true;
                    }
                }
            }
        }

        if (cycle) return std::move(*cycle);
        Plan plan;
        std::vector<Launch> launches;
        // Row launches, one per group with something to write (two for the segments form).
        for (size_t gi = 0; gi < groups.size(); ++gi) {
            const FoldGroup& gr = groups[gi];
            std::vector<int> outs;
            for (size_t i = 0; i < g.size(); ++i)
                if (writer[i] == int(gi)) outs.push_back(int(i));
            if (outs.empty()) continue;
            if (forms[gi] == GroupForm::segments)
                if (auto why = segments_refusal(g, gr, outs, materialized)) return refuse(gi, *why);
            if (gr.contraction && forms[gi] == GroupForm::segments) {
                chunks_launches(gi, outs, plan, launches);
                continue;
            }
            if (gr.contraction) {
                Launch l;
                l.group = static_cast<int>(gi);
                l.kind = contraction_kind(g.node(gr.folds[0]));
                l.contraction = gr.folds[0];
                l.outputs = forms[gi] == GroupForm::split ? std::vector<int>{gr.folds[0]} : outs;
                launches.push_back(std::move(l));
                continue;
            }
            switch (forms[gi]) {
                case GroupForm::split:
                    for (int f : gr.folds) launches.push_back(row_launch(gi, {f}, {f}));
                    break;
                case GroupForm::fused:
                    launches.push_back(row_launch(gi, outs, row_steps(gi, outs)));
                    break;
                case GroupForm::segments:
                    segments_launches(gi, outs, plan, launches);
                    break;
            }
        }
        // Map launches: one per materialized node without a group, merged below by shape.
        for (size_t i = 0; i < g.size(); ++i)
            if (writer[i] == -1) {
                Launch l;
                l.kind = LaunchKind::map;
                l.outputs = {int(i)};
                launches.push_back(std::move(l));
            }
        for (size_t i = 0; i < g.size(); ++i)
            if (materialized[i] && !g.is_leaf(int(i)) && g.node(int(i)).as<op::ScatterAdd>()) {
                Launch l;
                l.kind = LaunchKind::scatter;
                l.scatter = int(i);
                l.outputs = {int(i)};
                launches.push_back(std::move(l));
            }
        plan.launches = order(std::move(launches));
        for (auto& l : plan.launches) {
            l.label = label_of(l);
            l.domain = domain_of(l, g);
            for (int o : l.outputs)
                if (std::find(plan.materialized.begin(), plan.materialized.end(), o) ==
                    plan.materialized.end())
                    plan.materialized.push_back(o);
            if (rules(l.kind).has_faults && rules(l.kind).has_faults(l, g)) plan.has_faults = true;
            for (int o : l.outputs)
                if (g.node(o).as<op::Gather>()) plan.has_faults = true;
        }
        // Each launch of a group not split, as its writer would read (fusion_legality.hpp).
        for (const auto& l : plan.launches) {
            if (!rules(l.kind).fusible || forms[size_t(l.group)] == GroupForm::split) continue;
            if (auto why = memo ? memo->refusal(materialized, l)
                                : rules(l.kind).fusible(g, materialized, l))
                return refuse(size_t(l.group), *why);
        }
        return {std::move(plan), std::nullopt};
    }

    // The segments form (segments_refusal passed it): a segments launch writing every fold's
    // segment values, then a row launch folding them.
    void segments_launches(size_t gi, const std::vector<int>& outs, Plan& plan,
                           std::vector<Launch>& launches) {
        const FoldGroup& gr = groups[gi];
        Launch values = row_launch(gi, {}, gr.folds);
        values.kind = LaunchKind::segments;
        Launch fold = row_launch(gi, outs, row_steps(gi, outs));
        for (int f : gr.folds) {
            plan.scratch.push_back(partial_scratch(g, values, f));
            values.partials[f] = fold.partials[f] = static_cast<int>(plan.scratch.size() - 1);
        }
        launches.push_back(std::move(values));
        launches.push_back(std::move(fold));
    }

    // A matmul's segments form (segments_refusal passed it): a contract_chunks launch writing
    // each chunk's sums, then a chunk_sum launch adding them and storing the group's outputs.
    void chunks_launches(size_t gi, const std::vector<int>& outs, Plan& plan,
                         std::vector<Launch>& launches) {
        const int c = groups[gi].folds[0];
        Launch sums;
        sums.group = static_cast<int>(gi);
        sums.kind = LaunchKind::contract_chunks;
        sums.contraction = c;
        Launch total = sums;
        total.kind = LaunchKind::chunk_sum;
        total.outputs = outs;
        plan.scratch.push_back(partial_scratch(g, sums, c));
        sums.partials[c] = total.partials[c] = static_cast<int>(plan.scratch.size() - 1);
        launches.push_back(std::move(sums));
        launches.push_back(std::move(total));
    }

    Launch row_launch(size_t gi, std::vector<int> outputs, std::vector<int> steps) {
        const FoldGroup& gr = groups[gi];
        Launch l;
        l.group = static_cast<int>(gi);
        l.kind = LaunchKind::row;
        l.outputs = std::move(outputs);
        l.row_steps = std::move(steps);
        l.full = gr.full;
        l.axes = gr.axes;
        l.rows = rows_of(gr);
        l.extent = extent_of(gr);
        return l;
    }

    // The folds and row-space maps of a fused group that its outputs need, in topological order.
    std::vector<int> row_steps(size_t gi, const std::vector<int>& outs) {
        const FoldGroup& gr = groups[gi];
        std::set<int> needed;
        for (int o : outs)
            for (int r : reach(g, o, [&](int i) { return materialized[size_t(i)] && i != o; }))
                if (!g.is_leaf(r) && (!materialized[size_t(r)] || r == o)) needed.insert(r);
        // Everything the folds read too.
        for (int f : gr.folds)
            for (int r : reach(g, f, [&](int i) { return materialized[size_t(i)] && i != f; }))
                if (!g.is_leaf(r) && (!materialized[size_t(r)] || r == f)) needed.insert(r);
        std::vector<int> steps;
        for (int n : needed) {
            const bool in_group = is_fold(g, n) && group_of.count(n) && group_of.at(n) == gi;
            const bool row_map = inlineable(g.node(n)) && !g.node(n).as<op::View>() &&
                                 g.node(n).numel() == rows_of(gr) && g.node(n).shape != gr.full &&
                                 owner(n) == int(gi);
            if (in_group || row_map) steps.push_back(n);
        }
        std::sort(steps.begin(), steps.end());
        return steps;
    }

    // Topological order of launches by what they read and write (stable otherwise); merges
    // map launches of one shape whose order allows it.
    std::vector<Launch> order(std::vector<Launch> launches) {
        // Scratch buffer k is the token -2 - k: written by a segments launch, read by the next.
        auto writes = [&](const Launch& l) {
            std::set<int> w(l.outputs.begin(), l.outputs.end());
            if (rules(l.kind).order.writes_partials)
                for (const auto& [fold, k] : l.partials) w.insert(-2 - k);
            return w;
        };
        auto reads = [&](const Launch& l) {
            const KindOrder& kind = rules(l.kind).order;
            std::set<int> r;
            std::vector<int> roots = l.outputs;
            if (kind.in_place) roots = g.inputs[size_t(l.scatter)];
            for (int o : roots)
                for (int x : reach(g, o, [&](int i) { return materialized[size_t(i)] && i != o; }))
                    if (materialized[size_t(x)] && !g.is_leaf(x) && (x != o || kind.in_place))
                        r.insert(x);
            for (int o : l.outputs) r.erase(o);
            if (kind.in_place) r.insert(l.scatter);  // after its base copy
            if (kind.reads_partials)
                for (const auto& [fold, k] : l.partials) r.insert(-2 - k);
            if (kind.writes_partials) {
                // What its folds (its contraction) read.
                std::vector<int> read;
                for (int f : l.row_steps) read.push_back(g.inputs[size_t(f)][0]);
                if (l.contraction >= 0) read = g.inputs[size_t(l.contraction)];
                for (int in : read)
                    for (int x : reach(g, in, [&](int i) { return materialized[size_t(i)]; }))
                        if (materialized[size_t(x)] && !g.is_leaf(x)) r.insert(x);
            }
            return r;
        };
        const size_t n = launches.size();
        std::map<int, std::vector<size_t>> writers;  // node or scratch token -> launches writing it
        for (size_t j = 0; j < n; ++j)
            for (int x : writes(launches[j])) writers[x].push_back(j);
        std::vector<std::set<size_t>> after(n);  // launch i runs after these
        for (size_t i = 0; i < n; ++i) {
            const bool scatter_i = rules(launches[i].kind).order.in_place;
            for (int x : reads(launches[i])) {
                auto w = writers.find(x);
                if (w == writers.end()) continue;
                for (size_t j : w->second) {
                    if (i == j) continue;
                    // A scatter's output is written by its base copy (a map launch) and then
                    // the scatter: readers wait for the scatter, the scatter for the copy.
                    const bool scatter_j = rules(launches[j].kind).order.in_place;
                    if (x >= 0 && g.node(x).as<op::ScatterAdd>() && !scatter_j && !scatter_i)
                        continue;
                    after[i].insert(j);
                }
            }
        }
        std::vector<Launch> out;
        std::vector<char> done(n, 0);
        std::vector<size_t> position(n, 0);
        for (size_t placed = 0; placed < n; ++placed) {
            bool progressed = false;
            for (size_t i = 0; i < n; ++i) {
                if (done[i]) continue;
                bool ready = true;
                for (size_t j : after[i]) ready = ready && done[j];
                if (!ready) continue;
                done[i] = 1;
                progressed = true;
                // Merge into an earlier map launch of the same shape when nothing in between is
                // needed first.
                Launch& l = launches[i];
                bool merged = false;
                if (rules(l.kind).order.merges) {
                    size_t last_dep = 0;
                    bool any = false;
                    for (size_t j : after[i]) {
                        last_dep = std::max(last_dep, position[j]);
                        any = true;
                    }
                    for (size_t k = any ? last_dep + 1 : 0; k < out.size() && !merged; ++k)
                        if (rules(out[k].kind).order.merges && out[k].kind == l.kind &&
                            g.node(out[k].outputs[0]).shape == g.node(l.outputs[0]).shape) {
                            out[k].outputs.insert(out[k].outputs.end(), l.outputs.begin(),
                                                  l.outputs.end());
                            position[i] = k;
                            merged = true;
                        }
                }
                if (!merged) {
                    position[i] = out.size();
                    out.push_back(std::move(l));
                }
                break;
            }
            if (!progressed) fail("internal: the plan's launches depend on each other in a cycle");
        }
        return out;
    }

    std::string label_of(const Launch& l) const {
        std::vector<std::string> labels;
        for (int o : l.outputs) {
            const std::string& lab = g.node(o).label;
            if (!lab.empty() && std::find(labels.begin(), labels.end(), lab) == labels.end())
                labels.push_back(lab);
        }
        return fmt::format("{}", fmt::join(labels, "_"));
    }
};

}  // namespace

const char* name(GroupForm f) {
    constexpr const char* kNames[] = {"fused", "split", "segments"};  // GroupForm's order
    return kNames[static_cast<size_t>(f)];
}

std::pair<DType, int64_t> partial_scratch(const GraphView& g, const Launch& l, int n) {
    if (is_contraction(g.node(n)))
        return {DType::f32, ops::contraction_chunks(contract_shape(g, n).k) * g.node(n).numel()};
    return {g.node(n).dtype, l.rows * graph::segment_count(l.extent)};
}

Partitioned partition(const GraphView& g, const std::vector<FoldGroup>& groups,
                      const std::vector<GroupForm>& forms, const std::vector<int>& stored,
                      RefusalMemo* memo) {
    return Builder{g, groups, forms, stored, memo, {}, {}}.build();
}

Plan partition_or_split(const GraphView& g, const std::vector<FoldGroup>& groups,
                        std::vector<GroupForm>& forms, std::vector<FusionRefusal>* refusals,
                        const std::vector<int>& stored) {
    // Each refusal splits a group that was not split, so this ends.
    for (;;) {
        Partitioned p = partition(g, groups, forms, stored);
        if (!p.refusal) return std::move(p.plan);
        if (refusals) refusals->push_back(*p.refusal);
        forms.at(static_cast<size_t>(p.refusal->group)) = GroupForm::split;
    }
}

}  // namespace kiln::plan
