// Host data in and out, always copied: kiln._tensor_from_numpy (behind kiln.tensor, which turns
// any array_like into a C-contiguous numpy array first) and Tensor.numpy(). numpy has no
// bfloat16: bf16 tensors come out as float32 (exact widening) and go in from float32 (rounded to
// nearest even).
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "bindings.hpp"
#include "dlpack_dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::python {
namespace {

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

Tensor from_numpy(HostArray a, nb::handle dtype_arg, nb::handle device_arg) {
    const DType target = to_dtype(dtype_arg, "tensor");
    Device& device = to_device(device_arg);
    Shape shape;
    for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
    const size_t count = a.size();
    const std::optional<DType> given = kiln_dtype(a.dtype());
    if (target == DType::bf16 && given == DType::f32) {
        std::vector<uint16_t> bits(count);
        const auto* f = static_cast<const float*>(a.data());
        for (size_t i = 0; i < count; ++i) bits[i] = semantics::f32_to_bf16(f[i]);
        nb::gil_scoped_release release;
        return Tensor::from_bytes(bits.data(), count, DType::bf16, shape, device);
    }
    if (given != target)
        fail(
            "tensor: host data of {} for a {} tensor; expected {} data (kiln.tensor converts "
            "it first)",
            dlpack_dtype_name(a.dtype()), name(target), name(target));
    const void* data = a.data();
    nb::gil_scoped_release release;
    return Tensor::from_bytes(data, count, target, shape, device);
}

// The tensor's elements in a new numpy array (bf16 widened to float32).
nb::object to_numpy(const Tensor& t) {
    std::vector<uint8_t> bytes;
    {
        nb::gil_scoped_release release;
        bytes = t.to_host_bytes();
    }
    DType out_type = t.dtype();
    if (out_type == DType::bf16) {
        std::vector<uint8_t> wide(bytes.size() * 2);
        for (size_t i = 0; i < bytes.size() / 2; ++i) {
            uint16_t b;
            std::memcpy(&b, &bytes[2 * i], 2);
            const float f = semantics::bf16_to_f32(b);
            std::memcpy(&wide[4 * i], &f, 4);
        }
        bytes.swap(wide);
        out_type = DType::f32;
    }
    auto* owned = new std::vector<uint8_t>(std::move(bytes));
    nb::capsule owner(owned,
                      [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
    std::vector<size_t> shape(t.shape().begin(), t.shape().end());
    nb::ndarray<nb::numpy> array(owned->data(), shape.size(), shape.data(), owner, nullptr,
                                 dlpack_dtype(out_type), nb::device::cpu::value);
    return array.cast();
}

}  // namespace

void bind_host_arrays(nb::module_& m, TensorClass& cls) {
    m.def("_tensor_from_numpy", &from_numpy, nb::arg("array"), nb::arg("dtype"),
          nb::arg("device").none());
    cls.def("numpy", &to_numpy,
            "The elements in a new numpy array (a copy; bf16 comes out as float32, exactly).");
}

}  // namespace kiln::python
