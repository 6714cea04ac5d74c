#!/usr/bin/env python3
"""Writes ufunc-runtime/src/math/f32_quadrants.rs, the table behind the argument reduction of the
f32 sin/cos/tan lane code.

An f32 x is m * 2^E with m a 24-bit integer, and E fixed by x's biased exponent byte e8
(E = e8 - 150, or -149 for subnormals). x * 2/pi mod 4 = m * (2^E * 2/pi mod 4), so for each e8 the
table holds T = 2^E * 2/pi mod 4 split into HI (29 significant bits, so that m * HI is exact in
f64) and REST (the next 53 bits, rounded). Exact decimal arithmetic; pi from Machin's formula.

    python3 scripts/trig_table.py > ufunc-runtime/src/math/f32_quadrants.rs
"""
from decimal import Decimal, getcontext
import math

getcontext().prec = 200


def arctan_inv(n):
    x = Decimal(1) / n
    x2 = x * x
    total, term, k = Decimal(0), x, 1
    while term != 0:
        total += term / k if (k // 2) % 2 == 0 else -term / k
        term *= x2
        k += 2
    return total


TWO_OVER_PI = 2 / (16 * arctan_inv(5) - 4 * arctan_inv(239))


def top_bits(x, bits):
    """`x` (a positive Decimal) truncated to `bits` significant bits."""
    e = math.frexp(float(x))[1]
    scale = Decimal(2) ** (bits - e)
    return Decimal(int(x * scale)) / scale


hi, rest = [], []
for e8 in range(256):
    if e8 == 255:  # infinity and NaN: the result is NaN whatever the table says
        hi.append(0.0)
        rest.append(0.0)
        continue
    exponent = -149 if e8 == 0 else e8 - 150
    t = (Decimal(2) ** exponent * TWO_OVER_PI) % 4
    t_hi = top_bits(t, 29)
    assert Decimal(float(t_hi)) == t_hi
    hi.append(float(t_hi))
    rest.append(float(t - t_hi))

print("// Written by scripts/trig_table.py: for each f32 exponent byte, 2^E * 2/pi mod 4 as")
print("// HI (29 significant bits) + REST. Regenerate rather than edit.")
for name, values in (("HI", hi), ("REST", rest)):
    print(f"pub(super) const QUADRANTS_{name}: [f64; 256] = [")
    for v in values:
        print(f"    {v!r},")
    print("];")
