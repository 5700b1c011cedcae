// build_isolated(): the kiln-opencl-probe helper run on a source in a temporary folder, its exit
// turned into a binary or a kiln::Error, and crash verdicts kept beside the kernel cache.
#include "runtime/opencl/isolated_build.hpp"

#include <string.h>  // sigabbrev_np
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "cache/temp_dir.hpp"
#include "kiln/error.hpp"
#include "runtime/cpu/process.hpp"
#include "runtime/opencl/cl_check.hpp"

namespace kiln::runtime::opencl {
namespace {

namespace fs = std::filesystem;

// A build that takes longer than this is taken for a hang.
constexpr std::chrono::minutes kBuildTimeout{10};
// Bytes of the end of the compiler's output kept in an error and in a verdict.
constexpr size_t kOutputTailBytes = 2000;

std::string tail(const std::string& text) {
    std::string t =
        text.size() > kOutputTailBytes ? "..." + text.substr(text.size() - kOutputTailBytes) : text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.empty() ? "(no output)" : t;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    return static_cast<bool>(out);
}

// The key of the verdict on (device, toolchain, source): a note beside the kernel cache's entries.
std::string verdict_key(const IsolatedTarget& t, const std::string& source,
                        std::string_view options) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, source.data(), source.size());
    XXH3_64bits_update(state, t.toolchain_id.data(), t.toolchain_id.size() + 1);
    XXH3_64bits_update(state, options.data(), options.size());
    const uint64_t h = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return fmt::format("{:016x}", h);
}

// The directory of the running program ("" if unknown).
fs::path own_directory() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

}  // namespace

bool isolate_builds(std::string_view platform_short_name) {
    if (const char* env = std::getenv("KILN_OPENCL_ISOLATE"); env && *env)
        return std::string_view(env) != "0";
    return platform_short_name == "pocl";
}

std::string probe_executable() {
    if (const char* env = std::getenv("KILN_OPENCL_PROBE"); env && *env) return env;
    std::vector<fs::path> candidates;
    if (const fs::path dir = own_directory(); !dir.empty())
        candidates.push_back(dir / "kiln-opencl-probe");
#ifdef KILN_OPENCL_PROBE_INSTALLED
    candidates.emplace_back(KILN_OPENCL_PROBE_INSTALLED);
#endif
#ifdef KILN_OPENCL_PROBE_BUILT
    candidates.emplace_back(KILN_OPENCL_PROBE_BUILT);
#endif
    for (const fs::path& c : candidates)
        if (::access(c.c_str(), X_OK) == 0) return c.string();
    return "";
}

std::optional<std::vector<uint8_t>> build_isolated(const IsolatedTarget& target,
                                                   const std::string& source,
                                                   std::string_view options) {
    auto& disk = cache::process_kernel_cache();
    const std::string key = verdict_key(target, source, options);
    if (const auto verdict = disk.load_note(target.device_id, key))
        fail(
            "the OpenCL compiler of {} crashed on this source in an earlier run ({}); kept in {} "
            "(delete it to try again)",
            target.device_id, tail(*verdict), disk.note_path(target.device_id, key).string());
    const std::string helper = probe_executable();
    if (helper.empty()) {
        warn_once("opencl-probe",
                  "kiln-opencl-probe not found (set KILN_OPENCL_PROBE to its path); OpenCL builds "
                  "run in this process, where a compiler crash ends it");
        return std::nullopt;
    }
    cache::TempDir dir("kiln-opencl-", "OpenCL build");
    const fs::path source_file = dir.path() / "kernels.cl",
                   binary_file = dir.path() / "kernels.bin";
    if (!write_file(source_file, source))
        fail("OpenCL build: cannot write {}", source_file.string());
    const std::vector<std::string> argv = {helper,
                                           target.platform_name,
                                           target.device_name,
                                           target.driver_version,
                                           std::string(options),
                                           source_file.string(),
                                           binary_file.string()};
    const cpu::ProcessResult r = cpu::run_process(argv, kBuildTimeout);
    if (r.ok()) {
        const std::string bytes = read_file(binary_file);
        return std::vector<uint8_t>(bytes.begin(), bytes.end());
    }
    if (r.signal != 0 || r.timed_out) {
        const char* abbrev = ::sigabbrev_np(r.signal);
        const std::string what =
            r.timed_out
                ? fmt::format("hung (killed after {} minutes)", kBuildTimeout.count())
                : fmt::format("crashed with signal {} (SIG{})", r.signal, abbrev ? abbrev : "?");
        // A crash is the compiler's verdict on this source; a timeout may be a loaded machine.
        if (!r.timed_out)
            disk.store_note(target.device_id, key, fmt::format("{}: {}", what, tail(r.output)));
        fail("the OpenCL compiler of {} {} in a child process ({}); output:\n{}", target.device_id,
             what, cpu::command_line(argv), tail(r.output));
    }
    if (r.exit_status == 2)  // the same words as a build in this process
        fail("OpenCL build of OpenCL C source for {} failed: {}\nbuild log:\n{}",
             target.device_name, cl_error_text(CL_BUILD_PROGRAM_FAILURE), tail(r.output));
    fail("kiln-opencl-probe ({}) exited with status {}: {}", cpu::command_line(argv), r.exit_status,
         tail(r.output));
}

}  // namespace kiln::runtime::opencl
