"""The tensor functions written as compositions of kiln's ops (kiln/_compose.py): each against
numpy on every device in one resolve, bit-identical across devices where kiln promises it, and
their bad inputs as kiln.Error naming the problem; kiln.__version__ and the repr with values."""

import math

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 7)).astype(np.float32)
X[1, 2] = np.nan
ROWS = np.array([[-np.inf, -np.inf, -np.inf], [1.0, np.inf, 2.0], [0.5, -1.0, 3.0]],
                dtype=np.float32)


def test_every_composition_matches_numpy_on_every_device(device):
    x = kiln.tensor(X, device=device)
    rows = kiln.tensor(ROWS, device=device)
    idx = kiln.tensor(np.array([[2, 0], [1, 3]], dtype=np.int64), device=device)
    a = kiln.tensor(np.array([7.5, -7.5, 7.5, -7.5, 0.0], dtype=np.float32), device=device)
    b = kiln.tensor(np.array([2.0, 2.0, -2.0, -2.0, 3.0], dtype=np.float32), device=device)
    cases = {
        "clamp": (kiln.clamp(x, -0.5, 0.5), np.clip(X, -0.5, 0.5)),
        "clamp_min": (x.clamp(min=0.25), np.maximum(X, np.float32(0.25))),
        "clip_tensor": (kiln.clip(x, max=x * 0.5), np.minimum(X, X * np.float32(0.5))),
        "zeros_like": (kiln.zeros_like(x), np.zeros_like(X)),
        "ones_like": (kiln.ones_like(x, dtype="i32"), np.ones(X.shape, np.int32)),
        "full_like": (kiln.full_like(x, 3.0), np.full(X.shape, 3.0, np.float32)),
        "eye": (kiln.eye(3, 4, device=device), np.eye(3, 4, dtype=np.float32)),
        "tril": (kiln.tril(x), np.tril(X)),
        "triu_1": (x.triu(1), np.triu(X, 1)),
        "tril_-2": (kiln.tril(x, -2), np.tril(X, -2)),
        "one_hot": (kiln.one_hot(idx, 4), np.eye(4, dtype=np.int64)[[[2, 0], [1, 3]]]),
        "logsumexp": (kiln.logsumexp(rows, 1),
                      np.array([-np.inf, np.inf, np.log(np.exp(np.float64(0.5 - 3)) +
                                                        np.exp(np.float64(-4)) + 1) + 3])),
        "std": (kiln.std(x[2:], 0), np.std(X[2:], 0, ddof=1)),
        "stack": (kiln.stack([x, x * 2], 1), np.stack([X, X * 2], 1)),
        "floor_divide": (a // b, np.floor_divide(a.numpy(), b.numpy())),
        "remainder": (a % b, np.remainder(a.numpy(), b.numpy())),
        "rfloordiv": (7.0 // b, np.floor_divide(np.float32(7), b.numpy())),
        "argmax_all": (kiln.argmax(x[2:]), np.argmax(X[2:])),
        "argmin_all": (x[2:].argmin(), np.argmin(X[2:])),
    }
    kiln.resolve(*(got for got, _ in cases.values()))
    for name, (got, want) in cases.items():
        if name in ("logsumexp", "std"):
            np.testing.assert_allclose(got.numpy(), want, rtol=3e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    assert cases["one_hot"][0].dtype == kiln.i64


def test_split_chunk_and_tolist_give_numpys_pieces():
    x = kiln.tensor(X)
    pieces = kiln.split(x, 2, 1)
    assert [p.shape for p in pieces] == [(5, 2), (5, 2), (5, 2), (5, 1)]
    for got, want in zip(pieces, np.split(X, [2, 4, 6], 1)):
        np.testing.assert_array_equal(got.numpy(), want)
    assert [p.shape[0] for p in x.split([1, 4])] == [1, 4]
    assert [p.shape[1] for p in kiln.chunk(x, 3, 1)] == [3, 3, 1]
    assert kiln.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_compositions_give_the_same_bits_on_every_device():
    outs = []
    for d in kiln.devices():
        x = kiln.tensor(X, device=d)
        outs.append([kiln.logsumexp(x, 1), kiln.std(x, 1), x % 0.75, kiln.tril(x, 1)])
        kiln.resolve(*outs[-1])
    for other in outs[1:]:
        for got, want in zip(other, outs[0]):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("call, message", [
    (lambda x: kiln.clamp(x), "min and max are both None"),
    (lambda x: kiln.eye(-1), "eye: n is -1"),
    (lambda x: kiln.tril(x.reshape((35,))), "rank 1; expected rank 2"),
    (lambda x: kiln.one_hot(kiln.tensor([0, 4]), 4), "an index is 4; expected indices below"),
    (lambda x: kiln.one_hot(kiln.tensor([-1, 2]), 4), "an index is -1"),
    (lambda x: kiln.one_hot(x, 4), "expected an integer dtype"),
    (lambda x: kiln.stack([x, x.reshape((7, 5))]), "tensor 1 has shape (7, 5)"),
    (lambda x: kiln.stack([]), "no tensors"),
    (lambda x: kiln.split(x, [2, 2]), "add up to 4; expected the extent of axis 0, 5"),
    (lambda x: kiln.split(x, 0), "a piece size of 0"),
    (lambda x: kiln.chunk(x, 0), "0 chunks"),
    (lambda x: kiln.split(x, 2, 3), "axis 3 is out of range"),
    (lambda x: kiln.tensor([7, 8]) // 2, "an operand of dtype i32; expected float operands"),
    (lambda x: x.argmax(keepdim=True), "keepdim with no axis"),
])
def test_bad_inputs_are_errors_naming_the_problem(call, message):
    with pytest.raises(kiln.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(kiln.tensor(X))


def test_version_and_a_repr_with_values():
    assert kiln.__version__.count(".") == 2
    shown = repr(kiln.tensor([[1.5, 2.0], [3.0, 4.0]]))
    assert shown.startswith("kiln.tensor([[1.5, 2. ],") and "dtype=f32" in shown, shown
    long = repr(kiln.arange(5000.0))
    assert "..." in long and "4999]" in long, long
    huge = kiln.zeros((2048, 1024))
    assert "values" not in repr(huge) and "(2048, 1024)" in repr(huge)
    assert not huge.realized
    assert math.isnan(kiln.tensor([float("nan")]).tolist()[0])
