// Formatting and lenient parsing of the autotune TSV lines.
#include "tune/tsv.hpp"

#include "kiln/error.hpp"

namespace kiln::tune {
namespace {

// The value with tabs and newlines shown as escapes, for error messages.
std::string escaped(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\t')
            out += "\\t";
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else
            out += c;
    }
    return out;
}

}  // namespace

void check_field(std::string_view field, const std::string& value) {
    if (value.empty()) fail("autotune {} is empty; expected a non-empty string", field);
    if (value.find('\t') != std::string::npos)
        fail("autotune {} '{}' contains a tab; expected no tabs or newlines", field,
             escaped(value));
    if (value.find('\n') != std::string::npos || value.find('\r') != std::string::npos)
        fail("autotune {} '{}' contains a newline; expected no tabs or newlines", field,
             escaped(value));
}

std::string format_line(const std::string& op, const std::string& key, const std::string& winner) {
    check_field("op", op);
    check_field("key", key);
    check_field("winner", winner);
    return op + '\t' + key + '\t' + winner + '\n';
}

ParsedTsv parse_tsv(std::string_view text) {
    ParsedTsv out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) {  // torn: the writer never finished this line
            ++out.skipped;
            break;
        }
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        std::vector<std::string_view> fields;
        size_t start = 0;
        while (true) {
            const size_t tab = line.find('\t', start);
            fields.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
            if (tab == std::string_view::npos) break;
            start = tab + 1;
        }
        bool good = fields.size() == 3;
        for (auto f : fields) good = good && !f.empty() && f.find('\r') == std::string_view::npos;
        if (!good) {
            ++out.skipped;
            continue;
        }
        out.lines.push_back(
            {std::string(fields[0]), std::string(fields[1]), std::string(fields[2])});
    }
    return out;
}

}  // namespace kiln::tune
