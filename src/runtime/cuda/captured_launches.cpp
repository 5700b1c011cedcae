// captured_launches: a captured graph's kernel launches found as its nodes, and their buffer
// arguments moved in the instantiated graph (see captured_launches.hpp).
#include "runtime/cuda/captured_launches.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS

#include <algorithm>
#include <cstring>

#include "runtime/cuda/driver_api.hpp"

namespace kiln::cuda {

namespace {

// Whether `params` (a kernel node's) launch `l`: the same function, grid, block and argument
// values. A node holds each argument at its own size (8 bytes for an address).
bool same_launch(const CUDA_KERNEL_NODE_PARAMS& params, const CapturedLaunch& l) {
    if (params.func != l.function || params.gridDimX != l.grid || params.gridDimY != 1 ||
        params.gridDimZ != 1 || params.blockDimX != l.block || params.blockDimY != 1 ||
        params.blockDimZ != 1 || params.extra != nullptr)
        return false;
    if (l.values.empty()) return true;
    if (params.kernelParams == nullptr) return false;
    for (size_t i = 0; i < l.values.size(); ++i) {
        const size_t bytes = l.sizes[i] == 0 ? sizeof(uint64_t) : l.sizes[i];
        if (params.kernelParams[i] == nullptr ||
            std::memcmp(params.kernelParams[i], &l.values[i], bytes) != 0)
            return false;
    }
    return true;
}

}  // namespace

bool find_nodes(CUgraph graph, std::vector<CapturedLaunch>& launches) {
    const DriverApi& api = driver();
    size_t count = 0;
    if (api.cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return false;
    std::vector<CUgraphNode> nodes(count);
    if (count > 0 && api.cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return false;
    size_t kernels = 0;
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type{};
        if (api.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return false;
        if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
        ++kernels;
        CUDA_KERNEL_NODE_PARAMS params{};
        if (api.cuGraphKernelNodeGetParams(node, &params) != CUDA_SUCCESS) return false;
        const auto partner = std::find_if(launches.begin(), launches.end(), [&](const auto& l) {
            return l.node == nullptr && same_launch(params, l);
        });
        if (partner == launches.end()) return false;
        partner->node = node;
    }
    return kernels == launches.size();
}

bool move_arguments(CUgraphExec exec, CaptureLog& log,
                    std::span<const std::pair<CUdeviceptr, CUdeviceptr>> moves) {
    for (const auto& [from, to] : moves) {
        if (std::find(log.held.begin(), log.held.end(), from) != log.held.end()) return false;
        for (const auto& other : moves)
            if (other.first == from && other.second != to) return false;
    }
    // Every launch's new values first; the nodes of those that change, then the log.
    std::vector<std::pair<CapturedLaunch*, std::vector<uint64_t>>> changed;
    for (CapturedLaunch& l : log.launches) {
        std::vector<uint64_t> values = l.values;
        bool moved = false;
        for (size_t i = 0; i < values.size(); ++i) {
            if (l.sizes[i] != 0) continue;
            for (const auto& [from, to] : moves)
                if (values[i] == from) {
                    values[i] = to;
                    moved = moved || to != from;
                    break;
                }
        }
        if (moved) changed.emplace_back(&l, std::move(values));
    }
    const DriverApi& api = driver();
    for (auto& [l, values] : changed) {
        std::vector<void*> arguments(values.size());
        for (size_t i = 0; i < values.size(); ++i) arguments[i] = &values[i];
        CUDA_KERNEL_NODE_PARAMS params{};
        params.func = l->function;
        params.gridDimX = l->grid;
        params.gridDimY = params.gridDimZ = 1;
        params.blockDimX = l->block;
        params.blockDimY = params.blockDimZ = 1;
        params.kernelParams = arguments.data();
        check(api.cuGraphExecKernelNodeSetParams(exec, l->node, &params),
              "cuGraphExecKernelNodeSetParams (a recording's arguments moved)");
        l->values = std::move(values);
    }
    return true;
}

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
