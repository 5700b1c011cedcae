// What checked mode (KILN_CHECK_BOUNDS) checks in the shipped ops: for every variant of each op,
// lowered for each backend, how many memory accesses keep a check of their index and how many the
// range analysis proved in range (no device needed; the code is what each backend would compile).
// Some proofs hold where the kernel's i32 positions do not wrap: those accesses keep a test of the
// grid, one value per launch (ir/check_bounds.hpp).
//
//   bounds_checks [--n N]
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "codegen/lower.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"

using namespace kiln;

namespace {

struct Family {
    std::string op;
    std::vector<ir::Kernel> kernels;
};

// "checked/all" per memory space, and the share elided.
std::vector<std::string> row(const Family& f, const codegen::Dialect& d) {
    ir::BoundsCheckCounts sum;
    for (const auto& k : f.kernels) {
        const auto c = codegen::lower(k, d, {.check_bounds = true}).checks;
        for (size_t s = 0; s < 3; ++s) {
            sum.accesses[s] += c.accesses[s];
            sum.checked[s] += c.checked[s];
            sum.grid_tested[s] += c.grid_tested[s];
        }
    }
    int all = 0, checked = 0, grid = 0;
    std::vector<std::string> cells{f.op, d.name, std::to_string(f.kernels.size())};
    for (size_t s = 0; s < 3; ++s) {
        cells.push_back(fmt::format("{}/{}", sum.checked[s], sum.accesses[s]));
        all += sum.accesses[s];
        checked += sum.checked[s];
        grid += sum.grid_tested[s];
    }
    cells.push_back(fmt::format("{}", all - checked));
    cells.push_back(fmt::format("{}", grid));
    cells.push_back(fmt::format("{:.0f}%", all ? 100.0 * (all - checked) / all : 0.0));
    return cells;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        bench::Flags flags(argc, argv, {"--n"}, "bounds_checks [--n N (rms_norm's row)]");
        const int64_t n = flags.integer("--n", 4096, 1, 1 << 20);
        std::vector<Family> families;
        for (DType t : {DType::f32, DType::bf16}) {
            Family f{fmt::format("rms_norm {} n={}", name(t), n), {}};
            for (const auto& s : ops::rms_norm_variants())
                f.kernels.push_back(ops::rms_norm_kernel(t, n, s));
            families.push_back(std::move(f));
        }
        Family matvec{"matvec_q8", {}};
        for (const auto& v : ops::matvec_q8_variants())
            matvec.kernels.push_back(ops::matvec_q8_kernel(v.schedule));
        families.push_back(std::move(matvec));
        Family matmul{"matmul f32", {}};
        for (const auto& s : ops::matmul_variants())
            matmul.kernels.push_back(ops::matmul_kernel({}, s));
        matmul.kernels.push_back(ops::matmul_chunk_sum_kernel(DType::f32));
        families.push_back(std::move(matmul));
        Family conv1d{"conv1d f32", {}};
        for (const auto& s : ops::conv1d_variants())
            conv1d.kernels.push_back(ops::conv1d_kernel({}, s));
        families.push_back(std::move(conv1d));
        Family attention{"attention f32 d64", {}};
        for (const auto& s : ops::attention_variants())
            attention.kernels.push_back(ops::attention_kernel({DType::f32, DType::f32, 64}, s));
        families.push_back(std::move(attention));
        std::vector<std::vector<std::string>> rows;
        for (const auto& f : families)
            for (const codegen::Dialect* d :
                 {&codegen::cpu_dialect(), &codegen::cuda_dialect(), &codegen::opencl_dialect()})
                rows.push_back(row(f, *d));
        bench::print_table({"op", "backend", "variants", "global checked/all", "shared checked/all",
                            "local checked/all", "elided", "of which grid-tested", "elided share"},
                           rows);
    } catch (const Error& e) {
        fmt::print(stderr, "bounds_checks: {}\n", e.what());
        return 2;
    }
}
