// parse_key and index_for_axis (index_key.hpp): a Python subscript as one item per axis.
#include "index_key.hpp"

#include <climits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.hpp"

namespace kiln::python {
namespace {

std::string shape_text(const Shape& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

[[noreturn]] void index_error(const std::string& message) {
    throw nb::index_error(message.c_str());
}

// An item that is not an int, slice, None or Ellipsis: a Tensor, or host data kiln.tensor takes.
Tensor as_tensor(const Tensor& x, nb::handle h, const std::string& text) {
    Tensor t;
    if (nb::try_cast<Tensor>(h, t)) return t;
    if (nb::isinstance<nb::list>(h) && nb::len(h) == 0)  // numpy's x[[]]: an empty index
        return Tensor::zeros({0}, DType::i64, x.device());
    if (nb::isinstance<nb::list>(h) || nb::hasattr(h, "__array__")) {
        nb::object tensor = nb::module_::import_("kiln").attr("tensor");
        return nb::cast<Tensor>(
            tensor(h, nb::none(), nb::cast(&x.device(), nb::rv_policy::reference)));
    }
    throw nb::type_error(fmt::format("x[{}]: {} is not an index; expected ints, slices, None, "
                                     "..., an integer index tensor or a bool mask",
                                     text, nb::cast<std::string>(nb::repr(h)))
                             .c_str());
}

}  // namespace

Tensor index_for_axis(const Tensor& index, int64_t n) {
    Tensor i = index;
    if (i.dtype() == DType::i8 || i.dtype() == DType::u8) i = cast(i, DType::i32);
    if (i.dtype() == DType::i32 && n > INT32_MAX) i = cast(i, DType::i64);
    if (i.dtype() == DType::u32) return i;
    const double length = static_cast<double>(n);
    return where((i < 0.0) && (i >= -length), i + length, i);
}

Key parse_key(const Tensor& x, nb::handle key) {
    Key k;
    k.text = nb::cast<std::string>(nb::repr(key));
    std::vector<nb::handle> raw;
    if (nb::isinstance<nb::tuple>(key))
        for (nb::handle h : key) raw.push_back(h);
    else
        raw.push_back(key);
    // Classify, and count the axes the items name.
    std::vector<KeyItem> items;
    std::vector<bool> ellipsis;
    size_t named = 0;
    bool seen_ellipsis = false;
    for (nb::handle h : raw) {
        KeyItem item;
        bool is_ellipsis = false;
        if (h.is(nb::ellipsis())) {
            if (seen_ellipsis) index_error("an index can only have one ellipsis ('...')");
            seen_ellipsis = is_ellipsis = true;
        } else if (h.is_none()) {
            item.kind = KeyItem::Kind::newaxis;
        } else if (nb::isinstance<nb::slice>(h)) {
            item.kind = KeyItem::Kind::slice;
            ++named;
        } else if (nb::isinstance<nb::int_>(h) ||
                   (nb::hasattr(h, "__index__") && !nb::hasattr(h, "__len__") &&
                    !nb::isinstance<Tensor>(h))) {
            item.kind = KeyItem::Kind::integer;
            item.start = to_int64(h, "index");
            ++named;
        } else {
            item.tensor = as_tensor(x, h, k.text);
            if (item.tensor.dtype() == DType::boolean) {
                item.kind = KeyItem::Kind::mask;
                named += item.tensor.rank();
            } else if (is_float(item.tensor.dtype())) {
                fail(
                    "x[{}]: an index tensor of dtype {}; expected an integer dtype or a bool "
                    "mask",
                    k.text, name(item.tensor.dtype()));
            } else {
                item.kind = KeyItem::Kind::index;
                ++named;
            }
        }
        items.push_back(item);
        ellipsis.push_back(is_ellipsis);
    }
    if (named > x.rank())
        index_error(fmt::format("too many indices: {} for a tensor of {} axes", named, x.rank()));
    // Give each item its axis; Ellipsis and the axes left over become whole-axis items.
    int64_t axis = 0;
    const auto whole = [&] {
        KeyItem w;
        w.axis = axis;
        w.count = x.size(axis);
        k.items.push_back(w);
        ++axis;
    };
    for (size_t n = 0; n < items.size(); ++n) {
        if (ellipsis[n]) {
            for (size_t e = 0; e < x.rank() - named; ++e) whole();
            continue;
        }
        KeyItem item = items[n];
        item.axis = axis;
        const int64_t length = item.kind == KeyItem::Kind::newaxis ? 0 : x.size(axis);
        switch (item.kind) {
            case KeyItem::Kind::slice: {
                auto [start, stop, step, count] = nb::borrow<nb::slice>(raw[n]).compute(length);
                (void)stop;
                item.start = static_cast<int64_t>(start);
                item.step = static_cast<int64_t>(step);
                item.count = static_cast<int64_t>(count);
                ++axis;
                break;
            }
            case KeyItem::Kind::integer:
                if (item.start < -length || item.start >= length)
                    index_error(fmt::format("index {} is out of range for axis {} of extent {}",
                                            item.start, axis, length));
                if (item.start < 0) item.start += length;
                item.count = 1;
                ++axis;
                break;
            case KeyItem::Kind::index:
                item.count = item.tensor.numel();
                ++axis;
                break;
            case KeyItem::Kind::mask: {
                const Shape& ms = item.tensor.shape();
                for (size_t d = 0; d < ms.size(); ++d)
                    if (ms[d] != x.size(axis + static_cast<int64_t>(d)))
                        fail(
                            "x[{}]: the mask {} does not match axes {} to {} of {} {}; expected "
                            "their extents",
                            k.text, shape_text(ms), axis,
                            axis + static_cast<int64_t>(ms.size()) - 1, name(x.dtype()),
                            shape_text(x.shape()));
                axis += static_cast<int64_t>(ms.size());
                break;
            }
            case KeyItem::Kind::newaxis:
            case KeyItem::Kind::whole:
                break;
        }
        k.items.push_back(item);
    }
    while (axis < static_cast<int64_t>(x.rank())) whole();
    // Index tensors, or one mask alone; numpy's placement rule for them.
    int first_advanced = -1, last_advanced = -1, ints = 0, masks = 0;
    for (size_t n = 0; n < k.items.size(); ++n) {
        const KeyItem::Kind kind = k.items[n].kind;
        const bool tensor = kind == KeyItem::Kind::index || kind == KeyItem::Kind::mask;
        if (tensor) {
            if (k.advanced < 0) k.advanced = static_cast<int>(n);
            k.indices += kind == KeyItem::Kind::index;
            masks += kind == KeyItem::Kind::mask;
        }
        if (tensor || kind == KeyItem::Kind::integer) {
            if (first_advanced < 0) first_advanced = static_cast<int>(n);
            last_advanced = static_cast<int>(n);
            ints += kind == KeyItem::Kind::integer;
        }
    }
    if (masks > 1 || (masks == 1 && k.indices > 0))
        index_error(
            fmt::format("x[{}]: a bool mask with another mask or index tensor; kiln takes "
                        "a mask alone or index tensors",
                        k.text));
    if (k.advanced >= 0 && ints + k.indices + masks > 1)
        for (int n = first_advanced; n <= last_advanced; ++n) {
            const KeyItem::Kind kind = k.items[static_cast<size_t>(n)].kind;
            if (kind == KeyItem::Kind::whole || kind == KeyItem::Kind::slice ||
                kind == KeyItem::Kind::newaxis)
                k.advanced_first = true;
        }
    return k;
}

}  // namespace kiln::python
