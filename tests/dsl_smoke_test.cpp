// End-to-end smoke test: a DSL kernel compiled and run on every device.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <span>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/semantics.hpp"

#include <fmt/format.h>

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

// load_vector of `width` elements of t (E: the elements' host type), from a buffer and from a
// shared tile, at aligned and unaligned indices (off = 0 or 1, a launch argument) on every device:
// the same elements that element loads give.
template <typename E>
void expect_vector_loads_everywhere(DType t, int width) {
    const int block = 64;
    KernelBuilder k(fmt::format("vector_{}_{}", name(t), width), block);
    auto x = k.input("x", t);
    auto y = k.output("y", t);  // element i*width + j: x[i*width + off + j]
    auto z = k.output("z", t);  // element t*width + j: x[max(t*width - off, 0) + j]
    Expr off = k.scalar("off", DType::i32);
    auto tile = k.shared(t, int64_t{block} * width, "tile");
    Var i = k.let(k.absolute_pos(), "i");
    Var lane = k.let(k.thread_index(), "lane");
    k.if_(i * width + off + width <= x.len() && i * width + width <= y.len(), [&] {
        auto v = k.load_vector(x, i * width + off, width, "v");
        for (int j = 0; j < width; ++j) y[i * width + j] = v[static_cast<size_t>(j)];
    });
    for (int j = 0; j < width; ++j) tile[lane * width + j] = x[lane * width + j];
    k.barrier();
    k.if_(i < block, [&] {
        auto v = k.load_vector(tile, max(lane * width - off, 0), width, "s");
        for (int j = 0; j < width; ++j) z[lane * width + j] = v[static_cast<size_t>(j)];
    });
    auto kernel = k.finish();
    const size_t n = 1001;  // ragged against the widths
    // Distinct bit patterns with a clear top exponent bit: no NaN in any float dtype.
    const E mask = sizeof(E) == 4 ? E(0x3fffffffu) : E(0x3bffu);
    std::vector<E> h(n);
    for (size_t j = 0; j < n; ++j) h[j] = E((E(j * 2654435761u) & mask) | 1u);
    for (Device* d : devices()) {
        auto c = compile(*d, kernel);
        for (int o : {0, 1}) {
            SCOPED_TRACE(fmt::format("{} {} width {} off {}", d->info().id, name(t), width, o));
            Buffer bx(*d, t, n), by(*d, t, n), bz(*d, t, size_t(block) * width);
            bx.upload_raw(h.data(), t, n);
            by.upload_raw(std::vector<E>(n, 0).data(), t, n);
            c->launch(static_cast<int64_t>((n + block - 1) / block), {bx, by, bz, o});
            std::vector<E> gy(n), gz(size_t(block) * width);
            by.download_raw(gy.data(), t, n);
            bz.download_raw(gz.data(), t, gz.size());
            const size_t whole = (n - static_cast<size_t>(o)) / width * width;
            for (size_t j = 0; j < n; ++j)
                ASSERT_EQ(gy[j], j < whole ? h[j + static_cast<size_t>(o)] : E(0)) << j;
            for (size_t j = 0; j < gz.size(); ++j) {
                const size_t lane_start = j / width * width;
                const size_t from =
                    lane_start >= static_cast<size_t>(o) ? lane_start - static_cast<size_t>(o) : 0;
                ASSERT_EQ(gz[j], h[from + j % width]) << j;
            }
        }
    }
}

TEST(Smoke, VectorLoadsOnEveryDevice) {
    for (DType t : {DType::u32, DType::i32, DType::f32})
        for (int width : {2, 4}) expect_vector_loads_everywhere<uint32_t>(t, width);
}

// 2-byte elements: 4 or 8 of them (8 or 16 bytes), one wide load on CUDA split into halves.
TEST(Smoke, VectorLoadsOfTwoByteElementsOnEveryDevice) {
    for (DType t : {DType::f16, DType::bf16})
        for (int width : {4, 8}) expect_vector_loads_everywhere<uint16_t>(t, width);
}

// store_vector, every width and 4-byte dtype, plain and streaming, into a buffer and into a
// shared tile, at aligned and unaligned indices (off = 0 or 1, a launch argument) on every
// device, and into the buffer at an index known to be aligned (CUDA: no run-time test). Each
// vector holds its source elements reversed, so a store that swaps, drops or misplaces an
// element is caught.
TEST(Smoke, VectorStoresOnEveryDevice) {
    const int block = 64;
    const size_t n = 1001;  // ragged against the widths
    struct Case {
        DType type;
        int width;
        bool streaming;
        bool known_aligned;  // y's index is i*width: a multiple of the width by construction
    };
    std::vector<Case> cases;
    std::vector<ir::Kernel> kernels;
    for (DType t : {DType::u32, DType::i32, DType::f32}) {
        for (int width : {2, 4}) {
            for (auto [streaming, known] :
                 {std::pair{false, false}, {true, false}, {false, true}}) {
                KernelBuilder k(fmt::format("vstore_{}_{}_{}_{}", name(t), width, streaming, known),
                                block);
                auto x = k.input("x", t);
                auto y = k.output("y", t);  // vector at i*width + off: x's elements there, reversed
                auto z =
                    k.output("z", t);  // element lane*width + j: the tile's lane*width + off + j
                if (streaming) k.streaming(y);
                Expr off = k.scalar("off", DType::i32);
                auto tile = k.shared(t, int64_t{block} * width + 1, "tile");
                Var i = k.let(k.absolute_pos(), "i");
                Var lane = k.let(k.thread_index(), "lane");
                auto reversed = [&](const Expr& at) {
                    std::vector<Expr> v;
                    for (int j = width - 1; j >= 0; --j) v.push_back(x[at + j]);
                    return v;
                };
                Var at = k.let(known ? i * width : i * width + off, "at");
                k.if_(at + width <= y.len(), [&] { k.store_vector(y, at, reversed(at)); });
                k.store_vector(tile, lane * width + off, reversed(lane * width));
                k.barrier();
                k.if_(i < block, [&] {
                    for (int j = 0; j < width; ++j)
                        z[lane * width + j] = tile[lane * width + off + j];
                });
                kernels.push_back(k.finish());
                cases.push_back({t, width, streaming, known});
            }
        }
    }
    std::vector<uint32_t> h(n);
    for (size_t j = 0; j < n; ++j)
        h[j] = (static_cast<uint32_t>(j * 2654435761u) & 0x3fffffffu) | 1u;  // no NaN
    for (Device* d : devices()) {
        const auto compiled = compile_all(*d, kernels);
        for (size_t c = 0; c < cases.size(); ++c) {
            const auto [t, width, streaming, known] = cases[c];
            const size_t w = static_cast<size_t>(width);
            for (int o : {0, 1}) {
                SCOPED_TRACE(fmt::format("{} {} width {} streaming {} known aligned {} off {}",
                                         d->info().id, name(t), width, streaming, known, o));
                Buffer bx(*d, t, n), by(*d, t, n), bz(*d, t, size_t(block) * w);
                bx.upload_raw(h.data(), t, n);
                by.upload_raw(std::vector<uint32_t>(n, 0).data(), t, n);
                compiled[c]->launch(static_cast<int64_t>((n + block - 1) / block), {bx, by, bz, o});
                std::vector<uint32_t> gy(n), gz(size_t(block) * w);
                by.download_raw(gy.data(), t, n);
                bz.download_raw(gz.data(), t, gz.size());
                const size_t off = known ? 0 : static_cast<size_t>(o), whole = (n - off) / w * w;
                for (size_t p = 0; p < n; ++p) {
                    const bool stored = p >= off && p < off + whole;
                    const size_t start = stored ? off + (p - off) / w * w : 0;
                    ASSERT_EQ(gy[p], stored ? h[start + w - 1 - (p - start)] : 0u) << p;
                }
                for (size_t p = 0; p < gz.size(); ++p)
                    ASSERT_EQ(gz[p], h[p / w * w + w - 1 - p % w]) << p;  // the tile takes off
            }
        }
    }
}

// Buffers kept cached (CUDA: evict_last loads through inline PTX) read the same values as plain
// ones, for every storage width, scalar and vector, on every device: a copy through them.
TEST(Smoke, KeptBuffersReadTheirValuesOnEveryDevice) {
    const size_t n = 1001;
    std::vector<DType> types = {DType::u8,  DType::i8,  DType::f16, DType::u32,
                                DType::i32, DType::f32, DType::i64};
    std::vector<ir::Kernel> kernels;
    for (DType t : types) {
        KernelBuilder k(fmt::format("keep_copy_{}", name(t)), 64);
        auto x = k.input("x", t);
        auto y = k.output("y", t);
        k.keep_cached(x);
        Var i = k.let(k.absolute_pos(), "i");
        if (size_of(t) == 4) {  // vectors of 4 where whole (index a multiple of 4), then scalars
            k.if_(i * 4 + 3 < y.len(), [&] {
                auto v = k.load_vector(x, i * 4, 4, "v");
                for (int j = 0; j < 4; ++j) y[i * 4 + j] = v[static_cast<size_t>(j)];
            });
            k.if_(i < y.len() && i >= y.len() / 4 * 4, [&] { y[i] = x[i]; });
        } else {
            k.if_(i < y.len(), [&] { y[i] = x[i]; });
        }
        kernels.push_back(k.finish());
    }
    for (Device* d : devices()) {
        const auto compiled = compile_all(*d, kernels);
        for (size_t c = 0; c < types.size(); ++c) {
            const DType t = types[c];
            SCOPED_TRACE(fmt::format("{} {}", d->info().id, name(t)));
            std::vector<uint8_t> h(n * size_of(t));
            for (size_t j = 0; j < h.size(); ++j)
                h[j] = static_cast<uint8_t>((j * 2654435761u) >> 7);
            if (t == DType::f16)  // finite halves only: clear each exponent's top bit
                for (size_t j = 1; j < h.size(); j += 2) h[j] &= 0xbf;
            if (t == DType::f32)  // finite floats only
                for (size_t j = 3; j < h.size(); j += 4) h[j] &= 0xbf;
            Buffer bx(*d, t, n), by(*d, t, n);
            bx.upload_bytes(h);
            by.fill(0);
            compiled[c]->launch((static_cast<int64_t>(n) + 63) / 64, {bx, by});
            EXPECT_EQ(by.download_bytes(), h);
        }
    }
}

// A memory array (KernelBuilder::memory_array) is a per-thread array like a local one: each
// thread's elements are its own, written at comptime and run-time indices, read back after a
// barrier every thread passes. On CUDA and OpenCL it is declared volatile (kept in memory).
TEST(Smoke, MemoryArraysHoldEachThreadsValuesOnEveryDevice) {
    constexpr int kBlock = 64, kSize = 8;
    KernelBuilder k("memory_array", kBlock);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr shift = k.scalar("shift", DType::i32);
    auto arr = k.memory_array(DType::f32, kSize, "kept");
    Var i = k.let(k.absolute_pos(), "i");
    Var at = k.let(min(i, x.len() - 1), "at");
    for (int j = 0; j < kSize; ++j) arr[j] = x[at] * static_cast<float>(j + 1);
    k.barrier();
    // arr[(j + shift) % kSize] += 1 at run-time indices, then every element out in order.
    k.for_(0, kSize, [&](Expr j) {
        auto e = arr[(j + shift) % kSize];
        e = e + 1.0f;
    });
    k.if_(i < x.len(), [&] {
        for (int j = 0; j < kSize; ++j) y[i * kSize + j] = arr[j];
    });
    const auto kernel = k.finish();
    const std::vector<ir::Kernel> kernels{kernel};
    EXPECT_NE(generate_source(Backend::cuda, kernels).find("volatile float la0[8]"),
              std::string::npos);
    EXPECT_NE(generate_source(Backend::opencl, kernels).find("volatile float la0[8]"),
              std::string::npos);
    const size_t n = 301;  // ragged against the block
    std::vector<float> h(n);
    for (size_t j = 0; j < n; ++j) h[j] = 0.25f * static_cast<float>(j) - 7.0f;
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, n), by(*d, DType::f32, n * kSize);
        bx.upload(h);
        compile(*d, kernel)->launch((n + kBlock - 1) / kBlock, {bx, by, int32_t{3}});
        const auto out = by.download<float>();
        for (size_t j = 0; j < n; ++j)
            for (int e = 0; e < kSize; ++e)
                ASSERT_EQ(out[j * kSize + e], h[j] * static_cast<float>(e + 1) + 1.0f)
                    << j << " " << e;
    }
}

// min and max with a constant operand, on either side, are written in their one-compare forms
// (scalar_semantics.h's _a and _b): on every device they give the general form's bits for every
// input, NaN, infinities and zeros of either sign included, and for constants of either zero.
TEST(Smoke, MinAndMaxByAConstantAreTheGeneralOnesOnEveryDevice) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> constants = {0.0f, -0.0f, 2.5f, -1.0f, inf, -inf};
    std::vector<float> xs = {0.0f, -0.0f, 1.0f,   -1.0f,   2.5f, -2.5f, inf,  -inf,
                             nan,  -nan,  1e-40f, -1e-40f, 3.0f, -3.0f, 0.5f, -104.0f};
    for (int j = 0; j < 47; ++j)
        xs.push_back(std::ldexp(static_cast<float>(j % 7) - 3.0f, j % 9 - 4));
    KernelBuilder k("min_max_by_constants", 64);
    auto x = k.input("x", DType::f32);
    auto y =
        k.output("y", DType::f32);  // [constant][4][x]: min(x, c), max(x, c), min(c, x), max(c, x)
    Var i = k.let(k.absolute_pos(), "i");
    k.if_(i < x.len(), [&] {
        Var v = k.let(x[i], "v");
        for (size_t c = 0; c < constants.size(); ++c) {
            const Expr at = (int64_t(c) * 4) * x.len() + i;
            const Expr known = Expr(constants[c]);
            y[at] = min(v, known);
            y[at + x.len()] = max(v, known);
            y[at + x.len() * 2] = min(known, v);
            y[at + x.len() * 3] = max(known, v);
        }
    });
    const ir::Kernel kernel = k.finish();
    const std::string cpu = generate_source(Backend::cpu, std::span<const ir::Kernel>(&kernel, 1));
    for (const char* form :
         {"kiln_min_f32_a(", "kiln_max_f32_a(", "kiln_min_f32_b(", "kiln_max_f32_b("})
        EXPECT_NE(cpu.find(form), std::string::npos) << form;
    // No general form in the kernels: only the prelude's own uses, as in a kernel without min.
    KernelBuilder plain("copy", 64);
    auto px = plain.input("x", DType::f32);
    auto py = plain.output("y", DType::f32);
    plain.if_(plain.absolute_pos() < px.len(),
              [&] { py[plain.absolute_pos()] = px[plain.absolute_pos()]; });
    const ir::Kernel copy = plain.finish();
    const std::string prelude =
        generate_source(Backend::cpu, std::span<const ir::Kernel>(&copy, 1));
    auto count = [](const std::string& text, const std::string& what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
            ++n;
        return n;
    };
    for (const char* general : {"kiln_min_f32(", "kiln_max_f32("})
        EXPECT_EQ(count(cpu, general), count(prelude, general)) << general;
    const size_t n = xs.size();
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer bx(*d, DType::f32, n), by(*d, DType::f32, n * 4 * constants.size());
        bx.upload(xs);
        compile(*d, kernel)->launch(static_cast<int64_t>((n + 63) / 64), {bx, by});
        const std::vector<float> got = by.download<float>();
        for (size_t c = 0; c < constants.size(); ++c)
            for (size_t j = 0; j < n; ++j) {
                const float a = xs[j], b = constants[c];
                const float want[4] = {semantics::kiln_min_f32(a, b), semantics::kiln_max_f32(a, b),
                                       semantics::kiln_min_f32(b, a),
                                       semantics::kiln_max_f32(b, a)};
                for (size_t f = 0; f < 4; ++f) {
                    const float g = got[(c * 4 + f) * n + j];
                    SCOPED_TRACE(fmt::format("form {} x {} constant {}", f, a, b));
                    if (std::isnan(want[f]))
                        EXPECT_TRUE(std::isnan(g)) << g;
                    else
                        EXPECT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(want[f]));
                }
            }
    }
}
