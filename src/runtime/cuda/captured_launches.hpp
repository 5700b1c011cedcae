// captured_launches: the kernel launches of a stream capture (CudaDevice::record), each found
// again as its node of the captured graph, so that an instantiated graph's buffer arguments can
// be moved to other memory in place (Recording::rebind) instead of capturing the work again.
#pragma once

#ifdef KILN_HAVE_CUDA_HEADERS

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <cuda.h>

namespace kiln::cuda {

struct CapturedLaunch {
    CUfunction function = nullptr;
    unsigned grid = 0, block = 0;
    std::vector<uint64_t> values;  // each argument's value as launched
    std::vector<uint8_t> sizes;    // each argument's bytes; 0 where it is a buffer's address
    CUgraphNode node = nullptr;    // its node in the captured graph, once found
};

// What the recording thread gave the stream while it was captured.
struct CaptureLog {
    std::vector<CapturedLaunch> launches;
    std::vector<CUdeviceptr> held;  // memory that fills and copies name: never moved
};

// Finds each launch's node in `graph` by its function, grid, block and argument values. Launches
// alike in all of those are interchangeable (a move changes them alike). False where a kernel
// node or a launch is left without a partner, or the driver fails; never throws.
bool find_nodes(CUgraph graph, std::vector<CapturedLaunch>& launches);

// Moves every buffer argument of the log's launches whose address is a move's first to its
// second, updating the changed launches' nodes in `exec` (found by find_nodes). False, changing
// nothing, where a moved address is one a fill or copy holds, or two moves start at one
// address.
bool move_arguments(CUgraphExec exec, CaptureLog& log,
                    std::span<const std::pair<CUdeviceptr, CUdeviceptr>> moves);

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
