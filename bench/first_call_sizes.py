#!/usr/bin/env python3
"""The first call of a graph at new batch sizes: where its host time goes (planning, kernel
compiles, racing), from KILN_RESOLVE_PROFILE's line per resolve. Two graphs over [B, 512]:
layer_norm then softmax, and an MLP block (512 -> 1024 -> 512, gelu, residual).

  KILN_CACHE_DIR=$(mktemp -d) KILN_RESOLVE_PROFILE=1 PYTHONPATH=build-ci/python \\
      .venv/bin/python bench/first_call_sizes.py [cpu|opencl] [64,65,33,64]

A fresh KILN_CACHE_DIR keeps earlier runs' kernels and race decisions out of the figures.
"""
import sys
import time

import numpy as np

import kiln

device = kiln.find_device(sys.argv[1] if len(sys.argv) > 1 else "cpu")
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "64,65,33,64").split(",")]
rng = np.random.default_rng(0)
n, h = 512, 1024


def tensor(*shape, scale=1.0):
    return kiln.tensor(rng.standard_normal(shape, dtype=np.float32) * scale, device=device)


w1, b1, w2, b2 = tensor(h, n, scale=0.05), tensor(h), tensor(n, h, scale=0.05), tensor(n)
gain, shift = tensor(n), tensor(n)


def mlp(x):
    return kiln.linear(kiln.gelu(kiln.linear(x, w1, b1)), w2, b2) + x


def norm_softmax(x):
    return kiln.softmax(kiln.layer_norm(x, 1, gain, shift) * 2.0, -1)


for name, f in [("layer_norm+softmax", norm_softmax), ("mlp", mlp)]:
    for batch in sizes:
        x = tensor(batch, n)
        start = time.perf_counter()
        f(x).resolve()
        ms = (time.perf_counter() - start) * 1e3
        sys.stderr.flush()
        print(f"{name} B={batch}: {ms:.1f} ms", flush=True)
