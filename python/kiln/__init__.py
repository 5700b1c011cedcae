"""kiln: write each tensor kernel once, run it bit-identically on CPU, CUDA and OpenCL devices.

    import kiln
    x = kiln.randn((4, 8), seed=1, device=kiln.best_device())
    y = kiln.softmax(x * 2.0, axis=-1)
    print(y.numpy())

Tensors are lazy: ops build a graph that resolve(), numpy() or DLPack export plans into few fused
kernels. Every result is bit-identical whatever the fusion, schedule or device. Errors from kiln
are kiln.Error with kiln's message; wrong Python types are TypeError or ValueError.
docs/python.md describes the API.
"""

import os as _os

# A wheel carries kiln-opencl-probe beside this file (OpenCL builds run in it, isolated).
_probe = _os.path.join(_os.path.dirname(__file__), "kiln-opencl-probe")
if "KILN_OPENCL_PROBE" not in _os.environ and _os.path.exists(_probe):
    _os.environ["KILN_OPENCL_PROBE"] = _probe
# PoCL compiles one generic work-group function per kernel instead of one per launch shape.
_os.environ.setdefault("POCL_WORK_GROUP_SPECIALIZATION", "0")

from . import _kiln
from ._kiln import (  # noqa: F401
    DType, Device, Error, Tensor, TuneReport, abs, arange, argmax, argmin, backend_status,
    best_device, broadcast_to, cast, cat, ceil, concat, conv1d, cos, cpu_device, dequantize_blocks,
    dequantize_q8_0, devices, embedding, erf, exp, find_device, flatten, floor, full, gather, gelu,
    index_select, isnan,
    layer_norm, linear, log, log_softmax, logical_not, manual_seed, matmul, max, maximum, mean,
    min, minimum,
    neg, ones, ops, pad, permute, pow, prod, rand, randn, recip, relu, reshape, resolve, rms_norm,
    round, rsqrt, scaled_dot_product_attention, scatter_add, sigmoid, silu, sin, softmax, sqrt,
    square, squeeze, sum, tanh, transpose, tune, unsqueeze, variance, where, zeros,
)
from ._kiln import (  # noqa: F401
    chunk, clamp, clip, cumprod, cumsum, einsum, eye, floor_divide, full_like, linspace, logsumexp, one_hot, ones_like,
    remainder, split, stack, std, tril, triu, zeros_like,
)
from ._kiln import argsort, boolean_mask, sort, topk  # noqa: F401
from ._kiln import GgufFile  # noqa: F401

from ._compile import compile, load_program  # noqa: A001  (kiln.compile, as torch.compile)
from ._dlpack import from_dlpack
from ._host import tensor
from . import _numpy_interop  # noqa: F401  (numpy arrays as operands, numpy.asarray(t))
from . import _repr

f32 = float32 = DType.f32
f16 = float16 = DType.f16
bf16 = bfloat16 = DType.bf16
i8 = int8 = DType.i8
u8 = uint8 = DType.u8
i32 = int32 = DType.i32
u32 = uint32 = DType.u32
i64 = int64 = DType.i64
bool_ = DType.bool


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export without a copy (CPU and CUDA tensors). The tensor is resolved and the
    device's queued work finished first, so the data is ready on any consumer stream."""
    from ._dlpack import export
    return export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def _dlpack_device(self):
    """(DLPack device type, device id): (1, 0) on the CPU, (2, ordinal) on CUDA."""
    from ._dlpack import export_device
    return export_device(self)


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = _dlpack_device
Tensor.__repr__ = _repr.tensor_repr
Tensor.tolist = _repr.tolist

__version__ = _kiln.__version__

__all__ = [name for name in dir() if not name.startswith("_")]
