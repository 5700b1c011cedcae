#!/usr/bin/env python3
"""A stream of MiniLM batches whose longest sentence varies, through the compiled forward traced
once per length and through the one kiln.minilm uses (the sequence axis bucketed to a power of
two): traces, and the wall time of the stream and of a call.

  PYTHONPATH=build-ci/python .venv/bin/python bench/minilm_lengths.py [device] [batches]

Token ids are random (4 to 59 of them a sentence, 8 sentences a batch, seeded); both forms run
the same batches in the same process, the per-length form first.
"""
import sys
import time

import numpy as np

import kiln
from kiln import minilm

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 24
model = minilm.load(device)
rng = np.random.default_rng(1)
batches = [[list(rng.integers(1000, 20000, size=int(n))) for n in rng.integers(4, 60, size=8)]
           for _ in range(count)]
bucketed = model._compiled
for name, compiled in (("per length", kiln.compile(model._encode)), ("bucketed", bucketed)):
    model._compiled = compiled
    start, calls = time.perf_counter(), []
    for batch in batches:
        t = time.perf_counter()
        model.forward(batch).numpy()
        calls.append(time.perf_counter() - t)
    stats = compiled.stats()
    print(f"{name:>10}: {count} batches in {time.perf_counter() - start:.2f} s, call median "
          f"{1e3 * np.median(calls):.1f} ms (last half {1e3 * np.median(calls[count // 2:]):.1f}), "
          f"traces {stats['traces']}, signatures {stats['signatures']}, padded {stats['padded']}")
model._compiled = bucketed
