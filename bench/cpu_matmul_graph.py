"""The graph's matmul and linear on the CPU beside numpy's (OpenBLAS) in the same process: per
shape m k n, kiln.matmul(a, b) resolved from tensors (b's copy, where the planner makes one, paid
every call), a compiled linear whose weight is captured (its copy made once), and numpy's a @ b;
medians of REPS calls after two that plan, compile and race, rounds alternating. kiln's bits are
checked against each other, numpy's only to a tolerance (another order of sums).
    PYTHONPATH=build-ci/python python bench/cpu_matmul_graph.py [--reps N] [--rounds R] M K N ..."""
import argparse, time
import numpy as np
import kiln

parser = argparse.ArgumentParser()
parser.add_argument("--reps", type=int, default=7)
parser.add_argument("--rounds", type=int, default=2)
parser.add_argument("sizes", type=int, nargs="+", help="m k n, repeated")
args = parser.parse_args()
if len(args.sizes) % 3:
    parser.error("sizes come in threes: m k n")


def median_ms(call, reps):
    call()
    call()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e3


rng = np.random.default_rng(0)
for i in range(0, len(args.sizes), 3):
    m, k, n = args.sizes[i:i + 3]
    an = rng.standard_normal((m, k), dtype=np.float32)
    bn = rng.standard_normal((k, n), dtype=np.float32)
    a, b = kiln.tensor(an), kiln.tensor(bn)
    w = kiln.tensor(np.ascontiguousarray(bn.T))
    linear = kiln.compile(lambda x: kiln.linear(x, w))
    product = kiln.matmul(a, b).numpy()
    assert np.array_equal(product, linear(a).numpy()), "matmul and linear bits differ"
    assert np.allclose(product, an @ bn, rtol=1e-3, atol=1e-3)
    flops = 2.0 * m * k * n
    for r in range(args.rounds):
        kiln_ms = median_ms(lambda: kiln.matmul(a, b).resolve(), args.reps)
        linear_ms = median_ms(lambda: linear(a), args.reps)
        numpy_ms = median_ms(lambda: an @ bn, args.reps)
        print(f"{m}x{k}x{n} round {r}: kiln.matmul {kiln_ms:.2f} ms "
              f"({flops / kiln_ms / 1e6:.0f} GFLOP/s), compiled linear {linear_ms:.2f} ms "
              f"({flops / linear_ms / 1e6:.0f}), numpy (OpenBLAS) {numpy_ms:.2f} ms "
              f"({flops / numpy_ms / 1e6:.0f}); kiln ÷ numpy speed {numpy_ms / kiln_ms:.2f}, "
              f"linear {numpy_ms / linear_ms:.2f}", flush=True)
