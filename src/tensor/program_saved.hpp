// Between a compiled program's signatures in memory (program_replay.hpp's Body) and in its file
// (program_file.hpp): a traced signature written out with the data it captured, and a saved
// signature's graph built again on a device for a call.
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/resolve.hpp"
#include "tensor/program_file.hpp"
#include "tensor/program_replay.hpp"

namespace kiln::program {

// The data a program's signatures captured, each buffer once: a file's blobs, and the buffers
// they were uploaded to or that a trace captured (the blob each holds).
class BlobTable {
  public:
    std::vector<SavedBlob> blobs;

    // The blob holding `buffer`'s data (read from its device the first time).
    int blob_of(const std::shared_ptr<Buffer>& buffer);
    // Blob b on `device` (uploaded the first time).
    std::shared_ptr<Buffer> on(int b, Device& device);

  private:
    std::map<const Buffer*, int> blob_of_buffer_;
    std::map<std::pair<int, Device*>, std::shared_ptr<Buffer>> uploaded_;
};

// A traced signature as the file keeps it: its graph (leaves bound to inputs or blobs), and its
// plan on the device it ran on with the binaries of its kernels (none without an executable).
SavedSignature save_signature(const Body& body,
                              const std::vector<std::pair<DType, graph::Shape>>& inputs,
                              const plan::Options& options, BlobTable& blobs);
// The plan of `body` as the file keeps it (null without an executable).
std::unique_ptr<SavedPlan> save_plan(const Body& body, const plan::Options& options);

// A saved signature's graph on `device` with the call's inputs and the blobs bound to its
// leaves: the view (in the saved order) and each leaf's source.
struct BuiltGraph {
    plan::GraphView view;
    std::vector<LeafSource> leaves;
};
BuiltGraph build_graph(const SavedSignature& s, Device& device, const std::vector<Tensor>& inputs,
                       BlobTable& blobs);

// The saved plan for `device` under `options`, if the signature has one.
const SavedPlan* plan_for(const SavedSignature& s, const Device& device,
                          const plan::Options& options);

}  // namespace kiln::program
