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


def _first(values, bad):
    """The first value of `values` (row-major) where `bad` holds."""
    return values.reshape(-1)[int(_np.argmax(bad.reshape(-1)))]


def _check_exact(array, kiln_type):
    """kiln.Error naming the first value an integer or bool dtype cannot hold exactly: numpy's
    conversion would wrap it, truncate it or make NaN an arbitrary integer, silently."""
    target = _NUMPY_TYPE[kiln_type]
    if kiln_type in (_kiln.DType.f32, _kiln.DType.f16, _kiln.DType.bf16):
        return  # floats round to the nearest value of the dtype (docs/numerics.md)
    if array.size == 0 or array.dtype == target or array.dtype.kind == "b":
        return
    if kiln_type == _kiln.DType.bool:
        bad = (array != 0) & (array != 1)
        expected = "0 or 1"
    else:
        info = _np.iinfo(target)
        expected = f"a whole number from {info.min} to {info.max}"
        if array.dtype.kind == "f":
            with _np.errstate(invalid="ignore"):
                bad = ~_np.isfinite(array) | (array != _np.trunc(array))
                bad |= (array < float(info.min)) | (array >= float(info.max + 1))
        else:
            wide = array.astype(object) if array.dtype == _np.uint64 else array.astype(_np.int64)
            bad = _np.asarray((wide < info.min) | (wide > info.max), dtype=bool)
    if bad.any():
        raise _kiln.Error(f"tensor: the value {_first(array, bad).item()} does not fit dtype "
                          f"{kiln_type.name}; expected {expected}")


def _check_object_values(data, array):
    """kiln.Error naming a Python integer too large for any kiln dtype (numpy keeps those as
    objects), else the TypeError for data that is not numbers."""
    for value in array.reshape(-1):
        if isinstance(value, int) and not isinstance(value, bool):
            if not -2**63 <= value < 2**64:
                raise _kiln.Error(f"tensor: the value {value} does not fit any kiln dtype; "
                                  "expected a whole number from -2**63 to 2**63 - 1 (i64)")
    raise TypeError(f"tensor: {type(data).__name__} is not numeric host data; expected "
                    "numbers, nested sequences of them or an array")


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
        _check_object_values(data, array)
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
    _check_exact(array, kiln_type)
    array = _np.require(array, _NUMPY_TYPE[kiln_type], "C")  # keeps 0-d arrays 0-d
    return _kiln._tensor_from_numpy(array, kiln_type, device)

