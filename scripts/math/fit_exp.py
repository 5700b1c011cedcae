from remez import *
import math
L = 0.3466 * 1.0005
for deg in (4, 5):
    basis = [(lambda i: (lambda r: r ** i))(i) for i in range(deg + 1)]
    tgt = lambda r: (np.expm1(r) - r) / (r * r)
    w1 = lambda r: r * r / np.abs(np.expm1(r))
    c, m, m2 = fit_rounded(basis, tgt, w1, -L, L)
    print("expm1-weight deg", deg, [float.hex(x) for x in c], c, m, m2, math.log2(m2))
# exp2 on [-0.5,0.5]: 2^r = 1 + r*P(r)
for deg in (5, 6):
    basis = [(lambda i: (lambda r: r ** i))(i) for i in range(deg)]
    tgt = lambda r: np.expm1(r * math.log(2)) / r
    w = lambda r: r / np.exp2(r)
    c, m, m2 = fit_rounded(basis, tgt, w, -0.5005, 0.5005)
    print("exp2 deg", deg, [float.hex(x) for x in c], c, m2, math.log2(m2))
