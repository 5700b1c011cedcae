// Saving a traced signature and building a saved one again (program_saved.hpp).
#include "tensor/program_saved.hpp"

#include "kiln/error.hpp"
#include "plan/saved_plan.hpp"

namespace kiln::program {

int BlobTable::blob_of(const std::shared_ptr<Buffer>& buffer) {
    if (auto it = blob_of_buffer_.find(buffer.get()); it != blob_of_buffer_.end())
        return it->second;
    SavedBlob blob;
    blob.dtype = buffer->dtype();
    blob.count = buffer->count();
    blob.bytes.resize(buffer->bytes());
    buffer->download_raw(blob.bytes.data(), blob.dtype, buffer->count());
    blobs.push_back(std::move(blob));
    const int b = int(blobs.size()) - 1;
    blob_of_buffer_[buffer.get()] = b;
    uploaded_[{b, &buffer->device()}] = buffer;
    return b;
}

std::shared_ptr<Buffer> BlobTable::on(int b, Device& device) {
    auto& buffer = uploaded_[{b, &device}];
    if (!buffer) {
        const SavedBlob& blob = blobs[size_t(b)];
        buffer = std::make_shared<Buffer>(device, blob.dtype, size_t(blob.count));
        buffer->upload_raw(blob.bytes.data(), blob.dtype, size_t(blob.count));
        blob_of_buffer_[buffer.get()] = b;
    }
    return buffer;
}

SavedSignature save_signature(const Body& body,
                              const std::vector<std::pair<DType, graph::Shape>>& inputs,
                              const plan::Options& options, BlobTable& blobs) {
    SavedSignature s;
    s.inputs = inputs;
    const plan::GraphView& g = body.graph;
    s.nodes.resize(g.size());
    for (size_t i = 0; i < g.size(); ++i) {
        const graph::Node& n = *g.nodes[i];
        SavedNode& saved = s.nodes[i];
        saved.payload = n.payload;
        saved.dtype = n.dtype;
        saved.shape = n.shape;
        saved.inputs = g.inputs[i];
        saved.label = n.label;
    }
    // A leaf is data, whatever op once computed it.
    for (const LeafSource& l : body.leaves) {
        SavedNode& saved = s.nodes[size_t(l.position)];
        saved.payload = graph::op::Leaf{};
        saved.inputs.clear();
        if (l.input >= 0)
            saved.input = l.input;
        else
            saved.blob = blobs.blob_of(l.captured);
    }
    s.outputs = g.outputs;
    if (auto plan = save_plan(body, options)) s.plans.push_back(std::move(*plan));
    return s;
}

std::unique_ptr<SavedPlan> save_plan(const Body& body, const plan::Options& options) {
    if (!body.exec || !body.exec->plan) return nullptr;
    auto p = std::make_unique<SavedPlan>();
    p->device_id = body.device->info().id;
    p->toolchain = body.device->toolchain_id();
    p->options = options;
    p->plan = *body.exec->plan;
    p->units = plan::portable_binaries(*body.exec);
    return p;
}

BuiltGraph build_graph(const SavedSignature& s, Device& device, const std::vector<Tensor>& inputs,
                       BlobTable& blobs) {
    BuiltGraph built;
    std::vector<graph::NodeRef> nodes(s.nodes.size());
    for (size_t i = 0; i < s.nodes.size(); ++i) {
        const SavedNode& n = s.nodes[i];
        std::vector<graph::NodeRef> in;
        for (int p : n.inputs) in.push_back(nodes[size_t(p)]);
        nodes[i] = graph::make_node(n.payload, n.dtype, n.shape, std::move(in), &device);
        nodes[i]->label = n.label;
        if (n.input >= 0) {
            nodes[i]->buffer = inputs[size_t(n.input)].node()->buffer;
            built.leaves.push_back({.position = int(i), .input = n.input});
        } else if (n.blob >= 0) {
            nodes[i]->buffer = blobs.on(n.blob, device);
            built.leaves.push_back({.position = int(i), .captured = nodes[i]->buffer});
        }
    }
    std::vector<graph::NodeRef> outputs;
    for (int o : s.outputs) outputs.push_back(nodes[size_t(o)]);
    built.view = plan::view_graph(outputs);
    // The saved plan names nodes by their place in the order it was made for.
    bool same_order = built.view.size() == nodes.size();
    for (size_t i = 0; same_order && i < nodes.size(); ++i)
        same_order = built.view.nodes[i] == nodes[i];
    if (!same_order)
        fail(
            "program file: a signature's graph of {} nodes comes out in another order ({} nodes) "
            "when built again; expected the order it was saved in",
            nodes.size(), built.view.size());
    return built;
}

const SavedPlan* plan_for(const SavedSignature& s, const Device& device,
                          const plan::Options& options) {
    for (const SavedPlan& p : s.plans)
        if (p.device_id == device.info().id && p.toolchain == device.toolchain_id() &&
            p.options.fuse == options.fuse && p.options.wide_index == options.wide_index)
            return &p;
    return nullptr;
}

}  // namespace kiln::program
