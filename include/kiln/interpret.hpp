// kiln::interpret: runs any kernel on the host, giving the bits every device gives — the oracle of
// a kernel nobody wrote a C++ reference for. It reads the IR itself (not generated source):
// kiln's scalar semantics for every dtype, folds in their canonical order, shared tiles and
// barriers, every statement kind. One exception: a tensor-core mma step's bits are the hardware's;
// the interpreter adds each of its products in k order with fmaf, which lies within the
// tensor-core class's bound of them (so a kernel's fragment layout can be checked on the host).
//
//   std::vector<kiln::HostBuffer> out = kiln::interpret(kernel, grid, {x, y}, {2.0f});
//   std::vector<float> y_values = out[1].values<float>();
//
// Arguments are checked as a launch checks them (count, dtypes, the kernel's requirements); a
// store out of range, a used load out of range, or a barrier some threads of a block skip is a
// kiln::Error naming the kernel, block and thread. Meant for test-sized inputs: it runs one
// thread after another (about 10 to 100 ns per expression node).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dtype.hpp"
#include "kiln/ir.hpp"

namespace kiln {

// A buffer's elements on the host, as raw bytes (bool: one byte, 0 or 1).
struct HostBuffer {
    DType dtype = DType::f32;
    std::vector<uint8_t> bytes;

    size_t count() const { return bytes.size() / size_of(dtype); }
    template <typename T>
    static HostBuffer of(std::span<const T> values) {
        HostBuffer b{dtype_of<T>::value, std::vector<uint8_t>(values.size_bytes())};
        std::memcpy(b.bytes.data(), values.data(), values.size_bytes());
        return b;
    }
    template <typename T>
    static HostBuffer of(const std::vector<T>& values) {
        return of(std::span<const T>(values));
    }
    template <typename T>
    std::vector<T> values() const {
        if (dtype_of<T>::value != dtype)
            fail("HostBuffer holds {}; asked for {} values", name(dtype), name(dtype_of<T>::value));
        std::vector<T> v(count());
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
        return v;
    }
};

// Runs `grid` blocks of `kernel` (as KernelBuilder::finish() or an IR pass made it) on the host.
// `buffers` holds one buffer per buffer parameter and `scalars` one argument per scalar parameter,
// each in parameter order. Returns the buffers as the kernel left them.
std::vector<HostBuffer> interpret(const ir::Kernel& kernel, int64_t grid,
                                  std::vector<HostBuffer> buffers,
                                  const std::vector<Arg>& scalars = {});

}  // namespace kiln
