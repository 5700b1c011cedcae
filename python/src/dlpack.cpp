// DLPack both ways, without copies. Import (kiln.from_dlpack, python/kiln/_dlpack.py): a
// C-contiguous CPU or CUDA array of a kiln dtype becomes a leaf tensor over the producer's memory,
// which the tensor keeps alive; kiln only reads it. Export (Tensor.__dlpack__): the resolved
// buffer, with the device's queued work finished first, handed out with the tensor as its owner.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nanobind/ndarray.h>

#include "bindings.hpp"
#include "dlpack_dtype.hpp"
#include "kiln/buffer.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

using AnyArray = nb::ndarray<nb::ro>;

constexpr int kDLCPU = nb::device::cpu::value;
constexpr int kDLCUDA = nb::device::cuda::value;

std::string device_text(int type, int id) {
    switch (type) {
        case kDLCPU:
            return "the CPU";
        case kDLCUDA:
            return fmt::format("cuda:{}", id);
        case nb::device::cuda_host::value:
            return "CUDA pinned host memory";
        case nb::device::cuda_managed::value:
            return "CUDA managed memory";
        case nb::device::opencl::value:
            return "OpenCL";
        case nb::device::rocm::value:
            return fmt::format("ROCm device {}", id);
        default:
            return fmt::format("DLPack device type {} (id {})", type, id);
    }
}

Device& cuda_device_of(int ordinal) {
    std::string seen;
    for (Device* d : devices()) {
        if (d->info().backend != Backend::cuda) continue;
        if (d->info().ordinal == ordinal) return *d;
        seen += fmt::format(" cuda:{}", d->info().ordinal);
    }
    std::string have = "kiln has" + seen;
    if (seen.empty()) {
        have = "kiln found none";
        for (const auto& s : backend_status())
            if (s.backend == Backend::cuda && !s.available) have += ": " + s.reason;
    }
    fail(
        "from_dlpack: the array is on cuda:{}, which kiln has no device for; expected one of "
        "kiln's CUDA devices ({})",
        ordinal, have);
}

// Strides in elements; row-major contiguous means each axis of extent > 1 steps by the product
// of the extents after it (axes of extent 1 may carry any stride).
void check_contiguous(const AnyArray& a) {
    if (a.stride_ptr() == nullptr) return;
    int64_t expected = 1;
    for (size_t i = a.ndim(); i-- > 0;) {
        if (a.shape(i) != 1 && a.stride(i) != expected) {
            std::string shape, strides;
            for (size_t j = 0; j < a.ndim(); ++j) {
                shape += fmt::format("{}{}", j ? ", " : "", a.shape(j));
                strides += fmt::format("{}{}", j ? ", " : "", a.stride(j));
            }
            fail(
                "from_dlpack: the array of shape ({}) has strides ({}) in elements; expected a "
                "C-contiguous (row-major, compact) layout, which kiln can use in place (copy it "
                "first, e.g. numpy.ascontiguousarray(a) or t.contiguous())",
                shape, strides);
        }
        expected *= static_cast<int64_t>(a.shape(i));
    }
}

Tensor from_dlpack(AnyArray a) {
    const std::optional<DType> dtype = kiln_dtype(a.dtype());
    if (!dtype)
        fail(
            "from_dlpack: elements of {} are not a kiln dtype; expected float32, float16, "
            "bfloat16, int8, uint8, int32, uint32, int64 or bool (convert first, e.g. "
            "a.astype(numpy.float32))",
            dlpack_dtype_name(a.dtype()));
    Device* device = nullptr;
    if (a.device_type() == kDLCPU)
        device = &cpu_device();
    else if (a.device_type() == kDLCUDA)
        device = &cuda_device_of(a.device_id());
    else
        fail("from_dlpack: the array is in {}; expected memory on the CPU or a CUDA device",
             device_text(a.device_type(), a.device_id()));
    Shape shape;
    for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
    // No elements: no memory to share, whatever the strides say.
    if (a.size() == 0) return Tensor::zeros(shape, *dtype, *device);
    check_contiguous(a);
    // The producer stays alive while any kiln buffer over its memory does; letting go of it
    // needs the GIL, whichever thread drops the last reference.
    std::shared_ptr<void> owner(new AnyArray(a), [](void* p) {
        nb::gil_scoped_acquire gil;
        delete static_cast<AnyArray*>(p);
    });
    const size_t count = a.size();
    auto memory = device->wrap(reinterpret_cast<uintptr_t>(a.data()), count * size_of(*dtype),
                               std::move(owner));
    auto buffer = std::make_shared<Buffer>(*device, *dtype, count, std::move(memory));
    return Tensor::from_buffer(std::move(buffer), shape);
}

// The resolved tensor as a nanobind array over kiln's memory (its __dlpack__ makes the capsule).
// The device's queued work is finished first, so the data is ready on any stream of the consumer.
nb::object export_array(const Tensor& t) {
    Device& d = t.device();
    if (d.info().backend != Backend::cpu && d.info().backend != Backend::cuda)
        fail(
            "__dlpack__: the tensor is on {} ({}), whose memory kiln cannot hand out; expected "
            "a tensor on the CPU or a CUDA device (copy it out with t.numpy(), or make it on "
            "kiln.cpu_device())",
            d.info().id, name(d.info().backend));
    uintptr_t address = 0;
    {
        nb::gil_scoped_release release;
        const Buffer& b = t.buffer();
        address = d.address(b.memory());
        d.synchronize();
    }
    auto* held = new Tensor(t);
    nb::capsule owner(held, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
    std::vector<size_t> shape(t.shape().begin(), t.shape().end());
    const int type = d.info().backend == Backend::cuda ? kDLCUDA : kDLCPU;
    nb::ndarray<nb::array_api> array(reinterpret_cast<void*>(address), shape.size(), shape.data(),
                                     owner, nullptr, dlpack_dtype(t.dtype()), type,
                                     d.info().ordinal);
    return array.cast();
}

}  // namespace

void bind_dlpack(nb::module_& m) {
    m.def("_from_dlpack", &from_dlpack, nb::arg("array"));
    m.def("_export_array", &export_array, nb::arg("tensor"));
    m.def(
        "_cuda_stream", [](int ordinal) { return cuda_device_of(ordinal).native_stream(); },
        nb::arg("ordinal"), "kiln's CUstream on the CUDA device of that ordinal, as an int.");
}

}  // namespace kiln::python
