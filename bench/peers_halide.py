#!/usr/bin/env python3
"""The Halide peer of bench_cpu_kernels: rms_norm and softmax over rows of f32, written in Halide
(PyPI `halide`) as a Halide user writes them, with Halide's exact-order folds (an RDom summed
left to right, which Halide does not reassociate, so a row's sum runs one element after another),
rows in parallel and the elementwise parts vectorized. Compiled ahead of time for this host into
one shared object with a plain C entry per kernel, which bench_cpu_kernels loads (--halide LIB)
and times beside kiln in the same process and the same repeats:

  int kiln_halide_rms_norm(const float* x, const float* w, float eps, float* out, int rows, int n)
  int kiln_halide_softmax(const float* x, float* out, int rows, int n)

  python3 -m venv .peers/venv && .peers/venv/bin/pip install halide
  .peers/venv/bin/python bench/peers_halide.py --out .peers/halide
  build/bench/bench_cpu_kernels --halide .peers/halide/libkiln_halide_peers.so
"""
import argparse
import os
import subprocess

import halide as hl

SHIM = r"""
#include <stdint.h>
#include "HalideRuntime.h"
#include "kiln_halide_rms_norm.h"
#include "kiln_halide_softmax.h"

static halide_buffer_t rows_buffer(const float* p, halide_dimension_t* d, int rows, int n) {
    d[0].min = 0; d[0].extent = n; d[0].stride = 1; d[0].flags = 0;
    d[1].min = 0; d[1].extent = rows; d[1].stride = n; d[1].flags = 0;
    halide_buffer_t b = {0};
    b.host = (uint8_t*)p;
    b.type.code = halide_type_float; b.type.bits = 32; b.type.lanes = 1;
    b.dimensions = 2;
    b.dim = d;
    return b;
}

int kiln_halide_rms_norm(const float* x, const float* w, float eps, float* out, int rows, int n) {
    halide_dimension_t dx[2], dout[2], dw[1] = {{0, n, 1, 0}};
    halide_buffer_t bx = rows_buffer(x, dx, rows, n), bout = rows_buffer(out, dout, rows, n);
    halide_buffer_t bw = {0};
    bw.host = (uint8_t*)w;
    bw.type = bx.type;
    bw.dimensions = 1;
    bw.dim = dw;
    return kiln_halide_rms_norm_pipeline(&bx, &bw, eps, &bout);
}

int kiln_halide_softmax(const float* x, float* out, int rows, int n) {
    halide_dimension_t dx[2], dout[2];
    halide_buffer_t bx = rows_buffer(x, dx, rows, n), bout = rows_buffer(out, dout, rows, n);
    return kiln_halide_softmax_pipeline(&bx, &bout);
}
"""


def rms_norm():
    x = hl.ImageParam(hl.Float(32), 2, "x")
    w = hl.ImageParam(hl.Float(32), 1, "w")
    eps = hl.Param(hl.Float(32), "eps")
    c, row = hl.Var("c"), hl.Var("row")
    n = x.dim(0).extent()
    r = hl.RDom([(0, n)])
    ss = hl.Func("ss")
    ss[row] = hl.f32(0)
    ss[row] = ss[row] + x[r.x, row] * x[r.x, row]
    inv = hl.Func("inv")
    inv[row] = hl.f32(1) / hl.sqrt(ss[row] / hl.cast(hl.Float(32), n) + eps)
    out = hl.Func("out")
    out[c, row] = x[c, row] * inv[row] * w[c]
    out.parallel(row).vectorize(c, 16)
    ss.compute_at(out, row)
    inv.compute_at(out, row)
    return out, [x, w, eps]


def softmax():
    x = hl.ImageParam(hl.Float(32), 2, "x")
    c, row = hl.Var("c"), hl.Var("row")
    n = x.dim(0).extent()
    r = hl.RDom([(0, n)])
    m = hl.Func("m")
    m[row] = hl.maximum(x[r.x, row])
    s = hl.Func("s")
    s[row] = hl.f32(0)
    s[row] = s[row] + hl.exp(x[r.x, row] - m[row])
    out = hl.Func("out")
    out[c, row] = hl.exp(x[c, row] - m[row]) / s[row]
    out.parallel(row).vectorize(c, 16)
    m.compute_at(out, row)
    s.compute_at(out, row)
    return out, [x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".peers/halide")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    target = hl.get_host_target()
    objects = []
    for i, (name, make) in enumerate(
        [("kiln_halide_rms_norm", rms_norm), ("kiln_halide_softmax", softmax)]
    ):
        func, params = make()
        # One copy of Halide's runtime in the library: the first object carries it.
        t = target if i == 0 else target.with_feature(hl.TargetFeature.NoRuntime)
        base = os.path.join(args.out, name)
        func.compile_to(
            {hl.OutputFileType.object: base + ".o", hl.OutputFileType.c_header: base + ".h"},
            params,
            name + "_pipeline",
            t,
        )
        objects.append(base + ".o")
    shim = os.path.join(args.out, "shim.c")
    with open(shim, "w") as f:
        f.write(SHIM)
    include = os.path.join(os.path.dirname(hl.__file__), "include")
    lib = os.path.join(args.out, "libkiln_halide_peers.so")
    subprocess.run(
        ["cc", "-O2", "-fPIC", "-shared", "-I", include, "-I", args.out, "-o", lib, shim]
        + objects
        + ["-lpthread", "-ldl"],
        check=True,
    )
    print(lib)


if __name__ == "__main__":
    main()
