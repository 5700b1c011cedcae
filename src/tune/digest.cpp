// variant_digest: a short XXH3 digest of a variant set's names and identities.
#include <xxhash.h>

#include <cstdint>

#include <fmt/format.h>

#include "kiln/tune.hpp"

namespace kiln {

std::string variant_digest(const std::vector<std::pair<std::string, std::string>>& names_and_ids) {
    XXH3_state_t* state = XXH3_createState();
    if (!state) fail("variant_digest: out of memory");
    XXH3_64bits_reset(state);
    // Each string goes in with its length and a separator, so no two variant sets run together.
    auto add = [&](const std::string& s, char separator) {
        const uint64_t length = s.size();
        XXH3_64bits_update(state, &length, sizeof length);
        XXH3_64bits_update(state, s.data(), s.size());
        XXH3_64bits_update(state, &separator, 1);
    };
    for (const auto& [name, id] : names_and_ids) {
        add(name, '\t');
        add(id, '\n');
    }
    const uint64_t hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return fmt::format("{:016x}", hash).substr(0, 8);
}

}  // namespace kiln
