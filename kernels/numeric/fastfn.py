"""Compiled TRSQRT on FP32, TF32 and HF32 and TREM on FP32, TF32, HF32, BF16 and FP16 (profiles
ieee and ftz); every element a routine does not settle is marked (flags 0xFF) for the reference
(transcendental.trsqrt, exact by its double-double + MPFR design; ops_float.trem).

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
from .fast import f64_bits, round_rne

FALLBACK = np.uint8(0xFF)
FORMATS = {"TRSQRT": ("FP32", "TF32", "HF32"), "TREM": ("FP32", "TF32", "HF32", "BF16", "FP16")}

NEAR_ULPS = 4                                   # > 2.01: the binary64 value's error bound
_MANT = np.uint64((1 << 52) - 1)
_ONE = np.uint64(1)
_HIDDEN = np.uint64(1 << 52)


@nb.njit(inline="always")
def rsqrt_approx(x):
    """RN53(1 / RN53(sqrt(x))): within 2.01 binary64 ulps of 1/sqrt(x) (module doc)."""
    return 1.0 / math.sqrt(x)


@nb.njit(inline="always")
def near_boundary(y, t):
    """Whether a rounding boundary of a t-bit destination may lie within NEAR_ULPS binary64
    ulps of the normal binary64 value y: its low 52 - t significand bits are that close to
    the midpoint pattern 100...0."""
    drop = np.uint64(52 - t)
    half = _ONE << (drop - _ONE)
    low = f64_bits(y) & ((_ONE << drop) - _ONE)
    return (low - half if low > half else half - low) <= np.uint64(NEAR_ULPS)


@nb.njit(inline="always")
def rsqrt(x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz):
    """(code, flags) of 1/sqrt(x) rounded to the format, or flags FALLBACK."""
    ok = math.isfinite(x) and x > 0.0
    y = rsqrt_approx(x if ok else 1.0)
    u = f64_bits(x)
    power4 = ((u & _MANT) == np.uint64(0)) & (((u >> np.uint64(52)) & _ONE) == _ONE)   # 2^(2k)
    code, f = round_rne(y, np.int64(0) if power4 else np.int64(1), t, emin, maxmag, ovf, ovf_sign, signbit,
                        shift, ftz)
    return code, f if ok and not near_boundary(y, t) else FALLBACK


@nb.njit(inline="always")
def _sig_exp(v):
    """(X, e) with |v| = X 2^e, X in [2^23, 2^24), for a nonzero value of at most 24 bits (a
    normal binary64)."""
    u = f64_bits(v)
    return ((u & _MANT) | _HIDDEN) >> np.uint64(29), np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1046


@nb.njit(inline="always")
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


@nb.njit(inline="always")
def rem(x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz):
    """(code, flags) of floor modulo x mod y rounded to the format, or flags FALLBACK."""
    ok = math.isfinite(x) and math.isfinite(y) and y != 0.0
    r = fmod24(x, y) if ok else 0.0
    adjust = (r != 0.0) and ((r < 0.0) != (y < 0.0))
    s, d = fast._two_sum_dir(r, y)
    if not adjust:
        s = r if r != 0.0 else math.copysign(0.0, y)
        d = np.int64(0)
    code, f = round_rne(s, d, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
    return code, f if ok else FALLBACK


def _rem_bits(a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    for i in nb.prange(a.shape[0]):
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        y = fast._daz(fast._from_bits(b[i], field, dshift), ftz, mn)
        bits[i], flags[i] = rem(x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)


def _rem_vals(a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, mn, bits, flags):
    for i in nb.prange(a.shape[0]):
        x = fast._daz(np.float64(a[i]), ftz, mn)
        y = fast._daz(np.float64(b[i]), ftz, mn)
        bits[i], flags[i] = rem(x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)


def _rsqrt_bits(a, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    for i in nb.prange(a.shape[0]):
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        bits[i], flags[i] = rsqrt(x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)


rsqrt_bits = fast.Twin(_rsqrt_bits, error_model="numpy")
rem_bits = fast.Twin(_rem_bits, error_model="numpy")
rem_vals = fast.Twin(_rem_vals, error_model="numpy")


@nb.njit(cache=True)
def rsqrt_values(x):
    """rsqrt_approx over a float64 array (test hook for the error bound)."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = rsqrt_approx(x[i])
    return out


# ---------------------------------------------------------------- entry points

def serves(op: str, name: str, prof=None) -> bool:
    return name in FORMATS.get(op, ())


def marked(op, name, operands, prof):
    """The compiled loop alone: (bits, flags) with FALLBACK marks."""
    fmt, lut, V, dec, mn = fast._scalars(name, prof.ftz)
    n = operands[0].shape[0]
    bits = np.zeros(n, operands[0].dtype)
    flags = np.zeros(n, np.uint8)
    if op == "TRSQRT":
        rsqrt_bits(operands[0], *fmt, *dec, mn, bits, flags)
    elif lut:                                        # FP16: binary32 values from the value table
        rem_vals(*(fast.gather(V, x) for x in operands), *fmt, mn, bits, flags)
    else:
        rem_bits(*operands, *fmt, *dec, mn, bits, flags)
    return bits, flags


def run(op, name, operands, prof, reference):
    """(bits, flags) of `op` on container-dtype 1-D operands; marked elements go to `reference`."""
    bits, flags = marked(op, name, operands, prof)
    if bits.shape[0] and flags.max() == FALLBACK:
        todo = np.flatnonzero(flags == FALLBACK)
        bits[todo], flags[todo] = reference(name, *(x[todo] for x in operands), prof=prof)
    return bits, flags
