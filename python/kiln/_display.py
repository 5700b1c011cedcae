"""A tensor's repr with its values, as numpy prints them (long axes elided with ...): printing a
tensor resolves it, as numpy() does. A tensor of more than _MAX_SHOWN elements shows its shape
and dtype alone, so printing never starts a large computation or copy unasked."""

import numpy as _np

from ._kiln import Tensor as _Tensor

_MAX_SHOWN = 1 << 20


def _install():
    plain = _Tensor.__repr__

    def tensor_repr(self):
        if self.numel > _MAX_SHOWN:
            return plain(self)
        values = _np.array2string(self.numpy(), separator=", ", threshold=1000, edgeitems=3,
                                  prefix="kiln.tensor(")
        return f"kiln.tensor({values}, dtype={self.dtype}, device='{self.device.id}')"

    _Tensor.__repr__ = tensor_repr
    _Tensor.__str__ = tensor_repr


_install()
