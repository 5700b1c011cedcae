"""DLPack both ways without copies, with the stream handshake the DLPack spec defines.

Import (kiln.from_dlpack): a CUDA producer is asked for its data on kiln's stream of the matching
device (`__dlpack__(stream=...)`), so kiln's work on it runs after the producer's; a CPU producer is
asked with no stream. Export (Tensor.__dlpack__): kiln resolves the tensor and finishes the
device's queued work before it hands the memory out, which makes it ready on whatever stream the
consumer names.
"""

import ctypes

from . import _kiln

_DL_CPU = 1
_DL_CUDA = 2


def from_dlpack(array):
    """A kiln tensor over `array`'s memory, without a copy: any object with __dlpack__ (numpy
    arrays, torch tensors, ...) or a DLPack capsule. The memory must be C-contiguous, on the CPU
    or a CUDA device kiln has, with a kiln dtype; otherwise kiln.Error says what was expected.
    The tensor keeps the producer alive and only reads the memory: kiln never writes into it,
    and changes the producer makes are seen by the tensor's later reads."""
    source = array
    if hasattr(array, "__dlpack__"):
        source = _capsule_of(array)
    try:
        return _kiln._from_dlpack(source)
    except TypeError:
        if _is_capsule(source):
            name = _capsule_name(source)
            if name.startswith("used_"):
                raise _kiln.Error("from_dlpack: the DLPack capsule was already consumed (a "
                                  "capsule is read once); expected a fresh one from "
                                  "__dlpack__()") from None
            raise _kiln.Error(f"from_dlpack: a capsule named '{name}'; expected a DLPack "
                              "capsule ('dltensor' or 'dltensor_versioned')") from None
        if not (hasattr(array, "__dlpack__") or hasattr(array, "__array_interface__")):
            raise TypeError(f"from_dlpack: {type(array).__name__} does not support DLPack; "
                            "expected an object with __dlpack__ (a numpy array, a torch tensor, "
                            "...) or a DLPack capsule") from None
        raise


def _capsule_of(array):
    """The producer's capsule: on a CUDA device, made ready on kiln's stream of that device. An
    exception the producer raises is a kiln.Error naming it."""
    try:
        device_type, device_id = (array.__dlpack_device__()
                                  if hasattr(array, "__dlpack_device__") else (_DL_CPU, 0))
        # A stream only for CUDA memory; DLPack 1.0 capsules carry a read-only flag, which
        # numpy needs to export a read-only array.
        stream = {} if int(device_type) != _DL_CUDA else {
            "stream": _kiln._cuda_stream(int(device_id))}
        try:
            return array.__dlpack__(**stream, max_version=(1, 0))
        except TypeError:  # producers predating max_version
            return array.__dlpack__(**stream)
    except _kiln.Error:
        raise
    except Exception as e:
        raise _kiln.Error(f"from_dlpack: {type(array).__name__}'s __dlpack__ raised "
                          f"{type(e).__name__}: {e}; expected a DLPack capsule") from e


def _is_capsule(value):
    return type(value).__name__ == "PyCapsule"


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    name = get_name(capsule)
    return name.decode(errors="replace") if name else ""


def export_device(tensor):
    backend = tensor.device.backend
    if backend == "cpu":
        return (_DL_CPU, 0)
    if backend == "cuda":
        return (_DL_CUDA, tensor.device.ordinal)
    _kiln._export_array(tensor)  # raises kiln.Error: this backend's memory is not exportable
    raise AssertionError("unreachable")


def export(tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    if copy:
        raise BufferError("__dlpack__(copy=True): kiln exports its memory as it is; use "
                          "t.numpy() for a copy")
    if dl_device is not None and tuple(int(v) for v in dl_device) != export_device(tensor):
        raise BufferError(f"__dlpack__(dl_device={tuple(dl_device)}): the tensor is on "
                          f"{export_device(tensor)}; kiln does not move data during export")
    if stream is not None and tensor.device.backend == "cpu":
        raise BufferError(f"__dlpack__(stream={stream!r}): a CPU tensor takes stream=None")
    array = _kiln._export_array(tensor)  # resolved, and the device's work finished
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    return array.__dlpack__(**kwargs)
