// kiln.DType and the conversion of dtype arguments: a kiln.DType, kiln's names ("f32", "bf16",
// "bool"), numpy's ("float32", "bfloat16", "bool_"), numpy dtypes and scalar types.
#include <optional>
#include <string>

#include "bindings.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

// numpy's names of kiln's dtypes ("bfloat16" is the ml_dtypes / torch spelling).
std::optional<DType> from_numpy_name(const std::string& n) {
    if (n == "float32") return DType::f32;
    if (n == "float16") return DType::f16;
    if (n == "bfloat16") return DType::bf16;
    if (n == "int8") return DType::i8;
    if (n == "uint8") return DType::u8;
    if (n == "int32") return DType::i32;
    if (n == "uint32") return DType::u32;
    if (n == "int64") return DType::i64;
    if (n == "bool" || n == "bool_") return DType::boolean;
    return std::nullopt;
}

constexpr const char* kExpected =
    "expected a kiln.DType or one of f32 f16 bf16 i8 u8 i32 u32 i64 bool (or numpy's float32 "
    "float16 int8 uint8 int32 uint32 int64 bool)";

}  // namespace

DType to_dtype(nb::handle h, const char* what) {
    if (nb::isinstance<DType>(h)) return nb::cast<DType>(h);
    std::string text;
    if (nb::isinstance<nb::str>(h)) {
        text = nb::cast<std::string>(h);
        for (DType t : all_dtypes)
            if (name(t) == text) return t;
    } else {
        // numpy dtypes and scalar types (numpy.float32, numpy.dtype("int8"), ...).
        try {
            nb::object dtype = nb::module_::import_("numpy").attr("dtype")(h);
            text = nb::cast<std::string>(dtype.attr("name"));
        } catch (const nb::python_error&) {
            throw nb::type_error((std::string(what) + ": " + nb::cast<std::string>(nb::repr(h)) +
                                  " is not a dtype; " + kExpected)
                                     .c_str());
        }
    }
    if (auto t = from_numpy_name(text)) return *t;
    throw nb::value_error(
        (std::string(what) + ": dtype '" + text + "' is not one kiln has; " + kExpected).c_str());
}

bool is_dtype(nb::handle h) {
    if (nb::isinstance<DType>(h)) return true;
    if (nb::isinstance<nb::str>(h)) {
        const std::string text = nb::cast<std::string>(h);
        for (DType t : all_dtypes)
            if (name(t) == text) return true;
        return from_numpy_name(text).has_value();
    }
    if (nb::isinstance<nb::int_>(h) || nb::isinstance<Device>(h)) return false;
    try {
        nb::module_::import_("numpy").attr("dtype")(h);
        return true;
    } catch (const nb::python_error&) {
        return false;
    }
}

void bind_dtypes(nb::module_& m) {
    nb::enum_<DType> dtype(m, "DType",
                           "Element types of kiln tensors (f16 and bf16 store; arithmetic on them "
                           "is f32, rounded after each op).");
    for (DType t : all_dtypes) dtype.value(std::string(name(t)).c_str(), t);
    dtype
        .def_prop_ro(
            "itemsize", [](DType t) { return size_of(t); }, "Bytes per element.")
        .def_prop_ro("is_float", [](DType t) { return is_float(t); })
        .def("__str__", [](DType t) { return std::string(name(t)); });
    m.def(
        "_dtype", [](nb::handle h) { return to_dtype(h, "dtype"); }, nb::arg("dtype"));
}

}  // namespace kiln::python
