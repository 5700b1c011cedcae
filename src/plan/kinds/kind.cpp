// rules(kind): the one dispatch from a launch kind to its rules (kind.hpp), and the planner's
// entry points that read them (domain.hpp, plan.hpp's names).
#include "plan/kinds/kind.hpp"

#include "plan/domain.hpp"

namespace kiln::plan {

const KindRules& rules(LaunchKind kind) {
    switch (kind) {
        case LaunchKind::map:
            return kMapRules;
        case LaunchKind::row:
            return kRowRules;
        case LaunchKind::segments:
            return kSegmentsRules;
        case LaunchKind::scatter:
            return kScatterRules;
        case LaunchKind::contract:
            return kContractRules;
        case LaunchKind::conv1d:
            return kConv1dRules;
        case LaunchKind::attention:
            return kAttentionRules;
        case LaunchKind::contract_chunks:
            return kContractChunksRules;
        case LaunchKind::chunk_sum:
            return kChunkSumRules;
    }
    return kMapRules;  // not reached: every kind has a row
}

const char* name(LaunchKind k) {
    return rules(k).name;
}

std::string to_string(LaunchKind kind, const Schedule& s) {
    return rules(kind).point_name(s);
}

std::vector<Schedule> domain_of(const Launch& l, const GraphView& g) {
    return rules(l.kind).domain(l, g);
}

}  // namespace kiln::plan
