// IR node makers and names.
#include "kiln/ir.hpp"

#include <cmath>

#include "kiln/error.hpp"

namespace kiln::ir {

const char* name(UnOp op) {
    switch (op) {
        case UnOp::neg:
            return "neg";
        case UnOp::bit_not:
            return "bit_not";
        case UnOp::logical_not:
            return "not";
        case UnOp::sqrt:
            return "sqrt";
        case UnOp::abs:
            return "abs";
        case UnOp::exp2_device:
            return "exp2_device";
    }
    return "?";
}

const char* name(BinOp op) {
    switch (op) {
        case BinOp::add:
            return "+";
        case BinOp::sub:
            return "-";
        case BinOp::mul:
            return "*";
        case BinOp::div:
            return "/";
        case BinOp::rem:
            return "%";
        case BinOp::min:
            return "min";
        case BinOp::max:
            return "max";
        case BinOp::bit_and:
            return "&";
        case BinOp::bit_or:
            return "|";
        case BinOp::bit_xor:
            return "^";
        case BinOp::shl:
            return "<<";
        case BinOp::shr:
            return ">>";
        case BinOp::eq:
            return "==";
        case BinOp::ne:
            return "!=";
        case BinOp::lt:
            return "<";
        case BinOp::le:
            return "<=";
        case BinOp::gt:
            return ">";
        case BinOp::ge:
            return ">=";
        case BinOp::logical_and:
            return "&&";
        case BinOp::logical_or:
            return "||";
    }
    return "?";
}

const char* name(BuiltinKind b) {
    switch (b) {
        case BuiltinKind::thread_index:
            return "thread_index";
        case BuiltinKind::block_index:
            return "block_index";
        case BuiltinKind::grid_size:
            return "grid_size";
    }
    return "?";
}

const char* name(MemSpace s) {
    switch (s) {
        case MemSpace::global:
            return "global";
        case MemSpace::shared:
            return "shared";
        case MemSpace::local:
            return "local";
    }
    return "?";
}

const char* name(CacheHint h) {
    switch (h) {
        case CacheHint::normal:
            return "normal";
        case CacheHint::streaming:
            return "streaming";
        case CacheHint::keep:
            return "keep";
    }
    return "?";
}

const char* name(Access a) {
    switch (a) {
        case Access::read:
            return "read";
        case Access::write:
            return "write";
        case Access::read_write:
            return "read_write";
    }
    return "?";
}

const char* name(FoldOp op) {
    switch (op) {
        case FoldOp::sum:
            return "sum";
        case FoldOp::max:
            return "max";
        case FoldOp::min:
            return "min";
        case FoldOp::prod:
            return "prod";
    }
    return "?";
}

bool is_comparison(BinOp op) {
    return op == BinOp::eq || op == BinOp::ne || op == BinOp::lt || op == BinOp::le ||
           op == BinOp::gt || op == BinOp::ge;
}

bool is_logical(BinOp op) {
    return op == BinOp::logical_and || op == BinOp::logical_or;
}

ExprRef make(DType type, decltype(ExprNode::node) node) {
    return std::make_shared<const ExprNode>(ExprNode{type, std::move(node)});
}

StmtRef make(decltype(StmtNode::node) node) {
    return std::make_shared<const StmtNode>(StmtNode{std::move(node)});
}

ExprRef constant(DType type, double f, int64_t i) {
    return is_float(type) ? make(type, expr::Const{f, 0}) : make(type, expr::Const{0, i});
}

ExprRef int_const(DType type, int64_t value) {
    return is_float(type) ? constant(type, static_cast<double>(value)) : constant(type, 0, value);
}

ExprRef float_const(DType type, double value) {
    return constant(type, value);
}

bool is_const(const ExprRef& e, int64_t* value) {
    const auto* c = std::get_if<expr::Const>(&e->node);
    if (!c || is_float(e->type)) return false;
    if (value) *value = c->i;
    return true;
}

const ArrayInfo& array_info(const Kernel& k, MemRef mem) {
    if (mem.space == MemSpace::shared) return k.tiles.at(static_cast<size_t>(mem.id));
    if (mem.space == MemSpace::local) return k.arrays.at(static_cast<size_t>(mem.id));
    fail("kernel {}: array_info of a global buffer", k.name);
}

bool storable_vector(DType t, int width) {
    return size_of(t) == 4 && (width == 2 || width == 4);
}

bool loadable_vector(DType t, int width) {
    return storable_vector(t, width) || (size_of(t) == 2 && (width == 4 || width == 8));
}

DType mem_dtype(const Kernel& k, MemRef mem) {
    if (mem.space == MemSpace::global) return k.params.at(static_cast<size_t>(mem.id)).dtype;
    return array_info(k, mem).type;
}

}  // namespace kiln::ir
