"""kiln.compile: the compiled function's calls give the bits of the plain function on every
device, trace once per signature, keep the returned form, and refuse what they cannot take."""

import numpy as np
import pytest

import kiln


def _block(x, w, b):
    h = kiln.gelu(kiln.linear(x, w, b))
    h.resolve()  # deferred inside a trace
    return h + x, kiln.sum(h, axis=1)


def test_calls_match_the_plain_function(device):
    rng = np.random.default_rng(5)
    w = kiln.tensor(rng.standard_normal((6, 6)).astype(np.float32) * 0.3, device=device)
    b = kiln.tensor(rng.standard_normal(6).astype(np.float32), device=device)
    f = kiln.compile(lambda x: _block(x, w, b))
    for _ in range(3):
        x = kiln.tensor(rng.standard_normal((3, 6)).astype(np.float32), device=device)
        got = f(x)
        want = _block(x, w, b)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    assert f.stats()["traces"] == 1 and f.stats()["replays"] == 2


def test_held_outputs_keep_their_values_and_recordings_serve_recurring_inputs(monkeypatch):
    # Outputs are values even though their buffers serve later calls once dropped; with
    # KILN_REPLAY=recorded the same input tensor's calls replay one recording (stats "recorded").
    monkeypatch.setenv("KILN_REPLAY", "recorded")
    f = kiln.compile(lambda x: x * 3 - 1)
    x = kiln.tensor(np.arange(5, dtype=np.float32))
    want = np.arange(5, dtype=np.float32) * 3 - 1
    for _ in range(4):  # each result dropped: its buffers serve the next call
        np.testing.assert_array_equal(f(x).numpy(), want)
    assert f.stats()["recorded"] == 3  # the second (which records), third and fourth calls
    held = [f(x) for _ in range(3)]
    last = f(kiln.tensor(np.full(5, 2.0, dtype=np.float32)))
    for h in held:
        np.testing.assert_array_equal(h.numpy(), want)
    np.testing.assert_array_equal(last.numpy(), np.full(5, 5.0, dtype=np.float32))
    assert f.stats()["replays"] == 7


def test_a_new_shape_traces_again_and_a_single_tensor_stays_single():
    @kiln.compile
    def double(x):
        return x * 2

    assert double.__name__ == "double"
    np.testing.assert_array_equal(double(kiln.tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(double(kiln.tensor([[3.0]])).numpy(), [[6.0]])
    np.testing.assert_array_equal(double(kiln.tensor([5.0, 6.0])).numpy(), [10.0, 12.0])
    assert double.stats()["traces"] == 2 and double.stats()["signatures"] == 2


def test_bad_arguments_and_outputs_are_refused():
    f = kiln.compile(lambda x: x + 1)
    with pytest.raises(TypeError, match="argument 0 is int"):
        f(3)
    with pytest.raises(TypeError, match="positional"):
        f(x=kiln.tensor([1.0]))
    with pytest.raises(TypeError, match="returned int"):
        kiln.compile(lambda x: 1)(kiln.tensor([1.0]))
    with pytest.raises(kiln.Error, match="read a tensor's data"):
        kiln.compile(lambda x: kiln.tensor((x + 1).numpy()))(kiln.tensor([1.0]))
    with pytest.raises(TypeError, match="not callable"):
        kiln.compile(3)
    assert not kiln._kiln.tracing()


def test_a_dropped_compiled_function_is_freed():
    import gc
    import weakref

    class Weights:
        pass

    owner = Weights()
    owner.w = kiln.tensor([1.0, 2.0])
    f = kiln.compile(lambda x: x * owner.w)
    np.testing.assert_array_equal(f(kiln.tensor([3.0, 4.0])).numpy(), [3.0, 8.0])
    gone = weakref.ref(f)
    del f
    gc.collect()
    assert gone() is None


def test_a_bucketed_axis_is_padded_and_shares_a_trace():
    @kiln.compile(buckets={0: {1: [4, 8]}, 1: {-1: [4, 8]}})
    def masked_sum(x, mask):
        return kiln.sum(x * mask, axis=1)

    rng = np.random.default_rng(7)
    for n in (3, 4, 6, 8):
        x = rng.standard_normal((2, n)).astype(np.float32)
        mask = np.ones((2, n), np.float32)
        mask[1, 0] = 0
        got = masked_sum(kiln.tensor(x), kiln.tensor(mask)).numpy()
        pad = ((0, 0), (0, (4 if n <= 4 else 8) - n))
        want = kiln.sum(kiln.tensor(np.pad(x, pad)) * kiln.tensor(np.pad(mask, pad)), axis=1)
        np.testing.assert_array_equal(got, want.numpy())
    stats = masked_sum.stats()
    assert stats["traces"] == 2 and stats["padded"] == 2
    with pytest.raises(kiln.Error, match="input 0's axis 1 has 9 elements; its bucket's sizes go "
                                         "up to 8"):
        masked_sum(kiln.tensor(np.zeros((2, 9), np.float32)),
                   kiln.tensor(np.zeros((2, 9), np.float32)))
    with pytest.raises(TypeError, match="buckets is list"):
        kiln.compile(lambda x: x, buckets=[(0, 1, [4])])
    with pytest.raises(TypeError, match=r"buckets\[0\]\[1\] must map an axis to a list"):
        kiln.compile(lambda x: x, buckets={0: {1: 4}})
    with pytest.raises(kiln.Error, match="ascending"):
        kiln.compile(lambda x: x, buckets={0: {1: [8, 4]}})


def test_a_saved_function_loads_with_its_bits_and_form(device, tmp_path):
    rng = np.random.default_rng(9)
    w = kiln.tensor(rng.standard_normal((6, 6)).astype(np.float32) * 0.3, device=device)
    b = kiln.tensor(rng.standard_normal(6).astype(np.float32), device=device)
    f = kiln.compile(lambda x: _block(x, w, b))
    with pytest.raises(kiln.Error, match="call the function once"):
        f.save(tmp_path / "early.kprog")
    x = kiln.tensor(rng.standard_normal((3, 6)).astype(np.float32), device=device)
    f(x)
    f.save(tmp_path / "block.kprog")
    del w, b  # the file holds the weights
    g = kiln.load_program(tmp_path / "block.kprog")
    x2 = kiln.tensor(rng.standard_normal((3, 6)).astype(np.float32), device=device)
    got, want = g(x2), f(x2)
    assert isinstance(got, tuple) and len(got) == 2
    for a, e in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), e.numpy())
    with pytest.raises(kiln.Error, match=r"f32\[3, 6\]"):
        g(kiln.tensor(np.zeros((4, 6), np.float32), device=device))

    single = kiln.compile(lambda x: x * 2)
    single(kiln.tensor([1.0, 2.0]))
    single.save(tmp_path / "single.kprog")
    out = kiln.load_program(tmp_path / "single.kprog")(kiln.tensor([3.0, 4.0]))
    np.testing.assert_array_equal(out.numpy(), [6.0, 8.0])

    (tmp_path / "bad.kprog").write_bytes(b"not a program")
    with pytest.raises(kiln.Error, match="KILNPROG"):
        kiln.load_program(tmp_path / "bad.kprog")
