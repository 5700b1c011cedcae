// tape: an expression DAG compiled once into a flat list of instructions, one slot each, and
// evaluated with kiln's scalar semantics (slot_ops.hpp). Shared nodes are computed once;
// constant subexpressions are folded when the tape is built. What an expression reads from its
// surroundings (locals, parameters, buffer lengths, positions, memory, other threads) it asks
// of a TapeEnv. The host twins of the math functions (kiln::host) and the IR interpreter
// evaluate expressions this way.
//
// Loads follow C's laziness: a select evaluates both of its operands here, but a load the
// chosen operand does not need may read past its memory (as `c ? x[i] : 0` may in the emitted
// source). Such a load reads 0 and is forgiven; one whose value reaches the result is reported.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/slot_ops.hpp"
#include "kiln/ir.hpp"

namespace kiln::ir {

class Tape;

// The surroundings of an evaluation.
class TapeEnv {
  public:
    virtual ~TapeEnv() = default;
    virtual Slot local(int id) = 0;
    virtual Slot scalar(int param) = 0;
    virtual Slot buffer_len(int param) = 0;
    virtual Slot builtin(BuiltinKind which) = 0;
    // Element `index` of mem into *value; false (and *value = 0) when it is out of range.
    virtual bool load(MemRef mem, int64_t index, Slot* value) = 0;
    // `value` evaluated in the thread whose index within its group of `width` is this one's xor
    // `mask`.
    virtual Slot shuffle_xor(const Tape& value, int mask, int width) = 0;
    // Called when an out-of-range load's value reaches a result: throws a kiln::Error.
    [[noreturn]] virtual void out_of_range(MemRef mem, int64_t index) = 0;
};

class Tape {
  public:
    // Compiles the DAG rooted at `root`.
    explicit Tape(const ExprRef& root);
    DType type() const { return type_; }
    // Slots an evaluation uses.
    size_t slots() const { return constants_.size() + code_.size(); }
    // The root's value in `env`. `scratch` holds at least slots() slots, or is null (then the
    // evaluation allocates them).
    Slot eval(TapeEnv& env, Slot* scratch = nullptr) const;

    // An instruction's operation: most are written out in eval()'s switch; `call` runs `fn`.
    enum class Op : uint8_t {
        call,
        select,
        local,
        scalar,
        buffer_len,
        builtin,
        load,
        shuffle,
        logical_and,  // lazy in C: the right operand matters only where the left does not decide
        logical_or,
        f32_add,
        f32_sub,
        f32_mul,
        f32_div,
        f32_fma,
        f32_neg,
        f32_abs,
        f32_min,
        f32_max,
        f32_eq,
        f32_ne,
        f32_lt,
        f32_le,
        f32_gt,
        f32_ge,
        bits_eq,  // integers and bool: their slots compare as they are
        bits_ne,
        bits_and,
        bits_or,
        bits_xor,
        w32_add,  // i32 and u32: wrapping, the result masked to 32 bits
        w32_sub,
        w32_mul,
        w32_shl,
        i32_shr,
        u32_shr,
        i32_lt,
        u32_lt,
        w64_add,  // i64
        w64_sub,
        w64_mul,
        w64_shl,
        i64_shr,
        i64_lt,
        mask16,  // keeps the low 16 or 32 bits: bitcasts, and casts between i32 and u32
        mask32,
        i32_to_i64,
    };
    struct Instr {
        Op op = Op::call;
        int a = -1, b = -1, c = -1;  // operand slots; 0 where unused once built (slot 0 exists)
        int id = 0;                  // local, parameter, builtin kind, load or subtape
        SlotFn fn = nullptr;         // call
    };
    struct Load {
        MemRef mem;
        DType index_type;
    };
    struct Shuffle {
        std::shared_ptr<const Tape> value;
        int mask;
        int width;
    };

  private:
    class Builder;
    void check_loads(TapeEnv& env, const Slot* s, const std::vector<int>& bad) const;

    std::vector<Instr> code_;      // instruction i writes slot constants_.size() + i
    std::vector<Slot> constants_;  // slots [0, constants_.size())
    std::vector<Load> loads_;
    std::vector<Shuffle> shuffles_;
    int root_ = 0;
    DType type_ = DType::f32;
};

}  // namespace kiln::ir
