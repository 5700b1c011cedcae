// Multi-dimensional indexing helpers (dsl.hpp): row-major coordinates of a linear index and
// back, and strided offsets, built from / % * + on the index's integer type.
#include "ir/simplify.hpp"
#include "kiln/dsl.hpp"

namespace kiln {
namespace {

// The type the index arithmetic runs in: the first non-literal's, i32 if all are literals.
DType index_type(const char* fn, const std::vector<Expr>& values) {
    DType t = DType::i32;
    for (const Expr& v : values)
        if (!v.weak()) {
            t = v.type();
            break;
        }
    if (!is_integer(t)) fail("{}: indices and extents are integers; got {}", fn, name(t));
    return t;
}

void check_rank(const char* fn, size_t got, size_t want, const char* what) {
    if (want == 0) fail("{}: the shape has no dimensions; expected at least one", fn);
    if (got != want)
        fail("{}: {} {} for a shape of {} dimensions; expected one per dimension", fn, got, what,
             want);
}

void check_extents(const char* fn, const std::vector<Expr>& shape) {
    for (size_t d = 0; d < shape.size(); ++d) {
        int64_t v = 0;
        if (ir::is_const(ir::simplify(shape[d].node()), &v) && v < 1)
            fail("{}: dimension {} has extent {}; extents are at least 1", fn, d, v);
    }
}

}  // namespace

std::vector<Expr> coords(const Expr& linear, const std::vector<Expr>& shape) {
    check_rank("coords", shape.size(), shape.size(), "extents");
    check_extents("coords", shape);
    std::vector<Expr> all = shape;
    all.insert(all.begin(), linear);
    const DType t = index_type("coords", all);
    std::vector<Expr> c(shape.size(), constant(t, 0));
    Expr rest = cast(t, linear);
    for (size_t d = shape.size() - 1; d > 0; --d) {
        c[d] = rest % shape[d];
        rest = rest / shape[d];
    }
    c[0] = rest;
    return c;
}

Expr flat_index(const std::vector<Expr>& coordinates, const std::vector<Expr>& shape) {
    check_rank("flat_index", coordinates.size(), shape.size(), "coordinates");
    check_extents("flat_index", shape);
    std::vector<Expr> all = coordinates;
    all.insert(all.end(), shape.begin(), shape.end());
    const DType t = index_type("flat_index", all);
    Expr linear = cast(t, coordinates[0]);
    for (size_t d = 1; d < shape.size(); ++d) linear = linear * shape[d] + coordinates[d];
    return linear;
}

Expr strided_index(const std::vector<Expr>& coordinates, const std::vector<Expr>& strides) {
    check_rank("strided_index", coordinates.size(), strides.size(), "coordinates");
    std::vector<Expr> all = coordinates;
    all.insert(all.end(), strides.begin(), strides.end());
    const DType t = index_type("strided_index", all);
    Expr offset = cast(t, coordinates[0]) * strides[0];
    for (size_t d = 1; d < strides.size(); ++d) offset = offset + coordinates[d] * strides[d];
    return offset;
}

}  // namespace kiln
