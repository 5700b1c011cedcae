// device_facts: measures bandwidth, launch time and arithmetic rate once per device.
#include "plan/device_facts.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/error.hpp"
#include "kiln/tune.hpp"

namespace kiln::plan {

std::string DeviceFacts::summary() const {
    return fmt::format("{:.1f} GB/s, launch {:.2f} us, {:.1f} GFLOP/s, {} units{}", bandwidth / 1e3,
                       launch_us, flops / 1e3, units, gpu ? ", SIMT" : "");
}

namespace {

constexpr int kRepeats = 5;
constexpr int kFmaSteps = 256;

double median_ms(Device& d, const std::function<void()>& work) {
    std::vector<double> ms;
    work();  // warm-up
    for (int r = 0; r < kRepeats; ++r) ms.push_back(d.time_ms(work));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// Each thread runs kFmaSteps steps of four independent fma chains: 8 * kFmaSteps flops.
ir::Kernel fma_kernel() {
    KernelBuilder k("facts_fma", 256);
    auto out = k.output("out", DType::f32);
    Expr i = k.absolute_pos();
    Expr x = cast(DType::f32, i) * 1e-9f;
    std::vector<Var> acc;
    for (int c = 0; c < 4; ++c) acc.push_back(k.let(x + static_cast<float>(c), "acc"));
    k.for_(0, kFmaSteps, [&](Expr) {
        for (auto& a : acc) a = fma(a, Expr(0.999f), Expr(0.001f));
    });
    k.if_(i < out.len(), [&] { out[i] = acc[0] + acc[1] + acc[2] + acc[3]; });
    return k.finish();
}

ir::Kernel empty_kernel() {
    KernelBuilder k("facts_empty", 64);
    auto out = k.output("out", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < out.len(), [&] { out[i] = 0.0f; });
    return k.finish();
}

DeviceFacts measure(Device& d) {
    DeviceFacts f;
    const auto& info = d.info();
    f.gpu = info.simt;
    f.units = std::max(1, info.compute_units);
    const size_t bytes = f.gpu ? (size_t{256} << 20) : (size_t{64} << 20);
    Buffer a(d, DType::u8, bytes), b(d, DType::u8, bytes);
    a.fill(1);
    f.bandwidth = 2.0 * static_cast<double>(bytes) /
                  (median_ms(d, [&] { d.copy(b.memory(), a.memory(), bytes); }) * 1e3);

    // The device as programs run it: built with the driver's optimizer, unchecked.
    const CompileOptions as_run{.check_bounds = false, .optimize = true};
    auto kernels = compile_all(d, std::vector<ir::Kernel>{empty_kernel(), fma_kernel()}, as_run);
    Buffer one(d, DType::f32, 1);
    f.launch_us = median_ms(d, [&] { kernels[0]->launch(1, {one}); }) * 1e3;
    const int64_t threads = int64_t{f.units} * (f.gpu ? 2048 : 1024);
    Buffer out(d, DType::f32, static_cast<size_t>(threads));
    const double ms = median_ms(d, [&] { kernels[1]->launch(threads / 256, {out}); });
    f.flops = static_cast<double>(threads) * 8 * kFmaSteps / (ms * 1e3);
    return f;
}

constexpr const char* kFactsKind = "facts";

// The file's text: one "<fact> <value>" line per fact.
std::string facts_text(const DeviceFacts& f) {
    return fmt::format("bandwidth {}\nlaunch_us {}\nflops {}\ngpu {}\nunits {}\n", f.bandwidth,
                       f.launch_us, f.flops, f.gpu ? 1 : 0, f.units);
}

// The facts named in `v` (bandwidth, launch_us, flops, units): nothing unless each is there,
// none is negative, bandwidth and flops are above 0 and units is whole, from 1 to 1e6.
std::optional<DeviceFacts> sane_facts(std::map<std::string, double> v, bool gpu) {
    for (const char* k : {"bandwidth", "launch_us", "flops", "units"})
        if (!v.count(k) || !(v[k] >= 0)) return std::nullopt;
    if (v["bandwidth"] <= 0 || v["flops"] <= 0 || !(v["units"] >= 1 && v["units"] <= 1e6) ||
        v["units"] != static_cast<double>(static_cast<int>(v["units"])))
        return std::nullopt;
    return DeviceFacts{v["bandwidth"], v["launch_us"], v["flops"], gpu,
                       static_cast<int>(v["units"])};
}

// The facts a file's text holds: nothing unless every fact is there and sane.
std::optional<DeviceFacts> parse_facts(const std::string& text) {
    std::istringstream in(text);
    std::map<std::string, double> v;
    std::string key;
    double value = 0;
    while (in >> key >> value) v[key] = value;
    if (!v.count("gpu") || !(v["gpu"] >= 0)) return std::nullopt;
    return sane_facts(v, v["gpu"] != 0);
}

// KILN_DEVICE_FACTS's facts for `device`'s backend, if it names that backend (see the header).
std::optional<DeviceFacts> given_facts(const Device& device) {
    const char* env = std::getenv("KILN_DEVICE_FACTS");
    if (env == nullptr || *env == 0) return std::nullopt;
    const std::string text = env;
    const auto bad = [&](const std::string& why) {
        fail(
            "KILN_DEVICE_FACTS is '{}': {}; expected entries 'BACKEND:bandwidth=B,launch_us=L,"
            "flops=F,units=U' separated by ';' (BACKEND cpu, cuda or opencl; B in bytes a "
            "microsecond, L in microseconds, F in f32 operations a microsecond, U compute units)",
            text, why);
    };
    std::optional<DeviceFacts> mine;
    std::istringstream entries(text);
    std::string entry;
    while (std::getline(entries, entry, ';')) {
        const size_t colon = entry.find(':');
        if (colon == std::string::npos) bad(fmt::format("entry '{}' names no backend", entry));
        const std::string backend = entry.substr(0, colon);
        if (backend != "cpu" && backend != "cuda" && backend != "opencl")
            bad(fmt::format("unknown backend '{}'", backend));
        std::map<std::string, double> v;
        std::istringstream items(entry.substr(colon + 1));
        std::string item;
        while (std::getline(items, item, ',')) {
            const size_t eq = item.find('=');
            const std::string key = item.substr(0, eq);
            if (eq == std::string::npos ||
                (key != "bandwidth" && key != "launch_us" && key != "flops" && key != "units"))
                bad(fmt::format("'{}' is not one of bandwidth=, launch_us=, flops=, units=", item));
            char* end = nullptr;
            const double value = std::strtod(item.c_str() + eq + 1, &end);
            if (end == item.c_str() + eq + 1 || *end != 0 || !(value >= 0) || value > 1e15)
                bad(fmt::format("{}'s value '{}' is not a number from 0 to 1e15", key,
                                item.substr(eq + 1)));
            v[key] = value;
        }
        for (const char* k : {"bandwidth", "launch_us", "flops", "units"})
            if (!v.count(k)) bad(fmt::format("the {} entry has no {}=", backend, k));
        const std::optional<DeviceFacts> facts = sane_facts(v, device.info().simt);
        if (!facts)
            bad(fmt::format("the {} entry needs bandwidth and flops above 0 and whole units from 1",
                            backend));
        if (backend == name(device.info().backend)) mine = facts;
    }
    return mine;
}

// From the tuner's side file, or measured and written there.
DeviceFacts load_or_measure_facts(Device& device, Tuner& tuner) {
    const std::string& id = device.info().id;
    if (const auto text = tuner.read_side_file(id, kFactsKind))
        if (const auto facts = parse_facts(*text)) return *facts;
    const DeviceFacts f = measure(device);
    tuner.write_side_file(id, kFactsKind, facts_text(f));
    return f;
}

}  // namespace

const DeviceFacts& device_facts(Device& device) {
    static std::mutex mutex;
    static std::map<const Device*, DeviceFacts> known;
    std::lock_guard lock(mutex);
    if (auto it = known.find(&device); it != known.end()) return it->second;
    const auto given = given_facts(device);
    DeviceFacts facts = given ? *given : load_or_measure_facts(device, Tuner::process_default());
    if (device.info().vector_registers > 0) facts.vector_registers = device.info().vector_registers;
    return known.emplace(&device, facts).first->second;
}

}  // namespace kiln::plan
