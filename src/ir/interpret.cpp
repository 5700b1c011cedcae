// interpret: the block executor (statements per thread, or across the block where threads meet).
#include "ir/interpret.hpp"

#include <bit>
#include <cmath>
#include <memory>
#include <unordered_map>

#include "ir/lower_folds.hpp"
#include "ir/print.hpp"
#include "ir/tape.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::ir {
namespace {

class Interpreter;

// One thread's view for expression evaluation.
class ThreadEnv final : public TapeEnv {
  public:
    ThreadEnv(Interpreter& in, int thread) : in_(in), t_(thread) {}
    Slot local(int id) override;
    Slot scalar(int param) override;
    Slot buffer_len(int param) override;
    Slot builtin(BuiltinKind which) override;
    bool load(MemRef mem, int64_t index, Slot* value) override;
    Slot shuffle_xor(const Tape& value, int mask, int width) override;
    [[noreturn]] void out_of_range(MemRef mem, int64_t index) override;

  private:
    Interpreter& in_;
    int t_;
};

class Interpreter {
  public:
    Interpreter(const Kernel& k, int64_t grid, std::span<const HostMemory> buffers,
                std::span<const Slot> scalars)
        : k_(k),
          grid_(grid),
          scalars_(scalars),
          threads_(k.block_size),
          locals_(static_cast<size_t>(threads_) * k.locals.size()) {
        for (size_t i = 0, b = 0, s = 0; i < k.params.size(); ++i) {
            param_buffer_.push_back(k.params[i].is_buffer ? static_cast<int>(b++) : -1);
            param_scalar_.push_back(k.params[i].is_buffer ? -1 : static_cast<int>(s++));
        }
        buffers_.assign(buffers.begin(), buffers.end());
        for (const ArrayInfo& a : k.arrays)
            arrays_.emplace_back(static_cast<size_t>(threads_) * a.size * size_of(a.type));
        for (const ArrayInfo& a : k.tiles) tiles_.emplace_back(a.size * size_of(a.type));
        for_each_stmt(k.body, [&](const StmtNode& n) {
            if (!std::holds_alternative<stmt::Let>(n.node) &&
                !std::holds_alternative<stmt::Assign>(n.node) && reads_other_threads(n, true))
                fail(
                    "kernel {}: a warp shuffle outside a let or an assignment; the interpreter "
                    "runs shuffles only as lower_folds writes them",
                    k.name);
        });
    }

    void run() {
        for (block_ = 0; block_ < grid_; ++block_) {
            for (auto& tile : tiles_) std::fill(tile.begin(), tile.end(), uint8_t{0});
            across(k_.body);
        }
    }

  private:
    friend class ThreadEnv;

    // --- expressions ---------------------------------------------------------------------------

    const Tape& tape(const ExprRef& e) {
        auto it = tapes_.find(e.get());
        if (it == tapes_.end()) {
            it = tapes_.emplace(e.get(), std::make_unique<Tape>(e)).first;
            if (scratch_.size() < it->second->slots()) scratch_.resize(it->second->slots());
        }
        return *it->second;
    }
    // Never re-entered: a shuffle evaluates its operand in the partner thread on its own slots.
    Slot eval(const ExprRef& e, int t) {
        const Tape& tp = tape(e);
        ThreadEnv env(*this, t);
        return tp.eval(env, scratch_.data());
    }
    int64_t eval_int(const ExprRef& e, int t) { return slot_as_int(e->type, eval(e, t)); }

    Slot& local(int t, int id) {
        return locals_[static_cast<size_t>(t) * k_.locals.size() + static_cast<size_t>(id)];
    }

    // --- memory ----------------------------------------------------------------------------

    // Element `index` of mem as seen by thread t, or null when out of range.
    uint8_t* element(MemRef mem, int t, int64_t index) {
        const DType type = mem_dtype(k_, mem);
        size_t count;
        uint8_t* base;
        if (mem.space == MemSpace::global) {
            const HostMemory& h =
                buffers_[static_cast<size_t>(param_buffer_[static_cast<size_t>(mem.id)])];
            base = h.data;
            count = h.count;
        } else {
            const ArrayInfo& a = array_info(k_, mem);
            count = static_cast<size_t>(a.size);
            base = mem.space == MemSpace::shared
                       ? tiles_[static_cast<size_t>(mem.id)].data()
                       : arrays_[static_cast<size_t>(mem.id)].data() +
                             static_cast<size_t>(t) * count * size_of(type);
        }
        if (index < 0 || static_cast<uint64_t>(index) >= count) return nullptr;
        return base + static_cast<size_t>(index) * size_of(type);
    }

    std::string mem_name(MemRef mem) const {
        if (mem.space == MemSpace::global) return k_.params.at(static_cast<size_t>(mem.id)).name;
        return array_info(k_, mem).name;
    }

    [[noreturn]] void out_of_range(const char* what, MemRef mem, int t, int64_t index) {
        const size_t count =
            mem.space == MemSpace::global
                ? buffers_[static_cast<size_t>(param_buffer_[static_cast<size_t>(mem.id)])].count
                : static_cast<size_t>(array_info(k_, mem).size);
        fail("kernel {}: block {} thread {} {} {} memory '{}' at index {}, outside its {} elements",
             k_.name, block_, t, what, name(mem.space), mem_name(mem), index, count);
    }

    void store(MemRef mem, int t, int64_t index, Slot value) {
        uint8_t* p = element(mem, t, index);
        if (!p) out_of_range("stores to", mem, t, index);
        store_slot(mem_dtype(k_, mem), value, p);
    }

    // --- statements, one thread --------------------------------------------------------------

    void exec(const StmtRef& s, int t) {
        if (!s) return;
        std::visit([&](const auto& n) { exec(n, t); }, s->node);
    }
    void exec(const stmt::Seq& n, int t) {
        for (const auto& i : n.items) exec(i, t);
    }
    void exec(const stmt::Let& n, int t) { local(t, n.local) = eval(n.value, t); }
    void exec(const stmt::Assign& n, int t) { local(t, n.local) = eval(n.value, t); }
    void exec(const stmt::Store& n, int t) {
        const int64_t index = eval_int(n.index, t);
        store(n.mem, t, index, eval(n.value, t));
    }
    void exec(const stmt::For& n, int t) {
        const SlotFn less = binary_fn(BinOp::lt, n.begin->type);
        const SlotFn add = binary_fn(BinOp::add, n.begin->type);
        // As the emitted `for (v = begin; v < end; v += step)`: end and step are read each time.
        for (local(t, n.local) = eval(n.begin, t); less(local(t, n.local), eval(n.end, t), 0);
             local(t, n.local) = add(local(t, n.local), eval(n.step, t), 0))
            exec(n.body, t);
    }
    void exec(const stmt::If& n, int t) {
        if (eval(n.cond, t))
            exec(n.then_body, t);
        else
            exec(n.else_body, t);
    }
    void exec(const stmt::Barrier&, int) {
        fail("kernel {}: a barrier reached inside code run per thread", k_.name);
    }
    void exec(const stmt::LoadVector& n, int t) {
        const int64_t index = eval_int(n.index, t);
        for (size_t i = 0; i < n.locals.size(); ++i) {
            Slot v = 0;
            ThreadEnv env(*this, t);
            if (!env.load(n.mem, index + static_cast<int64_t>(i), &v))
                out_of_range("loads from", n.mem, t, index + static_cast<int64_t>(i));
            local(t, n.locals[i]) = v;
        }
    }
    void exec(const stmt::StoreVector& n, int t) {
        const int64_t index = eval_int(n.index, t);
        std::vector<Slot> values;
        for (const auto& v : n.values) values.push_back(eval(v, t));
        for (size_t i = 0; i < values.size(); ++i)
            store(n.mem, t, index + static_cast<int64_t>(i), values[i]);
    }
    void exec(const stmt::Fold& n, int t) { fold(n, t, 1); }
    void exec(const stmt::Mma&, int) {
        fail("kernel {}: a tensor-core mma step reached inside code run per thread", k_.name);
    }
    void exec(const stmt::LoadMatrix&, int) {
        fail("kernel {}: an ldmatrix reached inside code run per thread", k_.name);
    }

    // --- the canonical fold ------------------------------------------------------------------

    // The fold of the group of n.spec.threads threads starting at `first`: lane j belongs to
    // thread first + j % threads, and its elements run there. Every thread of the group gets
    // the result.
    void fold(const stmt::Fold& n, int first, int threads) {
        const FoldSpec& f = n.spec;
        const DType type = k_.locals[static_cast<size_t>(n.result)].type;
        const int64_t extent = eval_int(n.extent, first);
        for (int t = first + 1; t < first + threads; ++t)
            if (eval_int(n.extent, t) != extent)
                fail(
                    "kernel {}: block {}: the extent of a fold over {} threads is {} in thread "
                    "{} but {} in thread {}; the threads of a fold share its extent",
                    k_.name, block_, threads, extent, first, eval_int(n.extent, t), t);
        const SlotFn combine = binary_fn(fold_binop(f.op), type);
        const Slot identity =
            const_slot(type, std::get<expr::Const>(fold_identity(f.op, type)->node));
        std::vector<Slot> lane(static_cast<size_t>(f.lanes), identity);
        const int64_t round = static_cast<int64_t>(f.lanes) * f.chunk;
        for (int j = 0; j < f.lanes; ++j) {
            const int owner = first + j % threads;
            Slot& acc = lane[static_cast<size_t>(j)];
            for (int64_t base = static_cast<int64_t>(j) * f.chunk; base < extent; base += round)
                for (int64_t i = base; i < base + f.chunk && i < extent; ++i) {
                    local(owner, n.index) = static_cast<uint32_t>(i);
                    exec(n.body, owner);
                    acc = combine(acc, eval(n.value, owner), 0);
                }
        }
        for (int s = f.lanes / 2; s >= 1; s /= 2)
            for (int j = 0; j < s; ++j)
                lane[static_cast<size_t>(j)] =
                    combine(lane[static_cast<size_t>(j)], lane[static_cast<size_t>(j + s)], 0);
        for (int t = first; t < first + threads; ++t) local(t, n.result) = lane[0];
    }

    // --- statements, the whole block -----------------------------------------------------------

    // Whether threads meet inside s: a barrier, a fold over several threads or a shuffle.
    bool meets(const StmtRef& s) {
        if (!s) return false;
        auto it = meets_.find(s.get());
        if (it != meets_.end()) return it->second;
        const bool m = contains_barrier(s) || contains(s, [](const StmtNode& n) {
                           return reads_other_threads(n) ||
                                  std::holds_alternative<stmt::Mma>(n.node) ||
                                  std::holds_alternative<stmt::LoadMatrix>(n.node);
                       });
        meets_.emplace(s.get(), m);
        return m;
    }

    // Whether an expression of n itself (not of the statements inside it) has a shuffle; with
    // `any_kind` false only a Let's or Assign's value counts.
    static bool reads_other_threads(const StmtNode& n, bool any_kind = false) {
        const bool assigns = std::holds_alternative<stmt::Let>(n.node) ||
                             std::holds_alternative<stmt::Assign>(n.node);
        if (!assigns && !any_kind) return false;
        bool found = false;
        auto look = [&](const ExprRef& e) {
            walk(e, [&](const ExprRef& x) {
                found = found || std::holds_alternative<expr::ShuffleXor>(x->node);
            });
        };
        for_each_own_expr(n, look);
        if (const auto* f = std::get_if<stmt::Fold>(&n.node)) look(f->value);
        return found;
    }

    // Runs s for every thread of the block.
    void across(const StmtRef& s) {
        if (!s) return;
        if (!meets(s)) {
            for (int t = 0; t < threads_; ++t) exec(s, t);
            return;
        }
        std::visit([&](const auto& n) { across(n); }, s->node);
    }
    void across(const stmt::Seq& n) {
        size_t i = 0;
        while (i < n.items.size()) {
            size_t j = i;
            while (j < n.items.size() && !meets(n.items[j])) ++j;
            for (int t = 0; t < threads_; ++t)  // the run between meeting points, per thread
                for (size_t q = i; q < j; ++q) exec(n.items[q], t);
            if (j < n.items.size()) across(n.items[j]);
            i = j + 1;
        }
    }
    void across(const stmt::Barrier&) {}  // every thread got here: the loops above ended
    void across(const stmt::Fold& n) {
        const int threads = n.spec.threads;
        for (int first = 0; first < threads_; first += threads) fold(n, first, threads);
    }
    void across(const stmt::If& n) {
        if (uniform(n.cond, "the condition of an if"))
            across(n.then_body);
        else
            across(n.else_body);
    }
    void across(const stmt::For& n) {
        const SlotFn less = binary_fn(BinOp::lt, n.begin->type);
        const SlotFn add = binary_fn(BinOp::add, n.begin->type);
        for (set_all(n.local, uniform(n.begin, "a loop's start"));
             less(local(0, n.local), uniform(n.end, "a loop's end"), 0);
             set_all(n.local, add(local(0, n.local), uniform(n.step, "a loop's step"), 0)))
            across(n.body);
    }
    // A Let or Assign reading other threads (a shuffle): every thread's value first, then the
    // assignments, so each reads the others' values from before the statement.
    template <typename N>
    void assign_after_all(const N& n) {
        std::vector<Slot> values(static_cast<size_t>(threads_));
        for (int t = 0; t < threads_; ++t) values[static_cast<size_t>(t)] = eval(n.value, t);
        for (int t = 0; t < threads_; ++t) local(t, n.local) = values[static_cast<size_t>(t)];
    }
    void across(const stmt::Let& n) { assign_after_all(n); }
    // A warp's mma step (ir::stmt::Mma's fragment layout), each warp's fragments gathered from
    // its 32 threads. Each output is C, then one fmaf per product in k order: not a tensor
    // core's bits (the hardware adds its 16 products its own way) but within the class's bound
    // of them, so a kernel's fragment layout can be checked on the host.
    void across(const stmt::Mma& n) {
        if (threads_ % stmt::kWarpBarrierGroup != 0)
            fail("kernel {}: an mma step in a block of {} threads; expected a multiple of {}",
                 k_.name, threads_, stmt::kWarpBarrierGroup);
        auto half = [&](Slot word, int hi) {
            const auto bits = static_cast<uint16_t>(static_cast<uint32_t>(word) >> (16 * hi));
            return n.input == DType::bf16 ? semantics::bf16_to_f32(bits)
                                          : semantics::f16_to_f32(bits);
        };
        for (int w = 0; w < threads_; w += stmt::kWarpBarrierGroup) {
            float a[16][16], b[16][8], d[16][8];
            for (int lane = 0; lane < stmt::kWarpBarrierGroup; ++lane) {
                const int t = w + lane, g = lane / 4, q = lane % 4;
                for (int i = 0; i < 4; ++i) {  // A(g + 8*(i%2), 2q + 8*(i/2) + h)
                    const Slot word = eval(n.a[size_t(i)], t);
                    for (int h = 0; h < 2; ++h)
                        a[g + 8 * (i % 2)][2 * q + 8 * (i / 2) + h] = half(word, h);
                }
                for (int i = 0; i < 2; ++i) {  // B(2q + 8*i + h, g)
                    const Slot word = eval(n.b[size_t(i)], t);
                    for (int h = 0; h < 2; ++h) b[2 * q + 8 * i + h][g] = half(word, h);
                }
                for (int i = 0; i < 4; ++i)  // D(g + 8*(i/2), 2q + i%2)
                    d[g + 8 * (i / 2)][2 * q + i % 2] =
                        slot_as_f32(DType::f32, local(t, n.acc[size_t(i)]));
            }
            for (int r = 0; r < 16; ++r)
                for (int c = 0; c < 8; ++c)
                    for (int p = 0; p < 16; ++p) d[r][c] = std::fma(a[r][p], b[p][c], d[r][c]);
            for (int lane = 0; lane < stmt::kWarpBarrierGroup; ++lane) {
                const int g = lane / 4, q = lane % 4;
                for (int i = 0; i < 4; ++i)
                    local(w + lane, n.acc[size_t(i)]) =
                        std::bit_cast<uint32_t>(d[g + 8 * (i / 2)][2 * q + i % 2]);
            }
        }
    }
    void across(const stmt::Assign& n) { assign_after_all(n); }
    // A warp's ldmatrix (ir::stmt::LoadMatrix): lane 8j + r gives row r of matrix j; lane l
    // takes word l % 4 of row l / 4 of each matrix, or with trans the two elements of its column
    // l / 4 in rows 2 (l % 4) and 2 (l % 4) + 1. Every row is read before any local is set.
    void across(const stmt::LoadMatrix& n) {
        if (threads_ % stmt::kWarpBarrierGroup != 0)
            fail("kernel {}: an ldmatrix in a block of {} threads; expected a multiple of {}",
                 k_.name, threads_, stmt::kWarpBarrierGroup);
        const auto matrices = static_cast<int>(n.locals.size());
        for (int w = 0; w < threads_; w += stmt::kWarpBarrierGroup) {
            std::vector<Slot> words(static_cast<size_t>(matrices) * 32);  // [matrix][row][word]
            for (int giver = 0; giver < 8 * matrices; ++giver) {
                const int t = w + giver;
                const int64_t row = eval_int(n.row, t);
                if (row % 4 != 0)
                    fail(
                        "kernel {}: block {} thread {}: ldmatrix row at word {}; expected a "
                        "multiple of 4 (16 bytes)",
                        k_.name, block_, t, row);
                for (int i = 0; i < 4; ++i) {
                    Slot v = 0;
                    ThreadEnv env(*this, t);
                    if (!env.load(n.mem, row + i, &v))
                        out_of_range("loads from", n.mem, t, row + i);
                    words[static_cast<size_t>(giver * 4 + i)] = v;
                }
            }
            // Element (r, c) of matrix j: half c % 2 of word c / 2 of its row r.
            auto element = [&](int j, int r, int c) {
                return (static_cast<uint32_t>(words[static_cast<size_t>(j * 32 + r * 4 + c / 2)]) >>
                        (16 * (c % 2))) &
                       0xffffu;
            };
            for (int lane = 0; lane < stmt::kWarpBarrierGroup; ++lane)
                for (int j = 0; j < matrices; ++j)
                    local(w + lane, n.locals[static_cast<size_t>(j)]) =
                        n.trans ? element(j, 2 * (lane % 4), lane / 4) |
                                      (element(j, 2 * (lane % 4) + 1, lane / 4) << 16)
                                : words[static_cast<size_t>(j * 32 + lane)];
        }
    }
    template <typename N>
    void across(const N& n) {  // Store, LoadVector, StoreVector: never meeting points
        for (int t = 0; t < threads_; ++t) exec(n, t);
    }

    void set_all(int id, Slot v) {
        for (int t = 0; t < threads_; ++t) local(t, id) = v;
    }

    // e's value, which every thread must agree on because threads meet inside what it controls.
    Slot uniform(const ExprRef& e, const char* what) {
        const Slot v = eval(e, 0);
        for (int t = 1; t < threads_; ++t)
            if (eval(e, t) != v)
                fail(
                    "kernel {}: block {}: {} ({}) differs between threads 0 and {}, but threads "
                    "meet at a barrier inside it",
                    k_.name, block_, what, print(e, k_), t);
        return v;
    }

    const Kernel& k_;
    int64_t grid_;
    int64_t block_ = 0;
    std::span<const Slot> scalars_;
    std::vector<HostMemory> buffers_;
    std::vector<int> param_buffer_, param_scalar_;  // by parameter: its buffer or scalar index
    int threads_;
    std::vector<Slot> locals_;                  // [thread][local]
    std::vector<std::vector<uint8_t>> arrays_;  // [array][thread][element]
    std::vector<std::vector<uint8_t>> tiles_;   // [tile][element], this block's
    std::unordered_map<const ExprNode*, std::unique_ptr<Tape>> tapes_;
    std::unordered_map<const StmtNode*, bool> meets_;
    std::vector<Slot> scratch_;
};

Slot ThreadEnv::local(int id) {
    return in_.local(t_, id);
}
Slot ThreadEnv::scalar(int param) {
    return in_.scalars_[static_cast<size_t>(in_.param_scalar_[static_cast<size_t>(param)])];
}
Slot ThreadEnv::buffer_len(int param) {
    return static_cast<uint32_t>(
        in_.buffers_[static_cast<size_t>(in_.param_buffer_[static_cast<size_t>(param)])].count);
}
Slot ThreadEnv::builtin(BuiltinKind which) {
    switch (which) {
        case BuiltinKind::thread_index:
            return static_cast<uint32_t>(t_);
        case BuiltinKind::block_index:
            return static_cast<uint32_t>(in_.block_);
        case BuiltinKind::grid_size:
            return static_cast<uint32_t>(in_.grid_);
    }
    return 0;
}
bool ThreadEnv::load(MemRef mem, int64_t index, Slot* value) {
    const uint8_t* p = in_.element(mem, t_, index);
    *value = p ? load_slot(mem_dtype(in_.k_, mem), p) : 0;
    return p != nullptr;
}
Slot ThreadEnv::shuffle_xor(const Tape& value, int mask, int width) {
    const int partner = (t_ / width) * width + ((t_ % width) ^ mask);
    ThreadEnv other(in_, partner);
    return value.eval(other);
}
void ThreadEnv::out_of_range(MemRef mem, int64_t index) {
    in_.out_of_range("loads from", mem, t_, index);
}

}  // namespace

void interpret(const Kernel& kernel, int64_t grid, std::span<const HostMemory> buffers,
               std::span<const Slot> scalars) {
    Interpreter(kernel, grid, buffers, scalars).run();
}

}  // namespace kiln::ir
