// Arg from a double, and the conversion of a scalar argument to its parameter's dtype.
#include "core/arg.hpp"

#include <bit>
#include <cmath>

#include "kiln/semantics.hpp"

namespace kiln {
namespace {

// v rounded to f32 toward zero, its last bit set when that was inexact ("round to odd"):
// rounding this to f16 or bf16 gives v rounded to them once, as if directly.
float round_to_odd_f32(double v) {
    float f = static_cast<float>(v);
    if (std::isinf(f) || std::isnan(v) || static_cast<double>(f) == v) return f;
    if (std::fabs(static_cast<double>(f)) > std::fabs(v))  // rounded away from zero: step back
        f = std::nextafter(f, 0.0f);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// The bits of v as a scalar of float dtype t, rounded once.
uint64_t float_bits(DType t, double v) {
    switch (t) {
        case DType::f32:
            return std::bit_cast<uint32_t>(static_cast<float>(v));
        case DType::f16:
            return semantics::f32_to_f16(round_to_odd_f32(v));
        default:
            return semantics::f32_to_bf16(round_to_odd_f32(v));
    }
}

// The value of an integer scalar.
int64_t integer_value(const Arg& a) {
    switch (a.dtype) {
        case DType::i32:
            return static_cast<int32_t>(a.bits);
        case DType::u32:
            return static_cast<uint32_t>(a.bits);
        default:
            return static_cast<int64_t>(a.bits);
    }
}

bool convertible_integer(DType t) {
    return t == DType::i32 || t == DType::u32 || t == DType::i64;
}

}  // namespace

Arg::Arg(double v) : dtype(DType::f32), is_double(true), number(v) {}

Arg Arg::to_parameter(DType to, const std::string& kernel, const std::string& param) const {
    if (!is_double && dtype == to) return *this;
    const auto refuse = [&](const std::string& value, const char* why) -> Arg {
        fail("kernel {}: scalar '{}' is {}; the argument {} {}", kernel, param, name(to), value,
             why);
    };
    if (is_double) {
        const std::string value = fmt::format("{} (a double)", number);
        if (is_float(to)) return scalar(to, float_bits(to, number));
        if (to == DType::boolean) return refuse(value, "is not a bool; pass true or false");
        // Integers in [-2^63, 2^63) convert to int64 exactly; the dtype then says if it fits.
        if (number != std::floor(number) || !(number >= -0x1p63 && number < 0x1p63) ||
            !holds_integer(to, static_cast<int64_t>(number)))
            return refuse(value, fmt::format("is not a value of {}", name(to)).c_str());
        return scalar(to, static_cast<uint64_t>(static_cast<int64_t>(number)));
    }
    if (convertible_integer(dtype) && (is_integer(to) || is_float(to))) {
        const int64_t v = integer_value(*this);
        const std::string value = fmt::format("{} (an {})", v, name(dtype));
        if (is_integer(to)) {
            if (!holds_integer(to, v))
                return refuse(value, fmt::format("does not fit in {}", name(to)).c_str());
            return scalar(to, static_cast<uint64_t>(v));
        }
        const uint64_t bits = float_bits(to, static_cast<double>(v));
        const float back = to == DType::f32   ? std::bit_cast<float>(static_cast<uint32_t>(bits))
                           : to == DType::f16 ? semantics::f16_to_f32(static_cast<uint16_t>(bits))
                                              : semantics::bf16_to_f32(static_cast<uint16_t>(bits));
        if (static_cast<long double>(back) != static_cast<long double>(v))
            return refuse(value, fmt::format("is not exactly a value of {}", name(to)).c_str());
        return scalar(to, bits);
    }
    fail("kernel {}: scalar '{}' must be {}; got {}", kernel, param, name(to), name(dtype));
}

std::span<const Arg> converted_scalars(const ir::Kernel& kernel, std::span<const Arg> args,
                                       std::vector<Arg>& storage) {
    if (args.size() != kernel.params.size()) return args;
    bool any = false;
    for (size_t i = 0; i < args.size(); ++i)
        any = any || (!kernel.params[i].is_buffer && !args[i].buffer &&
                      (args[i].is_double || args[i].dtype != kernel.params[i].dtype));
    if (!any) return args;
    storage.assign(args.begin(), args.end());
    for (size_t i = 0; i < args.size(); ++i)
        if (!kernel.params[i].is_buffer && !args[i].buffer)
            storage[i] =
                args[i].to_parameter(kernel.params[i].dtype, kernel.name, kernel.params[i].name);
    return storage;
}

}  // namespace kiln
