// Plain-text table printing for the CLI.
#include "table.hpp"

#include <algorithm>

#include "kiln/error.hpp"

namespace kiln::cli {

void Table::add(std::vector<std::string> row) {
    if (row.size() != headers_.size())
        fail("table row has {} cells; expected {}", row.size(), headers_.size());
    rows_.push_back(std::move(row));
}

void Table::print(std::FILE* out) const {
    std::vector<size_t> width(headers_.size());
    for (size_t c = 0; c < headers_.size(); ++c) {
        width[c] = headers_[c].size();
        for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c) {
            text += cells[c];
            if (c + 1 < cells.size()) text += std::string(width[c] - cells[c].size() + 2, ' ');
        }
        fmt::print(out, "{}\n", text);
    };
    line(headers_);
    std::vector<std::string> rule;
    for (size_t w : width) rule.emplace_back(w, '-');
    line(rule);
    for (const auto& row : rows_) line(row);
}

}  // namespace kiln::cli
