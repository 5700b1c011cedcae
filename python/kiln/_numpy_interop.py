"""kiln.Tensor beside numpy: numpy.asarray(t) copies the values out (__array__); a numpy array
operand of an operator becomes a kiln tensor of the other operand's dtype and device (as a
Python number does), on either side; numpy's ufuncs (numpy.exp(t)) refuse kiln tensors with a
TypeError instead of building an array of 0-d tensors: use kiln's function (kiln.exp(t)) or
numpy's on t.numpy()."""

import numpy as _np

from ._host import tensor as _tensor
from ._kiln import Tensor as _Tensor

# Binary operators that take a numpy array operand: (forward, reflected) names.
_BINARY = [("add", "radd"), ("sub", "rsub"), ("mul", "rmul"), ("truediv", "rtruediv"),
           ("floordiv", "rfloordiv"), ("mod", "rmod"), ("pow", "rpow"), ("matmul", "rmatmul"), ("and", "rand"), ("or", "ror"),
           ("eq", None), ("ne", None), ("lt", None), ("le", None), ("gt", None), ("ge", None)]


def _like(array, t):
    """A numpy array as a kiln tensor of t's dtype on t's device (its values must fit exactly
    where the dtype is an integer or bool: kiln.tensor's rule)."""
    return _tensor(array, dtype=t.dtype, device=t.device)


def _install():
    def array(self, dtype=None, copy=None):
        values = self.numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    _Tensor.__array__ = array
    _Tensor.__array_ufunc__ = None  # numpy defers operators to kiln and refuses ufuncs

    for forward, reflected in _BINARY:
        original = getattr(_Tensor, f"__{forward}__")

        def forward_op(self, other, _original=original):
            if isinstance(other, _np.ndarray):
                other = _like(other, self)
            return _original(self, other)

        setattr(_Tensor, f"__{forward}__", forward_op)
        if reflected is None:
            continue
        original_reflected = getattr(_Tensor, f"__{reflected}__", None)

        def reflected_op(self, other, _forward=original, _reflected=original_reflected):
            if isinstance(other, _np.ndarray):
                return _forward(_like(other, self), self)
            if _reflected is None:
                return NotImplemented
            return _reflected(self, other)

        setattr(_Tensor, f"__{reflected}__", reflected_op)


_install()
