// The autotune TSV format: one "op\tkey\twinner\n" line per recorded winner, parsed leniently,
// and the live table such a file amounts to (the last line of each (op, key) wins).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tune.hpp"

namespace kiln::tune {

// Throws kiln::Error naming `field` when `value` is empty or holds a tab or a newline.
void check_field(std::string_view field, const std::string& value);

// The line recording one winner, newline included (fields checked).
std::string format_line(const std::string& op, const std::string& key, const std::string& winner);

// The fields of one line (without its newline): exactly three non-empty tab-separated fields
// without a carriage return, or nothing.
struct LineFields {
    std::string_view op, key, winner;
};
std::optional<LineFields> parse_line(std::string_view line);

// What a TSV amounts to: the winner of each (op, key) from its last line, and how many lines
// there were. Its memory grows with the live keys, not with the lines read.
struct TsvTable {
    struct Live {
        std::string winner;
        uint64_t line = 0;  // which line recorded it, counting every line read or added from 0
    };
    std::map<std::string, Live, std::less<>> live;  // keyed "op\tkey"
    uint64_t lines = 0;    // lines read or added, the skipped ones included
    uint64_t skipped = 0;  // torn (unterminated), blank or malformed lines

    void add(std::string_view op, std::string_view key, std::string_view winner);
    // Feeds text read from a file, in order; a line split across calls is joined (a line
    // longer than any kiln writes is skipped without being held). finish() counts a last line
    // without its newline as torn.
    void feed(std::string_view text);
    void finish();
    const std::string* winner(std::string_view op, std::string_view key) const;
    // The live lines in the order they were recorded.
    std::vector<TuneEntry> entries() const;
    // The file's text with only the live lines, in order.
    std::string live_text() const;
    // Superseded and skipped lines outnumber the live ones (and are many): worth rewriting.
    bool dead_lines_dominate() const;

  private:
    void take(std::string_view line);   // one whole line
    void hold(std::string_view piece);  // part of a line whose newline is still to come
    std::string partial_;               // the start of a line whose newline has not been read yet
    bool overlong_ = false;  // the line being read is too long to be kiln's: it is skipped
};

}  // namespace kiln::tune
