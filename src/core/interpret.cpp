// kiln::interpret: checks the arguments as a launch does, then runs the IR interpreter.
#include "kiln/interpret.hpp"

#include "ir/eval.hpp"
#include "ir/interpret.hpp"

namespace kiln {

std::vector<HostBuffer> interpret(const ir::Kernel& kernel, int64_t grid,
                                  std::vector<HostBuffer> buffers,
                                  const std::vector<Arg>& scalars) {
    const ir::Kernel& k = kernel;
    if (grid < 0 || grid > INT32_MAX)
        fail("kernel {}: grid of {} blocks; expected 0 to {}", k.name, grid, INT32_MAX);
    std::vector<ir::HostMemory> memory;
    std::vector<ir::Slot> slots;
    std::vector<ir::HostValue> values(k.params.size());  // scalars, for the requirements
    std::vector<int64_t> lengths(k.params.size());
    size_t b = 0, s = 0;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const ir::Param& p = k.params[i];
        if (p.is_buffer) {
            if (b >= buffers.size())
                fail("kernel {}: buffer '{}' is parameter {}, but {} buffers were given", k.name,
                     p.name, i, buffers.size());
            HostBuffer& h = buffers[b++];
            if (h.dtype != p.dtype)
                fail("kernel {}: buffer '{}' must hold {}; got a {} buffer", k.name, p.name,
                     name(p.dtype), name(h.dtype));
            if (h.bytes.size() % size_of(h.dtype) != 0)
                fail("kernel {}: buffer '{}' has {} bytes, not a whole number of {} elements",
                     k.name, p.name, h.bytes.size(), name(h.dtype));
            if (h.count() > static_cast<size_t>(INT32_MAX))
                fail("kernel {}: buffer '{}' has {} elements; kernels index at most {}", k.name,
                     p.name, h.count(), INT32_MAX);
            memory.push_back({h.bytes.data(), h.count()});
            lengths[i] = static_cast<int64_t>(h.count());
        } else {
            if (s >= scalars.size())
                fail("kernel {}: scalar '{}' is parameter {}, but {} scalars were given", k.name,
                     p.name, i, scalars.size());
            if (scalars[s].buffer)
                fail("kernel {}: scalar '{}' must be {}; got a buffer", k.name, p.name,
                     name(p.dtype));
            const Arg a = scalars[s++].to_parameter(p.dtype, k.name, p.name);
            const ir::Slot v = ir::load_slot(p.dtype, reinterpret_cast<const uint8_t*>(&a.bits));
            slots.push_back(v);
            if (is_float(p.dtype))
                values[i].f = ir::slot_as_f32(p.dtype, v);
            else
                values[i].i = ir::slot_as_int(p.dtype, v);
        }
    }
    if (b != buffers.size() || s != scalars.size())
        fail("kernel {}: takes {} buffers and {} scalars; got {} and {}", k.name, b, s,
             buffers.size(), scalars.size());
    for (const auto& r : k.requirements) {
        const ir::HostValue v = ir::eval_host(
            r.cond, [&](int p) { return values.at(static_cast<size_t>(p)); },
            [&](int p) { return lengths.at(static_cast<size_t>(p)); });
        if (!v.i) fail("kernel {}: launch arguments break its requirement: {}", k.name, r.what);
    }
    ir::interpret(k, grid, memory, slots);
    return buffers;
}

}  // namespace kiln
