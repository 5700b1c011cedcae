// `kiln cache path|list|clear [--device D]`: where kiln keeps compiled kernels and tuning
// decisions, what is there, and removing it (for one device, or all).
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cache/paths.hpp"
#include "cli_common.hpp"
#include "kiln/tune.hpp"
#include "table.hpp"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct CacheOptions {
    std::string device;
};

fs::path kernels_root() {
    return cache::cache_root() / "kernels";
}

// The device ids to act on: the one named, or every id with files under the cache.
std::vector<std::string> device_ids(const CacheOptions& opt) {
    if (!opt.device.empty()) return {find_device(opt.device).info().id};
    std::set<std::string> ids;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(Tuner::process_default().root(), ec))
        if (e.path().extension() == ".tsv") ids.insert(e.path().stem().string());
    for (const auto& e : fs::directory_iterator(kernels_root(), ec))
        if (e.is_directory()) ids.insert(e.path().filename().string());
    return {ids.begin(), ids.end()};
}

std::pair<size_t, uintmax_t> kernel_files(const std::string& id) {
    size_t count = 0;
    uintmax_t bytes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kernels_root() / cache::safe_component(id), ec))
        if (e.path().extension() == ".bin") {
            ++count;
            bytes += e.file_size(ec);
        }
    return {count, bytes};
}

int cache_path() {
    fmt::print("root:     {}\nkernels:  {}\nautotune: {}\n", cache::cache_root().string(),
               kernels_root().string(), Tuner::process_default().root().string());
    return 0;
}

int cache_list(const CacheOptions& opt) {
    Tuner& tuner = Tuner::process_default();
    const auto ids = device_ids(opt);
    if (ids.empty()) fmt::print("the cache under {} is empty\n", cache::cache_root().string());
    for (const auto& id : ids) {
        const auto [count, bytes] = kernel_files(id);
        fmt::print("device {}\n  compiled kernels: {} ({:.1f} KiB)\n", id, count, bytes / 1024.0);
        const auto entries = tuner.entries(id);
        fmt::print("  tuning decisions: {} in {}", entries.size(), tuner.file_for(id).string());
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

int cache_clear(const CacheOptions& opt) {
    Tuner& tuner = Tuner::process_default();
    for (const auto& id : device_ids(opt)) {
        tuner.clear(id);
        std::error_code ec;
        const auto removed = fs::remove_all(kernels_root() / cache::safe_component(id), ec);
        if (ec) fail("cache clear: cannot remove kernels of {}: {}", id, ec.message());
        fmt::print("cleared {}: tuning decisions and {} kernel files\n", id,
                   removed ? removed - 1 : 0);
    }
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
    for (auto* sub : {list, clear})
        sub->add_option("--device", opt->device,
                        "device id, index or backend (default: every device)");
    return {cache, [opt, path, list] {
                if (path->parsed()) return cache_path();
                return list->parsed() ? cache_list(*opt) : cache_clear(*opt);
            }};
}

}  // namespace kiln::cli
