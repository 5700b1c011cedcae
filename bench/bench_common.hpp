// Helpers shared by the benchmark binaries (header-only: each bench/*.cpp is its own program):
// hand-rolled flag parsing and comma-separated lists, random inputs, medians, plain-text tables and
// JSON string quoting.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "kiln/device.hpp"
#include "kiln/error.hpp"

namespace kiln::bench {

// `--name value` flags. Unknown flags and missing values throw kiln::Error naming the usage.
class Flags {
  public:
    Flags(int argc, char** argv, std::vector<std::string> known, std::string usage)
        : usage_(std::move(usage)) {
        for (int i = 1; i < argc; ++i) {
            const std::string flag = argv[i];
            if (flag == "--help" || flag == "-h") {
                std::printf("%s\n", usage_.c_str());
                std::exit(0);
            }
            if (std::find(known.begin(), known.end(), flag) == known.end())
                fail("unknown argument '{}'; usage: {}", flag, usage_);
            if (i + 1 >= argc) fail("{} needs a value; usage: {}", flag, usage_);
            values_[flag] = argv[++i];
        }
    }
    bool has(const std::string& flag) const { return values_.count(flag) != 0; }
    std::string text(const std::string& flag, const std::string& fallback = "") const {
        auto it = values_.find(flag);
        return it == values_.end() ? fallback : it->second;
    }
    int64_t integer(const std::string& flag, int64_t fallback, int64_t lo, int64_t hi) const {
        if (!has(flag)) return fallback;
        const std::string& s = values_.at(flag);
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 0);
        if (s.empty() || *end != '\0' || v < lo || v > hi)
            fail("{} '{}' is not an integer in [{}, {}]; usage: {}", flag, s, lo, hi, usage_);
        return v;
    }

  private:
    std::string usage_;
    std::map<std::string, std::string> values_;
};

// n floats drawn uniformly from [-bound, bound], the same for the same seed.
inline std::vector<float> random_floats(size_t n, uint64_t seed, float bound) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-bound, bound);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// The non-empty items of a comma-separated list ("256,1024").
inline std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Wall-clock milliseconds of `reps` calls of each of `calls` (each call and its wait), after two
// untimed ones. Each call runs in blocks of its own with a pause after each block: a runtime's idle
// threads spin a while before they sleep (OpenMP's for milliseconds), and calls timed in turn would
// find another runtime's threads spinning on the cores they need. Five rounds of blocks, so that
// the machine's slower and faster minutes hit every call alike.
inline std::vector<std::vector<double>> timed_in_blocks(
    int reps, const std::vector<std::function<void()>>& calls) {
    constexpr int kRounds = 5;
    std::vector<std::vector<double>> ms(calls.size());
    for (int round = 0; round < kRounds; ++round)
        for (size_t c = 0; c < calls.size(); ++c) {
            const int block = reps / kRounds + (round < reps % kRounds ? 1 : 0);
            for (int r = 0; r < 2 + block; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                calls[c]();
                const std::chrono::duration<double, std::milli> t =
                    std::chrono::steady_clock::now() - t0;
                if (r >= 2) ms[c].push_back(t.count());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    return ms;
}

// The devices to measure: every device, or the one `--device` names.
inline std::vector<Device*> selected_devices(const Flags& flags) {
    if (flags.has("--device")) return {&find_device(flags.text("--device"))};
    return {devices().begin(), devices().end()};
}

inline bool is_gpu(const DeviceInfo& d) {
    return d.backend == Backend::cuda ||
           (d.backend == Backend::opencl && d.arch.find("GPU") != std::string::npos);
}

inline std::string json_quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
    return out + "\"";
}

inline std::string json_list(const std::vector<double>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{:.6g}", i ? ", " : "", v[i]);
    return out + "]";
}

inline void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) fail("cannot write '{}'", path);
}

// Writes a JSON array of the given objects (each already JSON text), one a line.
inline void write_json_array(const std::string& path, const std::vector<std::string>& objects) {
    std::string json = "[";
    for (size_t i = 0; i < objects.size(); ++i) json += (i ? ",\n  " : "\n  ") + objects[i];
    write_file(path, json + "\n]\n");
}

// A benchmark's main: run(argc, argv), or exit status 2 with "<program>: error: ..." on stderr.
inline int main_of(const char* program, int (*run)(int, char**), int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}\n", program, e.what());
        return 2;
    }
}

inline void print_table(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width(headers.size());
    for (size_t c = 0; c < headers.size(); ++c) {
        width[c] = headers[c].size();
        for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c)
            text += fmt::format("{:<{}}", cells[c], c + 1 < cells.size() ? width[c] + 2 : 0);
        fmt::print("{}\n", text);
    };
    line(headers);
    std::vector<std::string> rule;
    for (size_t w : width) rule.emplace_back(w, '-');
    line(rule);
    for (const auto& r : rows) line(r);
}

}  // namespace kiln::bench
