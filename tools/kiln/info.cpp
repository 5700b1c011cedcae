// `kiln info`: every device kiln found, every backend it could not use and why, and the cache
// root; `--json` prints the same as one JSON object.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cache/paths.hpp"
#include "cli_common.hpp"
#include "json.hpp"
#include "kiln/device.hpp"
#include "table.hpp"

namespace kiln::cli {
namespace {

std::string gib(uint64_t bytes) {
    return fmt::format("{:.1f}", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

void print_text() {
    const auto all = devices();
    Table table({"#", "backend", "name", "arch", "driver", "compiler", "GiB", "CUs", "id"});
    for (size_t i = 0; i < all.size(); ++i) {
        const DeviceInfo& d = all[i]->info();
        table.add({std::to_string(i), std::string(name(d.backend)), d.name, d.arch, d.driver,
                   d.compiler, gib(d.memory_bytes), std::to_string(d.compute_units), d.id});
    }
    if (all.empty())
        fmt::print("no devices found\n");
    else
        table.print();
    for (const BackendStatus& s : backend_status())
        if (!s.available) fmt::print("backend {} is unavailable: {}\n", name(s.backend), s.reason);
    const auto root = cache::cache_root();
    fmt::print("cache root: {}\n", root.empty() ? "(none: kept in memory only)" : root.string());
}

void print_json() {
    std::string out = "{\"devices\": [";
    const auto all = devices();
    for (size_t i = 0; i < all.size(); ++i) {
        const DeviceInfo& d = all[i]->info();
        out += fmt::format(
            "{}\n  {{\"index\": {}, \"backend\": {}, \"name\": {}, \"arch\": {}, \"driver\": {}, "
            "\"compiler\": {}, \"memory_bytes\": {}, \"compute_units\": {}, \"warp_size\": {}, "
            "\"id\": {}}}",
            i == 0 ? "" : ",", i, json_quote(name(d.backend)), json_quote(d.name),
            json_quote(d.arch), json_quote(d.driver), json_quote(d.compiler), d.memory_bytes,
            d.compute_units, d.warp_size, json_quote(d.id));
    }
    out += "],\n \"backends\": [";
    bool first = true;
    for (const BackendStatus& s : backend_status()) {
        out += fmt::format("{}\n  {{\"backend\": {}, \"available\": {}, \"reason\": {}}}",
                           first ? "" : ",", json_quote(name(s.backend)),
                           s.available ? "true" : "false", json_quote(s.reason));
        first = false;
    }
    out += fmt::format("],\n \"cache_root\": {}}}\n", json_quote(cache::cache_root().string()));
    fmt::print("{}", out);
}

}  // namespace

Command add_info_command(CLI::App& parent) {
    auto json = std::make_shared<bool>(false);
    CLI::App* app =
        parent.add_subcommand("info", "List devices, unavailable backends and the cache root");
    app->add_flag("--json", *json, "Print one JSON object instead of a table");
    return {app, [json] {
                if (*json)
                    print_json();
                else
                    print_text();
                return 0;
            }};
}

}  // namespace kiln::cli
