// Probing the system C++ compiler and compiling CPU kernels with it.
#include "runtime/cpu/toolchain.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <xxhash.h>

#include "cache/temp_dir.hpp"
#include "kiln/error.hpp"
#include "runtime/cpu/process.hpp"

namespace kiln::runtime::cpu {
namespace {

constexpr auto probe_timeout = std::chrono::seconds(30);

std::string first_line(const std::string& text) {
    size_t end = text.find('\n');
    std::string line = text.substr(0, end);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    return line;
}

// The last whitespace-separated token that starts with a digit and contains a '.':
// "c++ (Debian 12.2.0-14) 12.2.0" -> "12.2.0", "Debian clang version 14.0.6" -> "14.0.6".
std::string version_of(const std::string& line) {
    std::istringstream in(line);
    std::string token, found;
    while (in >> token) {
        if (std::isdigit(static_cast<unsigned char>(token[0])) &&
            token.find('.') != std::string::npos)
            found = token;
    }
    return found.empty() ? "unknown" : found;
}

// GCC: `-march=native -Q --help=target` prints a line "  -march=   skylake-avx512".
std::string march_from_gcc_report(const std::string& report) {
    std::istringstream in(report);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string key, value;
        if (words >> key && key == "-march=" && words >> value) return value;
    }
    return "";
}

// GCC's report of an option: a line "  -mavx512f   [enabled]".
bool gcc_enables(const std::string& report, const std::string& option) {
    std::istringstream in(report);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string key, value;
        if (words >> key && key == option && words >> value) return value == "[enabled]";
    }
    return false;
}

// Clang: `-### -march=native` shows the driver's cc1 line with "-target-cpu" "znver3".
std::string march_from_clang_driver(const std::string& report) {
    const std::string key = "\"-target-cpu\" \"";
    size_t at = report.find(key);
    if (at == std::string::npos) return "";
    size_t begin = at + key.size();
    size_t end = report.find('"', begin);
    return end == std::string::npos ? "" : report.substr(begin, end - begin);
}

std::string hex64(uint64_t value) {
    return fmt::format("{:016x}", value);
}

}  // namespace

// No -fwrapv: generated code writes wrapping integer arithmetic through unsigned types, and
// plain signed arithmetic only where it never wraps (ir/no_wrap.hpp), which the compiler may
// then treat as affine. -fno-trapping-math: kiln reads no floating-point exception flags and
// installs no traps, so both arms of a select may be computed (GCC then vectorizes a lane loop
// with a select of two float expressions, such as an epilogue's erf); no value changes (it
// enables no reassociation, contraction or fast-math assumption). -fallow-store-data-races (GCC):
// a lane loop's `acc[l] = has ? sum : acc[l]` may then store every lane (the value it read where
// `has` is false) instead of a masked store, which on AVX2 (vmaskmovps) keeps the accumulators
// in memory. A store GCC then invents writes back the value just read, either to an automatic
// array (a kernel's tiles and lane arrays: one call's, on one thread) or to a buffer element the
// same loop reads unconditionally; a kernel reads no element another block writes during the
// launch, so no store another thread could race with is invented, and no value changes.
std::vector<std::string> compile_flags(const Toolchain& toolchain, Optimization level) {
    std::vector<std::string> flags = {"-std=c++17",
                                      level == Optimization::full ? "-O3" : "-O1",
                                      "-march=native",
                                      "-ffp-contract=off",
                                      "-fno-fast-math",
                                      "-fopenmp-simd",
                                      "-fno-math-errno",
                                      "-fno-trapping-math",
                                      "-fPIC",
                                      "-shared",
                                      "-w"};
    static const std::string prefer_512 = "-mprefer-vector-width=512";
    static const std::vector<std::string> gcc_only = {"-fschedule-insns", "-fsched-pressure",
                                                      "-fallow-store-data-races"};
    if (toolchain.avx512) flags.push_back(prefer_512);
    if (toolchain.family == "g++") flags.insert(flags.end(), gcc_only.begin(), gcc_only.end());
    return flags;
}

std::string Toolchain::compiler_name() const {
    return usable() ? family + " " + version : std::string("none");
}

void Toolchain::require() const {
    if (!usable()) throw Error(error);
}

std::string Toolchain::id() const {
    require();
    std::string flags;
    for (const std::string& f : compile_flags(*this, Optimization::full))
        flags += (flags.empty() ? "" : " ") + f;
    return fmt::format("cxx={}; version={}; flags={}; march={}; target={}", path, version_line,
                       flags, march, target_hash);
}

Toolchain probe_toolchain(const std::string& requested) {
    Toolchain t;
    t.requested = requested;
    std::optional<std::string> path = find_executable(requested);
    if (!path) {
        t.error = fmt::format(
            "CPU backend: no C++ compiler found (set KILN_CXX or install g++): '{}' is not an "
            "executable file{}",
            requested, requested.find('/') == std::string::npos ? " on PATH" : "");
        return t;
    }
    t.path = *path;
    try {
        ProcessResult version = run_process({t.path, "--version"}, probe_timeout);
        if (!version.ok()) {
            t.error = fmt::format(
                "CPU backend: no C++ compiler found (set KILN_CXX or install g++): '{} --version' "
                "failed:\n{}",
                t.path, version.output);
            return t;
        }
        t.version_line = first_line(version.output);
        t.version = version_of(t.version_line);
        t.family = t.version_line.find("clang") != std::string::npos ? "clang++" : "g++";

        ProcessResult target =
            run_process({t.path, "-march=native", "-Q", "--help=target"}, probe_timeout);
        std::string report = target.ok() ? target.output : "";
        t.march = march_from_gcc_report(report);
        t.avx512 = gcc_enables(report, "-mavx512f");
        if (t.march.empty()) {
            ProcessResult driver = run_process({t.path, "-###", "-march=native", "-x", "c++", "-c",
                                                "/dev/null", "-o", "/dev/null"},
                                               probe_timeout);
            report = driver.output;
            t.march = march_from_clang_driver(report);
            t.avx512 = report.find("\"+avx512f\"") != std::string::npos;
        }
        if (t.march.empty()) t.march = "native-unknown";
        // Two hosts with one -march name can still differ in enabled ISA extensions
        // (hypervisors mask some); the full report tells them apart.
        t.target_hash = hex64(XXH64(report.data(), report.size(), 0));
    } catch (const Error& e) {
        t.error = fmt::format("CPU backend: cannot run the C++ compiler {}: {}", t.path, e.what());
    }
    return t;
}

std::vector<uint8_t> compile_shared_object(const Toolchain& toolchain, const std::string& source,
                                           std::chrono::milliseconds timeout, Optimization level) {
    toolchain.require();
    cache::TempDir dir("kiln-cpu-", "CPU backend");
    std::filesystem::path source_path = dir.path() / "kernel.cpp";
    std::filesystem::path object_path = dir.path() / "kernel.so";
    {
        std::ofstream out(source_path, std::ios::binary);
        out.write(source.data(), static_cast<std::streamsize>(source.size()));
        if (!out) fail("CPU backend: cannot write {}", source_path.string());
    }
    std::vector<std::string> argv = {toolchain.path};
    for (const std::string& f : compile_flags(toolchain, level)) argv.push_back(f);
    argv.insert(argv.end(), {"-o", object_path.string(), source_path.string()});

    ProcessResult result = run_process(argv, timeout);
    if (result.timed_out)
        fail("CPU backend: the C++ compiler timed out after {} s:\n{}\n{}",
             std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), command_line(argv),
             result.output);
    if (!result.ok())
        fail("CPU backend: compiling a kernel failed ({}):\n{}\n{}",
             result.signal ? fmt::format("killed by signal {}", result.signal)
                           : fmt::format("exit status {}", result.exit_status),
             command_line(argv), result.output);

    std::ifstream in(object_path, std::ios::binary);
    if (!in)
        fail("CPU backend: the C++ compiler reported success but wrote no {}:\n{}\n{}",
             object_path.string(), command_line(argv), result.output);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace kiln::runtime::cpu
