"""kiln.ops (the shipped tuned rms_norm and Q8_0 matvec) and kiln.tune: results against numpy,
bit-identical across devices, and the tuner's decision reported (a miss or hit, then a hit that
returns the same bits)."""

import numpy as np
import pytest

import kiln


def test_rms_norm_op_matches_numpy_and_every_device(device):
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((5, 96)).astype(np.float32)
    w_host = rng.standard_normal(96).astype(np.float32)
    out = kiln.ops.rms_norm(kiln.tensor(x_host, device=device), kiln.tensor(w_host, device=device),
                            1e-6)
    assert out.shape == (5, 96) and out.device == device
    want = x_host / np.sqrt((x_host.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w_host
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6)
    on_cpu = kiln.ops.rms_norm(kiln.tensor(x_host), kiln.tensor(w_host), 1e-6)
    np.testing.assert_array_equal(out.numpy(), on_cpu.numpy())


def test_matvec_q8_matches_the_dequantized_product(device):
    rng = np.random.default_rng(1)
    rows, k = 7, 128
    w = rng.standard_normal((rows, k)).astype(np.float32)
    x = rng.standard_normal(k).astype(np.float32)
    w_q8, x_q8 = kiln.ops.quantize_q8(w), kiln.ops.quantize_q8(x)
    assert w_q8.shape == (rows, k // 32 * 34) and w_q8.dtype == np.uint8
    y = kiln.ops.matvec_q8(kiln.tensor(w_q8, device=device), kiln.tensor(x_q8, device=device))
    assert y.shape == (rows,) and y.dtype == kiln.f32

    def dequantize(q8, count):
        blocks = q8.reshape(-1, 34)
        scale = blocks[:, :2].copy().view(np.float16).astype(np.float64)
        return (blocks[:, 2:].view(np.int8) * scale).reshape(-1)[:count]

    want = dequantize(w_q8, rows * k).reshape(rows, k) @ dequantize(x_q8, k)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(y.numpy(), w @ x, rtol=0.05, atol=0.3)  # quantization's error


def test_tune_reports_its_decision_and_a_second_run_is_a_hit():
    x = kiln.randn((4, 64), seed=2)
    w = kiln.randn((64,), seed=3)
    first = kiln.tune("rms_norm", x, w, eps=1e-5)
    assert first.op == "rms_norm" and first.winner and first.device_id == kiln.cpu_device().id
    if not first.hit:
        assert first.benched == len(first.variant_ms) > 1
        assert first.winner in dict(first.variant_ms)
    second = kiln.tune("rms_norm", x, w, eps=1e-5)
    assert second.hit and second.benched == 0 and second.winner == first.winner
    np.testing.assert_array_equal(second.output.numpy(), first.output.numpy())
    np.testing.assert_array_equal(second.output.numpy(), kiln.ops.rms_norm(x, w, 1e-5).numpy())


def test_op_errors():
    with pytest.raises(kiln.Error, match="expected w's one axis as long as x's last"):
        kiln.ops.rms_norm(kiln.zeros((2, 8)), kiln.zeros((7,)))
    with pytest.raises(kiln.Error, match="Q8_0 bytes"):
        kiln.ops.matvec_q8(kiln.zeros((2, 34), "u8"), kiln.zeros((68,), "u8"))
    with pytest.raises(kiln.Error, match="multiple of 32"):
        kiln.ops.quantize_q8(np.zeros(33, np.float32))
    with pytest.raises(kiln.Error, match="unknown op 'conv'; expected rms_norm or matvec_q8"):
        kiln.tune("conv", kiln.zeros((1,)))
    with pytest.raises(kiln.Error, match="expected x and w"):
        kiln.tune("rms_norm", kiln.zeros((1, 4)))
