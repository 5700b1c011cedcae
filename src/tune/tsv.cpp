// Formatting and lenient parsing of the autotune TSV lines, and the live table they amount to.
#include "tune/tsv.hpp"

#include <algorithm>

#include "kiln/error.hpp"

namespace kiln::tune {
namespace {

// Fewer dead lines than this are never worth a rewrite.
constexpr uint64_t kMinDeadLinesToCompact = 1024;
// A longer line is skipped without being held in memory.
constexpr size_t kMaxLineBytes = 64 * 1024;

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

std::string table_key(std::string_view op, std::string_view key) {
    std::string out;
    out.reserve(op.size() + 1 + key.size());
    out.append(op).append(1, '\t').append(key);
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

std::optional<LineFields> parse_line(std::string_view line) {
    const size_t tab1 = line.find('\t');
    if (tab1 == std::string_view::npos) return std::nullopt;
    const size_t tab2 = line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos || line.find('\t', tab2 + 1) != std::string_view::npos)
        return std::nullopt;
    if (line.find('\r') != std::string_view::npos) return std::nullopt;
    LineFields f{line.substr(0, tab1), line.substr(tab1 + 1, tab2 - tab1 - 1),
                 line.substr(tab2 + 1)};
    if (f.op.empty() || f.key.empty() || f.winner.empty()) return std::nullopt;
    return f;
}

void TsvTable::add(std::string_view op, std::string_view key, std::string_view winner) {
    const uint64_t line = lines++;
    auto it = live.find(table_key(op, key));
    if (it == live.end()) {
        live.emplace(table_key(op, key), Live{std::string(winner), line});
        return;
    }
    if (it->second.winner != winner) it->second.winner.assign(winner);
    it->second.line = line;
}

void TsvTable::take(std::string_view line) {
    if (auto f = parse_line(line)) {
        add(f->op, f->key, f->winner);
    } else {
        ++lines;
        ++skipped;
    }
}

void TsvTable::hold(std::string_view piece) {
    if (overlong_) return;
    if (partial_.size() + piece.size() > kMaxLineBytes) {
        overlong_ = true;  // no line kiln writes is this long: skip it whole, hold nothing
        partial_.clear();
        partial_.shrink_to_fit();
        return;
    }
    partial_.append(piece);
}

void TsvTable::feed(std::string_view text) {
    while (!text.empty()) {
        const size_t end = text.find('\n');
        if (end == std::string_view::npos) {
            hold(text);
            return;
        }
        if (partial_.empty() && !overlong_) {
            take(text.substr(0, end));
        } else {
            hold(text.substr(0, end));
            take(overlong_ ? std::string_view() : std::string_view(partial_));
            partial_.clear();
            overlong_ = false;
        }
        text.remove_prefix(end + 1);
    }
}

void TsvTable::finish() {
    if (partial_.empty() && !overlong_) return;
    ++lines;  // a torn line: the writer never finished it
    ++skipped;
    partial_.clear();
    partial_.shrink_to_fit();
    overlong_ = false;
}

const std::string* TsvTable::winner(std::string_view op, std::string_view key) const {
    const auto it = live.find(table_key(op, key));
    return it == live.end() ? nullptr : &it->second.winner;
}

std::vector<TuneEntry> TsvTable::entries() const {
    std::vector<std::pair<uint64_t, TuneEntry>> ordered;
    ordered.reserve(live.size());
    for (const auto& [k, v] : live) {
        const size_t tab = k.find('\t');
        ordered.push_back({v.line, {k.substr(0, tab), k.substr(tab + 1), v.winner}});
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<TuneEntry> out;
    out.reserve(ordered.size());
    for (auto& [line, e] : ordered) out.push_back(std::move(e));
    return out;
}

std::string TsvTable::live_text() const {
    std::string out;
    for (const auto& e : entries()) out += e.op + '\t' + e.key + '\t' + e.winner + '\n';
    return out;
}

bool TsvTable::dead_lines_dominate() const {
    const uint64_t dead = lines - live.size();
    return dead >= kMinDeadLinesToCompact && dead > live.size();
}

}  // namespace kiln::tune
