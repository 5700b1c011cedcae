// Uses the installed kiln: builds a kernel, runs it on the CPU, checks the result.
#include <cstdio>

#include <kiln/compile.hpp>
#include <kiln/dsl.hpp>

int main() {
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
    return last == 3.0f ? 0 : 1;
}
