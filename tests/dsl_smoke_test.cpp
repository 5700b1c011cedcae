// End-to-end smoke test: a DSL kernel compiled and run on every device.
#include <gtest/gtest.h>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"

using namespace kiln;

TEST(Smoke, ScaleOnEveryDevice) {
    KernelBuilder k("scale", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr a = k.scalar("a", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = a * x[i] + 1; });
    auto kernel = k.finish();
    for (Device* d : devices()) {
        const size_t n = 1000;
        std::vector<float> h(n);
        for (size_t j = 0; j < n; ++j) h[j] = 0.5f * static_cast<float>(j);
        Buffer bx(*d, DType::f32, n), by(*d, DType::f32, n);
        bx.upload(h);
        auto c = compile(*d, kernel);
        c->launch((n + 63) / 64, {bx, by, 3.0f});
        auto out = by.download<float>();
        for (size_t j = 0; j < n; ++j)
            ASSERT_EQ(out[j], 3.0f * h[j] + 1) << d->info().id << " " << j;
    }
}
