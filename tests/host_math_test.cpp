// kiln::host (include/kiln/host_math.hpp): on a dense sweep of f32 bit patterns, each host twin
// gives bit for bit what its DSL function gives as a kernel on every device.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/host_math.hpp"
#include "kiln/math.hpp"
#include "support/ulp.hpp"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Expr;
using kiln::test::from_bits;
using kiln::test::same_bits;

struct Twin {
    const char* name;
    Expr (*dsl)(const Expr&);
    float (*host)(float);
};

const std::vector<Twin>& twins() {
    static const std::vector<Twin> ts = {
        {"exp", kiln::exp, kiln::host::exp},       {"exp2", kiln::exp2, kiln::host::exp2},
        {"expm1", kiln::expm1, kiln::host::expm1}, {"log", kiln::log, kiln::host::log},
        {"log2", kiln::log2, kiln::host::log2},    {"log1p", kiln::log1p, kiln::host::log1p},
        {"tanh", kiln::tanh, kiln::host::tanh},    {"sigmoid", kiln::sigmoid, kiln::host::sigmoid},
        {"erf", kiln::erf, kiln::host::erf},       {"sin", kiln::sin, kiln::host::sin},
        {"cos", kiln::cos, kiln::host::cos},       {"rsqrt", kiln::rsqrt, kiln::host::rsqrt},
        {"floor", kiln::floor, kiln::host::floor}, {"ceil", kiln::ceil, kiln::host::ceil},
        {"trunc", kiln::trunc, kiln::host::trunc}, {"round", kiln::round, kiln::host::round},
    };
    return ts;
}

// Every `stride`-th f32 bit pattern from a seed-chosen start, both signs, NaNs included.
std::vector<float> sweep(uint32_t stride, uint32_t start) {
    std::vector<float> v;
    for (uint64_t b = start; b < (uint64_t{1} << 32); b += stride)
        v.push_back(from_bits(static_cast<uint32_t>(b)));
    return v;
}

kiln::ir::Kernel unary_kernel(const Twin& t) {
    kiln::KernelBuilder k(std::string("twin_") + t.name, 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = t.dsl(x[i]); });
    return k.finish();
}

kiln::ir::Kernel pow_kernel() {
    kiln::KernelBuilder k("twin_pow", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.input("y", DType::f32);
    auto z = k.output("z", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < z.len(), [&] { z[i] = kiln::pow(x[i], y[i]); });
    return k.finish();
}

// Runs `kernel` over float buffers: inputs..., then the output.
std::vector<float> run(const kiln::CompiledKernel& kernel,
                       const std::vector<const std::vector<float>*>& inputs) {
    Device& d = kernel.device();
    const size_t n = inputs.front()->size();
    std::vector<std::unique_ptr<kiln::Buffer>> buffers;
    std::vector<kiln::Arg> args;
    for (const auto* in : inputs) {
        buffers.push_back(std::make_unique<kiln::Buffer>(d, DType::f32, n));
        buffers.back()->upload(*in);
        args.emplace_back(*buffers.back());
    }
    kiln::Buffer out(d, DType::f32, n);
    args.emplace_back(out);
    kernel.launch(static_cast<int64_t>((n + 63) / 64), args);
    return out.download<float>();
}

// Counts and reports mismatches between host and device results.
void expect_same(const std::string& what, const std::vector<float>& host,
                 const std::vector<float>& device,
                 const std::vector<const std::vector<float>*>& in) {
    size_t bad = 0;
    for (size_t i = 0; i < host.size(); ++i) {
        if (same_bits(host[i], device[i])) continue;
        if (++bad <= 5) {
            std::string args;
            for (const auto* v : in) args += fmt::format("{:a} ", static_cast<double>((*v)[i]));
            ADD_FAILURE() << what << "(" << args << "): host " << std::hexfloat << host[i]
                          << ", device " << device[i];
        }
    }
    EXPECT_EQ(bad, 0u) << what;
}

TEST(HostMath, UnaryTwinsMatchEveryDeviceBitForBit) {
    std::vector<kiln::ir::Kernel> kernels;
    for (const Twin& t : twins()) kernels.push_back(unary_kernel(t));
    const std::vector<float> cpu_in = sweep(4093, 17);  // about a million patterns
    const std::vector<float> other_in = sweep(65521, 5);
    for (Device* d : kiln::devices()) {
        const bool cpu = d->info().backend == kiln::Backend::cpu;
        const std::vector<float>& in = cpu ? cpu_in : other_in;  // PoCL and GPUs: fewer
        const auto compiled = kiln::compile_all(*d, kernels);
        for (size_t f = 0; f < twins().size(); ++f) {
            std::vector<float> host(in.size());
            for (size_t i = 0; i < in.size(); ++i) host[i] = twins()[f].host(in[i]);
            expect_same(d->info().id + " " + twins()[f].name, host, run(*compiled[f], {&in}),
                        {&in});
        }
    }
}

TEST(HostMath, PowTwinMatchesEveryDeviceBitForBit) {
    std::mt19937 rng(11);
    std::vector<float> x, y;
    for (int i = 0; i < (1 << 18); ++i) {
        // Any x with a moderate y, and any pair of bit patterns (mostly 0, inf or NaN results).
        x.push_back(from_bits(rng()));
        y.push_back(i % 2 ? from_bits(rng()) : std::uniform_real_distribution<float>(-40, 40)(rng));
    }
    std::vector<float> host(x.size());
    for (size_t i = 0; i < x.size(); ++i) host[i] = kiln::host::pow(x[i], y[i]);
    for (Device* d : kiln::devices())
        expect_same(d->info().id + " pow", host, run(*kiln::compile(*d, pow_kernel()), {&x, &y}),
                    {&x, &y});
}

TEST(HostMath, TwinsAreTheDslFunctionsNotLibraryCalls) {
    // Where kiln's bound allows a result other than the correctly rounded one, the twin follows
    // kiln, not the C library: sin(FLT_MAX) from the exact reduction, and tanh at a point where
    // kiln's 1.5-ulp result differs from glibc's.
    EXPECT_EQ(kiln::host::sin(3.40282347e38f), -0x1.0b3366p-1f);
    EXPECT_EQ(kiln::host::round(2.5f), 2.0f);
    EXPECT_EQ(kiln::host::round(-0.5f), -0.0f);
    EXPECT_TRUE(std::signbit(kiln::host::round(-0.5f)));
    EXPECT_EQ(kiln::host::rsqrt(4.0f), 0.5f);
    EXPECT_EQ(kiln::host::pow(-2.0f, 3.0f), -8.0f);
}

}  // namespace
