// tape: build (a memoized post-order walk that folds constants and picks each operation's
// written-out form) and evaluation (one switch per instruction).
#include "ir/tape.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_map>

#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::ir {

namespace {

using Op = Tape::Op;

bool w32(DType t) {
    return t == DType::i32 || t == DType::u32;
}
bool bits_compare(DType t) {
    return is_integer(t) || t == DType::boolean;
}

// The written-out form of a binary operation, or call. `swap`: the operands go in reversed.
Op binary_op(BinOp op, DType t, bool& swap) {
    swap = false;
    if (t == DType::f32) {
        switch (op) {
            case BinOp::add:
                return Op::f32_add;
            case BinOp::sub:
                return Op::f32_sub;
            case BinOp::mul:
                return Op::f32_mul;
            case BinOp::div:
                return Op::f32_div;
            case BinOp::min:
                return Op::f32_min;
            case BinOp::max:
                return Op::f32_max;
            case BinOp::eq:
                return Op::f32_eq;
            case BinOp::ne:
                return Op::f32_ne;
            case BinOp::lt:
                return Op::f32_lt;
            case BinOp::le:
                return Op::f32_le;
            case BinOp::gt:
                return Op::f32_gt;
            case BinOp::ge:
                return Op::f32_ge;
            default:
                return Op::call;
        }
    }
    if (op == BinOp::logical_and) return Op::logical_and;
    if (op == BinOp::logical_or) return Op::logical_or;
    if (bits_compare(t)) {
        if (op == BinOp::eq) return Op::bits_eq;
        if (op == BinOp::ne) return Op::bits_ne;
        if (op == BinOp::bit_and) return Op::bits_and;
        if (op == BinOp::bit_or) return Op::bits_or;
        if (op == BinOp::bit_xor) return Op::bits_xor;
    }
    swap = op == BinOp::gt;
    if (w32(t)) {
        switch (op) {
            case BinOp::add:
                return Op::w32_add;
            case BinOp::sub:
                return Op::w32_sub;
            case BinOp::mul:
                return Op::w32_mul;
            case BinOp::shl:
                return Op::w32_shl;
            case BinOp::shr:
                return t == DType::i32 ? Op::i32_shr : Op::u32_shr;
            case BinOp::lt:
            case BinOp::gt:
                return t == DType::i32 ? Op::i32_lt : Op::u32_lt;
            default:
                break;
        }
    }
    if (t == DType::i64) {
        switch (op) {
            case BinOp::add:
                return Op::w64_add;
            case BinOp::sub:
                return Op::w64_sub;
            case BinOp::mul:
                return Op::w64_mul;
            case BinOp::shl:
                return Op::w64_shl;
            case BinOp::shr:
                return Op::i64_shr;
            case BinOp::lt:
            case BinOp::gt:
                return Op::i64_lt;
            default:
                break;
        }
    }
    swap = false;
    return Op::call;
}

float f(Slot s) {
    return std::bit_cast<float>(static_cast<uint32_t>(s));
}
Slot s32(float v) {
    return std::bit_cast<uint32_t>(v);
}

}  // namespace

// Builds the tape: entries in post-order, constants folded, then constants moved to the front.
class Tape::Builder {
  public:
    explicit Builder(Tape& t) : t_(t) {}

    // The entry computing e.
    int add(const ExprRef& e) {
        if (auto it = seen_.find(e.get()); it != seen_.end()) return it->second;
        const int at = std::visit([&](const auto& n) { return node(e, n); }, e->node);
        seen_.emplace(e.get(), at);
        return at;
    }

    // Moves the constants to slots [1, k) and renumbers the operands; returns the root's slot.
    int finish(int root) {
        std::vector<int> slot(entries_.size());
        t_.constants_.push_back(0);  // slot 0: the operand of unused operand fields
        for (size_t i = 0; i < entries_.size(); ++i)
            if (entries_[i].constant) {
                slot[i] = static_cast<int>(t_.constants_.size());
                t_.constants_.push_back(entries_[i].value);
            }
        const int first = static_cast<int>(t_.constants_.size());
        for (size_t i = 0; i < entries_.size(); ++i) {
            if (entries_[i].constant) continue;
            slot[i] = first + static_cast<int>(t_.code_.size());
            t_.code_.push_back(entries_[i].instr);
        }
        auto fix = [&](int& operand) {
            operand = operand < 0 ? 0 : slot[static_cast<size_t>(operand)];
        };
        for (Instr& in : t_.code_) {
            fix(in.a);
            fix(in.b);
            fix(in.c);
        }
        return slot[static_cast<size_t>(root)];
    }

  private:
    struct Entry {
        bool constant = false;
        Slot value = 0;
        Instr instr;
    };

    int constant(Slot v) {
        entries_.push_back({true, v, {}});
        return static_cast<int>(entries_.size() - 1);
    }
    int instr(const Instr& in) {
        entries_.push_back({false, 0, in});
        return static_cast<int>(entries_.size() - 1);
    }
    bool is_constant(int i) const { return i < 0 || entries_[static_cast<size_t>(i)].constant; }
    Slot value(int i) const { return i < 0 ? 0 : entries_[static_cast<size_t>(i)].value; }

    // A pure operation computing fn: folded when every operand is a constant, else written out
    // as `op` (or called).
    int pure(SlotFn fn, Op op, int a, int b = -1, int c = -1) {
        if (is_constant(a) && is_constant(b) && is_constant(c))
            return constant(fn(value(a), value(b), value(c)));
        return instr({op, a, b, c, 0, fn});
    }

    template <typename F>
    static F must(F fn, DType t, const char* what) {
        if (!fn) fail("cannot evaluate {} of type {} on the host", what, name(t));
        return fn;
    }

    int leaf(Op op, int id) { return instr({op, -1, -1, -1, id, nullptr}); }

    int node(const ExprRef& e, const expr::Const& n) { return constant(const_slot(e->type, n)); }
    int node(const ExprRef&, const expr::Local& n) { return leaf(Op::local, n.id); }
    int node(const ExprRef&, const expr::ScalarParam& n) { return leaf(Op::scalar, n.param); }
    int node(const ExprRef&, const expr::BufferLen& n) { return leaf(Op::buffer_len, n.param); }
    int node(const ExprRef&, const expr::Builtin& n) {
        return leaf(Op::builtin, static_cast<int>(n.which));
    }
    int node(const ExprRef&, const expr::Load& n) {
        const int index = add(n.index);  // may add loads of its own first
        t_.loads_.push_back({n.mem, n.index->type});
        return instr({Op::load, index, -1, -1, static_cast<int>(t_.loads_.size() - 1)});
    }
    int node(const ExprRef& e, const expr::Unary& n) {
        const Op op = e->type != DType::f32 ? Op::call
                      : n.op == UnOp::neg   ? Op::f32_neg
                      : n.op == UnOp::abs   ? Op::f32_abs
                                            : Op::call;
        return pure(must(unary_fn(n.op, e->type), e->type, name(n.op)), op, add(n.a));
    }
    int node(const ExprRef&, const expr::Binary& n) {
        const int a = add(n.a), b = add(n.b);
        bool swap = false;
        const Op op = binary_op(n.op, n.a->type, swap);
        const SlotFn fn = must(binary_fn(n.op, n.a->type), n.a->type, name(n.op));
        if (is_constant(a) && is_constant(b)) return constant(fn(value(a), value(b), 0));
        return swap ? instr({op, b, a, -1, 0, fn}) : instr({op, a, b, -1, 0, fn});
    }
    int node(const ExprRef&, const expr::Select& n) {
        const int c = add(n.cond), a = add(n.a), b = add(n.b);
        if (is_constant(c)) return value(c) ? a : b;
        return instr({Op::select, c, a, b});
    }
    int node(const ExprRef& e, const expr::Cast& n) {
        const DType from = n.a->type, to = e->type;
        const int a = add(n.a);
        // Conversions that keep the slot as it is: between i32 and u32, from u32 to i64.
        if ((w32(from) && w32(to)) || (from == DType::u32 && to == DType::i64) || from == to)
            return a;
        const Op op = from == DType::i32 && to == DType::i64 ? Op::i32_to_i64
                      : from == DType::i64 && w32(to)        ? Op::mask32
                                                             : Op::call;
        return pure(cast_fn(from, to), op, a);
    }
    int node(const ExprRef& e, const expr::Bitcast& n) {
        const int a = add(n.a);
        // The slot holds the source's bits; only 32 bits to a 16-bit type drop any.
        if (!is_half(e->type) || is_half(n.a->type)) return a;
        return pure(must(bitcast_fn(n.a->type, e->type), e->type, "bitcast"), Op::mask16, a);
    }
    int node(const ExprRef& e, const expr::Fma& n) {
        const int a = add(n.a), b = add(n.b), c = add(n.c);
        return pure(must(fma_fn(e->type), e->type, "fma"),
                    e->type == DType::f32 ? Op::f32_fma : Op::call, a, b, c);
    }
    int node(const ExprRef&, const expr::Dp4a& n) {
        const int a = add(n.a), b = add(n.b), c = add(n.c);
        return pure(dp4a_fn(), Op::call, a, b, c);
    }
    int node(const ExprRef&, const expr::InBounds&) {
        fail(
            "an in_bounds test (made by check_bounds for the code generator) is not evaluated on "
            "the host");
    }
    int node(const ExprRef&, const expr::ShuffleXor& n) {
        t_.shuffles_.push_back({std::make_shared<const Tape>(n.value), n.mask, n.width});
        return leaf(Op::shuffle, static_cast<int>(t_.shuffles_.size() - 1));
    }

    Tape& t_;
    std::vector<Entry> entries_;
    std::unordered_map<const ExprNode*, int> seen_;
};

Tape::Tape(const ExprRef& root) : type_(root->type) {
    Builder b(*this);
    root_ = b.finish(b.add(root));
}

Slot Tape::eval(TapeEnv& env, Slot* scratch) const {
    std::vector<Slot> own;
    if (!scratch) {
        own.resize(slots());
        scratch = own.data();
    }
    Slot* const s = scratch;
    std::copy(constants_.begin(), constants_.end(), s);
    Slot* r = s + constants_.size();
    std::vector<int> out_of_range;  // loads out of range, by instruction
    const Instr* const end = code_.data() + code_.size();
    for (const Instr* in = code_.data(); in != end; ++in, ++r) {
        const Slot a = s[in->a], b = s[in->b];
        switch (in->op) {
            case Op::call:
                *r = in->fn(a, b, s[in->c]);
                break;
            case Op::select:
                *r = a ? b : s[in->c];
                break;
            case Op::local:
                *r = env.local(in->id);
                break;
            case Op::scalar:
                *r = env.scalar(in->id);
                break;
            case Op::buffer_len:
                *r = env.buffer_len(in->id);
                break;
            case Op::builtin:
                *r = env.builtin(static_cast<BuiltinKind>(in->id));
                break;
            case Op::load: {
                const Load& l = loads_[static_cast<size_t>(in->id)];
                if (!env.load(l.mem, slot_as_int(l.index_type, a), r))
                    out_of_range.push_back(static_cast<int>(in - code_.data()));
                break;
            }
            case Op::shuffle: {
                const Shuffle& sh = shuffles_[static_cast<size_t>(in->id)];
                *r = env.shuffle_xor(*sh.value, sh.mask, sh.width);
                break;
            }
            case Op::logical_and:
                *r = a && b;
                break;
            case Op::logical_or:
                *r = a || b;
                break;
            case Op::f32_add:
                *r = s32(f(a) + f(b));
                break;
            case Op::f32_sub:
                *r = s32(f(a) - f(b));
                break;
            case Op::f32_mul:
                *r = s32(f(a) * f(b));
                break;
            case Op::f32_div:
                *r = s32(f(a) / f(b));
                break;
            case Op::f32_fma:
                *r = s32(std::fma(f(a), f(b), f(s[in->c])));
                break;
            case Op::f32_neg:
                *r = a ^ 0x80000000u;
                break;
            case Op::f32_abs:
                *r = a & 0x7fffffffu;
                break;
            case Op::f32_min:
                *r = s32(semantics::kiln_min_f32(f(a), f(b)));
                break;
            case Op::f32_max:
                *r = s32(semantics::kiln_max_f32(f(a), f(b)));
                break;
            case Op::f32_eq:
                *r = f(a) == f(b);
                break;
            case Op::f32_ne:
                *r = f(a) != f(b);
                break;
            case Op::f32_lt:
                *r = f(a) < f(b);
                break;
            case Op::f32_le:
                *r = f(a) <= f(b);
                break;
            case Op::f32_gt:
                *r = f(a) > f(b);
                break;
            case Op::f32_ge:
                *r = f(a) >= f(b);
                break;
            case Op::bits_eq:
                *r = a == b;
                break;
            case Op::bits_ne:
                *r = a != b;
                break;
            case Op::bits_and:
                *r = a & b;
                break;
            case Op::bits_or:
                *r = a | b;
                break;
            case Op::bits_xor:
                *r = a ^ b;
                break;
            case Op::w32_add:
                *r = static_cast<uint32_t>(a + b);
                break;
            case Op::w32_sub:
                *r = static_cast<uint32_t>(a - b);
                break;
            case Op::w32_mul:
                *r = static_cast<uint32_t>(a * b);
                break;
            case Op::w32_shl:
                *r = static_cast<uint32_t>(a << (b & 31));
                break;
            case Op::i32_shr:
                *r = static_cast<uint32_t>(static_cast<int32_t>(a) >> (b & 31));
                break;
            case Op::u32_shr:
                *r = a >> (b & 31);
                break;
            case Op::i32_lt:
                *r = static_cast<int32_t>(a) < static_cast<int32_t>(b);
                break;
            case Op::u32_lt:
                *r = a < b;
                break;
            case Op::w64_add:
                *r = a + b;
                break;
            case Op::w64_sub:
                *r = a - b;
                break;
            case Op::w64_mul:
                *r = a * b;
                break;
            case Op::w64_shl:
                *r = a << (b & 63);
                break;
            case Op::i64_shr:
                *r = static_cast<Slot>(static_cast<int64_t>(a) >> (b & 63));
                break;
            case Op::i64_lt:
                *r = static_cast<int64_t>(a) < static_cast<int64_t>(b);
                break;
            case Op::mask16:
                *r = a & 0xffffu;
                break;
            case Op::mask32:
                *r = a & 0xffffffffu;
                break;
            case Op::i32_to_i64:
                *r = static_cast<Slot>(static_cast<int64_t>(static_cast<int32_t>(a)));
                break;
        }
    }
    if (!out_of_range.empty()) check_loads(env, s, out_of_range);
    return s[root_];
}

// Follows which out-of-range load each slot's value depends on, through the operands C would
// evaluate: a select's chosen operand, && and ||'s right operand only where the left does not
// decide. Reports the load the root depends on, if any.
void Tape::check_loads(TapeEnv& env, const Slot* s, const std::vector<int>& bad) const {
    const size_t first = constants_.size();
    std::vector<int> from(slots(), -1);  // the out-of-range load a slot depends on, or -1
    size_t next_bad = 0;
    for (size_t i = 0; i < code_.size(); ++i) {
        const Instr& in = code_[i];
        int& dep = from[first + i];
        auto of = [&](int operand) { return from[static_cast<size_t>(operand)]; };
        if (next_bad < bad.size() && bad[next_bad] == static_cast<int>(i)) {
            dep = static_cast<int>(i);
            ++next_bad;
        } else if (in.op == Op::select) {
            dep = of(in.a) >= 0 ? of(in.a) : of(s[in.a] ? in.b : in.c);
        } else {
            const bool left_decides =
                (in.op == Op::logical_and && !s[in.a]) || (in.op == Op::logical_or && s[in.a]);
            dep = of(in.a) >= 0   ? of(in.a)
                  : left_decides  ? -1
                  : of(in.b) >= 0 ? of(in.b)
                                  : of(in.c);
        }
    }
    const int culprit = from[static_cast<size_t>(root_)];
    if (culprit < 0) return;
    const Instr& load = code_[static_cast<size_t>(culprit)];
    const Load& l = loads_[static_cast<size_t>(load.id)];
    env.out_of_range(l.mem, slot_as_int(l.index_type, s[load.a]));
}

}  // namespace kiln::ir
