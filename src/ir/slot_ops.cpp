// slot_ops: each operation written once as a template over the dtype, in the emitter's form.
#include "ir/slot_ops.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "kiln/semantics.hpp"

namespace kiln::ir {
namespace {

namespace sem = kiln::semantics;

// How a dtype's value sits in a slot: V is the C type the generated code computes in (float for
// f16/bf16), U the unsigned type integer arithmetic wraps through.
template <DType T>
struct Rep;
template <>
struct Rep<DType::f32> {
    using V = float;
    static V get(Slot s) { return std::bit_cast<float>(static_cast<uint32_t>(s)); }
    static Slot put(V v) { return std::bit_cast<uint32_t>(v); }
};
template <>
struct Rep<DType::f16> {
    using V = float;
    static V get(Slot s) { return sem::f16_to_f32(static_cast<uint16_t>(s)); }
    static Slot put(V v) { return sem::f32_to_f16(v); }
};
template <>
struct Rep<DType::bf16> {
    using V = float;
    static V get(Slot s) { return sem::bf16_to_f32(static_cast<uint16_t>(s)); }
    static Slot put(V v) { return sem::f32_to_bf16(v); }
};
template <typename S, typename Unsigned>
struct IntRep {
    using V = S;
    using U = Unsigned;
    static V get(Slot s) { return static_cast<V>(static_cast<U>(s)); }
    static Slot put(V v) { return static_cast<U>(v); }
};
template <>
struct Rep<DType::i8> : IntRep<int8_t, uint8_t> {};
template <>
struct Rep<DType::u8> : IntRep<uint8_t, uint8_t> {};
template <>
struct Rep<DType::i32> : IntRep<int32_t, uint32_t> {};
template <>
struct Rep<DType::u32> : IntRep<uint32_t, uint32_t> {};
template <>
struct Rep<DType::i64> : IntRep<int64_t, uint64_t> {};
template <>
struct Rep<DType::boolean> {
    using V = bool;
    static V get(Slot s) { return s != 0; }
    static Slot put(V v) { return v ? 1 : 0; }
};

constexpr bool float_type(DType t) {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}
constexpr bool int_type(DType t) {
    return !float_type(t) && t != DType::boolean;
}

// scalar_semantics.h's division, remainder and float->integer conversion for T.
template <DType T, typename V>
V div(V a, V b) {
    if constexpr (T == DType::i8) return sem::kiln_div_i8(a, b);
    if constexpr (T == DType::u8) return sem::kiln_div_u8(a, b);
    if constexpr (T == DType::i32) return sem::kiln_div_i32(a, b);
    if constexpr (T == DType::u32) return sem::kiln_div_u32(a, b);
    if constexpr (T == DType::i64) return sem::kiln_div_i64(a, b);
}
template <DType T, typename V>
V rem(V a, V b) {
    if constexpr (T == DType::i8) return sem::kiln_rem_i8(a, b);
    if constexpr (T == DType::u8) return sem::kiln_rem_u8(a, b);
    if constexpr (T == DType::i32) return sem::kiln_rem_i32(a, b);
    if constexpr (T == DType::u32) return sem::kiln_rem_u32(a, b);
    if constexpr (T == DType::i64) return sem::kiln_rem_i64(a, b);
}
template <DType T>
typename Rep<T>::V from_f32(float f) {
    if constexpr (T == DType::i8) return sem::kiln_f32_to_i8(f);
    if constexpr (T == DType::u8) return sem::kiln_f32_to_u8(f);
    if constexpr (T == DType::i32) return sem::kiln_f32_to_i32(f);
    if constexpr (T == DType::u32) return sem::kiln_f32_to_u32(f);
    if constexpr (T == DType::i64) return sem::kiln_f32_to_i64(f);
}

template <BinOp op>
constexpr bool comparison() {
    return op == BinOp::eq || op == BinOp::ne || op == BinOp::lt || op == BinOp::le ||
           op == BinOp::gt || op == BinOp::ge;
}

template <BinOp op, typename V>
bool compare(V a, V b) {
    if constexpr (op == BinOp::eq) return a == b;
    if constexpr (op == BinOp::ne) return a != b;
    if constexpr (op == BinOp::lt) return a < b;
    if constexpr (op == BinOp::le) return a <= b;
    if constexpr (op == BinOp::gt) return a > b;
    if constexpr (op == BinOp::ge) return a >= b;
}

// Whether kiln defines `op` on operands of type T.
template <BinOp op, DType T>
constexpr bool defined() {
    if constexpr (comparison<op>()) return true;
    if constexpr (op == BinOp::add || op == BinOp::sub || op == BinOp::mul || op == BinOp::div ||
                  op == BinOp::min || op == BinOp::max)
        return T != DType::boolean;
    if constexpr (op == BinOp::rem || op == BinOp::shl || op == BinOp::shr) return int_type(T);
    if constexpr (op == BinOp::bit_and || op == BinOp::bit_or || op == BinOp::bit_xor)
        return !float_type(T);
    return T == DType::boolean;  // logical_and, logical_or
}

template <BinOp op, DType T>
Slot binary(Slot x, Slot y, Slot) {
    using R = Rep<T>;
    const auto a = R::get(x), b = R::get(y);
    if constexpr (comparison<op>()) {
        return compare<op>(a, b) ? 1 : 0;
    } else if constexpr (float_type(T)) {
        if constexpr (op == BinOp::add) return R::put(a + b);
        if constexpr (op == BinOp::sub) return R::put(a - b);
        if constexpr (op == BinOp::mul) return R::put(a * b);
        if constexpr (op == BinOp::div) return R::put(a / b);
        if constexpr (op == BinOp::min) return R::put(sem::kiln_min_f32(a, b));
        if constexpr (op == BinOp::max) return R::put(sem::kiln_max_f32(a, b));
    } else if constexpr (T == DType::boolean) {
        if constexpr (op == BinOp::bit_and || op == BinOp::logical_and) return a && b;
        if constexpr (op == BinOp::bit_or || op == BinOp::logical_or) return a || b;
        if constexpr (op == BinOp::bit_xor) return a != b;
    } else {
        using U = typename R::U;
        using V = typename R::V;
        constexpr U width_mask = sizeof(V) * 8 - 1;
        const U ua = static_cast<U>(a), ub = static_cast<U>(b);
        if constexpr (op == BinOp::add) return static_cast<U>(ua + ub);
        if constexpr (op == BinOp::sub) return static_cast<U>(ua - ub);
        if constexpr (op == BinOp::mul) return static_cast<U>(ua * ub);
        if constexpr (op == BinOp::div) return R::put(div<T>(a, b));
        if constexpr (op == BinOp::rem) return R::put(rem<T>(a, b));
        if constexpr (op == BinOp::min) return R::put(a < b ? a : b);
        if constexpr (op == BinOp::max) return R::put(a > b ? a : b);
        if constexpr (op == BinOp::bit_and) return static_cast<U>(ua & ub);
        if constexpr (op == BinOp::bit_or) return static_cast<U>(ua | ub);
        if constexpr (op == BinOp::bit_xor) return static_cast<U>(ua ^ ub);
        if constexpr (op == BinOp::shl) return static_cast<U>(ua << (ub & width_mask));
        if constexpr (op == BinOp::shr) return R::put(static_cast<V>(a >> (ub & width_mask)));
    }
}

template <BinOp op, DType T>
SlotFn binary_if_defined() {
    if constexpr (defined<op, T>())
        return &binary<op, T>;
    else
        return nullptr;
}

template <DType T>
SlotFn binary_for(BinOp op) {
    switch (op) {
#define KILN_BINARY(OP) \
    case BinOp::OP:     \
        return binary_if_defined<BinOp::OP, T>();
        KILN_BINARY(add)
        KILN_BINARY(sub)
        KILN_BINARY(mul)
        KILN_BINARY(div)
        KILN_BINARY(rem)
        KILN_BINARY(min)
        KILN_BINARY(max)
        KILN_BINARY(bit_and)
        KILN_BINARY(bit_or)
        KILN_BINARY(bit_xor)
        KILN_BINARY(shl)
        KILN_BINARY(shr)
        KILN_BINARY(eq)
        KILN_BINARY(ne)
        KILN_BINARY(lt)
        KILN_BINARY(le)
        KILN_BINARY(gt)
        KILN_BINARY(ge)
        KILN_BINARY(logical_and)
        KILN_BINARY(logical_or)
#undef KILN_BINARY
    }
    return nullptr;
}

template <UnOp op, DType T>
Slot unary(Slot x, Slot, Slot) {
    using R = Rep<T>;
    const auto a = R::get(x);
    if constexpr (op == UnOp::logical_not) {
        return !a;
    } else if constexpr (float_type(T)) {
        if constexpr (op == UnOp::neg) return R::put(-a);
        if constexpr (op == UnOp::sqrt) return R::put(std::sqrt(a));
        if constexpr (op == UnOp::abs) return x & (T == DType::f32 ? 0x7fffffffu : 0x7fffu);
        if constexpr (op == UnOp::exp2_device) return R::put(std::exp2(a));
    } else {
        using U = typename R::U;
        if constexpr (op == UnOp::neg) return static_cast<U>(U{0} - static_cast<U>(a));
        if constexpr (op == UnOp::bit_not) return static_cast<U>(~static_cast<U>(a));
        if constexpr (op == UnOp::abs)
            return a < 0 ? static_cast<U>(U{0} - static_cast<U>(a)) : static_cast<U>(a);
    }
}

template <UnOp op, DType T>
constexpr bool unary_defined() {
    if constexpr (op == UnOp::logical_not) return T == DType::boolean;
    if constexpr (op == UnOp::sqrt) return float_type(T);
    if constexpr (op == UnOp::bit_not) return int_type(T);
    if constexpr (op == UnOp::abs) return float_type(T) || std::is_signed_v<typename Rep<T>::V>;
    if constexpr (op == UnOp::exp2_device) return T == DType::f32;
    return T != DType::boolean;  // neg
}

template <DType T>
SlotFn unary_for(UnOp op) {
    switch (op) {
#define KILN_UNARY(OP)                              \
    case UnOp::OP:                                  \
        if constexpr (unary_defined<UnOp::OP, T>()) \
            return &unary<UnOp::OP, T>;             \
        else                                        \
            return nullptr;
        KILN_UNARY(neg)
        KILN_UNARY(bit_not)
        KILN_UNARY(logical_not)
        KILN_UNARY(sqrt)
        KILN_UNARY(abs)
        KILN_UNARY(exp2_device)
#undef KILN_UNARY
    }
    return nullptr;
}

// Value conversion, as emit_c's cast(): through f32 for the floats, scalar_semantics.h's
// saturating conversion from float to integer, C's conversions otherwise.
template <DType From, DType To>
Slot cast(Slot x, Slot, Slot) {
    const auto a = Rep<From>::get(x);
    if constexpr (To == DType::boolean) {
        return a != 0;
    } else if constexpr (From == DType::boolean) {
        return Rep<To>::put(static_cast<typename Rep<To>::V>(a ? 1 : 0));
    } else if constexpr (float_type(To)) {
        return Rep<To>::put(static_cast<float>(a));
    } else if constexpr (float_type(From)) {
        return Rep<To>::put(from_f32<To>(a));
    } else {
        return Rep<To>::put(static_cast<typename Rep<To>::V>(a));
    }
}

template <DType T>
SlotFn fma_of() {
    return [](Slot a, Slot b, Slot c) -> Slot {
        return Rep<T>::put(std::fma(Rep<T>::get(a), Rep<T>::get(b), Rep<T>::get(c)));
    };
}

Slot width_mask(DType t) {
    const int bits = t == DType::boolean ? 1 : bits_of(t);
    return bits >= 64 ? ~Slot{0} : (Slot{1} << bits) - 1;
}

}  // namespace

SlotFn binary_fn(BinOp op, DType operand) {
    return visit_dtype(operand, [&]<DType T>() { return binary_for<T>(op); });
}

SlotFn unary_fn(UnOp op, DType type) {
    return visit_dtype(type, [&]<DType T>() { return unary_for<T>(op); });
}

SlotFn cast_fn(DType from, DType to) {
    return visit_dtype(from, [&]<DType F>() {
        return visit_dtype(to, [&]<DType T>() -> SlotFn { return &cast<F, T>; });
    });
}

SlotFn bitcast_fn(DType from, DType to) {
    (void)from;  // the slot holds the source's bits: the target keeps as many as it has
    switch (to) {
        case DType::f16:
        case DType::bf16:
            return [](Slot a, Slot, Slot) -> Slot { return a & 0xffffu; };
        case DType::f32:
        case DType::i32:
        case DType::u32:
            return [](Slot a, Slot, Slot) -> Slot { return a & 0xffffffffu; };
        case DType::i8:
        case DType::u8:
            return [](Slot a, Slot, Slot) -> Slot { return a & 0xffu; };
        case DType::i64:
            return [](Slot a, Slot, Slot) -> Slot { return a; };
        case DType::boolean:
            break;
    }
    return nullptr;
}

SlotFn fma_fn(DType type) {
    switch (type) {
        case DType::f32:
            return fma_of<DType::f32>();
        case DType::f16:
            return fma_of<DType::f16>();
        case DType::bf16:
            return fma_of<DType::bf16>();
        default:
            return nullptr;
    }
}

SlotFn dp4a_fn() {
    return [](Slot a, Slot b, Slot c) -> Slot {
        return static_cast<uint32_t>(sem::kiln_dp4a(
            static_cast<int32_t>(a), static_cast<int32_t>(b), static_cast<int32_t>(c)));
    };
}

Slot const_slot(DType type, const expr::Const& c) {
    if (type == DType::f32) return Rep<DType::f32>::put(static_cast<float>(c.f));
    if (type == DType::f16) return Rep<DType::f16>::put(static_cast<float>(c.f));
    if (type == DType::bf16) return Rep<DType::bf16>::put(static_cast<float>(c.f));
    if (type == DType::boolean) return c.i != 0;
    return static_cast<Slot>(c.i) & width_mask(type);
}

Slot load_slot(DType type, const uint8_t* element) {
    Slot s = 0;
    std::memcpy(&s, element, size_of(type));  // little-endian: the low bytes
    return type == DType::boolean ? (s != 0) : s;
}

void store_slot(DType type, Slot value, uint8_t* element) {
    std::memcpy(element, &value, size_of(type));
}

int64_t slot_as_int(DType type, Slot value) {
    return visit_dtype(type, [&]<DType T>() -> int64_t {
        if constexpr (int_type(T) || T == DType::boolean)
            return static_cast<int64_t>(Rep<T>::get(value));
        else
            return 0;
    });
}

float slot_as_f32(DType type, Slot value) {
    return visit_dtype(type, [&]<DType T>() -> float {
        if constexpr (float_type(T))
            return Rep<T>::get(value);
        else
            return static_cast<float>(Rep<T>::get(value));
    });
}

}  // namespace kiln::ir
