// graph_check: a graph case against the graph oracle, resolved and (with --sweep) every member.
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "conformance/case.hpp"
#include "conformance/compare.hpp"
#include "graph/oracle.hpp"
#include "kiln/semantics.hpp"
#include "plan/resolve.hpp"
#include "plan/sweep.hpp"

namespace kiln::conformance {

void report_outputs(CaseContext& ctx, Result r, const std::vector<DType>& dtypes,
                    const std::vector<std::vector<uint8_t>>& got,
                    const std::vector<std::vector<uint8_t>>& want) {
    for (size_t o = 0; o < want.size(); ++o) {
        const auto m = o < got.size() ? compare(dtypes[o], got[o], want[o])
                                      : std::optional<Mismatch>(Mismatch{-1, "none", "output"});
        if (!m) continue;
        r.status = Status::failed;
        r.miscompile = true;
        r.output = static_cast<int>(o);
        r.index = m->index;
        r.got = m->got;
        r.want = m->want;
        r.detail = fmt::format("{} of {} elements of output {} differ from the oracle", m->count,
                               want[o].size() / size_of(dtypes[o]), o);
        break;
    }
    ctx.report(std::move(r));
}

Shape draw(CaseContext& ctx, const std::vector<Dim>& dims) {
    Shape s = draw_shape(dims, ctx.rng, ctx.run);
    ctx.base.shape = shape_text(s);
    return s;
}

void check_graph(CaseContext& ctx, const GraphBuilder& build) {
    GraphInstance g = build(ctx);
    if (!g.shape.empty()) ctx.base.shape = g.shape;
    std::vector<graph::NodeRef> nodes;
    for (const auto& t : g.outputs) nodes.push_back(t.node());
    const auto oracle = graph::evaluate(nodes);
    std::vector<std::vector<uint8_t>> want;
    std::vector<DType> dtypes;
    for (const auto& h : oracle) {
        want.push_back(h.bytes());
        dtypes.push_back(h.dtype);
    }
    if (ctx.sweep) {
        plan::sweep(nodes,
                    [&](const plan::Member& m, const std::vector<std::vector<uint8_t>>& got) {
                        Result r = ctx.base;
                        r.member = m.fusion;
                        r.schedule = m.launch.empty() ? m.schedule : m.launch + " " + m.schedule;
                        report_outputs(ctx, std::move(r), dtypes, got, want);
                    });
    }
    resolve(g.outputs);
    std::vector<std::vector<uint8_t>> got;
    for (const auto& t : g.outputs) got.push_back(t.to_host_bytes());
    Result r = ctx.base;
    r.member = "resolved";
    std::vector<std::string> points;
    if (const auto e = plan::last_executable())
        for (const auto& l : e->launches) points.push_back(l.record.name + " " + l.record.schedule);
    r.schedule = fmt::format("{}", fmt::join(points, "; "));
    report_outputs(ctx, std::move(r), dtypes, got, want);
}

namespace {

uint16_t to_half(DType t, float f) {
    return t == DType::f16 ? semantics::f32_to_f16(f) : semantics::f32_to_bf16(f);
}

}  // namespace

std::vector<uint8_t> random_bytes(CaseContext& ctx, DType t, size_t count, bool specials,
                                  float range) {
    std::vector<uint8_t> bytes(count * size_of(t));
    std::uniform_real_distribution<float> value(-range, range);
    static const uint32_t kEdges[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                      0x7fc00000, 0x00000001, 0x007fffff, 0x00800000,
                                      0x7f7fffff, 0x3f800000, 0xbf800000, 0x3f000000};
    for (size_t i = 0; i < count; ++i) {
        uint8_t* p = bytes.data() + i * size_of(t);
        if (is_float(t)) {
            float f = value(ctx.rng);
            if (specials && ctx.rng() % 8 == 0)
                f = std::bit_cast<float>(kEdges[ctx.rng() % std::size(kEdges)]);
            if (t == DType::f32) {
                std::memcpy(p, &f, 4);
            } else {
                const uint16_t h = to_half(t, f);
                std::memcpy(p, &h, 2);
            }
        } else if (t == DType::boolean) {
            *p = static_cast<uint8_t>(ctx.rng() & 1);
        } else {
            const uint64_t v = ctx.rng();
            std::memcpy(p, &v, size_of(t));
        }
    }
    return bytes;
}

Tensor input_tensor(CaseContext& ctx, DType t, const Shape& shape, bool specials, float range) {
    size_t count = 1;
    for (int64_t e : shape) count *= static_cast<size_t>(e);
    const auto bytes = random_bytes(ctx, t, count, specials, range);
    return Tensor::from_bytes(bytes.data(), count, t, shape, ctx.device);
}

Tensor index_tensor(CaseContext& ctx, const Shape& shape, int64_t bound) {
    size_t count = 1;
    for (int64_t e : shape) count *= static_cast<size_t>(e);
    std::vector<int32_t> v(count);
    for (auto& x : v) x = static_cast<int32_t>(ctx.rng() % static_cast<uint64_t>(bound));
    return Tensor::from_host(v, shape, ctx.device);
}

}  // namespace kiln::conformance
