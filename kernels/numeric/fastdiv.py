"""Compiled TDIV, TRECIP and TSQRT on FP32, TF32, HF32, FP16 and BF16 (profiles ieee and ftz).

Two tiers, each marking (flags 0xFF) every element it does not settle for the next one, so the
results are the reference's (ops_float.tdiv/trecip/tsqrt) by construction of the settled cases
and by test (tests/kernels/test_fastdiv.py, against exact rationals, SoftFloat and MPFR):

1. SIMD, profile ieee: FP32 (`fp32_div`, `fp32_recip`, `fp32_sqrt`): the quotient or root
   in binary64, q = RN53(v), then one hardware conversion r = RN24(q).  Double rounding is
   innocuous here: for +, -, *, / and sqrt of p-bit operands, RN_p(RN_q(v)) = RN_p(v) whenever
   q >= 2p + 2 (S. A. Figueroa, "When is double rounding innocuous?", ACM SIGNUM Newsletter
   30(3), 1995; P. Roux, "Innocuous double rounding of basic arithmetic operations", Journal of
   Formalized Reasoning 7(1), 2014, with gradual underflow) and 53 >= 2*24 + 2.  The direct
   reason: q could only round wrongly if it landed on a midpoint m of the binary32 grid (25
   bits) while v != m; but x - m*y (49-bit m*y) and x - m^2 (50-bit m^2) are nonzero multiples
   of a quantum at least 2^-50 of x, so v lies at least 2^-51 relative from m, farther than
   q's error 2^-53.  NX is exact: r*y == x (division) and r*r == x (root) are computed exactly
   in binary64 (48-bit products).  OF: the hardware conversion overflows exactly when v rounded
   with an unbounded exponent exceeds the max (then r is infinite, OF|NX).  Settled: finite
   operands, nonzero divisor, and |q| > 2^-126 (so v > 2^-126: never tiny, never UF) or a zero
   dividend (an exact zero of the xor sign); the root: 0 <= x finite (sqrt(-0) = -0; a root
   is never tiny or overflowing).  Everything else goes to tier 2.
   BF16 and FP16 TDIV the same way (`bf16_div`, `fp16_div`): r = RN24(RN53(v)) = RN24(v), then
   fastvec's exact encoders round r to 8 or 11 bits, RN_p(RN24(v)) = RN_p(v) since 24 >= 2p + 2
   (the same theorem, unbounded exponent: overflow is decided right); NX from the exact product
   of the p-bit result and y (or overflow); settled above the format's normal threshold.

2. Scalar, all five formats, both profiles (`div_bits`/`div_vals`, `unary_bits`/`unary_vals`):
   q = RN53(v) handed with the direction of v - q to fast.round_rne, the rounding routine that
   mirrors rounding.round_pack (RNE, subnormals, tininess after rounding, overflow, ftz flush):
   exact for every destination of at most 52 bits, as no rounding boundary lies strictly
   between q and v.  Division: the remainder x - q*y is split without fma as
   (x - qh*y) - ql*y, qh = q with its low 27 significand bits cleared: qh*y (50 bits) and
   ql*y (51 bits) are exact, x - qh*y is exact by Sterbenz's lemma (qh*y is within 2^-24 of
   x), so the final subtraction has the remainder's sign (zero only when v = q).  Root:
   direction 0 (the midpoint argument above: q is never a midpoint of a <= 24-bit grid), NX
   unless q has at most 26 significant bits and q*q == x exactly; a root of these formats is
   always normal (sqrt(2^-149) > 2^-126), so never UF or a flush.  Marked: NaN or infinite
   operands, a zero divisor, a negative radicand -> the reference.

The scalar routines use arithmetic, comparisons, bit casts and rn.py's mul_rn (no fma on any
target): Numba compiles them for the CPU and Numba-CUDA (kernels/numeric/cuda.py) for the GPU
(`div.rn.f64`, `sqrt.rn.f64`, `cvt.rn.f32.f64`; tests/kernels/test_cuda_ptx.py rejects
`approx`, `.ftz` and `fma`).  Loops are `fast.Twin`s: small inputs never enter a parallel
region.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from . import fast
from .fast import bits_f64, f64_bits, round_rne
from .fastvec import _F32_MAX, _bf16, _finite32, _flags, _fp16, _rne_bf16, _rne_fp16
from .flags import NX
from .rn import f32_bits, mul_rn

FALLBACK = np.uint8(0xFF)
FORMATS = ("FP32", "TF32", "HF32", "FP16", "BF16")     # tier 2's formats

_NORMAL32 = 2.0 ** -126
_NORMAL16 = 2.0 ** -14
_HIGH26 = np.uint64(0xFFFFFFFFF8000000)       # sign, exponent and the top 25 stored bits
_LOW27 = np.uint64((1 << 27) - 1)


# ---------------------------------------------------------------- tier 1: SIMD FP32, ieee
# Rows of tier "fastdiv-simd" (fast.kernel): FP32 on binary32 values, BF16/FP16 TDIV on their
# codes.  Tier 2's routines below are tier "fastdiv": every format and op, both profiles.

@fast.kernel("fastdiv-simd", "FP32", "TDIV", "f32")
def fp32_div(x, y):
    """(binary32 result, flags) of x / y for binary32 values x, y."""
    xd = np.float64(x)
    yd = np.float64(y)
    q = xd / yd
    r = np.float32(q)                                          # RN24(RN53(v)) = RN24(v)
    nx = mul_rn(np.float64(r), yd) != xd                       # exact 48-bit product
    ok = _finite32(x) & _finite32(y) & (y != 0) & ((abs(q) > _NORMAL32) | (x == 0))
    return r, _flags(nx, abs(r) > _F32_MAX) if ok else FALLBACK


@fast.kernel("fastdiv-simd", "FP32", "TRECIP", "f32")
def fp32_recip(x):
    return fp32_div(np.float32(1.0), x)


@fast.kernel("fastdiv-simd", "FP32", "TSQRT", "f32")
def fp32_sqrt(x):
    xd = np.float64(x)
    r = np.float32(math.sqrt(xd))                              # sqrt(-0) = -0; NaN below: marked
    rd = np.float64(r)
    ok = (x >= 0) & _finite32(x)                               # -0 >= 0: settled
    return r, _flags(mul_rn(rd, rd) != xd, False) if ok else FALLBACK


@fast.kernel("fastdiv-simd", "BF16", "TDIV", "raw")
def bf16_div(a, b):
    """(BF16 code, flags) of x / y: RN8(RN24(RN53(v))) = RN8(v) (53 >= 2*24 + 2, 24 >= 2*8 + 2),
    the last rounding by fastvec's carry trick; NX from the exact 16-bit product r*y."""
    x = _bf16(a)
    y = _bf16(b)
    q = np.float64(x) / np.float64(y)
    code, _, of = _rne_bf16(f32_bits(np.float32(q)))
    nx = (mul_rn(np.float64(_bf16(code)), np.float64(y)) != np.float64(x)) | of
    ok = _finite32(x) & _finite32(y) & (y != 0) & ((abs(q) > _NORMAL32) | (x == 0))
    return code, _flags(nx, of) if ok else FALLBACK


@fast.kernel("fastdiv-simd", "FP16", "TDIV", "raw")
def fp16_div(a, b):
    """As bf16_div for FP16 (24 >= 2*11 + 2), settled above FP16's normal threshold 2^-14 (never
    tiny); an overflow is NX even when the infinite code's stand-in value times y gives x."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    q = np.float64(x) / np.float64(y)
    code, _, of = _rne_fp16(np.float32(q))
    r, _ = _fp16(code)
    nx = (mul_rn(np.float64(r), np.float64(y)) != np.float64(x)) | of
    ok = fx & fy & (y != 0) & ((abs(q) > _NORMAL16) | (x == 0))
    return code, _flags(nx, of) if ok else FALLBACK


# ---------------------------------------------------------------- tier 2: fast.round_rne

@nb.njit(inline="always", error_model="numpy")
def _direction(v):
    return np.int64(v > 0) - np.int64(v < 0)


@fast.kernel("fastdiv", FORMATS, "TDIV")
def divide(op, x, y, fmt):
    """(code, flags) of x / y rounded to the format, or flags FALLBACK (non-finite operand,
    zero divisor)."""
    ok = math.isfinite(x) and math.isfinite(y) and y != 0.0
    q = x / y if ok else 0.0
    qh = bits_f64(f64_bits(q) & _HIGH26)
    rem = (x - mul_rn(qh, y)) - mul_rn(q - qh, y)             # sign of x - q*y, see above
    code, f = round_rne(q, _direction(rem) * _direction(y), fmt)
    return code, f if ok else FALLBACK


@nb.njit(inline="always", error_model="numpy")
def root(x, fmt):
    ok = math.isfinite(x) and x >= 0.0                         # -0 included: sqrt(-0) = -0
    s = math.sqrt(x) if ok else 0.0
    code, _ = round_rne(s, 0, fmt)
    exact = ((f64_bits(s) & _LOW27) == 0) & (mul_rn(s, s) == x)
    return code, (np.uint8(0) if exact else np.uint8(NX)) if ok else FALLBACK


@fast.kernel("fastdiv", FORMATS, {"TRECIP": 0, "TSQRT": 1})
def unary(op, x, fmt):
    """op 0: TRECIP (1 / x), 1: TSQRT."""
    if op == 0:
        return divide(op, 1.0, x, fmt)
    return root(x, fmt)
