// Test once, run everywhere: runs a kernel on every device kiln found, with the same input bytes,
// and compares each output bitwise with the oracle's (all NaNs of a float dtype compare equal).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/device.hpp"
#include "kiln/interpret.hpp"
#include "kiln/ir.hpp"
#include "kiln/semantics.hpp"

namespace kiln::test {

using Bytes = std::vector<uint8_t>;

// One buffer argument's host contents (outputs start poisoned with 0xA5 bytes).
using HostBuffer = kiln::HostBuffer;

inline HostBuffer poisoned(DType t, size_t count) {
    return {t, Bytes(count * size_of(t), 0xA5)};
}

// Random element bytes for a dtype, with the type's edge values mixed in.
inline HostBuffer random_buffer(DType t, size_t count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    HostBuffer b{t, Bytes(count * size_of(t))};
    for (auto& x : b.bytes) x = static_cast<uint8_t>(rng());
    if (t == DType::boolean)
        for (auto& x : b.bytes) x &= 1;
    std::vector<uint64_t> edges;
    switch (t) {
        case DType::f32:
            edges = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x00000001,
                     0x007fffff, 0x00800000, 0x7f7fffff, 0x3f800000, 0xbf800000, 0x3f000000};
            break;
        case DType::f16:
        case DType::bf16:
            edges = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x0001,
                     0x03ff, 0x0400, 0x7bff, 0x3c00, 0xbc00};
            break;
        case DType::i8:
        case DType::u8:
            edges = {0, 1, 0xff, 0x80, 0x7f, 2, 0xfe};
            break;
        case DType::i32:
        case DType::u32:
            edges = {0, 1, 0xffffffff, 0x80000000, 0x7fffffff, 2, 0xfffffffe, 31, 32};
            break;
        case DType::i64:
            edges = {0, 1, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull, 2, 63, 64};
            break;
        default:
            break;
    }
    const size_t w = size_of(t);
    for (size_t i = 0; i < edges.size() && i < count; ++i)
        std::memcpy(b.bytes.data() + ((i * 7919) % count) * w, &edges[i], w);
    return b;
}

inline bool is_nan_bits(DType t, const uint8_t* p) {
    if (t == DType::f32) {
        uint32_t u;
        std::memcpy(&u, p, 4);
        return (u & 0x7fffffffu) > 0x7f800000u;
    }
    if (t == DType::f16 || t == DType::bf16) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return t == DType::f16 ? (h & 0x7fff) > 0x7c00 : (h & 0x7fff) > 0x7f80;
    }
    return false;
}

// A device buffer holding a host buffer's bytes, and a device buffer's bytes back on the host.
inline Buffer upload(Device& d, const HostBuffer& h) {
    Buffer b(d, h.dtype, h.count());
    b.upload_bytes(h.bytes);
    return b;
}

inline HostBuffer download(const Buffer& b) {
    return {b.dtype(), b.download_bytes()};
}

// Asserts bitwise equality (NaN == NaN); reports the first few mismatches.
inline ::testing::AssertionResult identical(const HostBuffer& got, const HostBuffer& want) {
    if (got.bytes.size() != want.bytes.size())
        return ::testing::AssertionFailure() << "size differs";
    const size_t w = size_of(want.dtype);
    int shown = 0;
    size_t bad = 0;
    std::string text;
    for (size_t i = 0; i < want.count(); ++i) {
        const uint8_t* g = got.bytes.data() + i * w;
        const uint8_t* e = want.bytes.data() + i * w;
        if (std::memcmp(g, e, w) == 0 || (is_nan_bits(want.dtype, g) && is_nan_bits(want.dtype, e)))
            continue;
        ++bad;
        if (shown++ < 5) {
            uint64_t gv = 0, ev = 0;
            std::memcpy(&gv, g, w);
            std::memcpy(&ev, e, w);
            text += "\n  element " + std::to_string(i) + ": got 0x" + fmt::format("{:x}", gv) +
                    ", oracle 0x" + fmt::format("{:x}", ev);
        }
    }
    if (!bad) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << want.count() << " elements differ ("
                                         << name(want.dtype) << ")" << text;
}

// Runs `kernel` on `device` with `buffers` (one per buffer parameter, in order) and `scalars`
// (one per scalar parameter, in order); returns every buffer's contents afterwards.
inline std::vector<HostBuffer> run_on(Device& device, const ir::Kernel& kernel, int64_t grid,
                                      const std::vector<HostBuffer>& buffers,
                                      const std::vector<Arg>& scalars = {},
                                      const CompileOptions& options = default_compile_options()) {
    std::vector<std::unique_ptr<Buffer>> device_buffers;
    std::vector<Arg> args;
    size_t b = 0, s = 0;
    for (const auto& p : kernel.params) {
        if (p.is_buffer) {
            const HostBuffer& h = buffers.at(b++);
            device_buffers.push_back(std::make_unique<Buffer>(device, h.dtype, h.count()));
            device_buffers.back()->upload_bytes(h.bytes);
            args.emplace_back(*device_buffers.back());
        } else {
            args.push_back(scalars.at(s++));
        }
    }
    compile(device, kernel, options)->launch(grid, args);
    device.synchronize();
    std::vector<HostBuffer> out;
    for (const auto& db : device_buffers) out.push_back({db->dtype(), db->download_bytes()});
    return out;
}

// Compiles `kernels` on every device, one compile unit per device: one compiler run for them all
// instead of one each (most of a small kernel's compile is the run's own start). Later compiles of
// these kernels in this process find them in memory.
inline void compile_together(const std::vector<ir::Kernel>& kernels,
                             const CompileOptions& options = default_compile_options()) {
    for (Device* d : devices()) compile_all(*d, kernels, options);
}

// Runs on every device and checks buffer `output` against `want`.
inline void expect_everywhere(const ir::Kernel& kernel, int64_t grid,
                              const std::vector<HostBuffer>& buffers, size_t output,
                              const HostBuffer& want, const std::vector<Arg>& scalars = {}) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id + " " + kernel.name);
        auto out = run_on(*d, kernel, grid, buffers, scalars);
        EXPECT_TRUE(identical(out.at(output), want));
    }
}

}  // namespace kiln::test
