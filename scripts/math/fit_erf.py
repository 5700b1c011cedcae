from remez import *
import math
erf = np.vectorize(math.erf); erfc = np.vectorize(math.erfc)
for bnd in (0.875, 1.0):
  for deg in (4, 5, 6):
    basis = [(lambda i: (lambda x: (x*x) ** i))(i) for i in range(deg + 1)]
    tgt = lambda x: (erf(x) - x) / x
    w = lambda x: x / erf(x)
    c, m, m2 = fit_rounded(basis, tgt, w, 1e-6, bnd, ngrid=4000)
    print("erf small b", bnd, "deg", deg, [float.hex(x) for x in c], m2, math.log2(m2))
for bnd in (0.875, 1.0):
  for deg in (7, 8, 9, 10):
    basis = [(lambda i: (lambda x: x ** i))(i) for i in range(deg + 1)]
    tgt = lambda x: np.log(erfc(x)) + x * x
    w = lambda x: erfc(x) / erf(x)
    c, m, m2 = fit_rounded(basis, tgt, w, bnd, 4.0, ngrid=4000)
    print("erf tail b", bnd, "deg", deg, [float.hex(x) for x in c], m2, math.log2(m2))
