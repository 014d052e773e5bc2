"""Compiled recipes of profile a5 (kernels/numeric/recipes.py defines them): TREM FP32
(`rem_unfused`), TREM FP16 (`rem_via_fp32`) and TDIV FP16 (`div_normalised`).

Each routine runs the recipe's IEEE steps with the hardware's own binary32 arithmetic and
fastvec's/fastdiv's exact FP16 routines, and computes every step's IEEE flags exactly where it
settles an element; the other elements are marked (flags 0xFF) for the reference recipe, so the
results are the recipe's by construction of the settled cases and by test
(tests/kernels/test_profile_a5.py, against models built from exact rationals).

  rem32   (FP32 values x, y)  q = RN(x/y) in binary32: NX iff q*y != x (a 48-bit product, exact
          in binary64); settled while 2^-126 < |q| <= max (never UF, never OF) or x = 0.  floor
          by truncation (exact).  p = RN(qf*y): the product exactly in binary64, rounded once to
          binary32 (RN24 of an exact value), NX iff it changed; settled while 2^-126 <= |qf*y|
          and p is finite, or qf = 0.  r = RN(x - p) and the fix-up r + y by TwoSum in binary32
          (exact error: NX iff nonzero; a sum is exact in the subnormal range, never UF);
          settled while finite.  t = RN(y*r) as p, settled while 2^-126 <= |y*r| (or r = 0):
          its flags count on every element (the step runs on all of them), its sign decides.
  rem16   (FP16 codes)  the same FP32 steps on the widened operands, which always settle for
          finite operands and a nonzero divisor: |x/y| lies in [2^-40, 2^40], every p is 0 or
          in [2^-24, 2^57], r a multiple of 2^-24 below 2^57; then `rtz16_sat` (binary32 to
          FP16 toward zero, +-max with OF|NX from 2^16 on; UF when tiny and inexact) and the
          FP16 fix-up by fastvec.fp16_mul / fp16_add, exact for every finite FP16 operand.
  div16   (FP16 codes)  the scalings and exponent arithmetic in integers, the one division of
          the normalised significands in binary32 rounded to FP16 by fastvec's encoder
          (RN11(RN24(v)) = RN11(v), 24 >= 2*11 + 2; NX from the exact binary64 product of the
          FP16 quotient and the divisor's significand), and the recipe's multiplications
          folded into one: all but the last multiply a normal value by a power of two (exact),
          so the result is that quotient times one power of two, rounded once (subnormal
          results and overflow included); settled for every pair of finite nonzero operands.
Marked besides: NaN or infinite operands and zero divisors (and rem16/div16 zero dividends
also only where the recipe needs them marked: div16 marks every zero operand, whose IEEE
quotient the reference gives).

Arithmetic, comparisons, bit casts and rn.py's mul_rn/add_rn only: Numba compiles the routines
for the CPU and Numba-CUDA for the GPU (kernels/numeric/cuda.py; tests/kernels/test_cuda_ptx.py
checks `div.rn.f32` and rejects `approx`, `.ftz` and `fma`).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from . import fast
from . import profiles as P
from .fast64 import _nx
from .fastvec import _F32_MAX, _finite32, _fp16, _fp16_flags, _fp16_round, fp16_add, fp16_mul
from .flags import NX, OF, UF
from .rn import bits_f32, f32_bits, mul_rn, two_sum

FALLBACK = np.uint8(0xFF)
_N32 = 2.0 ** -126
_F32_MAX64 = 3.4028234663852886e38
_TWO23 = np.float32(8388608.0)


@nb.njit(inline="always", error_model="numpy")
def floor32(q):
    """floor of a binary32 value (A5 vtrc ROUND_F): exact, the sign of zero kept."""
    t = np.float32(np.int64(q)) if abs(q) < _TWO23 else q      # truncation; NaN, inf, |q| >= 2^23: q
    t = t - np.float32(1.0) if t > q else t
    return t if t != 0 else q * np.float32(0.0)                # floor(+-0) = +-0, floor(0.x) = +0


@nb.njit(inline="always", error_model="numpy")
def _mul32(a, b):
    """(RN(a*b) in binary32, NX, |a*b| exactly) for binary32 a, b (the product is exact in
    binary64)."""
    P = mul_rn(np.float64(a), np.float64(b))
    p = np.float32(P)
    return p, _nx(np.float64(p) != P), abs(P)


@fast.kernel("a5", "FP32", "TREM", "f32", rule=P.REM_UNFUSED)
def rem32(x, y):
    """(binary32 result, flags) of TREM FP32 by rem_unfused, or flags FALLBACK."""
    ok = _finite32(x) & _finite32(y) & (y != 0)
    q = x / y
    aq = abs(np.float64(q))
    ok &= ((aq > _N32) & (aq <= _F32_MAX64)) | (x == 0)
    fl = _nx(mul_rn(np.float64(q), np.float64(y)) != np.float64(x))
    qf = floor32(q)
    p, f, ap = _mul32(qf, y)
    ok &= (qf == 0) | ((ap >= _N32) & (abs(p) <= _F32_MAX))
    fl |= f
    r, e = two_sum(x, -p)
    ok &= abs(r) <= _F32_MAX
    fl |= _nx(e != 0)
    t, f, at = _mul32(y, r)
    ok &= (r == 0) | ((at >= _N32) & (abs(t) <= _F32_MAX))
    fl |= f
    neg = t < 0
    s, e = two_sum(r, y)
    ok &= (abs(s) <= _F32_MAX) | (not neg)
    fl |= _nx(e != 0) if neg else np.uint8(0)
    return (s if neg else r), fl if ok else FALLBACK


@nb.njit(inline="always", error_model="numpy")
def rtz16_sat(r):
    """(FP16 code, flags) of finite binary32 r converted toward zero with saturation: +-max and
    OF|NX from |r| >= 2^16 on, NX when bits are dropped, UF when the result is tiny (below
    2^-14: toward zero never rounds up to it) and inexact."""
    w = f32_bits(r)
    sign = np.uint16((w >> np.uint32(16)) & np.uint32(0x8000))
    f = w & np.uint32(0x7FFFFFFF)
    normal = np.uint16((f - np.uint32(112 << 23)) >> np.uint32(13))
    nx_n = (f & np.uint32(0x1FFF)) != np.uint32(0)
    v = min(mul_rn(bits_f32(f), np.float32(16777216.0)), np.float32(1024.0))   # |r| 2^24 below 2^-14: exact
    c = np.uint32(v)
    nx_s = np.float32(c) != v
    big = f >= np.uint32(143 << 23)
    low = f < np.uint32(113 << 23)
    code = np.uint16(0x7BFF) if big else (np.uint16(c) if low else normal)
    fl = np.uint8(OF | NX) if big else (np.uint8(NX | UF) if nx_s else np.uint8(0)) if low else _nx(nx_n)
    return code | sign, fl


@fast.kernel("a5", "FP16", "TREM", "raw", rule=P.REM_VIA_FP32)
def rem16(a, b):
    """(FP16 code, flags) of TREM FP16 by rem_via_fp32, or flags FALLBACK."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    ok = fx & fy & (y != 0)
    q = x / y
    fl = _nx(mul_rn(np.float64(q), np.float64(y)) != np.float64(x))
    p, f, _ = _mul32(floor32(q), y)
    fl |= f
    r, e = two_sum(x, -p)
    fl |= _nx(e != 0)
    h, f = rtz16_sat(r if ok else np.float32(0.0))
    fl |= f
    t, f = fp16_mul(b, h)
    fl |= f
    neg = ((t & np.uint16(0x8000)) != 0) & ((t & np.uint16(0x7FFF)) != 0)
    s, f = fp16_add(h, b)
    fl |= f if neg else np.uint8(0)
    return (s if neg else h), fl if ok else FALLBACK


@nb.njit(inline="always", error_model="numpy")
def _fields16(h, ah):
    """(exponent field, significand field) of FP16 code h (magnitude ah) after the recipe's
    scaling: a magnitude strictly below 0x03FF times 2^10 (exact, a normal value), else as is."""
    v = mul_rn(bits_f32(ah << np.uint32(13)), np.float32(2.0 ** 122))     # |h| 2^10 in binary32
    w = f32_bits(v)
    sub = ah < np.uint32(0x03FF)
    e = np.int32((w >> np.uint32(23)) - np.uint32(112)) if sub else np.int32(ah >> np.uint32(10))
    t = ((w >> np.uint32(13)) & np.uint32(0x3FF)) if sub else (ah & np.uint32(0x3FF))
    return e, t, np.int32(-10) if sub else np.int32(0)


@fast.kernel("a5", "FP16", "TDIV", "raw", rule=P.DIV_NORMALISED)
def div16(a, b):
    """(FP16 code, flags) of TDIV FP16 by div_normalised, or flags FALLBACK (a zero, infinite or
    NaN operand: the IEEE quotient, by the reference).  Every multiplication of the recipe but
    the last is by a power of two on a value that stays normal, hence exact: the result is the
    quotient of the significands times 2^(adjust + scale - 15) (scale 31: 2^(adjust + 16))
    rounded once, by fastvec's binary32 -> FP16 encoder."""
    ax = np.uint32(a) & np.uint32(0x7FFF)
    ay = np.uint32(b) & np.uint32(0x7FFF)
    ok = (ax != 0) & (ay != 0) & (ax < np.uint32(0x7C00)) & (ay < np.uint32(0x7C00))
    e0, t0, adj0 = _fields16(a, ax)
    e1, t1, adj1 = _fields16(b, ay)
    m0 = bits_f32(np.uint32(127 << 23) | (t0 << np.uint32(13)))          # the significands, [1, 2)
    m1 = bits_f32(np.uint32(127 << 23) | (t1 << np.uint32(13)))
    qc, _, _ = _fp16_round(m0 / m1)                                      # RN11(RN24(m0/m1)) = RN11
    q = bits_f32(((np.uint32(qc) & np.uint32(0x7FFF)) << np.uint32(13)) + np.uint32(112 << 23))
    fd = np.uint8(NX) if mul_rn(np.float64(q), np.float64(m1)) != np.float64(m0) else np.uint8(0)
    scale = e0 - e1 + np.int32(15)
    k = adj0 - adj1 + (np.int32(16) if scale == np.int32(31) else scale - np.int32(15))
    v = mul_rn(q, bits_f32(np.uint32(k + np.int32(127)) << np.uint32(23)))      # exact in binary32
    r, dropped, of = _fp16_round(v)
    fm = _fp16_flags(dropped | of, v, of)                   # the last multiplication's flags
    sign = (np.uint32(a) ^ np.uint32(b)) & np.uint32(0x8000)
    code = np.uint32(r) & np.uint32(0x7FFF)
    code = np.uint32(0x7C00) if scale > np.int32(31) else code
    code = np.uint32(0) if scale < np.int32(-9) else code
    code = (np.uint32(0) if t0 <= t1 else np.uint32(1)) if scale == np.int32(-9) else code
    fl = fd if (scale > np.int32(31)) | (scale <= np.int32(-9)) else fd | fm   # selects raise nothing
    return np.uint16(code | sign), fl if ok else FALLBACK
