// Tuner: cached winners per device, in memory and in one append-only TSV file per device.
#include "cache/atomic_file.hpp"
#include "cache/paths.hpp"
#include "cache/private_dir.hpp"
#include "cache/regular_file.hpp"
#include "kiln/tune.hpp"
#include "tune/side_file.hpp"
#include "tune/tsv.hpp"
#include "tune/tsv_file.hpp"

namespace kiln {

struct Tuner::DeviceTable {
    tune::TsvTable table;
    bool loaded = false;
    bool on_disk = true;  // false once the device's file proved unusable: memory only
};

Tuner::Tuner(std::filesystem::path root) : root_(std::move(root)) {}

Tuner::~Tuner() = default;

Tuner& Tuner::process_default() {
    // One tuner per root, kept for the life of the process, so references stay valid when
    // KILN_CACHE_DIR changes between calls.
    static std::mutex mutex;
    static std::map<std::filesystem::path, std::unique_ptr<Tuner>> tuners;
    const auto cache_root = cache::cache_root();
    const auto root = cache_root.empty() ? cache_root : cache_root / "autotune";
    std::lock_guard lock(mutex);
    auto& tuner = tuners[root];
    if (!tuner) {
        tuner = std::make_unique<Tuner>(root);
        tuner->trusted_parent_ = cache_root;
    }
    return *tuner;
}

std::filesystem::path Tuner::file_for(const std::string& device_id) const {
    if (root_.empty()) return {};
    return root_ / (cache::safe_component(device_id) + ".tsv");
}

bool Tuner::disk_usable() {
    if (root_.empty()) return false;
    if (!trusted_parent_.empty() && !cache::trusted_dir(trusted_parent_)) return false;
    if (!cache::trusted_dir(root_)) return false;
    if (!swept_) {
        swept_ = true;
        cache::remove_stale_temporaries(root_);
    }
    return true;
}

Tuner::DeviceTable& Tuner::table(const std::string& device_id) {
    auto& slot = tables_[device_id];
    if (!slot) slot = std::make_unique<DeviceTable>();
    DeviceTable& t = *slot;
    if (t.loaded) return t;
    t.loaded = true;
    if (!disk_usable()) return t;
    const auto path = file_for(device_id);
    if (const std::string why = tune::read_tsv(path, t.table); !why.empty()) {
        t.on_disk = false;
        t.table = tune::TsvTable();
        warn_once("autotune-file:" + path.string(),
                  fmt::format("autotune file {} {}; kiln uses only a regular file there: tuned "
                              "winners of {} are kept in memory only",
                              path.string(), why, device_id));
        return t;
    }
    if (t.table.dead_lines_dominate()) tune::compact_tsv(path, t.table);  // best effort
    return t;
}

std::optional<std::string> Tuner::winner(const std::string& device_id, const std::string& op,
                                         const std::string& key) {
    tune::check_field("op", op);
    tune::check_field("key", key);
    std::lock_guard lock(mutex_);
    if (const std::string* w = table(device_id).table.winner(op, key)) return *w;
    return std::nullopt;
}

void Tuner::record(const std::string& device_id, const std::string& op, const std::string& key,
                   const std::string& winner) {
    const std::string line = tune::format_line(op, key, winner);
    std::lock_guard lock(mutex_);
    DeviceTable& t = table(device_id);
    t.table.add(op, key, winner);
    if (!t.on_disk || !disk_usable()) return;
    std::string err = writable_root();
    if (err.empty() && disk_usable()) err = tune::append_tsv_line(file_for(device_id), line);
    if (!err.empty()) warn_unwritable(err);
}

std::string Tuner::writable_root() {
    std::string err = cache::make_private_dir(root_);
    if (err.empty() && !disk_usable()) err = "the directory is not the user's own";
    return err;
}

void Tuner::warn_unwritable(const std::string& err) const {
    warn_once("autotune-unwritable:" + root_.string(),
              fmt::format("autotune cache under {} is not writable ({}); tuned winners and device "
                          "facts are kept in memory only",
                          root_.string(), err));
}

std::filesystem::path Tuner::side_file_for(const std::string& device_id,
                                           const std::string& kind) const {
    if (root_.empty()) return {};
    if (kind.empty() || kind == "tsv" || cache::safe_component(kind) != kind ||
        kind.find('.') != std::string::npos)
        fail("autotune side file kind '{}': expected letters, digits, '_' or '-', not \"tsv\"",
             kind);
    return root_ / (cache::safe_component(device_id) + "." + kind);
}

std::optional<std::string> Tuner::read_side_file(const std::string& device_id,
                                                 const std::string& kind) {
    const auto path = side_file_for(device_id, kind);
    std::lock_guard lock(mutex_);
    if (path.empty() || !disk_usable()) return std::nullopt;
    std::string text;
    bool found = false;
    if (const std::string why = tune::read_side_file(path, kind, text, found); !why.empty()) {
        warn_once("autotune-file:" + path.string(),
                  fmt::format("autotune file {} {}; kiln uses only a regular file of at most {} "
                              "bytes there: the {} of {} are kept in memory only",
                              path.string(), why, tune::kSideFileMax, kind, device_id));
        return std::nullopt;
    }
    if (!found) return std::nullopt;
    return text;
}

void Tuner::write_side_file(const std::string& device_id, const std::string& kind,
                            const std::string& text) {
    const auto path = side_file_for(device_id, kind);
    std::lock_guard lock(mutex_);
    // Nothing replaces what is not a regular file there (read_side_file warned about it).
    if (path.empty() || !disk_usable() || !tune::side_file_problem(path).empty()) return;
    std::string err = writable_root();
    if (err.empty()) err = tune::write_side_file(path, kind, text);
    if (!err.empty()) warn_unwritable(err);
}

std::vector<TuneEntry> Tuner::entries(const std::string& device_id) {
    std::lock_guard lock(mutex_);
    return table(device_id).table.entries();
}

uint64_t Tuner::skipped_lines(const std::string& device_id) {
    std::lock_guard lock(mutex_);
    return table(device_id).table.skipped;
}

uint64_t Tuner::clear(const std::string& device_id,
                      std::vector<std::filesystem::path>* left_alone) {
    std::lock_guard lock(mutex_);
    if (device_id.empty())
        tables_.clear();
    else
        tables_.erase(device_id);
    if (root_.empty()) return 0;
    for (const auto& dir : {trusted_parent_, root_})
        if (const std::string problem = dir.empty() ? "" : cache::private_dir_problem(dir);
            !problem.empty())
            fail("cache clear: {} {}; kiln clears only a directory that is the user's own",
                 dir.string(), problem);
    // A device's file or side file (<device-id>.<kind>: the kind, "" when the name is neither),
    // and the temporaries of their writes.
    auto device_file_kind = [&](const std::string& name) -> std::string {
        const size_t dot = name.rfind('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return "";
        const std::string stem = name.substr(0, dot), kind = name.substr(dot + 1);
        if (cache::safe_component(stem) != stem || cache::safe_component(kind) != kind ||
            (!device_id.empty() && stem != cache::safe_component(device_id)))
            return "";
        return kind;
    };
    uint64_t removed = 0;
    std::error_code ec;
    for (const auto& path : cache::directory_entries(root_)) {
        const std::string name = path.filename().string();
        const auto temporary = cache::parse_temporary(name);
        const std::string kind = device_file_kind(temporary ? temporary->target : name);
        if (kind.empty()) {
            // Another device's file (not asked about), or not kiln's at all.
            if (device_id.empty() && left_alone) left_alone->push_back(path);
            continue;
        }
        const bool ours = temporary       ? cache::is_stale_temporary(path)
                          : kind == "tsv" ? tune::looks_like_tsv(path)
                                          : tune::looks_like_side_file(path, kind);
        if (ours && std::filesystem::remove(path, ec))
            ++removed;
        else if (left_alone)
            left_alone->push_back(path);
    }
    return removed;
}

TuneCounters Tuner::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

void Tuner::count_run(int benched, bool hit, bool retuned) {
    std::lock_guard lock(mutex_);
    counters_.benched += static_cast<uint64_t>(benched);
    if (hit)
        ++counters_.hits;
    else
        ++counters_.misses;
    if (retuned) ++counters_.retunes;
}

}  // namespace kiln
