// host_math: what one call of each kiln::host math function costs (the tape evaluation of the
// function's DSL expression), in thread CPU time, so the figure holds on a shared machine. A
// table on stdout; --json FILE writes the figures.
#include <time.h>

#include <cmath>
#include <random>

#include "bench_common.hpp"
#include "kiln/host_math.hpp"

namespace {

using kiln::bench::Flags;

double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Function {
    const char* name;
    float (*unary)(float);
    float (*binary)(float, float);
};

}  // namespace

int main(int argc, char** argv) try {
    const Flags flags(argc, argv, {"--calls", "--repeats", "--json"},
                      "bench_host_math [--calls N] [--repeats R] [--json FILE]");
    const int64_t calls = flags.integer("--calls", 1 << 18, 1, int64_t{1} << 30);
    const int64_t repeats = flags.integer("--repeats", 5, 1, 100);
    std::vector<float> x(static_cast<size_t>(calls)), y(x.size());
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> wide(-30.0f, 30.0f), exponent(-4.0f, 4.0f);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = wide(rng);
        y[i] = exponent(rng);
    }
    const std::vector<Function> functions = {
        {"exp", kiln::host::exp, nullptr},     {"exp2", kiln::host::exp2, nullptr},
        {"expm1", kiln::host::expm1, nullptr}, {"log", kiln::host::log, nullptr},
        {"log2", kiln::host::log2, nullptr},   {"log1p", kiln::host::log1p, nullptr},
        {"tanh", kiln::host::tanh, nullptr},   {"sigmoid", kiln::host::sigmoid, nullptr},
        {"erf", kiln::host::erf, nullptr},     {"sin", kiln::host::sin, nullptr},
        {"cos", kiln::host::cos, nullptr},     {"rsqrt", kiln::host::rsqrt, nullptr},
        {"floor", kiln::host::floor, nullptr}, {"round", kiln::host::round, nullptr},
        {"pow", nullptr, kiln::host::pow},
    };
    std::vector<std::vector<std::string>> rows;
    std::string json = "{\"calls\": " + std::to_string(calls) + ", \"ns_per_call\": {";
    volatile float sink = 0;
    for (size_t f = 0; f < functions.size(); ++f) {
        const Function& fn = functions[f];
        std::vector<double> ns;
        for (int64_t r = 0; r < repeats; ++r) {
            float acc = 0;
            const double t0 = thread_seconds();
            for (size_t i = 0; i < x.size(); ++i)
                acc += fn.unary ? fn.unary(x[i]) : fn.binary(std::fabs(x[i]), y[i]);
            ns.push_back((thread_seconds() - t0) * 1e9 / static_cast<double>(calls));
            sink = sink + acc;
        }
        const double median = kiln::bench::median(ns);
        rows.push_back({fn.name, fmt::format("{:.0f}", median)});
        json +=
            fmt::format("{}{}: {:.1f}", f ? ", " : "", kiln::bench::json_quote(fn.name), median);
    }
    json += "}}\n";
    kiln::bench::print_table({"function", "ns per call"}, rows);
    if (flags.has("--json")) kiln::bench::write_file(flags.text("--json"), json);
    return 0;
} catch (const kiln::Error& e) {
    std::fprintf(stderr, "bench_host_math: error: %s\n", e.what());
    return 2;
}
