// Checks every op's tests make of its schedule points, written once: each point is a kernel of
// its own, the points' CUDA C compiles with NVRTC for sm_90 (no GPU needed), and outputs have the
// oracle's bits.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "runtime/cuda/nvrtc.hpp"

namespace kiln::test {

// Every point's kernel differs from every other's (a knob that changed nothing would make two
// points one kernel raced against itself). `points` is an op's variant table; `name_of` and
// `kernel_of` give a point's name and its kernel.
template <class Points, class NameOf, class KernelOf>
void expect_distinct_kernels(const Points& points, NameOf name_of, KernelOf kernel_of) {
    std::map<uint64_t, std::string> seen;
    for (const auto& p : points) {
        const auto [it, fresh] = seen.emplace(ir::structural_hash(kernel_of(p)), name_of(p));
        EXPECT_TRUE(fresh) << name_of(p) << " is the same kernel as " << it->second;
    }
    EXPECT_GT(seen.size(), 1u) << "an op's table has several points";
}

// The kernels as one CUDA C source compiled by NVRTC for sm_90; returns the cubin (empty where
// the compile failed, which fails the test with NVRTC's log). The caller skips where
// cuda::nvrtc_available is false.
inline std::vector<uint8_t> expect_compiles_for_cuda(const std::vector<ir::Kernel>& kernels) {
    std::string log;
    std::vector<uint8_t> cubin;
    EXPECT_NO_THROW(cubin =
                        cuda::nvrtc_compile(generate_source(Backend::cuda, kernels), "sm_90", &log))
        << log;
    return cubin;
}

// Raw bytes (quantized blocks) as a u8 buffer on `d`.
inline Buffer upload_bytes(Device& d, const std::vector<uint8_t>& bytes) {
    Buffer b(d, DType::u8, bytes.size());
    b.upload_bytes(bytes);
    return b;
}

// Every float of `got` has the bits of `want`'s (any NaN matching any NaN); the first row that
// differs otherwise.
inline ::testing::AssertionResult same_bits(const std::vector<float>& got,
                                            const std::vector<float>& want) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "size differs";
    for (size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], 4) != 0 && !(std::isnan(got[i]) && std::isnan(want[i])))
            return ::testing::AssertionFailure()
                   << "row " << i << ": got " << got[i] << ", oracle " << want[i];
    return ::testing::AssertionSuccess();
}

}  // namespace kiln::test
