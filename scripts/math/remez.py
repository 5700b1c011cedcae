# Discrete Remez exchange for weighted minimax fits with a general basis; coefficients rounded to f32.
import numpy as np, mpmath as mp
mp.mp.dps = 40

def f32(v): return float(np.float32(v))

def remez(basis, target, weight, a, b, ngrid=20000, iters=30):
    """minimize max |weight(x)*(target(x) - sum c_i basis_i(x))| on [a,b]. basis: list of callables on np arrays."""
    n = len(basis)
    # chebyshev-distributed grid
    k = np.arange(ngrid)
    xs = np.sort((a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / ngrid))
    B = np.stack([bf(xs) for bf in basis], axis=1)
    T = target(xs); W = weight(xs)
    # initial reference: chebyshev extrema
    idx = np.round(np.linspace(0, ngrid - 1, n + 1)).astype(int)
    j = np.arange(n + 1); cheb = (a + b) / 2 - (b - a) / 2 * np.cos(np.pi * j / n)
    idx = np.searchsorted(xs, cheb).clip(0, ngrid - 1)
    idx = np.unique(idx)
    if len(idx) < n + 1: idx = np.round(np.linspace(0, ngrid - 1, n + 1)).astype(int)
    best = None
    for it in range(iters):
        M = mp.matrix(n + 1, n + 1); rhs = mp.matrix(n + 1, 1)
        for r, i in enumerate(idx):
            for c in range(n): M[r, c] = mp.mpf(B[i, c])
            M[r, n] = mp.mpf((-1) ** r) / mp.mpf(W[i])
            rhs[r] = mp.mpf(T[i])
        sol = mp.lu_solve(M, rhs)
        coef = np.array([float(sol[c]) for c in range(n)])
        err = W * (T - B @ coef)
        m = np.max(np.abs(err))
        if best is None or m < best[1]: best = (coef, m)
        # new reference: extrema of alternating sign segments
        s = np.sign(err); s[s == 0] = 1
        segs = []; start = 0
        for i in range(1, ngrid + 1):
            if i == ngrid or s[i] != s[start]:
                seg = np.arange(start, i); segs.append(seg[np.argmax(np.abs(err[seg]))]); start = i
        segs = np.array(segs)
        while len(segs) > n + 1:  # drop smallest, keeping alternation: remove ends or merge
            e = np.abs(err[segs])
            if e[0] < e[-1]: segs = segs[1:]
            else: segs = segs[:-1]
        if len(segs) < n + 1: break
        newidx = segs
        if np.array_equal(newidx, idx): break
        idx = newidx
    return best

def fit_rounded(basis, target, weight, a, b, fixed_order=None, **kw):
    """Round coefficients to f32 one at a time (in fixed_order), refitting the rest."""
    n = len(basis)
    order = fixed_order or list(range(n))
    fixed = {}
    for step in range(n):
        free = [i for i in range(n) if i not in fixed]
        def tgt(x, fixed=dict(fixed)):
            v = target(x).copy()
            for i, c in fixed.items(): v = v - c * basis[i](x)
            return v
        coef, m = remez([basis[i] for i in free], tgt, weight, a, b, **kw)
        i0 = order[step]
        fixed[i0] = f32(coef[free.index(i0)])
    coefs = [fixed[i] for i in range(n)]
    k = np.arange(200000); xs = np.linspace(a, b, 200001)
    B = np.stack([bf(xs) for bf in basis], axis=1)
    err = weight(xs) * (target(xs) - B @ np.array(coefs))
    return coefs, m, np.nanmax(np.abs(err))
