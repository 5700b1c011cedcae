#!/usr/bin/env python3
"""MiniLM's first forward from a program file (kiln.load_program) against tracing it
(kiln.minilm), each in a fresh process, with an empty and a warm kernel cache: the seconds to
get the model ready (weights from safetensors, or the program file) and of its first call.

  PYTHONPATH=build-ci/python .venv/bin/python bench/program_file.py [device] [batch] [length] [json]

Each row is one fresh process; "empty" rows run with KILN_CACHE_DIR and POCL_CACHE_DIR pointed at
new directories. The file is written by a process of its own, after one call. Token ids are
random (seeded), every sentence `length` tokens long.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def ids(batch, length):
    rng = np.random.default_rng(3)
    return [list(rng.integers(1000, 20000, size=length)) for _ in range(batch)]


def child(mode, device, batch, length, path):
    """One measurement in this process: prints a JSON line."""
    t0 = time.perf_counter()
    import kiln
    from kiln import minilm
    if mode == "load":
        forward = kiln.load_program(path)
        dev = kiln.find_device(device)
    else:
        model = minilm.load(device)
        forward, dev = model._compiled, model.device
    ready = time.perf_counter()
    args = minilm.inputs(ids(batch, length), dev)
    first = forward(*args).numpy()
    done = time.perf_counter()
    again = [time.perf_counter()]
    for _ in range(5):
        forward(*args).numpy()
        again.append(time.perf_counter())
    save_s = 0.0
    if mode == "save":
        t = time.perf_counter()
        model.save(path)
        save_s = time.perf_counter() - t
    print(json.dumps({"save_s": save_s, "ready_s": ready - t0, "first_call_s": done - ready,
                      "later_call_ms": 1e3 * float(np.median(np.diff(again))),
                      "checksum": float(np.abs(first).sum()),
                      "file_bytes": os.path.getsize(path) if mode != "trace" else 0}))


def run(mode, device, batch, length, path, cache):
    env = dict(os.environ, KILN_CACHE_DIR=cache, POCL_CACHE_DIR=os.path.join(cache, "pocl"))
    out = subprocess.run([sys.executable, __file__, "--child", mode, device, str(batch),
                          str(length), path], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{mode} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--child"]:
        mode, device, batch, length, path = sys.argv[2:7]
        child(mode, device, int(batch), int(length), path)
        return
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    length = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "minilm.kprog")
        warm = os.path.join(tmp, "warm")
        rows["trace, empty cache"] = run("trace", device, batch, length, path,
                                         os.path.join(tmp, "e1"))
        rows["save (trace, warm cache)"] = run("save", device, batch, length, path, warm)
        rows["trace, warm cache"] = run("trace", device, batch, length, path, warm)
        rows["load, empty cache"] = run("load", device, batch, length, path,
                                        os.path.join(tmp, "e2"))
        rows["load, warm cache"] = run("load", device, batch, length, path, warm)
    sums = {r["checksum"] for r in rows.values()}
    print(f"MiniLM batch {batch} length {length} on {device}; one process a row; the same "
          f"embeddings in every row: {len(sums) == 1}")
    for name, r in rows.items():
        print(f"{name:>26}: ready {r['ready_s']:6.2f} s, first call {r['first_call_s']:6.2f} s, "
              f"later calls {r['later_call_ms']:7.2f} ms"
              + (f", file {r['file_bytes'] / 1e6:.1f} MB" if r["file_bytes"] else "")
              + (f", save {r['save_s']:.2f} s" if r["save_s"] else ""))
    if len(sys.argv) > 4:
        with open(sys.argv[4], "w") as f:
            json.dump({"device": device, "batch": batch, "length": length, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
