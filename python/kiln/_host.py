"""kiln.tensor: host data (anything numpy.asarray takes) copied into a new kiln tensor."""

import numpy as _np

from . import _kiln

# numpy's element type for each kiln dtype (bf16 goes in as float32, rounded to nearest even).
_NUMPY_TYPE = {
    _kiln.DType.f32: _np.float32, _kiln.DType.f16: _np.float16, _kiln.DType.bf16: _np.float32,
    _kiln.DType.i8: _np.int8, _kiln.DType.u8: _np.uint8, _kiln.DType.i32: _np.int32,
    _kiln.DType.u32: _np.uint32, _kiln.DType.i64: _np.int64, _kiln.DType.bool: _np.bool_,
}


def _infer_dtype(array):
    """kiln's dtype for host data given without one: floats f32, ints i32, bools bool; numpy
    arrays of a kiln dtype keep it (int64 arrays included)."""
    kind = array.dtype.kind
    if kind == "b":
        return _kiln.DType.bool
    if kind == "f":
        return _kiln.DType.f16 if array.dtype == _np.float16 else _kiln.DType.f32
    if kind in "iu":
        for kiln_type, numpy_type in _NUMPY_TYPE.items():
            if array.dtype == numpy_type and kiln_type != _kiln.DType.bf16:
                return kiln_type
        return _kiln.DType.i32
    raise TypeError(f"tensor: host data of numpy dtype {array.dtype} has no kiln dtype; expected "
                    "numbers or bools (f32 f16 bf16 i8 u8 i32 u32 i64 bool)")


def tensor(data, dtype=None, device=None):
    """A new tensor holding a copy of `data` (a number, nested sequences, a numpy array or
    anything numpy.asarray takes), converted to `dtype` (kiln.DType, a name such as "f32" or
    "bfloat16", or a numpy dtype) on `device` (None: the CPU). Without a dtype: Python floats
    and float64 arrays give f32, Python ints i32, numpy arrays of a kiln dtype keep theirs."""
    if isinstance(data, _kiln.Tensor):
        if dtype is None:
            dtype = data.dtype  # a bf16 tensor comes out as float32 and goes back in as bf16
        data = data.numpy()
    array = _np.asarray(data)
    if array.dtype == object:
        raise TypeError(f"tensor: {type(data).__name__} is not numeric host data; expected "
                        "numbers, nested sequences of them or an array")
    if dtype is None:
        if not isinstance(data, _np.ndarray) and array.dtype.kind in "iu":
            kiln_type = _kiln.DType.i32  # Python ints
        else:
            kiln_type = _infer_dtype(array)
    else:
        kiln_type = _kiln._dtype(dtype)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"tensor: host data of numpy dtype {array.dtype} has no kiln dtype; "
                        "expected numbers or bools")
    array = _np.require(array, _NUMPY_TYPE[kiln_type], "C")  # keeps 0-d arrays 0-d
    return _kiln._tensor_from_numpy(array, kiln_type, device)

