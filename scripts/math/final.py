from remez import *
import math
erf = np.vectorize(math.erf); erfc = np.vectorize(math.erfc)
def fmt(x):
    m, e = float.hex(x).split('p'); return m.rstrip('0').rstrip('.') + 'p' + e + 'f'
def show(name, c, m2):
    print(f"// {name}: weighted max err 2^{math.log2(m2):.2f}")
    print("{" + ", ".join(fmt(x) for x in c) + "}")
mono = lambda n: [(lambda i: (lambda r: r ** i))(i) for i in range(n)]
L = 0.3466 * 1.0005
c, m, m2 = fit_rounded(mono(6), lambda r: (np.expm1(r) - r) / (r * r), lambda r: r * r / np.abs(np.expm1(r)), -L, L)
show("expm1 Q", c, m2)
c, m, m2 = fit_rounded(mono(6), lambda r: np.expm1(r * math.log(2)) / r, lambda r: r / np.exp2(r), -0.5005, 0.5005)
show("exp2 P", c, m2)
a, b = math.sqrt(0.5) - 1 - 1e-7, math.sqrt(2) - 1 + 1e-7
c, m, m2 = fit_rounded(mono(10), lambda f: (np.log1p(f) - f) / (f * f), lambda f: f * f / np.abs(np.log1p(f)), a, b)
show("log P", c, m2)
l2e = 1 / math.log(2)
c, m, m2 = fit_rounded(mono(10), lambda f: (np.log1p(f) * l2e - f * l2e) / (f * f), lambda f: f * f / np.abs(np.log1p(f) * l2e), a, b)
show("log2 P", c, m2)
c, m, m2 = fit_rounded([(lambda i: (lambda x: (x*x) ** i))(i) for i in range(7)], lambda x: (erf(x) - x) / x, lambda x: x / erf(x), 1e-6, 1.0, ngrid=4000)
show("erf small", c, m2)
c, m, m2 = fit_rounded(mono(8), lambda x: np.log(erfc(x)) + x * x, lambda x: erfc(x) / erf(x), 1.0, 4.0, ngrid=4000)
show("erf tail", c, m2)
def sp(v):
    hi = f32(v); lo = f32(v - hi); print(float.hex(hi), float.hex(lo))
sp(math.log(2)); sp(l2e)
