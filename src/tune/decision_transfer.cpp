// export_decisions and import_decisions (decision_transfer.hpp).
#include "tune/decision_transfer.hpp"

#include <fcntl.h>

#include <set>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "cache/paths.hpp"
#include "cache/regular_file.hpp"
#include "kiln/error.hpp"
#include "tune/tsv.hpp"

namespace kiln::tune {
namespace {

struct Decision {
    std::string device, op, key, winner;
};

[[noreturn]] void bad_line(const std::filesystem::path& file, size_t line, const std::string& why) {
    fail("kiln cache import: {} line {}: {}", file.string(), line, why);
}

bool is_device_id(std::string_view id) {
    return !id.empty() && id.front() != '.' && cache::safe_component(std::string(id)) == id;
}

// Every decision of the file's text, or a kiln::Error naming the file and the first bad line.
std::vector<Decision> parse_decisions(const std::filesystem::path& file, std::string_view text) {
    const std::string_view header = kDecisionsHeader;
    if (text.substr(0, header.size() + 1) != std::string(header) + '\n')
        bad_line(file, 1,
                 fmt::format("expected the header '{}' (a file kiln cache export wrote)", header));
    std::vector<Decision> out;
    size_t at = header.size() + 1;
    for (size_t line = 2; at < text.size(); ++line) {
        const size_t end = text.find('\n', at);
        if (end == std::string_view::npos)
            bad_line(file, line,
                     "it ends without a newline; expected whole lines (a truncated file?)");
        const std::string_view whole = text.substr(at, end - at);
        at = end + 1;
        const size_t tab = whole.find('\t');
        const auto fields =
            tab == std::string_view::npos ? std::nullopt : parse_line(whole.substr(tab + 1));
        if (!fields)
            bad_line(
                file, line,
                "expected four non-empty fields separated by tabs: device id, op, key, winner");
        const std::string_view device = whole.substr(0, tab);
        if (!is_device_id(device))
            bad_line(file, line,
                     fmt::format("'{}' is not a device id; expected letters, digits, '.', '_' "
                                 "and '-' only (as `kiln cache list` shows them)",
                                 device));
        out.push_back({std::string(device), std::string(fields->op), std::string(fields->key),
                       std::string(fields->winner)});
    }
    return out;
}

}  // namespace

TransferCount export_decisions(Tuner& tuner, const std::vector<std::string>& device_ids,
                               const std::filesystem::path& file) {
    std::string text = std::string(kDecisionsHeader) + '\n';
    TransferCount count;
    for (const std::string& id : device_ids) {
        const auto entries = tuner.entries(id);
        count.devices += !entries.empty();
        for (const TuneEntry& e : entries) {
            text += id + '\t' + format_line(e.op, e.key, e.winner);
            ++count.decisions;
        }
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    const std::string why = cache::write_atomic(file, {std::span(bytes, text.size())});
    if (!why.empty()) fail("kiln cache export: cannot write {}: {}", file.string(), why);
    return count;
}

TransferCount import_decisions(Tuner& tuner, const std::filesystem::path& file) {
    std::string why;
    const cache::FileDescriptor fd = cache::open_regular(file, O_RDONLY, 0, why);
    if (!fd)
        fail("kiln cache import: cannot read {}: {}", file.string(),
             why.empty() ? "no such file" : why);
    std::string text;
    why = cache::read_whole(fd.get(), text, kMaxDecisionsFileBytes);
    if (!why.empty()) fail("kiln cache import: cannot read {}: {}", file.string(), why);
    const std::vector<Decision> decisions = parse_decisions(file, text);
    TransferCount count;
    std::set<std::string> devices;
    for (const Decision& d : decisions) {
        devices.insert(d.device);
        ++count.decisions;
        if (tuner.winner(d.device, d.op, d.key) == d.winner) continue;
        tuner.record(d.device, d.op, d.key, d.winner);
        ++count.recorded;
    }
    count.devices = devices.size();
    return count;
}

}  // namespace kiln::tune
