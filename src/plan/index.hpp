// Index: the position of one element of a node inside a kernel being written, as DSL
// expressions: its row-major linear index, its coordinates, or both (each derived from the other
// on first use, with constant extents, so unit axes and unit strides cost nothing). Views map an
// Index of their output to one of their input; a reshape keeps the linear index as it is.
#pragma once

#include <optional>
#include <vector>

#include "graph/shape.hpp"
#include "kiln/dsl.hpp"

namespace kiln::plan {

class Index {
  public:
    Index(graph::Shape shape, DType type, Expr linear);
    Index(graph::Shape shape, DType type, std::vector<Expr> coords);
    // Both forms, known to name the same element.
    Index(graph::Shape shape, DType type, Expr linear, std::vector<Expr> coords);

    const graph::Shape& shape() const { return shape_; }
    DType type() const { return type_; }  // i32 or i64: every index expression's type
    const Expr& linear();
    const std::vector<Expr>& coords();
    bool has_linear() const { return linear_.has_value(); }
    // Whether the coordinates were given (not derived from the linear index by divisions).
    bool given_coords() const { return given_coords_; }

    // Vector lanes: this element is lane `lane` of the `width` consecutive elements starting at
    // linear index `base` (a multiple of width), in a launch that reads them with one access.
    struct Lanes {
        Expr base;
        int lane = 0;
        int width = 1;
    };
    std::optional<Lanes> lanes;

    // A block's part: this element's linear index is base + offset, `base` the same for every
    // thread of the block (a multiple of span) and 0 <= offset < span. A read whose index is
    // base's own index plus offset (an expand's input, where span divides the run it keeps) is
    // then a uniform value plus the thread's offset: contiguous across the block's threads.
    struct Split {
        Expr base;
        Expr offset;
        int64_t span = 1;
    };
    std::optional<Split> split;

    // A row's run: this element's linear index is row * length + offset, 0 <= offset < length
    // (a map's row-loop form). Coordinates derived from the linear index then take each axis
    // from the row alone or from the offset alone where the axis' stride allows (no division of
    // the sum), so the reads of a reshape stay affine in the offset.
    struct Run {
        Expr row;
        Expr offset;
        int64_t length = 1;
    };
    std::optional<Run> run;

    // The same element seen as a node of another shape with the same linear layout.
    Index reshaped(const graph::Shape& shape);

  private:
    graph::Shape shape_;
    DType type_;
    std::optional<Expr> linear_;
    std::optional<std::vector<Expr>> coords_;
    bool given_coords_ = false;
};

// A constant of an index type.
Expr index_const(DType type, int64_t v);
// Whether two expressions are the same tree (after simplification).
bool same_expr(const Expr& a, const Expr& b);
// Whether two indices name the same element (same linear index, or the same coordinates).
bool same_element(Index& a, Index& b);

}  // namespace kiln::plan
