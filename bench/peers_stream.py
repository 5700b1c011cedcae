#!/usr/bin/env python3
"""The torch peers of bench_tuned_ops's "stream" and "graph" rows, timed the same way
(bench/stream_timing.hpp): a steady stream of launches over input sets rotated so their total
(256 MiB) is far beyond the L2, so each launch reads cold inputs. "stream": queued back to back
behind a blocker (torch.cuda._sleep) long enough for the host to queue them all, so the gaps
between launches are the device's own. "graph": the same launches captured once in a CUDA graph
(torch.cuda.CUDAGraph) and timed as replays, which leave out the gaps between queued launches.
Median over 9 repetitions of the device time per launch. "host_us" is the host's time per call
while queueing (Python's call of the peer included), the figure to set beside kiln's host cost
of a hit.

Same cases, shapes and byte counts as shared/peers/torch_peers.py's rms_norm and matvec groups.
Needs a CUDA device with torch. Writes JSON lines {"case", "peer", "timing", "us", "GB/s", "sets",
"host_kept_up", "host_us"} to stdout and, with --out FILE, a JSON list.

  python3 bench/peers_stream.py [--cases rms_norm,matvec] --out $OUT/peers_stream.json
"""
import argparse
import json
import math
import statistics
import time

STREAM_BYTES = 256 << 20
MAX_SETS = 64
LAUNCHES = 32
REPS = 9


def stream_sets(nbytes):
    return int(min(max(math.ceil(STREAM_BYTES / max(nbytes, 1)), 2), MAX_SETS))


def stream_us(torch, sets, launch, cycles_per_ms):
    """Median device microseconds per launch(i) in a steady stream over `sets` input sets, whether
    the host kept ahead of the device, and the host's microseconds per call while queueing."""
    launches = sets * math.ceil(LAUNCHES / sets)

    def round_(n):
        for i in range(n):
            launch(i % sets)

    round_(sets)  # warm-up (and torch.compile's first call)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    round_(sets + launches)
    host_ms = (time.perf_counter() - t0) * 1e3
    host_us = host_ms * 1e3 / (sets + launches)
    torch.cuda.synchronize()
    blocker_ms = max(2.0 * host_ms, 1.0)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_launch, kept_up = [], True
    for _ in range(REPS):
        torch.cuda._sleep(int(blocker_ms * cycles_per_ms))
        queued0 = time.perf_counter()
        round_(sets)  # untimed: reaches the steady state
        start.record()
        round_(launches)
        end.record()
        if (time.perf_counter() - queued0) * 1e3 > blocker_ms:
            kept_up = False
        end.synchronize()
        per_launch.append(start.elapsed_time(end) / launches)
    return statistics.median(per_launch) * 1e3, kept_up, host_us


def graph_us(torch, sets, launch, cycles_per_ms):
    """Median device microseconds per launch(i) when the stream's launches, captured once in a
    CUDA graph, are replayed: each timed replay follows an untimed one behind the blocker."""
    launches = sets * math.ceil(LAUNCHES / sets)
    side = torch.cuda.Stream()  # warm-up off the capture, as torch.cuda.graph asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(sets):
            launch(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            launch(i % sets)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_launch = []
    for _ in range(REPS):
        torch.cuda._sleep(int(cycles_per_ms))
        graph.replay()  # untimed: reaches the steady state
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_launch.append(start.elapsed_time(end) / launches)
    del graph
    return statistics.median(per_launch) * 1e3


def sleep_cycles_per_ms(torch):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 10_000_000
    torch.cuda._sleep(cycles)  # warm-up
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / start.elapsed_time(end)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--cases", default="rms_norm,matvec", help="comma-separated: rms_norm, matvec")
    a = ap.parse_args()
    cases = a.cases.split(",")
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    cycles_per_ms = sleep_cycles_per_ms(torch)
    rows = []

    def rec(case, peer, sets, launch, nbytes):
        us, kept_up, host_us = stream_us(torch, sets, launch, cycles_per_ms)
        graph = graph_us(torch, sets, launch, cycles_per_ms)
        for timing, t in (("stream", us), ("graph", graph)):
            r = {"case": case, "peer": peer, "timing": timing, "us": round(t, 3),
                 "GB/s": round(nbytes / (t * 1e-6) / 1e9, 1), "sets": sets}
            if timing == "stream":
                r.update({"host_kept_up": kept_up, "host_us": round(host_us, 2)})
            rows.append(r)
            print(json.dumps(r), flush=True)

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    compiled = torch.compile(rms)
    compiled_into = torch.compile(lambda x, w, out: out.copy_(rms(x, w)))
    for r, n in [(1, 4096), (32, 4096), (4096, 4096), (16384, 8192)] if "rms_norm" in cases else []:
        sets = stream_sets(8 * r * n)
        xs = [torch.randn(r, n, device="cuda") for _ in range(sets)]
        ys = [torch.empty_like(x) for x in xs]
        w = torch.randn(n, device="cuda")
        case = f"rms_norm_f32_{r}x{n}"
        rec(case, "torch F.rms_norm", sets, lambda i: F.rms_norm(xs[i], (n,), w, 1e-6), 8 * r * n)
        rec(case, "torch.compile", sets, lambda i: compiled(xs[i], w), 8 * r * n)
        # The peers above get a fresh output each call, which the caching allocator serves from
        # the block the previous call freed; here each set has its own output, as in kiln's rows.
        rec(case, "torch.compile (rotating outputs)", sets, lambda i: compiled_into(xs[i], w, ys[i]),
            8 * r * n)
        rec(case, "torch copy of x", sets, lambda i: ys[i].copy_(xs[i]), 8 * r * n)
        del xs, ys

    for n, k in [(4096, 4096), (14336, 4096)] if "matvec" in cases else []:
        sets = stream_sets(2 * n * k)
        Ws = [torch.randn(n, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
        x = torch.randn(k, device="cuda", dtype=torch.float16)
        case = f"matvec_{n}x{k}"
        rec(case, "cuBLAS f16 (torch W @ x)", sets, lambda i: Ws[i] @ x, 2 * n * k)
        del Ws
        q8_bytes = n * k + (n * k // 32) * 2
        sets = stream_sets(q8_bytes)
        qs = [torch.randint(-127, 127, (q8_bytes,), device="cuda", dtype=torch.int8) for _ in range(sets)]
        os_ = [torch.empty_like(q) for q in qs]
        rec(case, "torch copy of the Q8_0 bytes", sets, lambda i: os_[i].copy_(qs[i]), 2 * q8_bytes)
        del qs, os_

    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
