#!/usr/bin/env python3
"""ctest entry bench_cli_quick: runs `kiln bench --device cpu --quick` with --json and --report and
checks the JSON's structure (every case, kiln's time, the peers, the ratio to the best peer and
the rate fraction derived from them) and that every kiln result is bit-identical to its oracle;
then that an unknown case is refused with a message naming the known ones.

  bench_quick_check.py KILN_BINARY WORK_DIR
"""
import json
import os
import subprocess
import sys

CASES = ["copy", "add_square_small", "add_square_large", "mul_rank4", "softmax", "layer_norm",
         "rms_norm", "rms_norm_op", "matvec_q8", "matmul_small", "matmul_large", "matmul_batched",
         "conv1d_small", "conv1d_large", "attention_small", "attention_large"]
# Cases with a CPU peer that is always built (the OpenMP loops); OpenBLAS is checked when loadable.
OPENMP_PEERS = {"copy", "add_square_small", "add_square_large", "mul_rank4", "softmax",
                "layer_norm", "rms_norm", "rms_norm_op"}


def fail(message):
    sys.exit(f"bench_quick_check: {message}")


def main():
    kiln, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    out_json = os.path.join(work, "bench.json")
    out_html = os.path.join(work, "bench.html")
    for path in (out_json, out_html):
        if os.path.exists(path):
            os.remove(path)
    run = subprocess.run([kiln, "bench", "--device", "cpu", "--quick", "--json", out_json,
                          "--report", out_html], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        fail(f"kiln bench exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
    if "[1/16] copy on" not in run.stderr:
        fail(f"no progress lines on stderr:\n{run.stderr}")
    for case in CASES:
        if case not in run.stdout:
            fail(f"the table on stdout lacks {case}:\n{run.stdout}")

    doc = json.load(open(out_json))
    for key in ("kiln_commit", "date", "devices"):
        if key not in doc:
            fail(f"the JSON lacks '{key}'")
    if len(doc["devices"]) != 1:
        fail(f"expected one device, got {len(doc['devices'])}")
    device = doc["devices"][0]
    if not device["device"].startswith("cpu") or device["copy_gbs"] <= 0 or device["f32_gflops"] <= 0:
        fail(f"bad device entry: {device['device']} {device['copy_gbs']} {device['f32_gflops']}")
    names = [c["case"] for c in device["cases"]]
    if names != CASES:
        fail(f"cases {names}; expected {CASES}")
    for c in device["cases"]:
        name = c["case"]
        if c["bit_identical"] is not True:
            fail(f"{name}: bit_identical is {c['bit_identical']}; every quick case is checked")
        if not c["kiln_us"] > 0 or c["setup_ms"] < 0 or not c["host_us"] > 0:
            fail(f"{name}: times kiln {c['kiln_us']} setup {c['setup_ms']} host {c['host_us']}")
        if not c["schedule"] or not c["shape"]:
            fail(f"{name}: empty schedule or shape")
        if not c["bytes"] > 0:
            fail(f"{name}: bytes {c['bytes']}")
        if c["fraction_of"] not in ("copy bandwidth", "f32 rate"):
            fail(f"{name}: fraction_of {c['fraction_of']}")
        rate = (c["flops"] if c["fraction_of"] == "f32 rate" else c["bytes"]) / c["kiln_us"] / 1e3
        basis = device["f32_gflops"] if c["fraction_of"] == "f32 rate" else device["copy_gbs"]
        if abs(c["fraction"] - rate / basis) > 1e-3 * (rate / basis) + 1e-9:
            fail(f"{name}: fraction {c['fraction']} is not {rate / basis}")
        peers = c["peers"]
        if name in OPENMP_PEERS and not any(p["name"] == "OpenMP loop" for p in peers):
            fail(f"{name}: no OpenMP loop peer in {peers}")
        if name.startswith("matmul") and not peers:
            print(f"bench_quick_check: note: {name} has no peer (OpenBLAS not loadable)")
        if peers:
            best = min(peers, key=lambda p: p["us"])
            if c["best_peer"] != best["name"]:
                fail(f"{name}: best_peer {c['best_peer']}; the fastest is {best['name']}")
            want = c["kiln_us"] / best["us"]
            if abs(c["kiln_over_best_peer"] - want) > 1e-3 * want:
                fail(f"{name}: kiln_over_best_peer {c['kiln_over_best_peer']}; expected {want}")
        elif c["best_peer"] is not None or c["kiln_over_best_peer"] is not None:
            fail(f"{name}: a best peer without peers")

    html = open(out_html).read()
    if html.count('class="chart"') != 1 or "<table>" not in html or device["device"] not in html:
        fail("the report lacks its chart, table or device id")
    bars = sum(1 for c in device["cases"] for t in [c["kiln_us"]] + [p["us"] for p in c["peers"]] if t > 0)
    drawn = html.count('class="bar"')
    if drawn != bars:
        fail(f"the chart has {drawn} bars; expected {bars}")
    if "http://" in html.replace('xmlns="http://www.w3.org/2000/svg"', "") or "https://" in html:
        fail("the report refers to the network")

    bad = subprocess.run([kiln, "bench", "--device", "cpu", "--cases", "copy,nope"],
                         capture_output=True, text=True, timeout=60)
    if bad.returncode != 2 or "no case 'nope'" not in bad.stderr or "matmul_large" not in bad.stderr:
        fail(f"an unknown case gave exit {bad.returncode}: {bad.stderr}")
    print(f"bench_quick_check: {len(CASES)} cases checked")


if __name__ == "__main__":
    main()
