#!/usr/bin/env python3
"""The torch peers of `kiln bench --peers`: what a user would run instead of kiln, each timed at
the shape kiln ran. On a GPU (--device cuda): torch eager, torch.compile, cuBLAS, cuDNN, SDPA and a
device copy as the bandwidth limit, timed by triton's do_bench when triton is present (median, L2
flushed between runs), else by CUDA events around single calls (median, after warm-up). On the
host (--device cpu): torch eager on the CPU (its BLAS for matmul, oneDNN for conv1d, SDPA for
attention, copy_ beside the copy), timed by wall clock around single calls (median, after
warm-up), with torch's own thread count.

kiln writes the workloads as lines "case<TAB>kind<TAB>dims" (dims comma-separated, as
tools/kiln/bench_workloads.cpp defines them for each kind); this script writes lines
"case<TAB>peer<TAB>us", which kiln merges into the same rows.

  python3 bench/peers_torch.py --device cuda --spec spec.tsv --out peers.tsv
"""
import argparse
import sys


def wall_clock(fn):
    import time

    for _ in range(3):
        fn()
    times = []
    for _ in range(25):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


def timer(torch, dev):
    if dev == "cpu":
        return wall_clock
    try:
        from triton.testing import do_bench

        return lambda fn: do_bench(fn, warmup=25, rep=100, return_mode="median")
    except ImportError:
        def events(fn):
            for _ in range(5):
                fn()
            times = []
            for _ in range(50):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            return sorted(times)[len(times) // 2]

        return events


def peers_of(torch, kind, dims, dev):
    """(peer name, callable) pairs for one workload; inputs are made here, on `dev`. On the CPU
    only torch eager (torch.compile's C++ build is minutes a case on a small machine)."""
    import torch.nn.functional as F

    gpu = dev == "cuda"
    randn = lambda *shape: torch.randn(*shape, device=dev)
    out = []

    def eager_and_compiled(eager, *args):
        out.append(("torch eager", lambda: eager(*args)))
        if gpu:
            f = torch.compile(eager)
            out.append(("torch.compile", lambda: f(*args)))

    if kind == "copy":
        x = randn(dims[0]); y = torch.empty_like(x)
        out.append(("torch copy_", lambda: y.copy_(x)))
    elif kind == "add_square":
        a = randn(dims[0]); b = randn(dims[0])
        eager_and_compiled(lambda a, b: (a + b).square(), a, b)
        if gpu:
            y = torch.empty_like(a)
            out.append(("device copy", lambda: y.copy_(a)))
    elif kind == "mul_rank4":
        a = randn(*dims); b = randn(dims[0], 1, dims[2], dims[3])
        eager_and_compiled(lambda a, b: a * b, a, b)
    elif kind == "softmax":
        eager_and_compiled(lambda x: torch.softmax(x, -1), randn(dims[0], dims[1]))
    elif kind == "layer_norm":
        n = dims[1]
        eager_and_compiled(lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5),
                           randn(dims[0], n), randn(n), randn(n))
    elif kind in ("rms_norm", "rms_norm_op"):
        n = dims[1]
        x = randn(dims[0], n); w = randn(n)
        if hasattr(F, "rms_norm"):
            out.append(("torch F.rms_norm", lambda: F.rms_norm(x, (n,), w, 1e-6)))
        eager_and_compiled(lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                           x, w)
    elif kind == "matvec_q8":
        rows, k = dims
        if gpu:
            W = torch.randn(rows, k, device=dev, dtype=torch.float16)
            x = torch.randn(k, device=dev, dtype=torch.float16)
            out.append(("cuBLAS f16 matvec", lambda: W @ x))
        q = torch.randint(-127, 127, (rows * k // 32 * 34,), device=dev, dtype=torch.int8)
        o = torch.empty_like(q)
        out.append(("device copy of the Q8_0 bytes" if gpu else "torch copy_ of the Q8_0 bytes",
                    lambda: o.copy_(q)))
    elif kind == "matmul":
        batch, m, n, k = dims
        A = randn(batch, m, k); B = randn(batch, k, n)
        out.append(("cuBLAS fp32" if gpu else "torch matmul fp32", lambda: torch.matmul(A, B)))
    elif kind == "conv1d":
        batch, ci, length, co, taps = dims
        x = randn(batch, ci, length); w = randn(co, ci, taps)
        out.append(("cuDNN fp32" if gpu else "torch conv1d fp32",
                    lambda: F.conv1d(x, w, padding=taps // 2)))
    elif kind == "attention":
        batch, heads, seq, dim = dims
        q = randn(batch, heads, seq, dim); k = randn(batch, heads, seq, dim); v = randn(batch, heads, seq, dim)
        out.append(("SDPA fp32" if gpu else "torch SDPA fp32",
                    lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True, help="lines case<TAB>kind<TAB>dims from kiln bench")
    ap.add_argument("--out", required=True, help="where to write lines case<TAB>peer<TAB>us")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="where the peers run: the GPU, or torch's CPU")
    a = ap.parse_args()
    import torch

    if a.device == "cpu":
        # torch's CPU tensors come from glibc's malloc, which in a fresh process maps and unmaps
        # every block above 128 KiB, so each call's output page-faults. It raises that threshold
        # to a freed mapped block's size (below 32 MiB), as in a process that has run a model;
        # so a 16 MiB block is freed first.
        block = torch.empty(4 << 20)
        del block
    if a.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("peers_torch.py: torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    time_ms = timer(torch, a.device)
    lines = []
    for row in open(a.spec):
        fields = row.rstrip("\n").split("\t")
        if len(fields) != 3:
            continue
        case, kind, dims = fields[0], fields[1], [int(d) for d in fields[2].split(",")]
        for peer, fn in peers_of(torch, kind, dims, a.device):
            try:
                for _ in range(3):
                    fn()
                if a.device == "cuda":
                    torch.cuda.synchronize()
                us = time_ms(fn) * 1e3
            except Exception as e:  # a peer that cannot run this shape is left out, said so
                print(f"peers_torch.py: {case} {peer}: {e}", file=sys.stderr)
                continue
            lines.append(f"{case}\t{peer}\t{us:.3f}\n")
            print(f"peers_torch.py: {case} {peer}: {us:.2f} us", file=sys.stderr, flush=True)
    with open(a.out, "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
