// pipeline: resolve() (resolve.hpp), the passes a resolve's graph goes through, in order:
//   view          the graph behind the outputs, in one order, with its hash (graph_view.cpp)
//   replay        a cached executable for the hash, device and options runs at once; else:
//   partition     fold groups, each in the form the cost model estimates cheapest among those
//   and fusion    the legality check allows, generators inlined or stored (choose.cpp,
//                 partition.cpp, fusion_legality.cpp)
//   domains       each launch's schedule points, by its kind (kinds/)
//   costs         the points ranked by the roofline (roofline.cpp)
//   lowering      the best point, and the next ones when racing, as kernels (lower_launch.cpp)
//   compile       every candidate in one batch (compile_all)
//   race          each launch's candidates timed within the budget, the winner kept (race.cpp)
// KILN_DUMP=plan prints the graph, the fusion decisions and every point's estimate.
#include "plan/resolve.hpp"

#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "kiln/error.hpp"
#include "kiln/tune.hpp"
#include "plan/choose.hpp"
#include "plan/device_facts.hpp"
#include "plan/graph_view.hpp"
#include "plan/lower_launch.hpp"
#include "plan/partition.hpp"
#include "plan/plan_dump.hpp"
#include "plan/profile.hpp"
#include "plan/progress.hpp"
#include "plan/race.hpp"
#include "plan/roofline.hpp"

namespace kiln::plan {

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

bool env_off(const char* name) {
    const char* v = std::getenv(name);
    return v && std::string(v) == "0";
}

bool env_on(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::string(v) != "0";
}

struct CacheKey {
    const Device* device;
    uint64_t hash;
    bool race, fuse, wide;
    bool operator==(const CacheKey&) const = default;
};
struct KeyHash {
    size_t operator()(const CacheKey& k) const {
        return k.hash ^ (reinterpret_cast<uintptr_t>(k.device) * 0x9e3779b97f4a7c15ull) ^
               (k.race ? 1 : 0) ^ (k.fuse ? 2 : 0) ^ (k.wide ? 4 : 0);
    }
};

struct State {
    std::mutex mutex;
    std::unordered_map<CacheKey, std::shared_ptr<const Executable>, KeyHash> plans;
    Counters counters;
    uint64_t launch_index = 0;
};
State& state() {
    static State s;
    return s;
}

thread_local std::shared_ptr<const Executable> last;

// Runs one launch; when `timed`, on the device's clock (waiting for the device), returning its
// microseconds; else -1.
double run_launch(Device& device, const CompiledLaunch& l, RunBuffers& buffers, bool timed) {
    if (!timed) {
        launch(l, buffers);
        return -1;
    }
    return device.time_ms([&] { launch(l, buffers); }) * 1e3;
}

// Prints the launches timed for KILN_TIME_RANGE (us[i] >= 0) of a resolve whose first launch
// is number `first`, those in the range.
void print_launch_times(uint64_t first, const Executable& e, const std::vector<double>& us) {
    for (size_t i = 0; i < us.size(); ++i)
        if (us[i] >= 0 && time_launch(first + i))
            print_launch_time(first + i, e.launches[i].record.name, e.launches[i].record.schedule,
                              us[i]);
}

// Each launch's candidate points, lowered: the model's best first, then the next ones when
// racing (where the launch's size range has a raced winner, race.hpp, that point alone); every
// candidate's kernel in `kernels`, in launch order.
struct Candidates {
    std::vector<std::vector<size_t>> points;  // per launch: indices into its domain
    std::vector<std::vector<size_t>> kernel;  // per launch: indices into `kernels`, `lowered`
    std::vector<ir::Kernel> kernels;
    std::vector<LoweredLaunch> lowered;
    std::vector<std::string> range_keys;  // per launch: range_key ("" unless racing)
    std::vector<char> range_winner;       // per launch: its one point is the range's winner
};

// The time ranking and lowering take goes to report.rank_us and report.lower_us.
Candidates lower_candidates(const GraphView& g, const std::vector<char>& materialized, Plan& plan,
                            const DeviceFacts& facts, Device& device, bool race,
                            ResolveReport& report) {
    Candidates c;
    LoweringMemo lowering(g, materialized);
    for (Launch& l : plan.launches) {
        auto t0 = Clock::now();
        const auto order = rank_points(g, materialized, l, facts);
        report.rank_us += us_since(t0);
        l.chosen = order[0];
        const size_t count = race ? std::min<size_t>(kRaceTop, order.size()) : 1;
        c.points.emplace_back(order.begin(), order.begin() + long(count));
        t0 = Clock::now();
        // The range key is read from the domain's first point, lowered once: a candidate too
        // where the ranking kept it.
        std::optional<LoweredLaunch> first;
        if (race) first = lowering.lower(l, l.domain[0]);
        c.range_keys.push_back(first ? range_key(*first) : "");
        const auto winner = range_winner(device, l, c.range_keys.back());
        if (winner) c.points.back() = {*winner};
        c.range_winner.push_back(winner ? 1 : 0);
        c.kernel.emplace_back();
        for (size_t p : c.points.back()) {
            if (p == 0 && first) {
                c.lowered.push_back(std::move(*first));
                first.reset();
            } else {
                c.lowered.push_back(lowering.lower(l, l.domain[p]));
            }
            c.kernels.push_back(c.lowered.back().kernel);
            c.kernel.back().push_back(c.kernels.size() - 1);
        }
        report.lower_us += us_since(t0);
    }
    return c;
}

// The passes of a replay miss, in order (docs/graph.md): partition and fusion, domains and
// costs, lowering, compiling, racing; running the graph once in doing so. Returns the
// executable. With `launch_us`, each non-empty launch's device microseconds (a raced launch's
// from one more run of the winner), -1 for an empty one.
std::shared_ptr<const Executable> build_and_run(const GraphView& g, Device& device,
                                                const Options& options, RunBuffers& buffers,
                                                ResolveReport& report,
                                                std::vector<double>* launch_us) {
    auto t0 = Clock::now();
    const DeviceFacts& facts = device_facts(device);
    const bool dump = plan_dump_enabled();
    // Partition and fusion: the plan the cost model estimates cheapest, each launch with the
    // schedule domain of its kind, every form the legality check refused with its reason
    // (choose.cpp, partition.cpp, fusion_legality.cpp, kinds/).
    PlanDecisions decisions;
    Plan plan = choose_plan(g, facts, options.fuse, &decisions);
    const auto materialized = materialized_set(g, plan);
    report.choose_us = us_since(t0);
    // Costs and lowering: each launch's points ranked by the roofline, the candidates lowered.
    Candidates cands = lower_candidates(g, materialized, plan, facts, device, options.race, report);
    report.extract_us = us_since(t0);

    // Compiling: every candidate of every launch in one batch.
    Progress progress;
    progress.step(fmt::format("compiling {} kernel{} for {} ({} launch{})", cands.kernels.size(),
                              cands.kernels.size() == 1 ? "" : "s", device.info().name,
                              plan.launches.size(), plan.launches.size() == 1 ? "" : "es"));
    t0 = Clock::now();
    const auto compiled = compile_all(device, cands.kernels);
    report.compile_us = us_since(t0);

    // Racing: the launches in order on the graph's buffers, each raced launch's points sharing
    // the race budget (KILN_RACE=thorough: TUNE_ITERS runs each).
    auto exec = executable_for(plan, g, device);
    exec->fusion_decisions = decisions.lines;
    exec->fusion_refusals = decisions.refused;
    size_t raced_points = 0, raced_launches = 0;
    for (size_t li = 0; li < plan.launches.size(); ++li)
        if (cands.points[li].size() > 1 && !is_empty(plan.launches[li], g)) {
            raced_points += cands.points[li].size();
            ++raced_launches;
        }
    const double point_budget_ms =
        options.thorough ? std::numeric_limits<double>::infinity()
                         : kRaceBudgetMs / static_cast<double>(std::max<size_t>(raced_points, 1));
    size_t racing = 0;
    buffers = begin_run(*exec, g);
    if (launch_us) launch_us->assign(plan.launches.size(), -1);
    for (size_t li = 0; li < plan.launches.size(); ++li) {
        const Launch& l = plan.launches[li];
        const bool empty = is_empty(l, g);
        std::vector<CompiledLaunch> made;
        for (size_t c = 0; c < cands.points[li].size(); ++c) {
            const size_t k = cands.kernel[li][c], point = cands.points[li][c];
            CompiledLaunch cl =
                compiled_launch(l, l.domain[point], cands.lowered[k], compiled[k], empty);
            cl.record.estimate_us = estimate(g, materialized, l, l.domain[point], facts).us;
            made.push_back(std::move(cl));
        }
        double* us = launch_us ? &(*launch_us)[li] : nullptr;
        CompiledLaunch chosen = made[0];
        chosen.record.winner_by_model = to_string(l.kind, l.domain[l.chosen]);
        if (empty) {
            chosen.record.not_raced = "nothing to compute";
        } else if (made.size() < 2) {
            chosen.record.not_raced = !options.race            ? "racing is off (KILN_RACE=0)"
                                      : cands.range_winner[li] ? "its size range's raced winner"
                                                               : "one point";
            const double t = run_launch(device, chosen, buffers, us != nullptr);
            if (us) *us = t;
        } else {
            const auto t1 = Clock::now();
            progress.step(fmt::format("racing launch {} of {} ({}): {} schedules", ++racing,
                                      raced_launches, made[0].record.name, made.size()));
            chosen = race_launch(device, l, made, cands.lowered[cands.kernel[li][0]],
                                 point_budget_ms, buffers, us);
            remember_range_winner(device, l, cands.range_keys[li], chosen.record.schedule);
            report.race_us += us_since(t1);
        }
        // The point that runs, for the plan a program file keeps.
        for (size_t c = 0; c < made.size(); ++c)
            if (made[c].kernel == chosen.kernel && made[c].grid == chosen.grid)
                plan.launches[li].chosen = cands.points[li][c];
        exec->launches.push_back(std::move(chosen));
    }
    exec->plan = std::make_shared<const Plan>(plan);
    if (dump)
        fmt::print(
            stderr, "{}",
            plan_dump(g, materialized, plan, decisions, exec->launches, facts, device.info().id));
    return exec;
}

void resolve_on(Device& device, const std::vector<graph::NodeRef>& outputs) {
    const auto t_start = Clock::now();
    const GraphView g = view_graph(outputs);
    bool pending = false;
    for (int o : g.outputs) pending = pending || !g.is_leaf(o);
    if (!pending) return;
    ResolveReport report;
    RunBuffers buffers;
    const double view_us = us_since(t_start);
    const auto exec = run_graph(g, device, buffers, report);
    report.plan_us += view_us;
    check_faults(g, buffers);
    for (int o : g.outputs) {
        graph::Node& n = *g.nodes[size_t(o)];
        if (n.resolved()) continue;
        n.buffer = buffers.nodes[size_t(o)];
        n.inputs.clear();
    }
    last = exec;
    report.total_us = us_since(t_start);
    last_report() = report;
    if (resolve_profile_enabled()) print_report(report);
}

}  // namespace

std::shared_ptr<const Executable> run_graph(const GraphView& g, Device& device, RunBuffers& buffers,
                                            ResolveReport& report) {
    const auto t_start = Clock::now();
    const Options opts = options();
    const CacheKey key{&device, g.hash, opts.race, opts.fuse, opts.wide_index};
    std::shared_ptr<const Executable> exec;
    uint64_t index = 0;  // the first launch's number (KILN_TIME_RANGE)
    {
        // One lock per hit: the plan, its launches' indices and the counters.
        std::lock_guard lock(state().mutex);
        if (auto it = state().plans.find(key); it != state().plans.end()) {
            exec = it->second;
            index = state().launch_index;
            state().launch_index += exec->launches.size();
            state().counters.hits++;
            state().counters.launches += exec->launches.size();
        }
    }
    report.plan_us = us_since(t_start);
    if (exec) {
        report.hit = true;
        const auto t0 = Clock::now();
        buffers = begin_run(*exec, g);
        if (!time_range_on()) {
            for (const CompiledLaunch& l : exec->launches) launch(l, buffers);
            report.launch_us = us_since(t0);
        } else {
            // KILN_TIME_RANGE: off the replay's usual path (no vector of times per hit).
            std::vector<double> us(exec->launches.size());
            for (size_t i = 0; i < us.size(); ++i) {
                const CompiledLaunch& l = exec->launches[i];
                us[i] = run_launch(device, l, buffers, !l.empty && time_launch(index + i));
            }
            report.launch_us = us_since(t0);
            print_launch_times(index, *exec, us);
        }
    } else {
        std::vector<double> us;
        exec = build_and_run(g, device, opts, buffers, report, time_range_on() ? &us : nullptr);
        {
            std::lock_guard lock(state().mutex);
            state().plans[key] = exec;
            index = state().launch_index;
            state().launch_index += exec->launches.size();
            state().counters.misses++;
            state().counters.launches += exec->launches.size();
        }
        print_launch_times(index, *exec, us);
    }
    report.launches = static_cast<int>(exec->launches.size());
    return exec;
}

Options options_from_environment() {
    Options read{.fuse = !env_off("KILN_FUSE"), .wide_index = env_on("KILN_WIDE_INDEX")};
    const char* race = std::getenv("KILN_RACE");
    const std::string value = race ? race : "";
    if (value == "0")
        read.race = false;
    else if (value == "thorough")
        read.thorough = true;
    else if (!value.empty() && value != "1")
        fail(
            "KILN_RACE is '{}'; expected 1 (race within a budget, the default), thorough (time "
            "every raced schedule {} times) or 0 (the cost model's pick, unraced)",
            value, TUNE_ITERS);
    return read;
}

Options& options() {
    static Options o = options_from_environment();
    return o;
}

void resolve(const std::vector<graph::NodeRef>& outputs) {
    // One plan per device: a resolve of tensors on several devices plans each device's apart.
    bool one_device = true;
    for (const auto& o : outputs) one_device = one_device && o->device == outputs.front()->device;
    if (one_device && !outputs.empty()) return resolve_on(*outputs.front()->device, outputs);
    std::map<Device*, std::vector<graph::NodeRef>> by_device;
    std::vector<Device*> order;
    for (const auto& o : outputs) {
        if (!by_device.count(o->device)) order.push_back(o->device);
        by_device[o->device].push_back(o);
    }
    for (Device* d : order) resolve_on(*d, by_device[d]);
}

Counters counters() {
    std::lock_guard lock(state().mutex);
    return state().counters;
}

void clear_plan_cache() {
    std::lock_guard lock(state().mutex);
    state().plans.clear();
}

std::shared_ptr<const Executable> last_executable() {
    return last;
}

}  // namespace kiln::plan
