// The CPU backend's launch cost against OpenMP's, thread count by thread count: an empty job on
// kiln's thread pool beside an empty OpenMP parallel loop (a fork and join each), and (a+b)^2 over
// 2^18 elements (a small map: launch-bound) and 2^26 (memory-bound) as a kiln launch beside the
// OpenMP loop — the latter also over kiln's own buffers, so that where the memory lies (kiln's
// allocation against std::vector's) is told apart from how the work is shared. Figures are medians
// of wall-clock times of one call and its wait, timed in blocks (bench_common.hpp).
//
//   bench_cpu_launch [--threads 1,2,4,...] [--reps N] [--json FILE]
#include <functional>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "ops/user_kernels.hpp"
#include "peers/openmp_loops.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/cpu/host_info.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace kiln::bench {
namespace {

// Median microseconds of `reps` calls of each of `calls`, timed in blocks.
std::vector<double> medians_us(int reps, const std::vector<std::function<void()>>& calls) {
    std::vector<double> out;
    for (const auto& ms : timed_in_blocks(reps, calls)) out.push_back(1e3 * median(ms));
    return out;
}

std::vector<int> default_threads() {
    std::vector<int> out;
    const int all = runtime::cpu::usable_cpus();
    for (int t = 1; t < all; t *= 2) out.push_back(t);
    out.push_back(all);
    return out;
}

struct Row {
    int threads;
    double pool_us, omp_us;           // empty fork and join
    double small_us, small_omp_us;    // (a+b)^2 2^18
    double large_us, large_omp_us;    // (a+b)^2 2^26
    double large_omp_kiln_memory_us;  // the OpenMP loop over kiln's buffers
};

Row measure(int threads, int reps) {
    Row row{threads, 0, 0, 0, 0, 0, 0, 0};
    {
        runtime::cpu::ThreadPool pool(threads);
        const int64_t tasks = 4 * int64_t{threads};
        const auto m = medians_us(reps, {[&] { pool.run(tasks, [](int64_t) {}); },
                                         [&] { openmp_fork_join(threads, tasks); }});
        row.pool_us = m[0];
        row.omp_us = m[1];
    }
    runtime::cpu::CpuDeviceOptions options;
    options.threads = threads;
    runtime::cpu::CpuDevice device(options);
    const auto kernel = compile(device, ops::add_square(256));
    for (const int64_t n : {int64_t{1} << 18, int64_t{1} << 26}) {
        const auto a = random_floats(static_cast<size_t>(n), 1, 2.0f);
        const auto b = random_floats(static_cast<size_t>(n), 2, 2.0f);
        std::vector<float> y(static_cast<size_t>(n));
        Buffer ka(device, DType::f32, a.size()), kb(device, DType::f32, b.size()),
            ky(device, DType::f32, y.size());
        ka.upload(a);
        kb.upload(b);
        ky.upload(y);
        auto address = [](Buffer& buf) {
            return static_cast<float*>(dynamic_cast<runtime::cpu::CpuMemory&>(buf.memory()).data());
        };
        float *pa = address(ka), *pb = address(kb), *py = address(ky);
        const int r = n > (int64_t{1} << 20) ? std::max(5, reps / 1000) : reps;
        const auto m = medians_us(
            r, {[&] {
                    kernel->launch((n + 255) / 256, {ka, kb, ky});
                    device.synchronize();
                },
                [&] { openmp_add_square_threads(threads, a.data(), b.data(), y.data(), n); },
                [&] { openmp_add_square_threads(threads, pa, pb, py, n); }});
        if (n == (int64_t{1} << 18)) {
            row.small_us = m[0];
            row.small_omp_us = m[1];
        } else {
            row.large_us = m[0];
            row.large_omp_us = m[1];
            row.large_omp_kiln_memory_us = m[2];
        }
    }
    return row;
}

int run(int argc, char** argv) {
    Flags flags(argc, argv, {"--threads", "--reps", "--json"},
                "bench_cpu_launch [--threads 1,2,4,...] [--reps N] [--json FILE]");
    const int reps = static_cast<int>(flags.integer("--reps", 20000, 10, 10000000));
    std::vector<int> threads;
    if (flags.has("--threads"))
        for (const auto& text : split_list(flags.text("--threads"))) {
            const int t = std::atoi(text.c_str());
            if (t < 1 || t > 4096) fail("--threads: '{}' is not a count from 1 to 4096", text);
            threads.push_back(t);
        }
    else
        threads = default_threads();
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> json;
    for (const int t : threads) {
        const Row r = measure(t, reps);
        table.push_back({std::to_string(t), fmt::format("{:.2f}", r.pool_us),
                         fmt::format("{:.2f}", r.omp_us), fmt::format("{:.2f}", r.small_us),
                         fmt::format("{:.2f}", r.small_omp_us),
                         fmt::format("{:.2f}x", r.small_us / r.small_omp_us),
                         fmt::format("{:.0f}", r.large_us), fmt::format("{:.0f}", r.large_omp_us),
                         fmt::format("{:.0f}", r.large_omp_kiln_memory_us),
                         fmt::format("{:.2f}x", r.large_us / r.large_omp_us)});
        json.push_back(fmt::format(
            "{{\"threads\": {}, \"pool_fork_join_us\": {}, \"openmp_fork_join_us\": {}, "
            "\"map_2e18_us\": {}, \"map_2e18_openmp_us\": {}, \"map_2e26_us\": {}, "
            "\"map_2e26_openmp_us\": {}, \"map_2e26_openmp_kiln_memory_us\": {}}}",
            t, r.pool_us, r.omp_us, r.small_us, r.small_omp_us, r.large_us, r.large_omp_us,
            r.large_omp_kiln_memory_us));
        fmt::print(stderr, "{} threads: done\n", t);
    }
    print_table(
        {"threads", "pool fork/join us", "OpenMP fork/join us", "map 2^18 us", "OpenMP 2^18 us",
         "kiln/OpenMP", "map 2^26 us", "OpenMP 2^26 us", "OpenMP on kiln's buffers", "kiln/OpenMP"},
        table);
    if (flags.has("--json")) write_json_array(flags.text("--json"), json);
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_cpu_launch", kiln::bench::run, argc, argv);
}
