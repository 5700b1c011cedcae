// KILN_DUMP_SOURCE: write generated sources and IR where the user asked.
#include "core/dump_source.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cache/paths.hpp"
#include "codegen/emit_c.hpp"
#include "ir/print.hpp"
#include "kiln/error.hpp"

namespace kiln {
namespace {

bool write_file(const std::filesystem::path& path, std::string_view text) {
    std::ofstream out(path, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    return static_cast<bool>(out);
}

}  // namespace

void dump_source(const Device& device, std::span<const ir::Kernel> kernels, std::string_view source,
                 std::string_view tag) {
    const char* dir = std::getenv("KILN_DUMP_SOURCE");
    if (!dir || !*dir || kernels.empty()) return;
    const std::filesystem::path root(dir);
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    const std::string first = cache::safe_component(codegen::entry_name(kernels.front()));
    const std::string unit =
        kernels.size() == 1 ? first : fmt::format("{}+{}more", first, kernels.size() - 1);
    bool ok = write_file(root / fmt::format("{}{}.{}{}", unit, tag, name(device.info().backend),
                                            device.source_suffix()),
                         source);
    for (const ir::Kernel& k : kernels)
        ok = write_file(root / (cache::safe_component(codegen::entry_name(k)) + ".ir"),
                        ir::print(k)) &&
             ok;
    if (!ok)
        warn_once("dump:" + root.string(),
                  fmt::format("KILN_DUMP_SOURCE: cannot write to {}; sources are not dumped",
                              root.string()));
}

}  // namespace kiln
