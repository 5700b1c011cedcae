from remez import *
import math
a, b = math.sqrt(0.5) - 1 - 1e-7, math.sqrt(2) - 1 + 1e-7
for deg in (7, 8, 9):
    basis = [(lambda i: (lambda r: r ** i))(i) for i in range(deg + 1)]
    tgt = lambda f: (np.log1p(f) - f) / (f * f)
    w = lambda f: f * f / np.abs(np.log1p(f))
    c, m, m2 = fit_rounded(basis, tgt, w, a, b)
    print("log deg", deg, [float.hex(x) for x in c], m, m2, math.log2(m2))
