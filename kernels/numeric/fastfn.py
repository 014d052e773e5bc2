"""Compiled TRSQRT on FP32, TF32 and HF32 (profiles ieee and ftz): the binary64 value and a
rounding test, every element it cannot decide marked (flags 0xFF) for the reference
(transcendental.trsqrt, exact by its double-double + MPFR design).

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
OPS = ("TRSQRT",)
FORMATS = ("FP32", "TF32", "HF32")

NEAR_ULPS = 4                                   # > 2.01: the binary64 value's error bound
_MANT = np.uint64((1 << 52) - 1)
_ONE = np.uint64(1)


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


def _rsqrt_bits(a, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    for i in nb.prange(a.shape[0]):
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        bits[i], flags[i] = rsqrt(x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)


rsqrt_bits = fast.Twin(_rsqrt_bits, error_model="numpy")


@nb.njit(cache=True)
def rsqrt_values(x):
    """rsqrt_approx over a float64 array (test hook for the error bound)."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = rsqrt_approx(x[i])
    return out


# ---------------------------------------------------------------- entry points

def serves(op: str, name: str, prof=None) -> bool:
    return op in OPS and name in FORMATS


def marked(op, name, operands, prof):
    """The compiled loop alone: (bits, flags) with FALLBACK marks."""
    fmt, _, _, dec, mn = fast._scalars(name, prof.ftz)
    n = operands[0].shape[0]
    bits = np.zeros(n, operands[0].dtype)
    flags = np.zeros(n, np.uint8)
    rsqrt_bits(operands[0], *fmt, *dec, mn, bits, flags)
    return bits, flags


def run(op, name, operands, prof, reference):
    """(bits, flags) of `op` on uint32 1-D operands; marked elements go to `reference`."""
    bits, flags = marked(op, name, operands, prof)
    if bits.shape[0] and flags.max() == FALLBACK:
        todo = np.flatnonzero(flags == FALLBACK)
        bits[todo], flags[todo] = reference(name, *(x[todo] for x in operands), prof=prof)
    return bits, flags
