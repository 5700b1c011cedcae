// The autotune TSV format: one "op\tkey\twinner\n" line per recorded winner, parsed leniently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tune.hpp"

namespace kiln::tune {

// Throws kiln::Error naming `field` when `value` is empty or holds a tab or a newline.
void check_field(std::string_view field, const std::string& value);

// The line recording one winner, newline included (fields checked).
std::string format_line(const std::string& op, const std::string& key, const std::string& winner);

// Every well-formed line of a file's text, in order; torn (unterminated), blank and malformed
// lines (not exactly three non-empty tab-separated fields) are counted in `skipped`.
struct ParsedTsv {
    std::vector<TuneEntry> lines;
    uint64_t skipped = 0;
};
ParsedTsv parse_tsv(std::string_view text);

}  // namespace kiln::tune
