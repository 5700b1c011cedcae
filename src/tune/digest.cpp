// variant_digest: a short XXH3 digest of a variant set's names and identities, built up one
// variant at a time (Tuned adds each as it is declared, so a hit's key costs no extra pass).
#include <xxhash.h>

#include <cstdint>

#include <fmt/format.h>

#include "kiln/tune.hpp"

namespace kiln {

namespace {

// Each string is hashed on its own, seeded with the digest so far and its length, so no two
// variant sets run together ("ab" + "" differs from "a" + "b").
uint64_t chain(uint64_t digest, std::string_view s) {
    return XXH3_64bits_withSeed(s.data(), s.size(), digest ^ (s.size() * 0x9e3779b97f4a7c15ull));
}

}  // namespace

uint64_t variant_digest_add(uint64_t digest, std::string_view name, std::string_view identity) {
    return chain(chain(digest, name), identity);
}

std::string variant_digest_text(uint64_t digest) {
    return fmt::format("{:08x}", digest >> 32);
}

std::string variant_digest(const std::vector<std::pair<std::string, std::string>>& names_and_ids) {
    uint64_t digest = kVariantDigestStart;
    for (const auto& [name, id] : names_and_ids) digest = variant_digest_add(digest, name, id);
    return variant_digest_text(digest);
}

}  // namespace kiln
