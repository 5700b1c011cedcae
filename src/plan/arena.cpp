// arena: slots by liveness for a kept executable's buffers (see arena.hpp).
#include "plan/arena.hpp"

#include <algorithm>
#include <limits>

namespace kiln::plan {

namespace {

constexpr size_t kSlotAlignment = 256;

size_t slot_size(size_t bytes) {
    return std::max<size_t>(kSlotAlignment,
                            (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment);
}

}  // namespace

size_t ArenaPlan::bytes() const {
    size_t total = 0;
    for (size_t b : slot_bytes) total += b;
    return total;
}

ArenaPlan plan_arena(const Executable& e, const GraphView& g) {
    const int launches = static_cast<int>(e.launches.size());
    std::vector<int> first(g.size(), launches), last(g.size(), -1);
    for (int i = 0; i < launches; ++i)
        for (int b : e.launches[size_t(i)].buffers)
            if (b >= 0) {
                first[size_t(b)] = std::min(first[size_t(b)], i);
                last[size_t(b)] = std::max(last[size_t(b)], i);
            }
    std::vector<char> output(g.size(), 0);
    for (int o : g.outputs) {
        last[size_t(o)] = std::numeric_limits<int>::max();
        output[size_t(o)] = 1;
    }

    ArenaPlan a;
    a.slot.assign(g.size(), -1);
    std::vector<int> free_slots;
    const auto take = [&](int n) {
        const size_t need = slot_size(g.node(n).numel() * size_of(g.node(n).dtype));
        auto best = free_slots.end();
        // An output's slot is its own: the caller may hold it past the call while later calls
        // run their intermediates (kiln/program.hpp's output sets).
        if (!output[size_t(n)])
            for (auto it = free_slots.begin(); it != free_slots.end(); ++it)
                if (a.slot_bytes[size_t(*it)] >= need &&
                    (best == free_slots.end() ||
                     a.slot_bytes[size_t(*it)] < a.slot_bytes[size_t(*best)]))
                    best = it;
        if (best != free_slots.end()) {
            a.slot[size_t(n)] = *best;
            free_slots.erase(best);
        } else {
            a.slot[size_t(n)] = static_cast<int>(a.slot_bytes.size());
            a.slot_bytes.push_back(need);
        }
    };
    // Nodes no launch names (an empty plan's outputs) get slots of their own first.
    for (int n : e.allocate)
        if (first[size_t(n)] == launches) take(n);
    for (int i = 0; i < launches; ++i) {
        for (int n : e.allocate)
            if (first[size_t(n)] == i) take(n);
        for (int n : e.allocate)
            if (last[size_t(n)] == i) free_slots.push_back(a.slot[size_t(n)]);
    }
    return a;
}

RunBuffers allocate_arena(const Executable& e, const GraphView& g, const ArenaPlan& arena) {
    std::vector<std::shared_ptr<DeviceMemory>> memory;
    for (size_t bytes : arena.slot_bytes) memory.push_back(e.device->allocate(bytes));
    RunBuffers run;
    run.nodes.resize(g.size());
    for (int n : e.allocate) {
        const graph::Node& node = g.node(n);
        run.nodes[size_t(n)] =
            std::make_shared<Buffer>(*e.device, node.dtype, static_cast<size_t>(node.numel()),
                                     memory[size_t(arena.slot[size_t(n)])]);
    }
    allocate_scratch(e, run);
    return run;
}

}  // namespace kiln::plan
