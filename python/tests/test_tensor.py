"""kiln.Tensor from Python: numpy round trips of every dtype, creation, operators, functions,
reductions, views and indexing against numpy, on each device (and bit-identical across devices),
and the errors bad input gets."""

import math

import numpy as np
import pytest

import kiln

NUMPY_OF = {
    kiln.f32: np.float32, kiln.f16: np.float16, kiln.i8: np.int8, kiln.u8: np.uint8,
    kiln.i32: np.int32, kiln.u32: np.uint32, kiln.i64: np.int64, kiln.bool_: np.bool_,
}


def sample(numpy_type, shape=(3, 5), seed=0):
    rng = np.random.default_rng(seed)
    if numpy_type == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(numpy_type, np.integer):
        info = np.iinfo(numpy_type)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=numpy_type)
    return rng.standard_normal(shape).astype(numpy_type)


@pytest.mark.parametrize("dtype", list(NUMPY_OF), ids=str)
def test_numpy_round_trip_every_dtype(dtype, device):
    host = sample(NUMPY_OF[dtype])
    t = kiln.tensor(host, device=device)
    assert t.dtype == dtype and t.shape == host.shape and t.device == device
    out = t.numpy()
    assert out.dtype == host.dtype
    np.testing.assert_array_equal(out, host)


def test_bf16_goes_in_rounded_to_nearest_even_and_comes_out_as_float32(device):
    # 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1);
    # 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to 1 + 2^-6.
    values = np.array([1 + 2**-8, 1 + 3 * 2**-8, -2.5, 3e38], np.float32)
    t = kiln.tensor(values, dtype="bf16", device=device)
    assert t.dtype == kiln.bf16
    out = t.numpy()
    assert out.dtype == np.float32
    bits = values.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    np.testing.assert_array_equal(out, rounded.view(np.float32))
    assert out[0] == 1.0 and out[1] == 1 + 2**-6


def test_python_data_takes_kiln_default_dtypes():
    assert kiln.tensor([1.5, 2.0]).dtype == kiln.f32
    assert kiln.tensor([1, 2]).dtype == kiln.i32
    assert kiln.tensor([True]).dtype == kiln.bool_
    assert kiln.tensor(np.arange(3, dtype=np.float64)).dtype == kiln.f32
    assert kiln.tensor(np.arange(3, dtype=np.int64)).dtype == kiln.i64
    assert kiln.tensor(2.5).shape == ()
    assert kiln.tensor(2.5).item() == 2.5
    for name in ("f16", "float16", np.float16, kiln.f16):
        assert kiln.tensor([1.0], dtype=name).dtype == kiln.f16


@pytest.mark.parametrize("data, dtype, value", [
    ([2**31], None, "2147483648"),          # Python ints default to i32
    ([1, 2**40], None, "1099511627776"),
    ([300], "u8", "300"),
    ([-1], "u32", "-1"),
    ([float("nan")], "i32", "nan"),
    ([2.5], "i32", "2.5"),
    ([2], "bool", "2"),
    (np.array([2**63], np.uint64), "i64", "9223372036854775808"),
    ([2**70], None, "1180591620717411303424"),
])
def test_host_values_a_dtype_cannot_hold_are_errors_naming_them(data, dtype, value):
    with pytest.raises(kiln.Error, match=f"value {value} does not fit"):
        kiln.tensor(data, dtype=dtype)


def test_host_values_a_dtype_holds_exactly_convert():
    assert kiln.tensor([1.0, -2.0], dtype="i32").numpy().tolist() == [1, -2]
    assert kiln.tensor([2**31 - 1, -2**31]).numpy().tolist() == [2**31 - 1, -2**31]
    assert kiln.tensor([2**40], dtype="i64").numpy().tolist() == [2**40]
    assert kiln.tensor([-2**63, 2**63 - 1], dtype="i64").numpy().tolist() == [-2**63, 2**63 - 1]
    assert kiln.tensor(np.array([3], np.uint64), dtype="u32").numpy().tolist() == [3]
    assert kiln.tensor([0, 1], dtype="bool").numpy().tolist() == [False, True]
    assert kiln.tensor([255], dtype="u8").numpy().tolist() == [255]


@pytest.mark.parametrize("call, what", [
    (lambda x: kiln.zeros((2**63,)), "zeros: shape: 9223372036854775808"),
    (lambda x: kiln.zeros(2**63), "zeros: shape: 9223372036854775808"),
    (lambda x: x.sum(axis=2**63), "axis: 9223372036854775808"),
    (lambda x: x[2**63], "index: 9223372036854775808"),
    (lambda x: x.reshape((2**64,)), "reshape: 18446744073709551616"),
    (lambda x: x.permute((0, -2**63 - 1)), "permute: -9223372036854775809"),
    (lambda x: x.size(2**63), "size: 9223372036854775808"),
    (lambda x: kiln.arange(2**63), "arange: 9.223372036854776e"),
])
def test_python_ints_past_int64_are_errors_naming_them(call, what):
    x = kiln.zeros((2, 3))
    with pytest.raises(kiln.Error, match=what.replace(".", "[.]")):
        call(x)


def test_to_moves_between_devices_and_casts(device):
    x = kiln.tensor([1.5, -0.0, 3.0])
    y = x.to(device)
    assert y.device.id == device.id and y.dtype == kiln.f32
    np.testing.assert_array_equal(y.numpy().view(np.uint32), x.numpy().view(np.uint32))
    back = y.to("cpu", "i32")
    assert back.device.id == kiln.cpu_device().id and back.dtype == kiln.i32
    assert back.numpy().tolist() == [1, 0, 3]
    assert y.cpu().device.id == kiln.cpu_device().id
    assert y.to(dtype="f16").dtype == kiln.f16 and y.to(dtype="f16").device.id == device.id
    assert x.to(device=device.backend, dtype=np.float16).device.id == device.id
    with pytest.raises(kiln.Error, match="no device 'nonsense'"):
        x.to("nonsense")
    with pytest.raises(TypeError, match="two dtypes"):
        x.to("f16", dtype="f32")


def test_numpy_arrays_mix_with_tensors(device):
    t = kiln.tensor([1.0, 2.0, 3.0], device=device)
    a = np.array([0.5, -1.0, 2.0])
    out = np.asarray(t)
    assert out.dtype == np.float32 and out.tolist() == [1.0, 2.0, 3.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    for got, want in [(t + a, [1.5, 1.0, 5.0]), (a + t, [1.5, 1.0, 5.0]), (a - t, [-0.5, -3, -1]),
                      (t * a, [0.5, -2.0, 6.0]), (a / t, [0.5, -0.5, 2 / 3]),
                      (t ** np.array([2.0, 2.0, 2.0]), [1.0, 4.0, 9.0])]:
        assert isinstance(got, kiln.Tensor) and got.device.id == device.id
        np.testing.assert_array_equal(got.numpy(), np.asarray(want, np.float32))
    assert (t == np.array([1.0, 0.0, 3.0])).numpy().tolist() == [True, False, True]
    assert isinstance(np.eye(3) @ t, kiln.Tensor)
    with pytest.raises(TypeError, match="ufunc"):
        np.exp(t)
    with pytest.raises(kiln.Error, match="does not fit dtype i32"):
        kiln.tensor([1, 2], dtype="i32", device=device) + np.array([2**40, 1])


def test_creation(device):
    np.testing.assert_array_equal(kiln.zeros((2, 3), device=device).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(kiln.ones(4, kiln.i32, device).numpy(), np.ones(4, np.int32))
    np.testing.assert_array_equal(kiln.full((2,), 7, "u8", device).numpy(), [7, 7])
    np.testing.assert_array_equal(kiln.arange(5, device=device).numpy(), np.arange(5))
    assert kiln.arange(5).dtype == kiln.i32
    np.testing.assert_array_equal(kiln.arange(1, 2, 0.25, device=device).numpy(),
                                  np.arange(1, 2, 0.25, dtype=np.float32))
    u = kiln.rand((1000,), seed=3, device=device).numpy()
    assert u.min() >= 0 and u.max() < 1 and 0.4 < u.mean() < 0.6
    n = kiln.randn((1000,), seed=3, device=device).numpy()
    assert abs(n.mean()) < 0.15 and 0.8 < n.std() < 1.2
    # The same values on every device.
    np.testing.assert_array_equal(u, kiln.rand((1000,), seed=3).numpy())
    assert not np.array_equal(u, kiln.rand((1000,), seed=4).numpy())


def test_unseeded_generators_draw_fresh_seeds_that_manual_seed_restarts():
    first, second = kiln.randn((64,)).numpy(), kiln.randn((64,)).numpy()
    assert not np.array_equal(first, second)
    kiln.manual_seed(7)
    again = [kiln.randn((64,)).numpy(), kiln.rand((8,)).numpy()]
    kiln.manual_seed(7)
    np.testing.assert_array_equal(kiln.randn((64,)).numpy(), again[0])
    np.testing.assert_array_equal(kiln.rand((8,)).numpy(), again[1])
    assert not np.array_equal(again[0], kiln.randn((64,), seed=7).numpy())
    np.testing.assert_array_equal(kiln.rand((4,), seed=2**64 - 1).numpy(),
                                  kiln.rand((4,), seed=2**64 - 1).numpy())
    for bad in (-1, 2**64):
        with pytest.raises(kiln.Error, match=f"seed {bad} is out of range; expected 0 to 2\\^64"):
            kiln.randn((2,), seed=bad)
    with pytest.raises(kiln.Error, match="manual_seed: seed -3 is out of range"):
        kiln.manual_seed(-3)
    with pytest.raises(TypeError, match="seed is float; expected an int or None"):
        kiln.rand((2,), seed=1.5)


def test_operators_match_numpy(device):
    a_host, b_host = sample(np.float32, (4, 6), 1), sample(np.float32, (6,), 2)
    a, b = kiln.tensor(a_host, device=device), kiln.tensor(b_host, device=device)
    cases = {
        "a + b": (a + b, a_host + b_host), "a - b": (a - b, a_host - b_host),
        "a * b": (a * b, a_host * b_host), "a / b": (a / b, a_host / b_host),
        "a + 2": (a + 2, a_host + np.float32(2)), "2 - a": (2 - a, np.float32(2) - a_host),
        "3 * a": (3 * a, np.float32(3) * a_host), "1 / a": (1 / a, np.float32(1) / a_host),
        "-a": (-a, -a_host), "abs(a)": (abs(a), np.abs(a_host)),
        "a ** 2": (a ** 2, a_host * a_host),
    }
    kiln.resolve(*(got for got, _ in cases.values()))  # one plan: its kernels are built together
    for text, (got, want) in cases.items():
        np.testing.assert_array_equal(got.numpy(), want, err_msg=text)
    compare = {
        "a < b": (a < b, a_host < b_host), "a <= 0": (a <= 0, a_host <= 0),
        "a > b": (a > b, a_host > b_host), "a >= 0.5": (a >= 0.5, a_host >= 0.5),
        "a == a": (a == a, a_host == a_host), "a != b": (a != b, a_host != b_host),
        "1 < a": (1 < a, 1 < a_host),
    }
    kiln.resolve(*(got for got, _ in compare.values()))
    for text, (got, want) in compare.items():
        assert got.dtype == kiln.bool_, text
        np.testing.assert_array_equal(got.numpy(), want, err_msg=text)
    p, q = a > 0, b > 0
    np.testing.assert_array_equal((p & q).numpy(), (a_host > 0) & (b_host > 0))
    np.testing.assert_array_equal((p | q).numpy(), (a_host > 0) | (b_host > 0))
    np.testing.assert_array_equal((~p).numpy(), ~(a_host > 0))
    i = kiln.tensor(np.array([5, -7, 9], np.int32), device=device)
    np.testing.assert_array_equal((i * 3 - 1).numpy(), [14, -22, 26])


def test_functions_match_numpy(device):
    x_host = sample(np.float32, (5, 7), 3)
    x = kiln.tensor(x_host, device=device)
    pos = kiln.tensor(np.abs(x_host) + 0.5, device=device)
    close = {
        "exp": (kiln.exp(x), np.exp(x_host)), "tanh": (x.tanh(), np.tanh(x_host)),
        "sin": (kiln.sin(x), np.sin(x_host)), "cos": (kiln.cos(x), np.cos(x_host)),
        "log": (kiln.log(pos), np.log(np.abs(x_host) + 0.5)),
        "sigmoid": (kiln.sigmoid(x), 1 / (1 + np.exp(-x_host))),
        "erf": (kiln.erf(x), np.vectorize(math.erf)(x_host)),
        "gelu": (kiln.gelu(x), x_host * 0.5 * (1 + np.vectorize(math.erf)(x_host / math.sqrt(2)))),
        "silu": (kiln.silu(x), x_host / (1 + np.exp(-x_host))),
        "rsqrt": (kiln.rsqrt(pos), 1 / np.sqrt(np.abs(x_host) + 0.5)),
    }
    kiln.resolve(*(got for got, _ in close.values()))  # one plan: its kernels are built together
    for name, (got, want) in close.items():
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=1e-5, err_msg=name)
    exact = {
        "sqrt": (kiln.sqrt(pos), np.sqrt(np.abs(x_host) + np.float32(0.5))),
        "relu": (kiln.relu(x), np.maximum(x_host, 0)), "square": (x.square(), x_host * x_host),
        "floor": (kiln.floor(x), np.floor(x_host)), "ceil": (kiln.ceil(x), np.ceil(x_host)),
        "round": (kiln.round(x * 2), np.round(x_host * 2)),
        "minimum": (kiln.minimum(x, pos), np.minimum(x_host, np.abs(x_host) + np.float32(0.5))),
        "where": (kiln.where(x > 0, x, 0.0), np.where(x_host > 0, x_host, 0)),
        "where scalar first": (kiln.where(x > 0, 1.0, x), np.where(x_host > 0, 1, x_host)),
        "astype i32": (x.astype("i32"), x_host.astype(np.int32)),
        "cast f16": (kiln.cast(x, kiln.f16), x_host.astype(np.float16)),
    }
    kiln.resolve(*(got for got, _ in exact.values()))
    for name, (got, want) in exact.items():
        np.testing.assert_array_equal(got.numpy(), want.astype(got.numpy().dtype), err_msg=name)
    assert kiln.isnan(kiln.tensor([np.nan, 1.0], device=device)).numpy().tolist() == [True, False]
    with pytest.raises(ValueError, match="expected 'none'"):
        kiln.gelu(x, approximate="fast")


def test_reductions_match_numpy(device):
    x_host = sample(np.float32, (3, 4, 5), 4)
    x = kiln.tensor(x_host, device=device)
    cases = [(name, axis, keepdim) for axis in (None, 0, 2, -1, (0, 2)) for keepdim in (False, True)
             for name in ("sum", "mean", "max", "min", "prod")]
    results = [getattr(x, name)(axis, keepdim) for name, axis, keepdim in cases]
    kiln.resolve(*results)  # one plan: its kernels are built together
    for (name, axis, keepdim), result in zip(cases, results):
        got = result.numpy()
        want = getattr(np, name)(x_host, axis=axis, keepdims=keepdim)
        assert got.shape == want.shape, (name, axis, keepdim)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {axis} {keepdim}")
    np.testing.assert_array_equal(kiln.argmax(x, 1).numpy(), np.argmax(x_host, 1))
    np.testing.assert_array_equal(x.argmin(-1, keepdim=True).numpy(),
                                  np.argmin(x_host, -1)[..., None])
    np.testing.assert_allclose(kiln.variance(x, 2).numpy(), np.var(x_host, 2, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(x.variance(correction=0).numpy(), np.var(x_host), rtol=1e-5)
    e = np.exp(x_host - x_host.max(-1, keepdims=True))
    np.testing.assert_allclose(kiln.softmax(x).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(x.log_softmax(1).numpy(),
                               x_host - x_host.max(1, keepdims=True) - np.log(
                                   np.exp(x_host - x_host.max(1, keepdims=True)).sum(1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    w_host, b_host = sample(np.float32, (5,), 5), sample(np.float32, (5,), 6)
    w, b = kiln.tensor(w_host, device=device), kiln.tensor(b_host, device=device)
    mean = x_host.mean(-1, keepdims=True)
    var = x_host.var(-1, keepdims=True)
    np.testing.assert_allclose(kiln.layer_norm(x, 1, w, b, 1e-5).numpy(),
                               (x_host - mean) / np.sqrt(var + 1e-5) * w_host + b_host,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        kiln.rms_norm(x, w).numpy(),
        x_host / np.sqrt((x_host * x_host).mean(-1, keepdims=True) + 1e-6) * w_host,
        rtol=1e-5, atol=1e-6)
    counts = kiln.tensor(np.array([[1, 2], [3, 4]], np.int8), device=device).sum()
    assert counts.dtype == kiln.i32 and counts.item() == 10


def test_views_match_numpy(device):
    x_host = sample(np.int32, (2, 3, 4), 7)
    x = kiln.tensor(x_host, device=device)
    cases = {
        "reshape": (x.reshape(6, 4), x_host.reshape(6, 4)),
        "reshape tuple -1": (x.reshape((4, -1)), x_host.reshape(4, -1)),
        "permute": (x.permute(2, 0, 1), x_host.transpose(2, 0, 1)),
        "transpose": (x.transpose(0, 2), x_host.swapaxes(0, 2)), "T": (x.T, x_host.swapaxes(-1, -2)),
        "expand": (x[:, :1].expand(2, 5, 4), np.broadcast_to(x_host[:, :1], (2, 5, 4))),
        "slice": (x.slice(2, 1, 4, 2), x_host[:, :, 1:4:2]),
        "pad": (x.pad([(0, 0), (1, 0), (0, 2)], -1),
                np.pad(x_host, [(0, 0), (1, 0), (0, 2)], constant_values=-1)),
        "squeeze": (x[:, :1].squeeze(1), x_host[:, 0]),
        "unsqueeze": (x.unsqueeze(0), x_host[None]), "flatten": (x.flatten(), x_host.ravel()),
        "x[1]": (x[1], x_host[1]), "x[-1, 1:]": (x[-1, 1:], x_host[-1, 1:]),
        "x[..., ::2]": (x[..., ::2], x_host[..., ::2]), "x[:, None, 2]": (x[:, None, 2], x_host[:, None, 2]),
        "x[0, -3:-1, 1]": (x[0, -3:-1, 1], x_host[0, -3:-1, 1]),
    }
    for text, (got, want) in cases.items():
        assert got.shape == want.shape, text
        np.testing.assert_array_equal(got.numpy(), want, err_msg=text)
    assert len(x) == 2 and x.numel == 24 and x.ndim == 3


def test_contractions_and_indexing_match_numpy(device):
    a_host, b_host = sample(np.float32, (2, 5, 7), 8), sample(np.float32, (7, 3), 9)
    a, b = kiln.tensor(a_host, device=device), kiln.tensor(b_host, device=device)
    np.testing.assert_allclose((a @ b).numpy(), a_host @ b_host, rtol=1e-5, atol=1e-5)
    bias_host = sample(np.float32, (3,), 10)
    np.testing.assert_allclose(
        kiln.linear(a, b.T, kiln.tensor(bias_host, device=device)).numpy(),
        a_host @ b_host + bias_host, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(kiln.concat([a, a * 2], 1).numpy(),
                                  np.concatenate([a_host, a_host * 2], 1))
    table_host = sample(np.float32, (10, 4), 11)
    table = kiln.tensor(table_host, device=device)
    ids = np.array([[3, 0], [9, 3]], np.int32)
    np.testing.assert_array_equal(kiln.embedding(table, kiln.tensor(ids, device=device)).numpy(),
                                  table_host[ids])
    idx = kiln.tensor(np.array([2, 2, 7], np.int32), device=device)
    np.testing.assert_array_equal(kiln.index_select(table, 0, idx).numpy(), table_host[[2, 2, 7]])
    g = np.array([[0, 3], [1, 1]], np.int32)
    np.testing.assert_array_equal(
        kiln.gather(table[:2], 1, kiln.tensor(g, device=device)).numpy(),
        np.take_along_axis(table_host[:2], g, 1))
    base = np.zeros((4,), np.float32)
    src = np.array([1, 2, 3], np.float32)
    index = np.array([1, 3, 1], np.int32)
    want = base.copy()
    np.add.at(want, index, src)
    got = kiln.scatter_add(kiln.tensor(base, device=device), 0, kiln.tensor(index, device=device),
                           kiln.tensor(src, device=device))
    np.testing.assert_array_equal(got.numpy(), want)


def test_tensor_core_matmul_is_exact_off_tensor_cores_and_within_its_bound_on_them(device):
    # bf16 inputs, exactly representable: the float64 product is the exact result.
    a_host = sample(np.float32, (3, 37, 70), 12).astype(np.float32)
    b_host = sample(np.float32, (70, 45), 13).astype(np.float32)
    a = kiln.tensor(a_host, dtype="bf16", device=device)
    b = kiln.tensor(b_host, dtype="bf16", device=device)
    exact = (a @ b).numpy()
    tensor_core = kiln.matmul(a, b, tensor_cores=True).numpy()
    linear = kiln.linear(a, b.T, tensor_cores=True).numpy()
    np.testing.assert_array_equal(linear, tensor_core)
    if device.backend != "cuda":
        np.testing.assert_array_equal(tensor_core, exact)  # the exact class runs there
    a64, b64 = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    magnitude = np.abs(a64) @ np.abs(b64)
    # The class's bound (2^-22 k sum|a b|) plus the bf16 output's rounding (2^-8 relative).
    bound = 2.0 ** -22 * 70 * magnitude + 2.0 ** -8 * np.abs(a64 @ b64) + 1e-30
    assert np.all(np.abs(tensor_core - a64 @ b64) <= bound)
    with pytest.raises(kiln.Error, match="tensor-core class with f32 inputs"):
        kiln.matmul(kiln.tensor(a_host, device=device), kiln.tensor(b_host, device=device),
                    tensor_cores=True)


def test_tensor_core_attention_is_exact_off_tensor_cores_and_close_on_them(device):
    q_host = sample(np.float32, (1, 4, 37, 32), 30)
    k_host, v_host = sample(np.float32, (1, 2, 70, 32), 31), sample(np.float32, (1, 2, 70, 32), 32)
    q, k, v = (kiln.tensor(a, dtype="bf16", device=device) for a in (q_host, k_host, v_host))
    exact = kiln.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    tensor_core = kiln.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                    tensor_cores=True).numpy()
    if device.backend != "cuda":
        np.testing.assert_array_equal(tensor_core, exact)  # the exact class runs there
    # p rounded to bf16 before p @ v (at most 2 bf16 units of the weighted |v|) and the bf16
    # output's rounding (one unit of |o|): both below 3 units of the largest |v|.
    want = numpy_attention(*(a.numpy().astype(np.float64) for a in (q, k, v)), True, 32 ** -0.5)
    atol = 3 * 2.0 ** -8 * np.abs(v.numpy()).max()
    np.testing.assert_allclose(tensor_core.astype(np.float64), want, rtol=0, atol=atol)
    with pytest.raises(kiln.Error, match="tensor-core class with f32 inputs"):
        kiln.scaled_dot_product_attention(*(kiln.tensor(a, device=device)
                                             for a in (q_host, k_host, v_host)), tensor_cores=True)


def test_tensor_core_conv1d_is_exact_off_tensor_cores_and_within_its_bound_on_them(device):
    x_host, w_host = sample(np.float32, (2, 8, 40), 33), sample(np.float32, (6, 4, 5), 34)
    x = kiln.tensor(x_host, dtype="bf16", device=device)
    w = kiln.tensor(w_host, dtype="bf16", device=device)
    exact = kiln.conv1d(x, w, stride=2, padding=3, dilation=2, groups=2).numpy()
    tensor_core = kiln.conv1d(x, w, stride=2, padding=3, dilation=2, groups=2,
                              tensor_cores=True).numpy()
    if device.backend != "cuda":
        np.testing.assert_array_equal(tensor_core, exact)  # the exact class runs there
    x64, w64 = x.numpy().astype(np.float64), w.numpy().astype(np.float64)
    zero = np.zeros(6)
    want = numpy_conv1d(x64, w64, zero, 2, 3, 2, 2)
    magnitude = numpy_conv1d(np.abs(x64), np.abs(w64), zero, 2, 3, 2, 2)
    # The class's bound (2^-22 k sum|x w|, k = 4 * 5) plus the bf16 output's rounding.
    bound = 2.0 ** -22 * 20 * magnitude + 2.0 ** -8 * np.abs(want) + 1e-30
    assert np.all(np.abs(tensor_core - want) <= bound)
    with pytest.raises(kiln.Error, match="tensor-core class with f32 inputs"):
        kiln.conv1d(kiln.tensor(x_host, device=device), kiln.tensor(w_host, device=device),
                    tensor_cores=True)


def test_a_linear_layer_of_q8_0_weights_matches_numpy(device):
    rng = np.random.default_rng(14)
    values_host = rng.integers(-127, 128, (24, 64), dtype=np.int8)
    scales_host = (rng.random((24, 2)) * 0.02).astype(np.float32)
    x_host = sample(np.float32, (5, 64), 15)
    w = kiln.dequantize_q8_0(kiln.tensor(values_host, device=device),
                             kiln.tensor(scales_host, device=device))
    w_host = (values_host.astype(np.float32).reshape(24, 2, 32) * scales_host[:, :, None]).reshape(24, 64)
    np.testing.assert_array_equal(w.numpy(), w_host)  # one f32 product each
    y = kiln.linear(kiln.tensor(x_host, device=device), w)
    np.testing.assert_allclose(y.numpy(), x_host.astype(np.float64) @ w_host.T, rtol=1e-5, atol=1e-5)
    with pytest.raises(kiln.Error, match="multiple of 32"):
        kiln.dequantize_q8_0(kiln.tensor(values_host[:, :48], device=device),
                             kiln.tensor(scales_host, device=device))


def numpy_conv1d(x, w, bias, stride, padding, dilation, groups):
    n, c_in, length = x.shape
    c_out, cg, kernel = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding)))
    l_out = (length + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    og = c_out // groups
    y = np.zeros((n, c_out, l_out))
    for oc in range(c_out):
        g = oc // og
        for t in range(l_out):
            taps = xp[:, g * cg:(g + 1) * cg, t * stride:t * stride + dilation * (kernel - 1) + 1:dilation]
            y[:, oc, t] = (taps * w[oc].astype(np.float64)).sum(axis=(1, 2))
    return y + bias[None, :, None]


def numpy_attention(q, k, v, causal, scale):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    group = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        seq_q, seq_k = s.shape[-2:]
        s = np.where(np.arange(seq_k)[None, :] <= np.arange(seq_q)[:, None] + seq_k - seq_q, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_conv1d_and_attention_match_numpy(device):
    x_host, w_host = sample(np.float32, (2, 6, 31), 20), sample(np.float32, (4, 3, 5), 21)
    bias_host = sample(np.float32, (4,), 22)
    y = kiln.conv1d(kiln.tensor(x_host, device=device), kiln.tensor(w_host, device=device),
                    kiln.tensor(bias_host, device=device), stride=2, padding=3, dilation=2,
                    groups=2)
    assert y.shape == (2, 4, 15)
    np.testing.assert_allclose(y.numpy(), numpy_conv1d(x_host, w_host, bias_host, 2, 3, 2, 2),
                               rtol=1e-4, atol=1e-4)
    q_host = sample(np.float32, (2, 4, 19, 8), 23)
    k_host, v_host = sample(np.float32, (2, 2, 70, 8), 24), sample(np.float32, (2, 2, 70, 8), 25)
    q, k, v = (kiln.tensor(a, device=device) for a in (q_host, k_host, v_host))
    for causal in (False, True):
        o = kiln.scaled_dot_product_attention(q, k, v, is_causal=causal)
        np.testing.assert_allclose(o.numpy(),
                                   numpy_attention(q_host, k_host, v_host, causal, 8 ** -0.5),
                                   rtol=1e-4, atol=1e-5)
    o = kiln.scaled_dot_product_attention(q[0], k[0], v[0], scale=0.2)
    np.testing.assert_allclose(o.numpy(),
                               numpy_attention(q_host[0], k_host[0], v_host[0], False, 0.2),
                               rtol=1e-4, atol=1e-5)
    lengths = kiln.tensor(np.array([70, 33], np.int32), device=device)
    o = kiln.scaled_dot_product_attention(q, k, v, key_lengths=lengths).numpy()
    np.testing.assert_allclose(o[1], numpy_attention(q_host[1], k_host[1, :, :33], v_host[1, :, :33],
                                                     False, 8 ** -0.5), rtol=1e-4, atol=1e-5)
    bad = kiln.tensor(np.array([70, 71], np.int32), device=device)
    with pytest.raises(kiln.Error, match="key length 71 of batch 1"):
        kiln.scaled_dot_product_attention(q, k, v, key_lengths=bad).numpy()
    with pytest.raises(kiln.Error, match="kv_heads"):
        three = kiln.zeros((2, 3, 70, 8), device=device)
        kiln.scaled_dot_product_attention(q, three, three)
    with pytest.raises(kiln.Error, match="seq_q 19 > seq_k 5"):
        kiln.scaled_dot_product_attention(q, k[:, :, :5], v[:, :, :5], is_causal=True)
    with pytest.raises(kiln.Error, match="conv1d: weight"):
        kiln.conv1d(kiln.tensor(x_host, device=device), kiln.tensor(w_host, device=device))


def test_conv1d_and_attention_match_torch(device):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x_host, w_host = sample(np.float32, (3, 4, 50), 26), sample(np.float32, (8, 4, 3), 27)
    got = kiln.conv1d(kiln.tensor(x_host, device=device), kiln.tensor(w_host, device=device),
                      padding=1)
    want = F.conv1d(torch.from_numpy(x_host), torch.from_numpy(w_host), padding=1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    q_host = sample(np.float32, (1, 2, 33, 16), 28)
    k_host = sample(np.float32, (1, 2, 33, 16), 29)
    got = kiln.scaled_dot_product_attention(*(kiln.tensor(a, device=device)
                                              for a in (q_host, k_host, k_host)), is_causal=True)
    want = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q_host, k_host, k_host)),
                                          is_causal=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_every_device_gives_the_cpus_bits(device):
    x_host = sample(np.float32, (33, 65), 12)
    results = []
    for d in (kiln.cpu_device(), device):
        x = kiln.tensor(x_host, device=d)
        results.append(kiln.softmax(kiln.gelu(x @ x.T) * 0.5 + kiln.exp(x).sum(1, keepdim=True)).numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_resolve_and_repr():
    x = kiln.arange(4) * 2
    assert not x.resolved
    assert x.resolve() is x and x.resolved
    y, z = x + 1, x + 2
    kiln.resolve(y, z)
    assert y.resolved and z.resolved
    v, w = x * 3, x * 4
    kiln.resolve([v, w])  # one list of them too
    assert v.resolved and w.resolved
    with pytest.raises(TypeError, match="argument 1 is int; expected kiln.Tensor"):
        kiln.resolve([x, 5])
    assert "shape=(4,)" in repr(x) and "i32" in repr(x)
    assert kiln.cpu_device() in kiln.devices() and kiln.cpu_device().backend == "cpu"
    assert kiln.best_device() in kiln.devices()


def test_kiln_errors_carry_kilns_message():
    a, b = kiln.zeros((2, 3)), kiln.zeros((4,))
    with pytest.raises(kiln.Error, match=r"add: shapes \[2, 3\] and \[4\] do not broadcast"):
        a + b
    with pytest.raises(kiln.Error, match="reshape"):
        a.reshape(5)
    with pytest.raises(kiln.Error):
        a @ b
    with pytest.raises(kiln.Error, match="unknown|no device|expected"):
        kiln.find_device("no-such-device")
    assert issubclass(kiln.Error, Exception)


def test_bad_python_input_is_a_type_or_value_error():
    x = kiln.zeros((2, 3))
    with pytest.raises(TypeError):
        x + "text"
    with pytest.raises(TypeError, match="not an int"):
        kiln.zeros((2, "3"))
    with pytest.raises(ValueError, match="not one kiln has"):
        kiln.zeros((2,), dtype="float64")
    with pytest.raises(TypeError, match="not a dtype"):
        kiln.zeros((2,), dtype=object())
    with pytest.raises(TypeError, match="not a device"):
        kiln.zeros((2,), device=3.5)
    with pytest.raises(ValueError, match="exactly one"):
        x.item()
    with pytest.raises(ValueError, match="zero"):
        x[:, ::0]
    with pytest.raises(IndexError, match="out of range"):
        x[2]
    with pytest.raises(IndexError, match="too many"):
        x[0, 0, 0]
    with pytest.raises(TypeError, match="has no kiln dtype"):
        kiln.tensor(["a", "b"])
    with pytest.raises(TypeError):
        hash(x)


def _python_remainder(a, b):
    """numpy's remainder, with kiln's integer x % 0 == x (numpy gives 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, a, np.remainder(a, b))


def test_composite_ops_match_numpy():
    rng = np.random.default_rng(38)
    a_i = rng.integers(-60, 60, (4, 9)).astype(np.int32)
    b_i = rng.integers(-7, 8, 9).astype(np.int32)
    b_i[0] = 0
    a_f = (rng.standard_normal((4, 9)) * 9).astype(np.float32)
    b_f = (rng.standard_normal(9) * 3).astype(np.float32)
    m = rng.standard_normal((3, 5, 6)).astype(np.float32)
    m[0, 1] = -np.inf
    idx64 = rng.integers(0, 6, (2, 5)).astype(np.int64)
    c_f = rng.standard_normal((2, 1, 6, 2)).astype(np.float32)
    ai, bi, af, bf, x = (kiln.tensor(v) for v in (a_i, b_i, a_f, b_f, m))
    with np.errstate(divide="ignore"):
        exact = {
            "a // b": (ai // bi, np.where(b_i == 0, 0, np.floor_divide(a_i, b_i))),
            "a % b": (ai % bi, _python_remainder(a_i, b_i)),
            "-7 // b": (-7 // bi, np.where(b_i == 0, 0, np.floor_divide(-7, b_i))),
            "a % -4": (ai % -4, np.remainder(a_i, -4)),
            "a % ndarray": (ai % b_i, _python_remainder(a_i, b_i)),
            "ndarray // b": (a_i // bi, np.where(b_i == 0, 0, np.floor_divide(a_i, b_i))),
            "19 % b": (kiln.remainder(19, bi), _python_remainder(np.int32(19), b_i)),
            "clamp": (kiln.clamp(af, -1, 2.5), np.clip(a_f, -1, 2.5)),
            "clip min": (af.clip(min=0), np.maximum(a_f, 0)),
            "clamp max tensor": (kiln.clamp(af, max=bf), np.minimum(a_f, b_f)),
            "clamp both tensors": (kiln.clip(af, bf, bf + 1), np.clip(a_f, b_f, b_f + 1)),
            "clamp int": (ai.clamp(-5, 5), np.clip(a_i, -5, 5)),
            "maximum number": (kiln.maximum(af, 0.5), np.maximum(a_f, np.float32(0.5))),
            "minimum number first": (kiln.minimum(3, ai), np.minimum(3, a_i)),
            "eye": (kiln.eye(3, 5, k=1), np.eye(3, 5, k=1, dtype=np.float32)),
            "eye i32": (kiln.eye(4, dtype="i32"), np.eye(4, dtype=np.int32)),
            "tril": (kiln.tril(x), np.tril(m)),
            "triu -1": (x.triu(-1), np.triu(m, -1)),
            "tril 2": (x.tril(diagonal=2), np.tril(m, 2)),
            "one_hot i64": (kiln.one_hot(kiln.tensor(idx64), 6), np.eye(6, dtype=np.int64)[idx64]),
            "one_hot i32 inferred": (kiln.one_hot(kiln.tensor(idx64.astype(np.int32))),
                                     np.eye(idx64.max() + 1, dtype=np.int64)[idx64]),
            "argmax all": (x.argmax(), np.argmax(m)),
            "argmin all keepdim": (kiln.argmin(x, keepdim=True), np.argmin(m, keepdims=True)),
            "argmax axis": (x.argmax(1), np.argmax(m, 1)),
            "stack": (kiln.stack([af, af * 2], axis=1), np.stack([a_f, a_f * 2], 1)),
            "stack -1": (kiln.stack([ai, ai], -1), np.stack([a_i, a_i], -1)),
            "zeros_like": (kiln.zeros_like(ai), np.zeros_like(a_i)),
            "ones_like f16": (kiln.ones_like(ai, dtype="f16"), np.ones(a_i.shape, np.float16)),
            "full_like": (kiln.full_like(af, 7.5), np.full_like(a_f, 7.5)),
            "f // 2.5": (af // 2.5, np.floor_divide(a_f, np.float32(2.5))),
            "f % b": (af % bf, np.remainder(a_f, b_f)),
            "5.5 % f": (5.5 % af, np.remainder(np.float32(5.5), a_f)),
            "cumsum int": (ai.cumsum(0), np.cumsum(a_i, 0)),
            "cumsum flat": (kiln.cumsum(ai), np.cumsum(a_i)),
            "cumprod": (kiln.cumprod(bi), np.cumprod(b_i)),
            "einsum ints": (kiln.einsum("ij,j->i", ai, bi), np.einsum("ij,j->i", a_i, b_i)),
            "einsum list implicit": (kiln.einsum("ij,kj", [ai, ai]), np.einsum("ij,kj", a_i, a_i)),
            "einsum transpose": (kiln.einsum("abc->cab", x), np.einsum("abc->cab", m)),
            "einsum trace": (kiln.einsum("ii", ai[:, :4]), np.einsum("ii", a_i[:, :4])),
            "einsum diagonal": (kiln.einsum("bii->ib", x[:, :5, :5]), np.einsum("bii->ib", m[:, :5, :5])),
        }
        close = {
            "logsumexp": (x.logsumexp(axis=2), np.logaddexp.reduce(m.astype(np.float64), axis=2)),
            "logsumexp all keepdim": (kiln.logsumexp(x, keepdim=True),
                                      np.log(np.exp(m.astype(np.float64)).sum(keepdims=True))),
            "std": (af.std(axis=1), a_f.astype(np.float64).std(axis=1, ddof=1)),
            "std correction 0": (kiln.std(af, correction=0), a_f.astype(np.float64).std()),
            "linspace": (kiln.linspace(-2, 3, 7), np.linspace(-2, 3, 7)),
            "cumsum float": (x.cumsum(axis=-1), np.cumsum(m.astype(np.float64), -1)),
            "einsum matmul": (kiln.einsum("bij,bkj->bik", af.reshape(2, 2, 9), af.reshape(2, 2, 9)),
                              np.einsum("bij,bkj->bik", a_f.reshape(2, 2, 9).astype(np.float64),
                                        a_f.reshape(2, 2, 9))),
            "einsum outer sum": (kiln.einsum("i,j->j", bf, bf), np.einsum("i,j->j", b_f, b_f)),
            "einsum ellipsis": (kiln.einsum("...ij,...jk", x, kiln.tensor(c_f)),
                                np.einsum("...ij,...jk", m.astype(np.float64), c_f)),
            "cumprod float": (kiln.cumprod(af * 0.1, 1), np.cumprod(a_f.astype(np.float64) * 0.1, 1)),
        }
    kiln.resolve(*(t for t, _ in exact.values()), *(t for t, _ in close.values()))
    for name, (got, want) in exact.items():
        assert got.shape == np.shape(want), name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    for name, (got, want) in close.items():
        assert got.shape == np.shape(want), name
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=1e-5, err_msg=name)
    assert kiln.linspace(0, 0.1, 11).numpy()[-1] == np.float32(0.1)  # both ends exact
    assert kiln.logsumexp(kiln.full((2,), -math.inf)).item() == -math.inf
    assert kiln.one_hot(kiln.tensor([1])).dtype == kiln.i64


def test_float_floor_division_is_numpys_while_the_quotient_is_below_2_to_22():
    rng = np.random.default_rng(22)
    scale = 2.0 ** rng.integers(-120, 120, (2, 20000))
    a, b = (rng.standard_normal((2, 20000)) * scale).astype(np.float32)
    q, r = kiln.tensor(a) // kiln.tensor(b), kiln.tensor(a) % kiln.tensor(b)
    kiln.resolve(q, r)
    with np.errstate(all="ignore"):
        exact = np.abs(a / b) < 2**22
        assert exact.sum() > 5000
        np.testing.assert_array_equal(q.numpy()[exact], np.floor_divide(a, b)[exact])
        np.testing.assert_array_equal(r.numpy()[exact], np.remainder(a, b)[exact])


def test_split_chunk_and_tolist():
    a = np.arange(30, dtype=np.int32).reshape(5, 6)
    t = kiln.tensor(a)
    pieces = t.split(2)
    assert [p.shape for p in pieces] == [(2, 6), (2, 6), (1, 6)]
    assert [p.shape for p in kiln.split(t, [1, 0, 5], axis=1)] == [(5, 1), (5, 0), (5, 5)]
    assert [p.shape for p in t.chunk(4, axis=1)] == [(5, 2), (5, 2), (5, 2)]  # as torch.chunk
    parts = kiln.split(t, (3, 3), -1) + kiln.chunk(t, 2)
    kiln.resolve(*pieces, *parts)
    np.testing.assert_array_equal(pieces[2].numpy(), a[4:])
    np.testing.assert_array_equal(parts[1].numpy(), a[:, 3:])
    np.testing.assert_array_equal(parts[3].numpy(), a[3:])
    assert pieces[0].tolist() == a[:2].tolist()
    assert isinstance(pieces[0].tolist()[0][0], int)
    assert kiln.tensor([0.5, 1.5]).tolist() == [0.5, 1.5]
    assert kiln.tensor(2.5).tolist() == 2.5
    assert kiln.tensor([True]).tolist() == [True]


def test_version_is_the_projects():
    import os
    import re
    source = os.environ.get("KILN_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    with open(os.path.join(source, "CMakeLists.txt")) as f:
        want = re.search(r"project\(kiln VERSION ([0-9.]+)", f.read()).group(1)
    assert kiln.__version__ == want


def test_repr_shows_values_and_reads_only_the_corners_of_a_large_tensor():
    small = kiln.arange(4) * 2
    assert repr(small) == "kiln.Tensor([0, 2, 4, 6], shape=(4,), dtype=i32)"
    assert repr(kiln.tensor([[1.5, -2.0], [0.25, 3.0]])) == (
        "kiln.Tensor([[ 1.5 , -2.  ],\n"
        "             [ 0.25,  3.  ]], shape=(2, 2), dtype=f32)")
    assert repr(kiln.zeros((0, 3))) == "kiln.Tensor([], shape=(0, 3), dtype=f32)"
    big = kiln.arange(100 * 100).reshape(100, 100)
    text = repr(big)
    assert not big.resolved  # only the corners were computed and copied
    lines = text.splitlines()
    assert lines[0] == "kiln.Tensor([[   0,    1,    2, ...,   97,   98,   99],"
    assert lines[3] == "             ...,"
    assert lines[-1] == ("             [9900, 9901, 9902, ..., 9997, 9998, 9999]], "
                         "shape=(100, 100), dtype=i32)")
    assert len(lines) == 7
    bad = kiln.index_select(kiln.zeros((3,)), 0, kiln.tensor([7]))
    assert repr(bad) == ("kiln.Tensor(<not computed: index_select: index 7 at position 0 of the "
                         "index is out of range for axis 0 of 3 elements>, shape=(1,), dtype=f32)")


def test_composite_op_errors():
    x = kiln.zeros((2, 3))
    with pytest.raises(kiln.Error, match="clamp: neither"):
        kiln.clamp(x)
    with pytest.raises(TypeError, match="clamp: min is str"):
        x.clamp("a")
    with pytest.raises(kiln.Error, match="remainder: dtype bool"):
        (x > 0) % (x > 0)
    with pytest.raises(kiln.Error, match="floor_divide: dtypes differ"):
        x // kiln.zeros((3,), dtype="i32")
    with pytest.raises(kiln.Error, match="eye: -2 rows"):
        kiln.eye(-2)
    with pytest.raises(kiln.Error, match="linspace: dtype i32"):
        kiln.linspace(0, 1, 3, dtype="i32")
    with pytest.raises(kiln.Error, match="tril: x is \\[3\\]; expected at least two axes"):
        kiln.tril(kiln.zeros((3,)))
    with pytest.raises(kiln.Error, match="one_hot: index is f32"):
        kiln.one_hot(x, 3)
    with pytest.raises(kiln.Error, match="index_select.*5"):
        kiln.one_hot(kiln.tensor([1, 5]), 4).resolve()
    with pytest.raises(kiln.Error, match="std: 2 elements per result with correction 2"):
        x.std(0, correction=2)
    with pytest.raises(kiln.Error, match="logsumexp: dtype i32"):
        kiln.logsumexp(kiln.zeros((2,), dtype="i32"))
    with pytest.raises(kiln.Error, match="argmax: \\[0\\] has no elements"):
        kiln.zeros((0,)).argmax()
    with pytest.raises(kiln.Error, match="stack: tensor 1 is \\[3\\] and tensor 0 \\[2, 3\\]"):
        kiln.stack([x, kiln.zeros((3,))])
    with pytest.raises(kiln.Error, match="split: sizes \\[1, 1\\] do not add up to 3"):
        x.split([1, 1], axis=1)
    with pytest.raises(kiln.Error, match="chunk: 0 chunks"):
        x.chunk(0)
    with pytest.raises(kiln.Error, match="cumprod: dtype bool"):
        (x > 0).cumprod(0)
    with pytest.raises(kiln.Error, match="einsum: 'ij->ii': the output 'ii' names 'i' twice"):
        kiln.einsum("ij->ii", kiln.zeros((2, 2)))
    with pytest.raises(TypeError, match="einsum: an operand is int"):
        kiln.einsum("i,i", x, 3)
