// VariantTable: a variant set's names and identities, checked and digested once.
#include <algorithm>
#include <set>

#include "kiln/error.hpp"
#include "kiln/tune.hpp"

namespace kiln {

void check_variant_name(std::string_view op, std::string_view name) {
    if (name.empty() || std::any_of(name.begin(), name.end(),
                                    [](char c) { return c == '\t' || c == '\r' || c == '\n'; }))
        fail("tuned op {}: variant name '{}' is empty or holds a tab or newline", op, name);
}

VariantTable::VariantTable(std::string_view op, std::vector<std::string> names,
                           std::vector<std::string> identities)
    : names_(std::move(names)), identities_(std::move(identities)) {
    if (identities_.size() != names_.size())
        fail("tuned op {}: {} variant names but {} identities; expected one identity a name", op,
             names_.size(), identities_.size());
    std::set<std::string_view> seen;
    for (size_t i = 0; i < names_.size(); ++i) {
        check_variant_name(op, names_[i]);
        if (!seen.insert(names_[i]).second)
            fail("tuned op {}: two variants named '{}'", op, names_[i]);
        digest_ = variant_digest_add(digest_, names_[i], identities_[i]);
    }
}

}  // namespace kiln
