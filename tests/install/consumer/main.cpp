// Uses the installed kiln: builds a kernel and runs it on the CPU, then tunes a shipped op through
// its public header as the README's autotuning example does; checks both results.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <kiln/compile.hpp>
#include <kiln/dsl.hpp>
#include <kiln/ops.hpp>
#include <kiln/tune.hpp>

namespace {

bool kernel_doubles() {
    kiln::KernelBuilder k("consumer_double", 32);
    auto x = k.input("x", kiln::DType::f32);
    auto y = k.output("y", kiln::DType::f32);
    kiln::Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = x[i] * 2.0f; });
    auto kernel = kiln::compile(kiln::cpu_device(), k.finish());
    kiln::Buffer bx(kiln::cpu_device(), kiln::DType::f32, 40),
        by(kiln::cpu_device(), kiln::DType::f32, 40);
    bx.fill(1.5);
    kernel->launch(2, {bx, by});
    const float last = by.download<float>()[39];
    std::printf("consumer: %g\n", last);
    return last == 3.0f;
}

// rms_norm of rows of 2.0 with w = 1.5 is 2 / sqrt(4 + eps) * 1.5, whichever variant wins.
bool shipped_op_tunes(const std::filesystem::path& tune_root) {
    using namespace kiln;
    Device& device = cpu_device();
    const int64_t rows = 3, n = 64;
    const float eps = 1e-6f;
    Buffer x(device, DType::f32, rows * n), w(device, DType::f32, n);
    x.fill(2.0);
    w.fill(1.5);
    const ops::RmsNormSchedule& s1 = ops::rms_norm_variant("b64_r1");
    const ops::RmsNormSchedule& s2 = ops::rms_norm_variant("warp_b256");
    Tuner tuner(tune_root);
    Buffer y = Tuned<Buffer>("rms_norm", "rows=3,n=64", device)
                   .variant("b64_r1",
                            [&](int iters) {
                                return ops::rms_norm_bench(device, x, w, rows, n, eps, s1, iters);
                            })
                   .variant("warp_b256",
                            [&](int iters) {
                                return ops::rms_norm_bench(device, x, w, rows, n, eps, s2, iters);
                            })
                   .run(tuner);
    const std::vector<float> tuned = y.download<float>();
    const std::vector<float> entry = ops::rms_norm(device, x, w, n, eps, tuner).download<float>();
    const float expected = 2.0f / std::sqrt(4.0f + eps) * 1.5f;
    std::printf("consumer: rms_norm %g (expected %g)\n", tuned[0], expected);
    if (tuned != entry) return false;
    for (float v : tuned)
        if (std::fabs(v - expected) > 1e-6f) return false;
    return ops::quantize_q8_0(std::vector<float>(32, 1.0f)).size() == ops::kQ8BlockBytes;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: consumer TUNE_DIR\n");
        return 2;
    }
    return kernel_doubles() && shipped_op_tunes(argv[1]) ? 0 : 1;
}
