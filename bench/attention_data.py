#!/usr/bin/env python3
"""Whether attention's time depends on its data: the same [32, 12, 128, 32] f32 launch (MiniLM's
shape at batch 32) on random q, k, v with q scaled by 1, 30 and 300, so that many softmax weights
fall near f32's subnormal range (at 30) or to exact zeros (at 300). Median ms of 5 calls after the
first (which plans and compiles).

  PYTHONPATH=build-ci/python .venv/bin/python bench/attention_data.py [cpu|opencl|cuda]
"""
import statistics
import sys
import time

import numpy as np

import kiln


def main():
    device = kiln.find_device(sys.argv[1] if len(sys.argv) > 1 else "cpu")
    B, H, S, D = 32, 12, 128, 32
    rng = np.random.default_rng(0)
    lengths = kiln.tensor(np.full(B, S, np.int32), device=device)
    for scale in (1.0, 30.0, 300.0):
        q, k, v = (rng.standard_normal((B, H, S, D)).astype(np.float32) for _ in range(3))
        q, k, v = (kiln.tensor(a, device=device) for a in (q * scale, k, v))
        times = []
        for _ in range(6):
            start = time.perf_counter()
            kiln.scaled_dot_product_attention(q, k, v, key_lengths=lengths).numpy()
            times.append(time.perf_counter() - start)
        print(f"q x {scale:5.0f}: {statistics.median(times[1:]) * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
