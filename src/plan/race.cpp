// race: one launch's candidate points timed by the Tuner, the winner kept (see race.hpp).
#include "plan/race.hpp"

#include <functional>
#include <memory>

#include <fmt/format.h>

#include "ir/hash.hpp"
#include "kiln/tune.hpp"

namespace kiln::plan {

std::string race_key(const LoweredLaunch& first) {
    const std::string key = fmt::format("{}:{}", first.kernel.name,
                                        ir::hex(ir::structural_hash(first.kernel)).substr(0, 16));
    return first.size_bucket ? fmt::format("{}:n<={}", key, first.size_bucket) : key;
}

std::string range_key(const LoweredLaunch& first_point) {
    return first_point.size_bucket ? race_key(first_point) : "";
}

namespace {

std::string range_op(const Launch& l) {
    return fmt::format("graph_{}_range", name(l.kind));
}

}  // namespace

std::optional<size_t> range_winner(Device& device, const Launch& l, const std::string& key) {
    if (key.empty()) return std::nullopt;
    const auto point = Tuner::process_default().winner(device.info().id, range_op(l), key);
    if (!point) return std::nullopt;
    for (size_t i = 0; i < l.domain.size(); ++i)
        if (to_string(l.kind, l.domain[i]) == *point) return i;
    return std::nullopt;
}

void remember_range_winner(Device& device, const Launch& l, const std::string& key,
                           const std::string& point) {
    if (!key.empty()) Tuner::process_default().record(device.info().id, range_op(l), key, point);
}

CompiledLaunch race_launch(Device& device, const Launch& l,
                           const std::vector<CompiledLaunch>& candidates,
                           const LoweredLaunch& first_lowered, double budget_ms,
                           RunBuffers& buffers, double* us) {
    // In-place launches (scatter) are raced on a copy of their output's state before the
    // launch, restored before every timed run.
    std::shared_ptr<Buffer> saved;
    const int inplace = l.kind == LaunchKind::scatter ? l.scatter : -1;
    if (inplace >= 0) {
        const Buffer& b = *buffers.nodes[size_t(inplace)];
        saved = std::make_shared<Buffer>(device, b.dtype(), b.count());
        device.copy(saved->memory(), b.memory(), b.bytes());
    }
    std::function<void()> restore;
    if (saved)
        restore = [&] {
            Buffer& b = *buffers.nodes[size_t(inplace)];
            device.copy(b.memory(), saved->memory(), b.bytes());
        };
    const CompiledLaunch& first = candidates.at(0);
    std::vector<std::function<void()>> runs;
    for (const CompiledLaunch& cl : candidates) runs.push_back([&] { launch(cl, buffers); });
    // On a miss the tuner asks each point for its time in turn: all of them are timed together
    // at the first ask (in rounds, so that the machine's slow stretches fall on every point).
    std::vector<double> medians;
    Tuned<bool> race(fmt::format("graph_{}", name(l.kind)), race_key(first_lowered), device);
    for (size_t i = 0; i < candidates.size(); ++i)
        race.variant(
            candidates[i].record.schedule,
            [&, i](int iters) -> Timed<bool> {
                if (iters == 1)
                    return {true, time_dispatches_within(device, 1, budget_ms, runs[i], restore)};
                if (medians.empty())
                    medians = time_dispatches_in_turns(device, iters, budget_ms, runs, restore);
                return {true, medians.at(i)};
            },
            candidates[i].kernel->identity());
    race.run();
    const auto& rep = race.report();
    CompiledLaunch chosen = first;
    for (const CompiledLaunch& cl : candidates)
        if (cl.record.schedule == rep.winner) chosen = cl;
    chosen.record.winner_by_model = first.record.schedule;
    chosen.record.raced = !rep.hit;
    chosen.record.race = rep.variant_ms;
    if (rep.hit) chosen.record.not_raced = "the tuner's cached decision";
    if (us) {
        if (restore) restore();
        *us = device.time_ms([&] { launch(chosen, buffers); }) * 1e3;
    }
    return chosen;
}

}  // namespace kiln::plan
