"""One row times a Q8_0-shaped weight stored [in, out] (int8 values, one f32 scale per 32 inputs of
each output, broadcast in the graph: the form kiln.gemma3 keeps its weights in) against the same
weight dequantized to f32 on the host: the median of 20 timed calls (host time, the result copied
back) after one that plans, compiles and races; both results' bits must agree.
    PYTHONPATH=build-ci/python python bench/q8_weight_matmul.py IN OUT
(640 8192: a layer-sized product that stays in cache; 640 262144: Gemma 3's logits)"""
import sys, time
import numpy as np
import kiln

k, n = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
values = rng.integers(-127, 128, size=(k, n), dtype=np.int8)
scales = (rng.random((k // 32, n), dtype=np.float32) * 0.01).astype(np.float32)
x = kiln.tensor(rng.standard_normal((1, k)).astype(np.float32))
dense = kiln.tensor((values.reshape(k // 32, 32, n) * scales[:, None, :]).reshape(k, n))
v, s = kiln.tensor(values), kiln.tensor(scales)
forms = {
    "f32": lambda: kiln.matmul(x, dense),
    "q8": lambda: kiln.matmul(x, (v.to(kiln.f32).reshape(k // 32, 32, n) *
                                  s.reshape(k // 32, 1, n)).reshape(k, n)),
}
results = {}
for name, product in forms.items():
    results[name] = product().numpy()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        product().numpy()
        times.append(time.perf_counter() - t0)
    print(f"{name} {k}x{n}: median {np.median(times) * 1e3:.2f} ms")
assert results["f32"].tobytes() == results["q8"].tobytes(), "the two forms' bits differ"
print("the same bits")
