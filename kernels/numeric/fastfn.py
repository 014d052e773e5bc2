"""Compiled TRSQRT and TLOG on FP32, TF32 and HF32 and TREM on FP32, TF32, HF32, BF16 and FP16
(profiles ieee and ftz); every element a routine does not settle is marked (flags 0xFF) for the
reference (transcendental.trsqrt/tlog, exact by their double-double + MPFR design;
ops_float.trem).

TRSQRT: the binary64 value and a rounding test.
Why a settled result is the correctly rounded one (x > 0 a finite binary32 value, read as the
zero of its sign in profile ftz when subnormal):

  y = RN53(1 / RN53(sqrt(x))), two correctly rounded binary64 operations (IEEE 754: `sqrt.rn.f64`
  and `rcp.rn.f64` on CUDA, the CPU's sqrtsd/divsd), so the same y on both targets.  With
  s = sqrt(x)(1 + d1), y = (1/s)(1 + d2), |d1|, |d2| <= 2^-53: y = v (1 + d2) / (1 + d1) for
  v = 1/sqrt(x), |y - v| <= v (2^-52 + 2^-104).  For y in [2^E, 2^(E+1)) (ulp 2^(E-52)) and v
  < 2^(E+1) (1 + 2^-51), that is below 2.01 binary64 ulps of y.
  Rounding test: the destination (t <= 23 stored bits; results lie in [2^-64, 2^74.5], normal
  for these formats' 8-bit exponent, never tiny or overflowing) rounds at bit 52 - t of y's
  significand; its rounding boundaries are the midpoints, at low bits 100...0.  When y's low
  52 - t bits are more than 4 ulps from that midpoint pattern, no boundary lies between y and
  v (a crossing of a power of two is no boundary: it is a value of the format), so
  RNE(v) = RNE(y): `fast.round_rne(y, +1, ...)`, whose direction only breaks exact ties, which
  this excludes.  Otherwise the element is marked: about 9 / 2^(52 - t) of them (2^-25.8 for
  FP32).
  Flags: if v = V 2^k (V odd) were a dyadic rational, x = 1/v^2 = 2^-2k / V^2 would be dyadic
  only for V = 1: v is a value of some binary format (or a midpoint) only for x = 4^-k
  (Decision 077: 2^k exactly, flags 0; s and y are then exact powers of two, far from a
  midpoint).  So NX unless x's binary64 significand is 1 and its exponent even; never UF or
  OF.
Marked besides: x <= 0 (zero: +-inf with DZ; negative: NaN with NV), infinities and NaNs.

TLOG: a binary64 value of proven relative error < 2^-50 from this module's own polynomial (no
libm log: the CPU's and CUDA's are different functions with different, test-measured errors),
then the same rounding test with a 16-ulp window (x > 0 finite, x != 1):
  x = m 2^e with m in (1/sqrt2, sqrt2] (the binary64 significand, halved when above sqrt2:
  exact), f = m - 1 exact (Sterbenz), d = 2 + f exact (f is a multiple of 2^-24 below 1/2 in
  magnitude: d has at most 26 bits), s = RN(f / d), |s| <= 0.1716, s^2 <= 0.02944.
  log m = 2 atanh(s_true) = 2s_true + 2s_true^3 (1/3 + s_true^2/5 + ...); evaluated as
  2s + lo, lo = 2s s^2 P(s^2), P the series' first ten terms (1/3 .. 1/21) by Horner:
  - truncation: the terms from s^23 on are below 2|s| s^22 / 23 / (1 - s^2) < 2^-60 |2s|;
  - s = s_true (1 + delta), |delta| <= 2^-53: d(2 atanh s)/ds = 2/(1 - s^2), so log m moves by
    at most 1.031 * 2^-53 relative;
  - P (positive terms, s^2 >= 0) carries at most 22 roundings, lo at most 27 (relative
    27 * 2^-53), and |lo| <= 0.0101 |2s|: 0.28 * 2^-53 relative to log m (>= |2s|).
  So 2s + lo is log m within 1.32 * 2^-53 relative before its own sum.
  log x = e ln2 + log m with ln2 = L1 + L2 (L1 of 21 bits, so e L1 is exact for |e| <= 150;
  |ln2 - L1 - L2| <= 2^-75): y = e L1 + (2s + (lo + e L2)).  For e = 0: relative error
  <= (1.32 + 1 + 1) 2^-53.  Otherwise |log m| <= 0.3466 and |log x| >= ln2 - 0.3466 = 0.3465,
  so the absolute errors (1.32 * 2^-53 * 0.3466, the inner sum's 2^-53 * 0.3475, e L2's
  rounding below 2^-66, the outer sum's 2^-53 |y|) stay below 4.4 * 2^-53 |log x| < 2^-50.8
  relative.  For y in [2^E, 2^(E+1)) that is below 8 binary64 ulps of y: the rounding test
  marks y within 16 ulps of a midpoint (about 33 / 2^(52 - t) of the inputs), otherwise
  RNE(log x) = RNE(y).  log x (x != 1 a positive rational) is transcendental, never exact: NX;
  |log x| lies in [2^-25, 104]: normal, never UF or OF.
  Marked besides: x <= 0, x = 1 (exactly +0), infinities and NaNs.
  Every product feeding a sum goes through rn.mul_rn (never contracted into an fma on CUDA).

TREM (Decision 061: floor modulo x - floor(x/y)*y, a nonzero result has the divisor's sign; not
C's fmod), x, y finite format values (at most 24 significant bits), y != 0:
  r = fmod(x, y) = x - trunc(x/y)*y, exactly, in integers: with |x| = X 2^ex, |y| = Y 2^ey and
  X, Y in [2^23, 2^24) (every such value is a normal binary64, whose significand gives X, Y),
  ex < ey means |x| < |y| and r = x; otherwise |r| = ((X 2^(ex-ey)) mod Y) 2^ey, the power
  applied 32 bits at a time ((R << 32) mod Y with R < 2^24 fits in 64 bits; at most 9 steps),
  and r has x's sign.  |r| < |y| and r is a multiple of y's quantum: exact in binary64.
  Then the floor rule: r = 0 gives the zero of y's sign (exact, flags 0); r of y's sign is the
  result (exact: r is a value of the format, ftz flushes a subnormal one with UF|NX as the
  reference does); otherwise the result is r + y rounded once: TwoSum in binary64 (exact) and
  fast.py's `round_rne` of the sum with its error's direction, which rounds like round_pack
  (RNE, tininess after rounding, ftz; |r + y| < |y|, so never OF; the rounded value can equal
  y, e.g. FP32 -1e-30 mod 1 = 1.0 with NX).
Marked: NaN or infinite operands, a zero divisor.  Integer operations and the floating
arithmetic above only; no libm fmod (CUDA's is documented by tests, not by proof).

The scalar routine uses arithmetic, comparisons, bit casts and a division and square root the
hardware rounds correctly: Numba compiles it for the CPU and Numba-CUDA for the GPU
(kernels/numeric/cuda.py; tests/kernels/test_cuda_ptx.py checks `sqrt.rn.f64`/`rcp.rn.f64`
and rejects `approx`, `.ftz` and `fma`).  Loops are `fast.Twin`s: small inputs never enter a
parallel region.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from . import fast
from .fast import bits_f64, f64_bits, round_rne
from .rn import mul_rn

FALLBACK = np.uint8(0xFF)
FP32_LIKE = ("FP32", "TF32", "HF32")     # TRSQRT's and TLOG's formats (rows of tier "fastfn")

NEAR_ULPS = 4                                   # > 2.01: the binary64 value's error bound
NEAR_ULPS_LOG = 16                              # > 8: log's bound
_MANT = np.uint64((1 << 52) - 1)
_ONE = np.uint64(1)
_HIDDEN = np.uint64(1 << 52)


@nb.njit(inline="always", error_model="numpy")
def rsqrt_approx(x):
    """RN53(1 / RN53(sqrt(x))): within 2.01 binary64 ulps of 1/sqrt(x) (module doc)."""
    return 1.0 / math.sqrt(x)


@nb.njit(inline="always", error_model="numpy")
def near_boundary(y, t, ulps=NEAR_ULPS):
    """Whether a rounding boundary of a t-bit destination may lie within `ulps` binary64 ulps
    of the normal binary64 value y: its low 52 - t significand bits are that close to the
    midpoint pattern 100...0."""
    drop = np.uint64(52 - t)
    half = _ONE << (drop - _ONE)
    low = f64_bits(y) & ((_ONE << drop) - _ONE)
    return (low - half if low > half else half - low) <= np.uint64(ulps)


_SQRT2 = 1.4142135623730951                    # RN(sqrt 2) < sqrt 2: m = RN(sqrt2) stays up
_LN2_HI = float.fromhex("0x1.62e42p-1")        # ln2 cut to 21 bits (tests recompute both)
_LN2_LO = float.fromhex("0x1.fdf473de6af28p-22")
_INV = (1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21)


@nb.njit(inline="always", error_model="numpy")
def log_approx(x):
    """log(x) in binary64 within 2^-50 relative, for a positive normal binary64 x != 1 of at
    most 24 significant bits (module doc); for other binary64 x a few ulps less accurate
    (d = 2 + f rounds), which fast64's FP64 log takes as its Newton step's starting value."""
    u = f64_bits(x)
    e = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1023
    m = bits_f64((u & _MANT) | np.uint64(1023 << 52))
    if m > _SQRT2:
        m = m * 0.5
        e += 1
    f = m - 1.0
    s = f / (2.0 + f)
    z = mul_rn(s, s)
    p = _INV[9]
    p = _INV[8] + mul_rn(z, p)
    p = _INV[7] + mul_rn(z, p)
    p = _INV[6] + mul_rn(z, p)
    p = _INV[5] + mul_rn(z, p)
    p = _INV[4] + mul_rn(z, p)
    p = _INV[3] + mul_rn(z, p)
    p = _INV[2] + mul_rn(z, p)
    p = _INV[1] + mul_rn(z, p)
    p = _INV[0] + mul_rn(z, p)
    two_s = s + s
    lo = mul_rn(mul_rn(two_s, z), p)
    ef = np.float64(e)
    return mul_rn(ef, _LN2_HI) + (two_s + (lo + mul_rn(ef, _LN2_LO)))


@fast.kernel("fastfn", FP32_LIKE, "TLOG")
def log(op, x, fmt):
    """(code, flags) of log(x) rounded to the format, or flags FALLBACK."""
    ok = math.isfinite(x) and x > 0.0 and x != 1.0
    y = log_approx(x if ok else 2.0)
    code, f = round_rne(y, np.int64(1), fmt)
    return code, f if ok and not near_boundary(y, fmt.t, NEAR_ULPS_LOG) else FALLBACK


@fast.kernel("fastfn", FP32_LIKE, "TRSQRT")
def rsqrt(op, x, fmt):
    """(code, flags) of 1/sqrt(x) rounded to the format, or flags FALLBACK."""
    ok = math.isfinite(x) and x > 0.0
    y = rsqrt_approx(x if ok else 1.0)
    u = f64_bits(x)
    power4 = ((u & _MANT) == np.uint64(0)) & (((u >> np.uint64(52)) & _ONE) == _ONE)   # 2^(2k)
    code, f = round_rne(y, np.int64(0) if power4 else np.int64(1), fmt)
    return code, f if ok and not near_boundary(y, fmt.t) else FALLBACK


@nb.njit(inline="always", error_model="numpy")
def _sig_exp(v):
    """(X, e) with |v| = X 2^e, X in [2^23, 2^24), for a nonzero value of at most 24 bits (a
    normal binary64)."""
    u = f64_bits(v)
    return ((u & _MANT) | _HIDDEN) >> np.uint64(29), np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1046


@nb.njit(inline="always", error_model="numpy")
def fmod24(x, y):
    """x - trunc(x/y)*y exactly, for finite x and finite nonzero y of at most 24 bits each."""
    if x == 0.0:
        return x
    X, ex = _sig_exp(x)
    Y, ey = _sig_exp(y)
    if ex < ey:
        return x
    R = X % Y
    k = ex - ey
    while k > 0 and R != 0:
        step = min(k, 32)
        R = (R << np.uint64(step)) % Y
        k -= step
    mag = np.float64(R) * fast.bits_f64(np.uint64(ey + 1023) << np.uint64(52))   # exact: R < 2^24
    return -mag if x < 0 else mag


@fast.kernel("fastfn", FP32_LIKE + ("BF16", "FP16"), "TREM")
def rem(op, x, y, fmt):
    """(code, flags) of floor modulo x mod y rounded to the format, or flags FALLBACK."""
    ok = math.isfinite(x) and math.isfinite(y) and y != 0.0
    r = fmod24(x, y) if ok else 0.0
    adjust = (r != 0.0) and ((r < 0.0) != (y < 0.0))
    s, d = fast._two_sum_dir(r, y)
    if not adjust:
        s = r if r != 0.0 else math.copysign(0.0, y)
        d = np.int64(0)
    code, f = round_rne(s, d, fmt)
    return code, f if ok else FALLBACK
