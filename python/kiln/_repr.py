"""kiln.Tensor's repr and tolist(). repr shows the values as numpy does, and so resolves the
tensor; past 1000 elements it shows the first and last 3 along each long axis with '...' between,
and reads only those: the corners are sliced out on the device first, and only they are copied to
the host (the graph that computes them is still computed as far as they need it)."""

import sys

import numpy as np

from . import _kiln

_THRESHOLD = 1000  # numpy's print threshold
_EDGE = 3  # numpy's edgeitems


def _corners(t):
    """t's corners as a numpy array, and which axes were cut (a middle left out)."""
    cut = [t.numel > _THRESHOLD and n > 2 * _EDGE for n in t.shape]
    small = t
    for axis, is_cut in enumerate(cut):
        if is_cut:
            n = t.shape[axis]
            small = _kiln.concat([small.slice(axis, 0, _EDGE), small.slice(axis, n - _EDGE, n)],
                                 axis)
    return small.numpy(), cut


def _element_strings(values):
    """Each element formatted by numpy, all of one width, in values' shape."""
    flat = np.array2string(values.reshape(-1), separator="\x00", threshold=sys.maxsize,
                           max_line_width=sys.maxsize)
    strings = np.array(flat[1:-1].split("\x00"), dtype=object)  # numpy pads them to one width
    return strings.reshape(values.shape)


def _nested(strings, cut, axis, indent):
    """strings (an object array, or one element's string) nested in brackets as numpy does, with
    '...' where an axis was cut."""
    if not isinstance(strings, np.ndarray):
        return strings
    rank = strings.ndim
    if rank == 0:
        return strings.item()
    items = [_nested(strings[i], cut, axis + 1, indent + " ") for i in range(strings.shape[0])]
    if cut[axis]:
        items = items[:_EDGE] + ["..."] + items[_EDGE:]
    if rank == 1:
        return "[" + ", ".join(items) + "]"
    separator = ",\n" + "\n" * (rank - 2) + indent + " "
    return "[" + separator.join(items) + "]"


def tensor_repr(t):
    prefix = "kiln.Tensor("
    if t.numel == 0:
        body = "[]"
    else:
        try:
            values, cut = _corners(t)
            body = _nested(_element_strings(values), cut, 0, " " * len(prefix))
        except _kiln.Error as e:  # a repr that raised would hide the tensor in a debugger
            body = f"<not computed: {e}>"
    shape = "(" + ", ".join(str(n) for n in t.shape) + ("," if len(t.shape) == 1 else "") + ")"
    device = "" if t.device.backend == "cpu" else f", device='{t.device.id}'"  # as torch
    return f"{prefix}{body}, shape={shape}, dtype={t.dtype}{device})"


def tolist(t):
    """The values as nested Python lists of Python numbers (a number for a 0-d tensor), like
    numpy's and torch's tolist(); it resolves the tensor."""
    return t.numpy().tolist()
