// Names of graph ops and the node maker.
#include "graph/node.hpp"

#include <fmt/format.h>

namespace kiln::graph {
namespace {

constexpr const char* kFoldNames[] = {"sum", "prod", "max", "min"};
constexpr const char* kViewNames[] = {"reshape", "permute", "expand", "slice", "pad"};

}  // namespace

const char* name(FoldKind k) {
    return kFoldNames[static_cast<int>(k)];
}

const char* name(ViewKind k) {
    return kViewNames[static_cast<int>(k)];
}

std::string describe(const Node& n) {
    return std::visit(
        [&](const auto& p) -> std::string {
            using P = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<P, op::Leaf>) {
                return "leaf";
            } else if constexpr (std::is_same_v<P, op::Constant>) {
                return fmt::format("constant {}", p.value);
            } else if constexpr (std::is_same_v<P, op::Generate>) {
                const char* kinds[] = {"arange", "rand", "randn"};
                return kinds[static_cast<int>(p.kind)];
            } else if constexpr (std::is_same_v<P, op::Map>) {
                return fmt::format("map {}", name(p.op));
            } else if constexpr (std::is_same_v<P, op::Fold>) {
                return fmt::format("fold {} [{}]", name(p.kind), fmt::join(p.axes, ", "));
            } else if constexpr (std::is_same_v<P, op::View>) {
                return fmt::format("view {}", name(p.kind));
            } else if constexpr (std::is_same_v<P, op::Concat>) {
                return fmt::format("concat axis {}", p.axis);
            } else if constexpr (std::is_same_v<P, op::Gather>) {
                return fmt::format("{} axis {}", p.select ? "index_select" : "gather", p.axis);
            } else if constexpr (std::is_same_v<P, op::ScatterAdd>) {
                return fmt::format("scatter_add axis {}", p.axis);
            } else if constexpr (std::is_same_v<P, op::Conv1d>) {
                return fmt::format("conv1d stride {} padding {} dilation {} groups {}", p.stride,
                                   p.padding, p.dilation, p.groups);
            } else if constexpr (std::is_same_v<P, op::Attention>) {
                return fmt::format("attention{} scale {}", p.causal ? " causal" : "", p.scale);
            } else {
                return "matmul";
            }
        },
        n.payload);
}

NodeRef make_node(Payload payload, DType dtype, Shape shape, std::vector<NodeRef> inputs,
                  Device* device) {
    auto n = std::make_shared<Node>();
    n->payload = std::move(payload);
    n->dtype = dtype;
    n->shape = std::move(shape);
    n->inputs = std::move(inputs);
    n->device = device;
    return n;
}

}  // namespace kiln::graph
