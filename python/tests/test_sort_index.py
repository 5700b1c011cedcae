"""sort, argsort, topk, indexing with index tensors and bool masks, negative slice steps, and
x[key] = value: values against numpy on every device (ties, NaN, -0.0), the rebinding semantics
of assignment, and the errors bad input gets."""

import numpy as np
import pytest

import kiln

NAN, INF = np.nan, np.inf
ROWS = np.array([[3, -0.0, 1, 0.0, NAN, 3, -INF, 2, NAN, 1, -0.0],
                 [INF, 7, 7, NAN, 7, 0.0, -0.0, 7, INF, -1, 7],
                 [5, 4, 3, 2, 1, 0, -1, -2, -3, -4, -5]], dtype=np.float32)


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def descending_order(a):
    """numpy has no stable descending sort: NaN first, then the largest, ties in index order
    (lexsort is stable; its last key is the primary one)."""
    return np.lexsort((-np.where(np.isnan(a), 0, a), ~np.isnan(a)), axis=-1)


def test_sort_argsort_topk_match_numpy(device):
    x = kiln.tensor(ROWS, device=device)
    values, indices = kiln.sort(x)
    want = np.argsort(ROWS, axis=-1, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(bits(values.numpy()), bits(np.take_along_axis(ROWS, want, -1)))
    assert indices.dtype == kiln.i32
    by_column = np.argsort(ROWS, axis=0, kind="stable")
    np.testing.assert_array_equal(x.argsort(axis=0).numpy(), by_column)
    down = descending_order(ROWS)
    np.testing.assert_array_equal(kiln.argsort(x, descending=True).numpy(), down)
    top_values, top_indices = x.topk(4)
    np.testing.assert_array_equal(top_indices.numpy(), down[:, :4])
    np.testing.assert_array_equal(bits(top_values.numpy()),
                                  bits(np.take_along_axis(ROWS, down[:, :4], -1)))
    small_values, small_indices = kiln.topk(x, 2, axis=0, largest=False)
    np.testing.assert_array_equal(small_indices.numpy(), by_column[:2])
    np.testing.assert_array_equal(bits(small_values.numpy()),
                                  bits(np.take_along_axis(ROWS, by_column[:2], 0)))
    ints = np.array([[5, -3, 5, 0, -3, 9, 2]], dtype=np.int64)
    got = kiln.sort(kiln.tensor(ints, device=device))[0]
    np.testing.assert_array_equal(got.numpy(), np.sort(ints))


def test_index_tensors_masks_and_negative_steps_match_numpy(device):
    host = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    x = kiln.tensor(host, device=device)
    idx = np.array([3, 0, -1, 3], dtype=np.int64)
    i = kiln.tensor(idx, device=device)
    idx2 = np.array([[1, 0], [4, -5]], dtype=np.int32)
    i2 = kiln.tensor(idx2, device=device)
    mask = (host[:, :, 0] % 3) == 0
    i3 = kiln.tensor([2, 0, 1], device=device)
    i4 = kiln.tensor([2, -1], device=device)
    cases = {
        "x[i]": (x[i], host[idx]), "x[:, i2]": (x[:, i2], host[:, idx2]),
        "x[[2, 0]]": (x[[2, 0]], host[[2, 0]]), "x[..., i]": (x[..., i3], host[..., [2, 0, 1]]),
        "x[1, :, i]": (x[1, :, i4], host[1, :, [2, -1]]),
        "x[1, i2]": (x[1, i2], host[1, idx2]),
        "x[mask]": (x[kiln.tensor(mask, device=device)], host[mask]),
        "x[:, mask]": (x[:, kiln.tensor(mask[0], device=device)], host[:, mask[0]]),
        "x[x > 30]": (x[x > 30.0], host[host > 30]),
        "x[::-1]": (x[::-1], host[::-1]),
        "x[:, 3:0:-2, ::-1]": (x[:, 3:0:-2, ::-1], host[:, 3:0:-2, ::-1]),
        "x[5:2:-1]": (x[5:2:-1], host[5:2:-1]),
        # Several index tensors: broadcast together, one element per position; numpy's placement.
        "x[i, i4]": (x[kiln.tensor([3, 0], device=device), i4], host[[3, 0], [2, -1]]),
        "x[j, 1, i]": (x[kiln.tensor([[1, 0], [3, -4]], device=device), 1,
                              kiln.tensor([[2], [0]], device=device)],
                       host[[[1, 0], [3, -4]], 1, [[2], [0]]]),
        "x[:, i2, i]": (x[:, i2, kiln.tensor([1, -3], device=device)], host[:, idx2, [1, -3]]),
        "x[i, :, i]": (x[i3, :, kiln.tensor([0, 2, 1], device=device)],
                       host[[2, 0, 1], :, [0, 2, 1]]),
        "x[None, i, i]": (x[None, i3, i3], host[None, [2, 0, 1], [2, 0, 1]]),
        "x[i, i, i]": (x[i3, i3, i4[:1]], host[[2, 0, 1], [2, 0, 1], [2]]),
    }
    for name, (got, want) in cases.items():
        assert got.shape == want.shape, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)


def test_setitem_matches_numpy_and_rebinds_only_this_object(device):
    host = np.arange(5 * 4, dtype=np.float32).reshape(5, 4)
    x = kiln.tensor(host, device=device)
    before, view, alias = x.flatten(), x[1:3], x
    x[1:3] = 0
    want = host.copy()
    want[1:3] = 0
    np.testing.assert_array_equal(x.numpy(), want)
    assert alias is x  # the same Python object: it sees the change
    np.testing.assert_array_equal(view.numpy(), host[1:3])  # taken before: the old value
    steps = [
        ((slice(None), 2), kiln.tensor(np.full(5, -1, np.float32), device=device)),
        ((-1,), kiln.tensor(np.array([9, 8, 7, 6], np.float32), device=device)),
        ((slice(None, None, -2), slice(1, None, 2)), 2.5),
        ((kiln.tensor(np.array([0, 4, -1, 0], np.int64), device=device),),
         kiln.tensor(np.arange(16, dtype=np.float32).reshape(4, 4), device=device)),
        ((slice(None), kiln.tensor(np.array([3, 1], np.int32), device=device)), [[100, 200]]),
        ((Ellipsis, None, 0), -0.0),
        ((1, [2, 0]), kiln.tensor(np.array([-5, -6], np.float32), device=device)),
        # Several index tensors: one element per position of their broadcast shape; a repeated
        # element takes the last value.
        (([0, 2, -1, 0], [1, 3, 0, 1]), kiln.tensor(np.array([10, 20, 30, 40], np.float32),
                                                    device=device)),
        ((kiln.tensor(np.array([[4], [1]]), device=device), [0, 2]), [[-1, -2], [-3, -4]]),
        ((np.array([3, 1]), slice(None)), 0.5),
    ]
    for key, value in steps:
        x[key] = value
        host_value = value.numpy() if isinstance(value, kiln.Tensor) else value
        np_key = tuple(k.numpy() if isinstance(k, kiln.Tensor) else k for k in key)
        want[np_key] = host_value
        np.testing.assert_array_equal(bits(x.numpy()), bits(want), err_msg=repr(key))
    cube = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    c = kiln.tensor(cube, device=device)
    c[[2, 0], :, [4, 1]] = kiln.tensor(-np.ones((2, 4), np.float32), device=device)
    cube[[2, 0], :, [4, 1]] = -1
    c[:, [3, 0], [0, 2]] = [[7, 8]]
    cube[:, [3, 0], [0, 2]] = [[7, 8]]
    np.testing.assert_array_equal(c.numpy(), cube)
    m = want > 10
    x[kiln.tensor(m, device=device)] = 1
    want[m] = 1
    np.testing.assert_array_equal(x.numpy(), want)
    m = want < 3
    x[x < 3.0] = kiln.tensor(np.arange(m.sum(), dtype=np.float32) + 50, device=device)
    want[m] = np.arange(m.sum()) + 50
    np.testing.assert_array_equal(x.numpy(), want)
    rows = np.array([True, False, True, False, False])
    row = kiln.tensor(np.array([7, 7, 7, 8], np.float32), device=device)
    x[kiln.tensor(rows, device=device)] = row
    want[rows] = [7, 7, 7, 8]
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(before.numpy(), host.reshape(-1))  # a view taken first
    # An index apart from an int: its axis goes first in the selection, as numpy's.
    cube = np.arange(3 * 5 * 4, dtype=np.int32).reshape(3, 5, 4)
    y = kiln.tensor(cube, device=device)
    value = np.arange(10, dtype=np.int32).reshape(2, 5) - 20
    y[1, :, kiln.tensor([3, 0], device=device)] = kiln.tensor(value, device=device)
    cube[1, :, [3, 0]] = value
    np.testing.assert_array_equal(y.numpy(), cube)


def test_bad_input_is_an_error_naming_it():
    x = kiln.zeros((3, 4))
    with pytest.raises(kiln.Error, match="topk: k = 5"):
        kiln.topk(x, 5)
    with pytest.raises(kiln.Error, match="sort: .*axis 2"):
        x.sort(2)
    with pytest.raises(kiln.Error, match="index 7 at position 1"):
        x[kiln.tensor([0, 7])].numpy()
    with pytest.raises(kiln.Error, match="index -4 at position 0"):
        x[kiln.tensor([-4])].numpy()
    with pytest.raises(kiln.Error, match="mask \\[4\\] does not match"):
        x[kiln.tensor([True, False, True, True])]
    with pytest.raises(kiln.Error, match="index tensor of dtype f32; expected an integer"):
        x[kiln.zeros((2,))]
    with pytest.raises(IndexError, match="a bool mask with another mask or index tensor"):
        x[kiln.tensor([True, False, True]), kiln.tensor([1])]
    with pytest.raises(kiln.Error, match=r"shapes \[2\], \[3\] do not broadcast together"):
        x[kiln.tensor([0, 1]), kiln.tensor([1, 2, 3])]
    with pytest.raises(kiln.Error, match="index 4 at position 1"):  # not row 1's element 0
        x[[0, 0], [1, 4]].numpy()
    with pytest.raises(kiln.Error, match="combines several index tensors only with whole axes"):
        cube = kiln.zeros((2, 3, 4))
        cube[[0], 1:3, [1]] = 1
    with pytest.raises(kiln.Error, match="index 4 at position 0 is out of range for axis 1"):
        x[[0], [4]] = 1
    with pytest.raises(kiln.Error, match="index 3 at position 1 is out of range"):
        x[[0, 3]] = 1
    with pytest.raises(kiln.Error, match=r"\[3\] does not broadcast to the selection \[3, 2\]"):
        x[:, 1:3] = kiln.zeros((3,))
    with pytest.raises(kiln.Error, match="value is i32 and x f32"):
        x[0] = kiln.zeros((4,), dtype="i32")
    with pytest.raises(kiln.Error, match="1.5"):
        kiln.zeros((2,), dtype="i32")[0] = 1.5
    with pytest.raises(kiln.Error, match="does not broadcast"):
        x[x > 1.0] = kiln.zeros((2,))  # nothing selected: the value must still fit [0]
