// kiln.GgufFile: a GGUF file's metadata (as Python values), its tensor infos, a tensor's stored
// bytes (numpy u8) and a tensor loaded onto a device (kiln/gguf.hpp checks the whole file).
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "kiln/gguf.hpp"
#include "owned_numpy.hpp"

namespace kiln::python {
namespace {

template <typename T>
nb::list as_list(const std::vector<T>& values) {
    nb::list out;
    for (const T& v : values) out.append(v);
    return out;
}

nb::object as_python(const std::string& key, const GgufValue& v) {
    using K = GgufValue::Kind;
    switch (v.kind()) {
        case K::string:
            return nb::bytes(v.as_string().data(), v.as_string().size())
                .attr("decode")("utf-8", "surrogateescape");
        case K::boolean:
            return nb::bool_(v.as_bool(key));
        case K::f32:
        case K::f64:
            return nb::float_(v.as_float(key));
        case K::array:
            if (v.element_kind() == K::string) return as_list(v.as_strings(key));
            if (v.element_kind() == K::f32 || v.element_kind() == K::f64)
                return as_list(v.as_floats(key));
            if (v.element_kind() == K::boolean) {
                nb::list out;
                for (int64_t b : v.as_ints(key)) out.append(nb::bool_(b != 0));
                return out;
            }
            return as_list(v.as_ints(key));
        default:
            return nb::int_(v.as_int(key));
    }
}

}  // namespace

void bind_gguf(nb::module_& m) {
    nb::class_<GgufFile>(m, "GgufFile",
                         "A GGUF file (llama.cpp's format), checked whole when opened; tensors are "
                         "read on demand.")
        .def(nb::init<std::filesystem::path>(), nb::arg("path"))
        .def_prop_ro("version", &GgufFile::version)
        .def_prop_ro("alignment", &GgufFile::alignment)
        .def_prop_ro(
            "metadata",
            [](const GgufFile& f) {
                nb::dict out;
                for (const auto& [key, value] : f.metadata())
                    out[key.c_str()] = as_python(key, value);
                return out;
            },
            "Every key's value: ints, floats, bools, strings (UTF-8), and lists of them.")
        .def_prop_ro(
            "tensors",
            [](const GgufFile& f) {
                nb::list out;
                for (const GgufTensorInfo& t : f.tensors())
                    out.append(nb::make_tuple(t.name, nb::tuple(as_list(t.shape())), name(t.type),
                                              t.offset, t.bytes));
                return out;
            },
            "(name, shape, type, file offset, bytes) per tensor, in the file's order; shape is "
            "row-major (ggml's dimensions reversed).")
        .def(
            "tensor_bytes",
            [](const GgufFile& f, const std::string& tensor) {
                std::vector<uint8_t> bytes = f.tensor_bytes(tensor);
                const size_t n = bytes.size();
                return owned_numpy(std::move(bytes), {n});
            },
            nb::arg("name"), "A tensor's bytes as stored (numpy u8; block formats as they are).")
        .def(
            "dequantize",
            [](const GgufFile& f, const std::string& tensor) {
                std::vector<size_t> shape;
                for (int64_t e : f.tensor(tensor).shape()) shape.push_back(static_cast<size_t>(e));
                return owned_numpy(f.dequantize(tensor), shape);
            },
            nb::arg("name"),
            "A tensor's values as numpy f32 (row-major): F32, F16, BF16, and Q4_0, Q5_0, Q8_0, "
            "Q4_K, Q6_K "
            "blocks dequantized in each format's defined arithmetic.")
        .def(
            "load_blocks",
            [](const GgufFile& f, const std::string& tensor, Device* device) {
                GgufBlocks blocks = [&] {
                    nb::gil_scoped_release release;
                    return f.load_blocks(tensor, device != nullptr ? *device : cpu_device());
                }();
                return nb::make_tuple(blocks.values, blocks.scales,
                                      blocks.mins ? nb::cast(*blocks.mins) : nb::none());
            },
            nb::arg("name"), nb::arg("device").none() = nb::none(),
            "A block-format tensor (Q4_0, Q5_0, Q8_0, Q4_K, Q6_K) as planar tensors on a device: "
            "(values i8, scales f32, mins f32 or None); kiln.dequantize_blocks(*blocks) is "
            "dequantize's value bit for bit.")
        .def(
            "load",
            [](const GgufFile& f, const std::string& tensor, Device* device) {
                nb::gil_scoped_release release;
                return f.load(tensor, device != nullptr ? *device : cpu_device());
            },
            nb::arg("name"), nb::arg("device").none() = nb::none(),
            "A tensor on a device (the CPU by default): F32, F16, BF16, I8, I32, I64 as that "
            "dtype; block formats as u8 rows of their blocks.");
}

}  // namespace kiln::python
