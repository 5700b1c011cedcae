// `kiln cache path|list|clear [--device D]`: where kiln keeps compiled kernels and tuning
// decisions, what is there, and removing what kiln wrote (for one device, or all);
// `kiln cache export FILE [--device D]` and `kiln cache import FILE` move tuning decisions
// between machines.
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cache/kernel_cache.hpp"
#include "cache/paths.hpp"
#include "cli_common.hpp"
#include "kiln/tune.hpp"
#include "table.hpp"
#include "tune/decision_transfer.hpp"
#include "tune/tsv_file.hpp"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct CacheOptions {
    std::string device;
    std::string file;  // export and import
};

// The device ids to act on: the one named, or every id with files under the cache.
std::vector<std::string> device_ids(const CacheOptions& opt) {
    if (!opt.device.empty()) return {find_device(opt.device).info().id};
    std::set<std::string> ids;
    std::error_code ec;
    auto is_id = [](const std::string& name) { return cache::safe_component(name) == name; };
    for (const auto& e : fs::directory_iterator(Tuner::process_default().root(), ec))
        if (e.path().extension() == ".tsv" && is_id(e.path().stem().string()) &&
            tune::looks_like_tsv(e.path()))
            ids.insert(e.path().stem().string());
    for (const auto& e : fs::directory_iterator(cache::process_kernel_cache().root(), ec))
        if (e.is_directory() && !e.is_symlink() && is_id(e.path().filename().string()))
            ids.insert(e.path().filename().string());
    return {ids.begin(), ids.end()};
}

// A device's compiled kernels (count, bytes) and remembered compiler crashes (count).
struct KernelFiles {
    size_t count = 0;
    uintmax_t bytes = 0;
    size_t crashes = 0;
};

KernelFiles kernel_files(const std::string& id) {
    KernelFiles files;
    std::error_code ec;
    const auto dir = cache::process_kernel_cache().root() / cache::safe_component(id);
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (cache::is_entry_name(name)) {
            ++files.count;
            files.bytes += e.file_size(ec);
        } else if (cache::is_crash_note_name(name)) {
            ++files.crashes;
        }
    }
    return files;
}

std::string shown(const fs::path& path) {
    return path.empty() ? "(none: kept in memory only)" : path.string();
}

int cache_path() {
    fmt::print("root:     {}\nkernels:  {}\nautotune: {}\n", shown(cache::cache_root()),
               shown(cache::process_kernel_cache().root()), shown(Tuner::process_default().root()));
    return 0;
}

int cache_list(const CacheOptions& opt) {
    Tuner& tuner = Tuner::process_default();
    const auto ids = device_ids(opt);
    if (ids.empty()) fmt::print("the cache under {} is empty\n", shown(cache::cache_root()));
    for (const auto& id : ids) {
        const KernelFiles files = kernel_files(id);
        fmt::print("device {}\n  compiled kernels: {} ({:.1f} KiB)\n", id, files.count,
                   files.bytes / 1024.0);
        if (files.crashes)
            fmt::print("  kernels whose compiler crashed (remembered, not retried): {}\n",
                       files.crashes);
        const auto entries = tuner.entries(id);
        fmt::print("  tuning decisions: {} in {}", entries.size(), shown(tuner.file_for(id)));
        if (const auto skipped = tuner.skipped_lines(id))
            fmt::print(" ({} unreadable lines skipped)", skipped);
        fmt::print("\n");
        if (entries.empty()) continue;
        Table table({"op", "key", "winner"});
        for (const auto& e : entries) table.add({e.op, e.key, e.winner});
        table.print();
    }
    return 0;
}

// Removes only what kiln wrote (kernel entries, its tuning and device-facts files, their
// temporaries) and names everything it left in place.
int cache_clear(const CacheOptions& opt) {
    const std::string id = opt.device.empty() ? "" : find_device(opt.device).info().id;
    std::vector<fs::path> left_alone;
    const uint64_t kernels = cache::process_kernel_cache().clear(id, left_alone);
    const uint64_t tunings = Tuner::process_default().clear(id, &left_alone);
    fmt::print("cleared {}: {} compiled kernel files and {} tuning files removed\n",
               id.empty() ? "every device" : id, kernels, tunings);
    if (!left_alone.empty()) {
        fmt::print("left alone ({} not written by kiln or still in use):\n", left_alone.size());
        for (const auto& path : left_alone) fmt::print("  {}\n", path.string());
    }
    return 0;
}

int cache_export(const CacheOptions& opt) {
    const auto ids = device_ids(opt);
    const auto count = tune::export_decisions(Tuner::process_default(), ids, opt.file);
    fmt::print("exported {} tuning decisions of {} devices to {}\n", count.decisions, count.devices,
               opt.file);
    return 0;
}

int cache_import(const CacheOptions& opt) {
    Tuner& tuner = Tuner::process_default();
    if (tuner.root().empty())
        fail(
            "kiln cache import: no cache directory (set KILN_CACHE_DIR, XDG_CACHE_HOME or HOME) "
            "to record the decisions in");
    const auto count = tune::import_decisions(tuner, opt.file);
    fmt::print("imported {} tuning decisions of {} devices from {} ({} new, into {})\n",
               count.decisions, count.devices, opt.file, count.recorded, tuner.root().string());
    return 0;
}

}  // namespace

Command add_cache_command(CLI::App& parent) {
    auto* cache =
        parent.add_subcommand("cache", "Show or clear compiled kernels and tuning decisions");
    cache->require_subcommand(1);
    auto opt = std::make_shared<CacheOptions>();
    auto* path = cache->add_subcommand("path", "Print where the caches live");
    auto* list = cache->add_subcommand("list", "List cached kernels and tuning decisions");
    auto* clear = cache->add_subcommand("clear", "Remove cached kernels and tuning decisions");
    auto* exp = cache->add_subcommand(
        "export", "Write the tuning decisions to one file, for `kiln cache import` elsewhere");
    auto* imp = cache->add_subcommand(
        "import", "Record the tuning decisions of a file `kiln cache export` wrote");
    for (auto* sub : {list, clear, exp})
        sub->add_option("--device", opt->device,
                        "device id, index or backend (default: every device)");
    exp->add_option("file", opt->file, "the file to write (replaced whole)")->required();
    imp->add_option("file", opt->file, "the file to read")->required();
    return {cache, [opt, path, list, exp, imp] {
                if (path->parsed()) return cache_path();
                if (exp->parsed()) return cache_export(*opt);
                if (imp->parsed()) return cache_import(*opt);
                return list->parsed() ? cache_list(*opt) : cache_clear(*opt);
            }};
}

}  // namespace kiln::cli
