"""Tensor functions numpy and PyTorch users reach for, written as compositions of kiln's graph ops
(so every device gives the same bits, and they fuse like any other op): clamp/clip, *_like,
eye, tril/triu, one_hot, logsumexp, std, stack, split/chunk, remainder and floor division,
argmax/argmin over every element, tolist. docs/python.md states what each computes."""

import builtins as _builtins
import math as _math
import numbers as _numbers

from . import _kiln
from ._kiln import Error, Tensor

__all__ = ["clamp", "clip", "zeros_like", "ones_like", "full_like", "eye", "tril", "triu",
           "one_hot", "logsumexp", "std", "stack", "split", "chunk", "remainder",
           "floor_divide", "argmax", "argmin"]


def _scalar(value, like):
    """A number as a 0-d tensor of like's dtype on like's device (a tensor is returned as is)."""
    if isinstance(value, Tensor):
        return value
    return _kiln.full((), value, dtype=like.dtype, device=like.device)


def _axis(axis, ndim, what):
    if not isinstance(axis, _numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"{what}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise Error(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}; "
                    f"expected {-ndim} to {ndim - 1}")
    return axis % ndim


def clamp(x, min=None, max=None):
    """Each element limited to [min, max] (numbers or tensors, broadcast; either may be None):
    maximum(x, min), then minimum(..., max), with kiln's maximum and minimum (a NaN in x stays
    NaN)."""
    if min is None and max is None:
        raise Error("clamp: min and max are both None; expected at least one bound")
    out = x
    if min is not None:
        out = _kiln.maximum(out, _scalar(min, x))
    if max is not None:
        out = _kiln.minimum(out, _scalar(max, x))
    return out


clip = clamp


def zeros_like(x, dtype=None, device=None):
    """Zeros of x's shape, in x's dtype and on x's device unless given."""
    return _kiln.zeros(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def ones_like(x, dtype=None, device=None):
    """Ones of x's shape, in x's dtype and on x's device unless given."""
    return _kiln.ones(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def full_like(x, value, dtype=None, device=None):
    """`value` in every element of x's shape, in x's dtype and on x's device unless given."""
    return _kiln.full(x.shape, value, dtype=dtype or x.dtype, device=device or x.device)


def _count(value, what):
    if not isinstance(value, _numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 0:
        raise Error(f"{what} is {value}; expected a count >= 0")
    return int(value)


def eye(n, m=None, dtype=None, device=None):
    """The n x m identity (m = n by default): ones where row == column."""
    n = _count(n, "eye: n")
    m = n if m is None else _count(m, "eye: m")
    rows = _kiln.arange(n, dtype="i64", device=device).reshape((n, 1))
    cols = _kiln.arange(m, dtype="i64", device=device).reshape((1, m))
    return (rows == cols).astype(dtype or "f32")


def _triangle(x, diagonal, keep_below, what):
    if x.ndim < 2:
        raise Error(f"{what}: a tensor of rank {x.ndim}; expected rank 2 or more (the last two "
                    "axes are the matrix)")
    if not isinstance(diagonal, _numbers.Integral) or isinstance(diagonal, bool):
        raise TypeError(f"{what}: diagonal must be an int, got {type(diagonal).__name__}")
    n, m = x.shape[-2], x.shape[-1]
    rows = _kiln.arange(n, dtype="i64", device=x.device).reshape((n, 1))
    cols = _kiln.arange(m, dtype="i64", device=x.device).reshape((1, m))
    offset = cols - rows
    keep = offset <= int(diagonal) if keep_below else offset >= int(diagonal)
    return _kiln.where(keep, x, _scalar(0, x))


def tril(x, diagonal=0):
    """x's elements on and below the diagonal-th diagonal of its last two axes, zeros above."""
    return _triangle(x, diagonal, True, "tril")


def triu(x, diagonal=0):
    """x's elements on and above the diagonal-th diagonal of its last two axes, zeros below."""
    return _triangle(x, diagonal, False, "triu")


def one_hot(indices, num_classes=-1, dtype="i64"):
    """A new last axis of num_classes (-1: the largest index plus one), 1 where it equals the
    index, as PyTorch's one_hot (i64 by default). Resolves the indices' extremes to check them:
    an index below 0 or at least num_classes is a kiln.Error."""
    if indices.dtype.is_float or indices.dtype == _kiln.DType.bool:
        raise Error(f"one_hot: indices of dtype {indices.dtype}; expected an integer dtype")
    if not isinstance(num_classes, _numbers.Integral) or isinstance(num_classes, bool):
        raise TypeError(f"one_hot: num_classes must be an int, got {type(num_classes).__name__}")
    if indices.numel == 0 and num_classes < 0:
        raise Error("one_hot: num_classes -1 with no indices; expected num_classes >= 0")
    if indices.numel > 0:
        lowest = int(_kiln.min(indices).item())
        highest = int(_kiln.max(indices).item())
        if lowest < 0:
            raise Error(f"one_hot: an index is {lowest}; expected indices >= 0")
        if num_classes < 0:
            num_classes = highest + 1
        if highest >= num_classes:
            raise Error(f"one_hot: an index is {highest}; expected indices below num_classes "
                        f"{num_classes}")
    classes = _kiln.arange(num_classes, dtype="i64", device=indices.device)
    return (indices.astype("i64").unsqueeze(-1) == classes).astype(dtype)


def logsumexp(x, axis=None, keepdim=False):
    """log(sum(exp(x))) over the axes (None: all), computed as m + log(sum(exp(x - m))) with m
    the maximum (0 where it is infinite, so a row of -inf gives -inf and one holding +inf gives
    +inf, as in PyTorch)."""
    m = _kiln.max(x, axis, keepdim=True)
    shift = _kiln.where(_kiln.abs(m) == _math.inf, _scalar(0, m), m)
    out = _kiln.log(_kiln.sum(_kiln.exp(x - shift), axis, keepdim=True)) + shift
    if keepdim:
        return out
    if axis is None:
        return out.reshape(())
    axes = [axis] if isinstance(axis, _numbers.Integral) else list(axis)
    for a in sorted((_axis(a, x.ndim, "logsumexp") for a in axes), reverse=True):
        out = out.squeeze(a)
    return out


def std(x, axis=None, correction=1, keepdim=False):
    """The standard deviation: sqrt(variance(x, axis, correction, keepdim))."""
    return _kiln.sqrt(_kiln.variance(x, axis, correction=correction, keepdim=keepdim))


def stack(tensors, axis=0):
    """The tensors (one shape) joined along a new axis."""
    tensors = list(tensors)
    if not tensors:
        raise Error("stack: no tensors; expected at least one")
    first = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != first:
            raise Error(f"stack: tensor {i} has shape {tuple(t.shape)}; expected every tensor "
                        f"of shape {first}")
    axis = _axis(axis, len(first) + 1, "stack")
    return _kiln.concat([t.unsqueeze(axis) for t in tensors], axis)


def split(x, split_size_or_sections, axis=0):
    """Views of x along an axis: pieces of split_size_or_sections elements (the last may be
    shorter), or of the listed sizes, which must add up to the axis' extent (PyTorch's split)."""
    axis = _axis(axis, x.ndim, "split")
    extent = x.shape[axis]
    if isinstance(split_size_or_sections, _numbers.Integral) and \
            not isinstance(split_size_or_sections, bool):
        size = int(split_size_or_sections)
        if size <= 0:
            raise Error(f"split: a piece size of {size}; expected a size >= 1")
        sizes = [_builtins.min(size, extent - start) for start in range(0, extent, size)] or [0]
    else:
        sizes = [_count(s, "split: a section size") for s in split_size_or_sections]
        if _builtins.sum(sizes) != extent:
            raise Error(f"split: sections {sizes} add up to {_builtins.sum(sizes)}; expected "
                        f"the extent of axis {axis}, {extent}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(x.slice(axis, start, start + size))
        start += size
    return tuple(pieces)


def chunk(x, chunks, axis=0):
    """x split into `chunks` pieces of ceil(extent / chunks) elements along an axis (fewer where
    the extent runs out, as in PyTorch)."""
    chunks = _count(chunks, "chunk: chunks")
    if chunks == 0:
        raise Error("chunk: 0 chunks; expected at least 1")
    extent = x.shape[_axis(axis, x.ndim, "chunk")]
    return split(x, _builtins.max(1, -(-extent // chunks)), axis)


def _float_pair(a, b, what):
    """a and b as tensors (a number takes the other operand's dtype and device), both of one
    float dtype."""
    if not isinstance(a, Tensor):
        a = _scalar(a, b)
    b = _scalar(b, a)
    for t in (a, b):
        if not t.dtype.is_float:
            raise Error(f"{what}: an operand of dtype {t.dtype}; expected float operands "
                        f"(integer {what} is not in kiln yet: cast first, x.to('f32'))")
    return a, b


def floor_divide(a, b):
    """floor(a / b), elementwise with broadcasting (the `//` operator): the quotient rounded in
    the dtype, then rounded down. Float operands only."""
    a, b = _float_pair(a, b, "floor_divide")
    return _kiln.floor(a / b)


def remainder(a, b):
    """a - floor(a / b) * b, elementwise with broadcasting (the `%` operator: the result takes
    the divisor's sign, as Python's and PyTorch's remainder), each step rounded in the dtype.
    Float operands only."""
    a, b = _float_pair(a, b, "remainder")
    return a - _kiln.floor(a / b) * b


def argmax(x, axis=None, keepdim=False):
    """The index of the maximum along an axis (the first where several tie); with no axis, of
    every element in row-major order."""
    return x.argmax(axis, keepdim)


def argmin(x, axis=None, keepdim=False):
    """The index of the minimum along an axis (the first where several tie); with no axis, of
    every element in row-major order."""
    return x.argmin(axis, keepdim)


def _install():
    _argmax, _argmin = Tensor.argmax, Tensor.argmin

    def extreme(original, name):
        def method(self, axis=None, keepdim=False):
            if axis is None:
                if keepdim:
                    raise Error(f"{name}: keepdim with no axis; expected an axis to keep")
                return original(self.reshape((-1,)), 0)
            return original(self, axis, keepdim)
        method.__doc__ = (f"The index of the {name[3:]}imum along an axis; with no axis, of every "
                          "element in row-major order.")
        return method

    Tensor.argmax = extreme(_argmax, "argmax")
    Tensor.argmin = extreme(_argmin, "argmin")

    Tensor.clamp = Tensor.clip = clamp
    Tensor.tril, Tensor.triu = tril, triu
    Tensor.logsumexp, Tensor.std = logsumexp, std
    Tensor.split, Tensor.chunk = split, chunk
    Tensor.__floordiv__ = floor_divide
    Tensor.__rfloordiv__ = lambda self, other: floor_divide(other, self)
    Tensor.__mod__ = remainder
    Tensor.__rmod__ = lambda self, other: remainder(other, self)
    Tensor.tolist = lambda self: self.numpy().tolist()
    Tensor.tolist.__doc__ = "The values as nested Python lists (bf16 and f16 as floats)."


_install()
