// kiln::host: each math function's DSL expression, built once over f32 parameters, compiled to a
// tape and evaluated on the host.
#include "kiln/host_math.hpp"

#include <array>
#include <bit>
#include <memory>

#include "ir/tape.hpp"
#include "kiln/error.hpp"
#include "kiln/math.hpp"

namespace kiln::host {
namespace {

// The tape of f(p0) or f(p0, p1) for f32 parameters p0, p1.
struct Function {
    explicit Function(Expr (*f)(const Expr&))
        : tape(f(Expr(ir::make(DType::f32, ir::expr::ScalarParam{0}))).node()) {}
    explicit Function(Expr (*f)(const Expr&, const Expr&))
        : tape(f(Expr(ir::make(DType::f32, ir::expr::ScalarParam{0})),
                 Expr(ir::make(DType::f32, ir::expr::ScalarParam{1})))
                   .node()) {}
    ir::Tape tape;
};

// The parameters' values; nothing else is there to read.
class Arguments final : public ir::TapeEnv {
  public:
    Arguments(float x, float y) : args_{std::bit_cast<uint32_t>(x), std::bit_cast<uint32_t>(y)} {}
    ir::Slot scalar(int param) override { return args_[static_cast<size_t>(param)]; }
    ir::Slot local(int) override { return none(); }
    ir::Slot buffer_len(int) override { return none(); }
    ir::Slot builtin(ir::BuiltinKind) override { return none(); }
    bool load(ir::MemRef, int64_t, ir::Slot*) override { none(); }
    ir::Slot shuffle_xor(const ir::Tape&, int, int) override { return none(); }
    [[noreturn]] void out_of_range(ir::MemRef, int64_t) override { none(); }

  private:
    [[noreturn]] static ir::Slot none() { fail("kiln::host: a math function read a kernel value"); }
    std::array<ir::Slot, 2> args_;
};

float eval(const Function& f, float x, float y = 0) {
    constexpr size_t kStackSlots = 1024;
    Arguments args(x, y);
    if (f.tape.slots() <= kStackSlots) {
        std::array<ir::Slot, kStackSlots> scratch;
        return std::bit_cast<float>(static_cast<uint32_t>(f.tape.eval(args, scratch.data())));
    }
    return std::bit_cast<float>(static_cast<uint32_t>(f.tape.eval(args)));
}

}  // namespace

#define KILN_HOST_UNARY(NAME)                 \
    float NAME(float x) {                     \
        static const Function f(&kiln::NAME); \
        return eval(f, x);                    \
    }
KILN_HOST_UNARY(exp)
KILN_HOST_UNARY(exp2)
KILN_HOST_UNARY(expm1)
KILN_HOST_UNARY(log)
KILN_HOST_UNARY(log2)
KILN_HOST_UNARY(log1p)
KILN_HOST_UNARY(tanh)
KILN_HOST_UNARY(sigmoid)
KILN_HOST_UNARY(erf)
KILN_HOST_UNARY(sin)
KILN_HOST_UNARY(cos)
KILN_HOST_UNARY(rsqrt)
KILN_HOST_UNARY(floor)
KILN_HOST_UNARY(ceil)
KILN_HOST_UNARY(trunc)
KILN_HOST_UNARY(round)
#undef KILN_HOST_UNARY

float pow(float x, float y) {
    static const Function f(&kiln::pow);
    return eval(f, x, y);
}

}  // namespace kiln::host
