"""DLPack both ways without copies: numpy (and torch where installed) arrays seen by kiln in place,
kiln tensors seen by numpy and torch in place, lifetimes across the hand-over, and the kiln.Error
for what kiln cannot view (wrong dtype, strides, device)."""

import ctypes
import gc

import numpy as np
import pytest

import kiln


def address(array):
    return array.__array_interface__["data"][0]


def test_numpy_to_kiln_is_zero_copy():
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = kiln.from_dlpack(source)
    assert t.shape == (3, 4) and t.dtype == kiln.f32 and t.device == kiln.cpu_device()
    before = (t * 1).numpy()
    source[1, 2] = 100  # no re-import: kiln reads the same memory
    assert t.numpy()[1, 2] == 100
    assert (t * 1).numpy()[1, 2] == 100
    assert before[1, 2] == 6
    # Handed back out, it is still the producer's memory.
    assert address(np.from_dlpack(t)) == address(source)


def test_kiln_to_numpy_is_zero_copy_and_outlives_the_tensor():
    t = kiln.arange(6, dtype="f32") * 2
    a = np.from_dlpack(t)
    b = np.from_dlpack(t)
    assert address(a) == address(b)  # both views of kiln's one buffer
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32) * 2)
    del t, b
    gc.collect()
    kiln.zeros((1 << 16,)).resolve()  # allocations that could reuse freed memory
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32) * 2)


def test_imported_memory_outlives_the_producer_reference():
    source = np.full((1000,), 3, np.int32)
    t = kiln.from_dlpack(source)
    del source
    gc.collect()
    np.testing.assert_array_equal((t + 1).numpy(), np.full((1000,), 4, np.int32))


@pytest.mark.parametrize("numpy_type", [np.float32, np.float16, np.int8, np.uint8, np.int32,
                                        np.uint32, np.int64, np.bool_])
def test_round_trip_of_every_numpy_dtype(numpy_type):
    source = (np.arange(10) % 3).astype(numpy_type).reshape(2, 5)
    t = kiln.from_dlpack(source)
    back = np.from_dlpack(t)
    assert back.dtype == source.dtype and address(back) == address(source)
    np.testing.assert_array_equal(t.numpy(), source)


def test_read_only_and_sliced_contiguous_arrays_are_accepted():
    source = np.arange(20, dtype=np.float32).reshape(4, 5)
    source.flags.writeable = False
    np.testing.assert_array_equal(kiln.from_dlpack(source).numpy(), source)
    rows = np.arange(20, dtype=np.float32).reshape(4, 5)[1:3]  # contiguous, offset data
    np.testing.assert_array_equal(kiln.from_dlpack(rows).numpy(), rows)
    column = np.arange(5, dtype=np.float32).reshape(5, 1)[:, :]  # extent-1 axis: any stride
    np.testing.assert_array_equal(kiln.from_dlpack(column).numpy(), column)


def test_kiln_never_writes_into_imported_memory():
    source = np.ones((8,), np.float32)
    t = kiln.from_dlpack(source)
    kiln.scatter_add(t, 0, kiln.tensor([1, 1], dtype="i32"), kiln.tensor([5.0, 5.0])).resolve()
    (t * 3).resolve()
    np.testing.assert_array_equal(source, np.ones((8,), np.float32))


def test_wrong_dtype_layout_and_object_are_errors():
    with pytest.raises(kiln.Error, match="float64 are not a kiln dtype; expected float32"):
        kiln.from_dlpack(np.zeros(3))
    with pytest.raises(kiln.Error, match=r"strides \(1, 3\).*expected a C-contiguous"):
        kiln.from_dlpack(np.zeros((2, 3), np.float32).T)
    with pytest.raises(kiln.Error, match="C-contiguous"):
        kiln.from_dlpack(np.zeros((4, 6), np.float32)[:, ::2])
    with pytest.raises(TypeError, match="does not support DLPack"):
        kiln.from_dlpack([1, 2, 3])


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


def foreign_capsule(device_type, device_id, keep):
    """A DLPack capsule claiming memory on another device (nothing is ever read from it)."""
    shape = (ctypes.c_int64 * 1)(4)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(ctypes.c_void_p(1 << 20), _DLDevice(device_type, device_id), 1,
                                  _DLDataType(2, 32, 1), shape, None, 0)
    keep += [shape, managed]
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new_capsule(ctypes.addressof(managed), b"dltensor", None)


def test_empty_arrays_are_empty_tensors():
    for shape, numpy_type in [((0,), np.float32), ((3, 0), np.int32), ((0, 4), np.uint8)]:
        t = kiln.from_dlpack(np.zeros(shape, numpy_type))
        assert t.shape == shape
        assert t.numpy().dtype == numpy_type and t.numpy().shape == shape


def test_a_failing_producer_or_a_used_capsule_is_an_error():
    class Failing:
        def __dlpack__(self, **kwargs):
            raise RuntimeError("no memory today")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(kiln.Error, match="Failing's __dlpack__ raised RuntimeError: no memory"):
        kiln.from_dlpack(Failing())
    capsule = np.arange(4, dtype=np.float32).__dlpack__()
    np.testing.assert_array_equal(kiln.from_dlpack(capsule).numpy(), [0, 1, 2, 3])
    with pytest.raises(kiln.Error, match="capsule was already consumed"):
        kiln.from_dlpack(capsule)


def test_memory_on_a_device_kiln_cannot_use_is_an_error():
    keep = []
    with pytest.raises(kiln.Error, match="in OpenCL; expected memory on the CPU or a CUDA device"):
        kiln.from_dlpack(foreign_capsule(4, 0, keep))
    cuda_ordinals = [d.ordinal for d in kiln.devices() if d.backend == "cuda"]
    missing = max(cuda_ordinals, default=-1) + 1
    with pytest.raises(kiln.Error, match=f"cuda:{missing}, which kiln has no device for"):
        kiln.from_dlpack(foreign_capsule(2, missing, keep))


def test_opencl_tensors_are_not_exportable():
    opencl = [d for d in kiln.devices() if d.backend == "opencl"]
    if not opencl:
        pytest.skip("no OpenCL device")
    t = kiln.ones((3,), device=opencl[0])
    with pytest.raises(kiln.Error, match="memory kiln cannot hand out; expected a tensor on the CPU"):
        np.from_dlpack(t)
    with pytest.raises(kiln.Error, match="cannot hand out"):
        t.__dlpack_device__()
    np.testing.assert_array_equal(t.numpy(), np.ones(3, np.float32))  # the copy still works


def test_dlpack_protocol_details():
    t = kiln.ones((2,))
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="copy=True"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="stream=None"):
        t.__dlpack__(stream=1)
    capsule = t.__dlpack__(max_version=(1, 0))
    np.testing.assert_array_equal(kiln.from_dlpack(capsule).numpy(), [1, 1])


def test_torch_round_trips_without_copies():
    torch = pytest.importorskip("torch")
    source = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = kiln.from_dlpack(source)
    source[0, 1] = -5
    assert t.numpy()[0, 1] == -5
    out = torch.from_dlpack(kiln.softmax(t, -1))
    np.testing.assert_allclose(out.numpy(), torch.softmax(source, -1).numpy(), rtol=1e-6)
    exported = kiln.arange(4, dtype="f32")
    a, b = torch.from_dlpack(exported), torch.from_dlpack(exported)
    assert a.data_ptr() == b.data_ptr() == address(np.from_dlpack(exported))
    bf = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    kb = kiln.from_dlpack(bf)
    assert kb.dtype == kiln.bf16
    assert torch.equal(torch.from_dlpack(kb * 2), bf * 2)
    with pytest.raises(kiln.Error, match="C-contiguous"):
        kiln.from_dlpack(source.T)
    with pytest.raises(kiln.Error, match="not a kiln dtype"):
        kiln.from_dlpack(torch.zeros(2, dtype=torch.float64))


def test_cuda_round_trips_without_copies():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not any(d.backend == "cuda" for d in kiln.devices()):
        pytest.skip("no CUDA device for both torch and kiln")
    source = torch.arange(1024, dtype=torch.float32, device="cuda").reshape(32, 32)
    t = kiln.from_dlpack(source)
    assert t.device.backend == "cuda" and t.device.ordinal == source.device.index
    source.mul_(2)  # queued on torch's stream; kiln's read below must see it
    np.testing.assert_array_equal(t.numpy(), source.cpu().numpy())
    out = torch.from_dlpack(t + 1)
    assert out.device.type == "cuda"
    assert torch.equal(out, source + 1)
    exported = t * 3
    a, b = torch.from_dlpack(exported), torch.from_dlpack(exported)
    assert a.data_ptr() == b.data_ptr()
    with pytest.raises(kiln.Error, match="C-contiguous"):
        kiln.from_dlpack(source.T)
