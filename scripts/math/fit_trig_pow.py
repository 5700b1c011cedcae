# Fits for sin, cos and pow (src/dsl/math_trig.cpp, math_pow.cpp): minimax polynomials with
# coefficients rounded to f32 one at a time (remez.py), targets evaluated with mpmath.
from remez import *
import math

def fmt(x):
    m, e = float.hex(x).split('p'); return m.rstrip('0').rstrip('.') + 'p' + e + 'f'
def show(name, c, m2):
    print(f"// {name}: weighted max err 2^{math.log2(m2):.2f}")
    print("{" + ", ".join(fmt(x) for x in c) + "}")
def vec(f):  # the limit at 0 is taken a hair away from it
    return lambda xs: np.array([float(f(mp.mpf(float(x) if x != 0 else 1e-30))) for x in xs])
def even(n): return [(lambda i: (lambda x: (x * x) ** i))(i) for i in range(n)]
def mono(n): return [(lambda i: (lambda r: r ** i))(i) for i in range(n)]

QP = math.pi / 4 * (1 + 1e-6)
# sin(t) = t + t^3 S(t^2) on |t| <= pi/4: relative error of the whole.
c, m, m2 = fit_rounded(even(4), vec(lambda t: (mp.sin(t) - t) / t**3),
                       vec(lambda t: t**3 / mp.sin(t)), 1e-4, QP, ngrid=6000)
show("sin S", c, m2)
# cos(t) = 1 - t^2/2 + t^4 C(t^2) on |t| <= pi/4.
c, m, m2 = fit_rounded(even(4), vec(lambda t: (mp.cos(t) - 1 + t**2 / 2) / t**4),
                       vec(lambda t: t**4 / mp.cos(t)), 1e-4, QP, ngrid=6000)
show("cos C", c, m2)
# 2 atanh(s) = 2s + 2s^3/3 + s^5 R(s^2) for |s| <= (sqrt2-1)/(sqrt2+1): error relative to 2 atanh(s).
S = (math.sqrt(2) - 1) / (math.sqrt(2) + 1) * (1 + 1e-6)
c, m, m2 = fit_rounded(even(4), vec(lambda s: (2 * mp.atanh(s) - 2 * s - 2 * s**3 / 3) / s**5),
                       vec(lambda s: s**5 / (2 * mp.atanh(s))), 1e-4, S, ngrid=6000)
show("atanh R", c, m2)
# 2^r = 1 + r ln2 + r^2 P(r) on |r| <= 1/2 (plus a hair): error relative to 2^r.
c, m, m2 = fit_rounded(mono(6), vec(lambda r: (mp.power(2, r) - 1 - r * mp.log(2)) / r**2),
                       vec(lambda r: r**2 / mp.power(2, r)), -0.5005, 0.5005, ngrid=6000)
show("exp2 P", c, m2)

mp.mp.dps = 80
def split(name, v):
    hi = f32(float(v)); lo = f32(float(v - mp.mpf(hi)))
    print(f"// {name}", fmt(hi), fmt(lo))
split("pi/2", mp.pi / 2); split("2/ln2", 2 / mp.log(2)); split("ln2", mp.log(2)); split("1/3", mp.mpf(1) / 3)
# 2/pi's bits after the binary point, 32 at a time.
v = 2 / mp.pi
words = []
for _ in range(7):
    v *= 2**32; w = int(mp.floor(v)); words.append(w); v -= w
print("// 2/pi words", ", ".join(f"0x{w:08x}u" for w in words))
