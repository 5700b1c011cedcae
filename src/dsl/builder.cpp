// KernelBuilder: records statements into nested scopes and hands the finished IR to verify().
#include <bit>
#include <cctype>
#include <optional>

#include "ir/simplify.hpp"
#include "ir/verify.hpp"
#include "ir/visit.hpp"
#include "kiln/dsl.hpp"

namespace kiln {

namespace {
Expr weak_adopted(const Expr& value, DType type, const char* what) {
    if (value.type() == type) return value;
    if (value.weak()) return cast(type, value);
    fail("type mismatch in {}: value is {} but the target is {}; cast it", what, name(value.type()),
         name(type));
}
}  // namespace

Var::operator Expr() const {
    k_->check_in_scope(id_);
    return Expr(ir::make(type_, ir::expr::Local{id_}));
}

Var& Var::operator=(const Expr& value) {
    k_->check_in_scope(id_);
    Expr v = weak_adopted(value, type_, "assignment");
    k_->emit(ir::make(ir::stmt::Assign{id_, v.node()}));
    return *this;
}
Var& Var::operator+=(const Expr& v) {
    return *this = expr() + v;
}
Var& Var::operator-=(const Expr& v) {
    return *this = expr() - v;
}
Var& Var::operator*=(const Expr& v) {
    return *this = expr() * v;
}

Element::operator Expr() const {
    if (mem_.space == ir::MemSpace::global) {
        const auto& p = k_->kernel().params.at(static_cast<size_t>(mem_.id));
        if (p.access == ir::Access::write)
            fail(
                "kernel {}: reads buffer '{}', which is declared output (write only); declare "
                "it inout to read it",
                k_->kernel().name, p.name);
    }
    if (!is_integer(index_.type()))
        fail("kernel {}: index of type {}; indices are integers", k_->kernel().name,
             name(index_.type()));
    k_->check_constant_index(mem_, index_, 1);
    return Expr(ir::make(type_, ir::expr::Load{mem_, index_.node()}));
}

Element& Element::operator=(const Expr& value) {
    if (mem_.space == ir::MemSpace::global) {
        const auto& p = k_->kernel().params.at(static_cast<size_t>(mem_.id));
        if (p.access == ir::Access::read)
            fail(
                "kernel {}: stores to buffer '{}', which is declared input (read only); "
                "declare it output or inout",
                k_->kernel().name, p.name);
    }
    if (!is_integer(index_.type()))
        fail("kernel {}: index of type {}; indices are integers", k_->kernel().name,
             name(index_.type()));
    k_->check_constant_index(mem_, index_, 1);
    Expr v = weak_adopted(value, type_, "store");
    k_->emit(ir::make(ir::stmt::Store{mem_, index_.node(), v.node()}));
    return *this;
}

Element& Element::operator+=(const Expr& v) {
    return *this = expr() + v;
}

Expr Memory::len() const {
    if (mem_.space == ir::MemSpace::global)
        return Expr(ir::make(DType::i32, ir::expr::BufferLen{mem_.id}));
    return Expr(ir::int_const(DType::i32, ir::array_info(k_->kernel(), mem_).size), true);
}

Expr Memory::len64() const {
    if (mem_.space == ir::MemSpace::global)
        return Expr(ir::make(DType::i64, ir::expr::BufferLen{mem_.id}));
    return Expr(ir::int_const(DType::i64, ir::array_info(k_->kernel(), mem_).size));
}

KernelBuilder::KernelBuilder(std::string name, int block_size) {
    if (name.empty()) fail("kernel name is empty");
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
            fail("kernel name '{}' has '{}'; names are letters, digits and '_'", name, c);
    if (block_size < 1 || block_size > 1024)
        fail("kernel {}: block size {} is out of range; expected 1 to 1024", name, block_size);
    kernel_.name = std::move(name);
    kernel_.block_size = block_size;
    scopes_.emplace_back();
}

Memory KernelBuilder::add_buffer(const std::string& name, DType type, ir::Access access) {
    for (const auto& p : kernel_.params)
        if (p.name == name) fail("kernel {}: two parameters named '{}'", kernel_.name, name);
    kernel_.params.push_back({name, true, type, access});
    return Memory(this, {ir::MemSpace::global, static_cast<int>(kernel_.params.size() - 1)}, type);
}

Memory KernelBuilder::input(const std::string& name, DType type) {
    return add_buffer(name, type, ir::Access::read);
}
Memory KernelBuilder::output(const std::string& name, DType type) {
    return add_buffer(name, type, ir::Access::write);
}
Memory KernelBuilder::inout(const std::string& name, DType type) {
    return add_buffer(name, type, ir::Access::read_write);
}

void KernelBuilder::streaming(const Memory& buffer) {
    set_cache_hint(buffer, ir::CacheHint::streaming);
}

void KernelBuilder::keep_cached(const Memory& buffer) {
    set_cache_hint(buffer, ir::CacheHint::keep);
}

void KernelBuilder::min_blocks_per_unit(int blocks) {
    if (blocks < 1 || blocks > ir::kMaxMinBlocksPerUnit)
        fail("kernel {}: minimum blocks per compute unit {} is out of range; expected 1 to {}",
             kernel_.name, blocks, ir::kMaxMinBlocksPerUnit);
    kernel_.min_blocks_per_unit = blocks;
}

void KernelBuilder::set_cache_hint(const Memory& buffer, ir::CacheHint hint) {
    const ir::MemRef m = buffer.ref();
    const char* what = hint == ir::CacheHint::keep ? "kept cached" : "streaming";
    if (m.space != ir::MemSpace::global)
        fail("kernel {}: only a buffer parameter can be {}; got a tile or array", kernel_.name,
             what);
    ir::Param& p = kernel_.params.at(static_cast<size_t>(m.id));
    // Kept loads are not ordered against the kernel's own stores: only inputs can be kept.
    if (hint == ir::CacheHint::keep && p.access != ir::Access::read)
        fail("kernel {}: buffer '{}' is {}; only an input (read only) buffer can be kept cached",
             kernel_.name, p.name, name(p.access));
    if (p.cache != ir::CacheHint::normal && p.cache != hint)
        fail("kernel {}: buffer '{}' is already {}; a buffer takes one cache hint", kernel_.name,
             p.name, name(p.cache));
    p.cache = hint;
}

Expr KernelBuilder::scalar(const std::string& name, DType type) {
    for (const auto& p : kernel_.params)
        if (p.name == name) fail("kernel {}: two parameters named '{}'", kernel_.name, name);
    kernel_.params.push_back({name, false, type, ir::Access::read});
    return Expr(ir::make(type, ir::expr::ScalarParam{static_cast<int>(kernel_.params.size() - 1)}));
}

Expr KernelBuilder::thread_index() {
    return Expr(ir::make(DType::i32, ir::expr::Builtin{ir::BuiltinKind::thread_index}));
}
Expr KernelBuilder::block_index() {
    return Expr(ir::make(DType::i32, ir::expr::Builtin{ir::BuiltinKind::block_index}));
}
Expr KernelBuilder::grid_size() {
    return Expr(ir::make(DType::i32, ir::expr::Builtin{ir::BuiltinKind::grid_size}));
}
Expr KernelBuilder::absolute_pos() {
    return block_index() * kernel_.block_size + thread_index();
}

int KernelBuilder::new_local(DType type, const std::string& name) {
    kernel_.locals.push_back({name.empty() ? "v" : name, type});
    in_scope_.push_back(true);
    return static_cast<int>(kernel_.locals.size() - 1);
}

void KernelBuilder::check_in_scope(int local) const {
    if (in_scope_.at(static_cast<size_t>(local))) return;
    fail(
        "kernel {}: variable '{}' is used after the end of the if_, for_ or fold body that "
        "declared it; declare it before that body (k.let) and assign it inside",
        kernel_.name, kernel_.locals.at(static_cast<size_t>(local)).name);
}

void KernelBuilder::check_scope_of(const ir::ExprRef& e) const {
    ir::walk(e, [&](const ir::ExprRef& n) {
        if (const auto* l = std::get_if<ir::expr::Local>(&n->node)) check_in_scope(l->id);
    });
}

void KernelBuilder::check_constant_index(ir::MemRef mem, const Expr& index, int64_t width) const {
    int64_t i = 0;
    if (mem.space == ir::MemSpace::global || !ir::is_const(ir::simplify(index.node()), &i)) return;
    const ir::ArrayInfo& a = ir::array_info(kernel_, mem);
    if (i < 0 || i + width > a.size)
        fail("kernel {}: index {} into {} '{}' of {} elements; expected 0 to {}", kernel_.name,
             width == 1 ? fmt::format("{}", i) : fmt::format("{} (+{})", i, width - 1),
             mem.space == ir::MemSpace::shared ? "shared tile" : "local array", a.name, a.size,
             a.size - width);
}

void KernelBuilder::emit(ir::StmtRef s) {
    if (finished_) fail("kernel {}: statement added after finish()", kernel_.name);
    ir::for_each_own_expr(*s, [&](const ir::ExprRef& e) { check_scope_of(e); });
    scopes_.back().push_back(std::move(s));
}

std::vector<ir::StmtRef> KernelBuilder::capture(const std::function<void()>& body) {
    const size_t first_local = kernel_.locals.size();
    scopes_.emplace_back();
    try {
        body();
    } catch (...) {
        scopes_.pop_back();
        throw;
    }
    auto items = std::move(scopes_.back());
    scopes_.pop_back();
    // The body's variables end with it.
    for (size_t id = first_local; id < in_scope_.size(); ++id) in_scope_[id] = false;
    return items;
}

Var KernelBuilder::let(const Expr& init, const std::string& name) {
    if (init.weak()) {
        const auto& c = std::get<ir::expr::Const>(init.node()->node);
        const std::string value =
            is_float(init.type()) ? fmt::format("{}", c.f) : fmt::format("{}", c.i);
        const char* guess = is_float(init.type()) ? "f32" : "i32";
        fail(
            "kernel {}: let({}{}) of a bare number: its type would be a guess; name it, "
            "k.let(DType::{}, {}) or k.let(constant(DType::{}, {}))",
            kernel_.name, value, name.empty() ? "" : fmt::format(", \"{}\"", name), guess, value,
            guess, value);
    }
    const int id = new_local(init.type(), name);
    emit(ir::make(ir::stmt::Let{id, init.node()}));
    return Var(this, id, init.type());
}

Var KernelBuilder::let(DType type, const Expr& init, const std::string& name) {
    if (!init.weak() && init.type() != type)
        fail("kernel {}: let of a {} value as {}; cast it (cast(DType::{}, value))", kernel_.name,
             kiln::name(init.type()), kiln::name(type), kiln::name(type));
    if (!init.weak()) return let(init, name);
    const auto& c = std::get<ir::expr::Const>(init.node()->node);
    return let(constant(type, is_float(init.type()) ? c.f : static_cast<double>(c.i)), name);
}

std::vector<Var> KernelBuilder::load_vector(const Memory& m, const Expr& index, int width,
                                            const std::string& name) {
    const Expr first = m[index];  // checks that m is readable and the index an integer
    if (!ir::loadable_vector(m.dtype(), width))
        fail(
            "kernel {}: load_vector of {} {} elements; expected 2 or 4 of a 4-byte type, or "
            "4 or 8 of a 2-byte type",
            kernel_.name, width, kiln::name(m.dtype()));
    check_constant_index(m.ref(), index, width);
    std::vector<Var> vars;
    std::vector<int> ids;
    for (int i = 0; i < width; ++i) {
        ids.push_back(new_local(m.dtype(), name));
        vars.emplace_back(this, ids.back(), m.dtype());
    }
    const auto& load = std::get<ir::expr::Load>(first.node()->node);
    emit(ir::make(ir::stmt::LoadVector{load.mem, load.index, std::move(ids)}));
    return vars;
}

void KernelBuilder::store_vector(const Memory& m, const Expr& index,
                                 const std::vector<Expr>& values) {
    if (!ir::storable_vector(m.dtype(), static_cast<int>(values.size())))
        fail("kernel {}: store_vector of {} {} elements; expected 2 or 4 of a 4-byte type",
             kernel_.name, values.size(), kiln::name(m.dtype()));
    check_constant_index(m.ref(), index, static_cast<int64_t>(values.size()));
    // Each element goes through an element store's checks (access, index and value types).
    std::vector<ir::ExprRef> nodes;
    for (const Expr& v : values) {
        const auto stores = capture([&] { m[index] = v; });
        nodes.push_back(std::get<ir::stmt::Store>(stores.at(0)->node).value);
    }
    emit(ir::make(ir::stmt::StoreVector{m.ref(), index.node(), std::move(nodes)}));
}

void KernelBuilder::copy_to_shared(const Memory& tile, const Expr& index, const Memory& buffer,
                                   const Expr& from) {
    if (tile.ref().space != ir::MemSpace::shared || tile.dtype() != DType::u32)
        fail("kernel {}: copy_to_shared into {} {} memory; expected a u32 shared tile",
             kernel_.name, kiln::name(tile.dtype()), ir::name(tile.ref().space));
    const size_t bytes = size_of(buffer.dtype());
    if (buffer.ref().space != ir::MemSpace::global || (bytes != 2 && bytes != 4))
        fail(
            "kernel {}: copy_to_shared from {} {} memory; expected a buffer of a 2- or 4-byte "
            "dtype",
            kernel_.name, kiln::name(buffer.dtype()), ir::name(buffer.ref().space));
    auto word = [&](const Expr& at) {
        const Expr v = buffer[at];
        return v.type() == DType::u32 ? v : bitcast(DType::u32, v);
    };
    std::vector<Expr> values;
    for (int j = 0; j < 4; ++j)
        values.push_back(bytes == 4 ? word(from + j)
                                    : word(from + 2 * j) | (word(from + 2 * j + 1) << 16));
    const auto stores = capture([&] { store_vector(tile, index, values); });
    ir::stmt::StoreVector copy = std::get<ir::stmt::StoreVector>(stores.at(0)->node);
    copy.from = ir::stmt::CopySource{buffer.ref(), (from + 0).node()};
    emit(ir::make(std::move(copy)));
}

std::vector<Var> KernelBuilder::load_matrix(const Memory& tile, const Expr& row, int matrices,
                                            const std::string& name, bool trans) {
    if (tile.ref().space != ir::MemSpace::shared || tile.dtype() != DType::u32)
        fail("kernel {}: load_matrix from {} {} memory; expected a u32 shared tile", kernel_.name,
             kiln::name(tile.dtype()), ir::name(tile.ref().space));
    if (matrices != 1 && matrices != 2 && matrices != 4)
        fail("kernel {}: load_matrix of {} matrices; expected 1, 2 or 4", kernel_.name, matrices);
    const Expr first = tile[row];  // checks the row is an integer in scope
    const auto& load = std::get<ir::expr::Load>(first.node()->node);
    std::vector<Var> vars;
    std::vector<int> ids;
    for (int i = 0; i < matrices; ++i) {
        ids.push_back(new_local(DType::u32, name));
        vars.emplace_back(this, ids.back(), DType::u32);
    }
    emit(ir::make(ir::stmt::LoadMatrix{load.mem, load.index, std::move(ids), trans}));
    return vars;
}

void KernelBuilder::for_(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body,
                         const Expr& step) {
    for_(begin, end, step, body);
}

void KernelBuilder::for_(const Expr& begin, const Expr& end, const Expr& step,
                         const std::function<void(Expr)>& body) {
    Expr b = begin, e = end, s = step;
    DType t = !b.weak() ? b.type() : (!e.weak() ? e.type() : DType::i32);
    if (!is_integer(t))
        fail("kernel {}: for_ bounds must be integers, got {}", kernel_.name, name(t));
    b = weak_adopted(b, t, "for_ begin");
    e = weak_adopted(e, t, "for_ end");
    s = weak_adopted(s, t, "for_ step");
    const int id = new_local(t, "i");
    auto items = capture([&] { body(Expr(ir::make(t, ir::expr::Local{id}))); });
    in_scope_[static_cast<size_t>(id)] = false;  // the loop's variable ends with it
    emit(ir::make(ir::stmt::For{id, b.node(), e.node(), s.node(),
                                ir::make(ir::stmt::Seq{std::move(items)})}));
}

void KernelBuilder::unroll(int64_t begin, int64_t end, const std::function<void(Expr)>& body) {
    for (int64_t i = begin; i < end; ++i) body(Expr(ir::int_const(DType::i32, i), true));
}

void KernelBuilder::if_(const Expr& cond, const std::function<void()>& then_body) {
    if (cond.type() != DType::boolean)
        fail("kernel {}: if_ needs a bool condition, got {}", kernel_.name, name(cond.type()));
    auto items = capture(then_body);
    emit(ir::make(ir::stmt::If{cond.node(), ir::make(ir::stmt::Seq{std::move(items)}), nullptr}));
}

void KernelBuilder::if_(const Expr& cond, const std::function<void()>& then_body,
                        const std::function<void()>& else_body) {
    if (cond.type() != DType::boolean)
        fail("kernel {}: if_ needs a bool condition, got {}", kernel_.name, name(cond.type()));
    auto then_items = capture(then_body);
    auto else_items = capture(else_body);
    emit(ir::make(ir::stmt::If{cond.node(), ir::make(ir::stmt::Seq{std::move(then_items)}),
                               ir::make(ir::stmt::Seq{std::move(else_items)})}));
}

Memory KernelBuilder::shared(DType type, int64_t size, const std::string& name) {
    if (size < 1)
        fail("kernel {}: shared tile '{}' of size {}; expected >= 1", kernel_.name, name, size);
    kernel_.tiles.push_back({name, type, size, ir::MemSpace::shared});
    return Memory(this, {ir::MemSpace::shared, static_cast<int>(kernel_.tiles.size() - 1)}, type);
}

Memory KernelBuilder::local_array(DType type, int64_t size, const std::string& name) {
    if (size < 1)
        fail("kernel {}: local array '{}' of size {}; expected >= 1", kernel_.name, name, size);
    kernel_.arrays.push_back({name, type, size, ir::MemSpace::local});
    return Memory(this, {ir::MemSpace::local, static_cast<int>(kernel_.arrays.size() - 1)}, type);
}

Memory KernelBuilder::memory_array(DType type, int64_t size, const std::string& name) {
    Memory array = local_array(type, size, name);
    kernel_.arrays.back().in_memory = true;
    return array;
}

void KernelBuilder::barrier(int copies_in_flight) {
    if (copies_in_flight < 0 || copies_in_flight > ir::stmt::kMaxCopiesInFlight)
        fail("kernel {}: a barrier leaving {} copy groups in flight; expected 0 to {}",
             kernel_.name, copies_in_flight, ir::stmt::kMaxCopiesInFlight);
    emit(ir::make(ir::stmt::Barrier{.copies_in_flight = copies_in_flight}));
}

void KernelBuilder::warp_barrier() {
    emit(ir::make(ir::stmt::Barrier{.warp = true}));
}

void KernelBuilder::mma(DType input, const std::vector<Expr>& a, const std::vector<Expr>& b,
                        const std::vector<Var>& acc) {
    if (input != DType::f16 && input != DType::bf16)
        fail("kernel {}: mma of {} inputs; expected f16 or bf16", kernel_.name, kiln::name(input));
    if (a.size() != 4 || b.size() != 2 || acc.size() != 4)
        fail("kernel {}: mma with {} a, {} b and {} accumulators; expected 4, 2 and 4",
             kernel_.name, a.size(), b.size(), acc.size());
    std::vector<ir::ExprRef> a_nodes, b_nodes;
    for (const auto* part : {&a, &b})
        for (const Expr& v : *part) {
            if (v.type() != DType::u32)
                fail("kernel {}: mma fragment value of {}; expected u32 (a pair of {})",
                     kernel_.name, kiln::name(v.type()), kiln::name(input));
            check_scope_of(v.node());
            (part == &a ? a_nodes : b_nodes).push_back(v.node());
        }
    std::vector<int> ids;
    for (const Var& v : acc) {
        if (v.type() != DType::f32)
            fail("kernel {}: mma accumulator of {}; expected f32", kernel_.name,
                 kiln::name(v.type()));
        ids.push_back(v.id());
        check_in_scope(ids.back());
    }
    emit(ir::make(ir::stmt::Mma{input, std::move(a_nodes), std::move(b_nodes), std::move(ids)}));
}

Var KernelBuilder::fold(DType type, const Expr& extent, const Fold& fold,
                        const std::function<Expr(Expr)>& body) {
    const ir::FoldSpec& spec = fold.spec;
    auto pow2 = [](int v) { return v >= 1 && std::has_single_bit(static_cast<unsigned>(v)); };
    if (!pow2(spec.lanes) || spec.lanes > 1024)
        fail("kernel {}: fold lanes {}; expected a power of two from 1 to 1024", kernel_.name,
             spec.lanes);
    if (spec.chunk < 1 || spec.chunk > 64)
        fail("kernel {}: fold chunk {}; expected 1 to 64", kernel_.name, spec.chunk);
    if (!pow2(spec.threads) || spec.threads > spec.lanes || kernel_.block_size % spec.threads != 0)
        fail(
            "kernel {}: fold threads {}; expected a power of two that divides the lanes ({}) "
            "and the block size ({})",
            kernel_.name, spec.threads, spec.lanes, kernel_.block_size);
    if (spec.unroll < 1 || spec.unroll > 16)
        fail("kernel {}: fold unroll {}; expected 1 to 16", kernel_.name, spec.unroll);
    if (type == DType::boolean) fail("kernel {}: fold over bool; fold a number", kernel_.name);
    Expr n = weak_adopted(extent, DType::i32, "fold extent");
    const int index = new_local(DType::i32, "i");
    std::optional<Expr> value;
    auto items = capture([&] {
        value = weak_adopted(body(Expr(ir::make(DType::i32, ir::expr::Local{index}))), type,
                             "fold body result");
        check_scope_of(value->node());  // the value is taken inside the body
    });
    in_scope_[static_cast<size_t>(index)] = false;
    const int result = new_local(type, "acc");
    emit(ir::make(ir::stmt::Fold{result, spec, n.node(), index,
                                 ir::make(ir::stmt::Seq{std::move(items)}), value->node()}));
    return Var(this, result, type);
}

void KernelBuilder::require(const Expr& cond, const std::string& what) {
    if (cond.type() != DType::boolean)
        fail("kernel {}: require needs a bool condition, got {}", kernel_.name, name(cond.type()));
    kernel_.requirements.push_back({cond.node(), what});
}

ir::Kernel KernelBuilder::finish() {
    if (finished_) fail("kernel {}: finish() called twice", kernel_.name);
    if (scopes_.size() != 1) fail("kernel {}: finish() inside a nested scope", kernel_.name);
    finished_ = true;
    kernel_.body = ir::make(ir::stmt::Seq{std::move(scopes_.back())});
    ir::verify(kernel_);
    return std::move(kernel_);
}

}  // namespace kiln
