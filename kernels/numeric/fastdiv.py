"""Compiled TDIV, TRECIP and TSQRT on FP32, TF32, HF32, FP16 and BF16 (profiles ieee and ftz).

Two tiers, each marking (flags 0xFF) every element it does not settle for the next one, so the
results are the reference's (ops_float.tdiv/trecip/tsqrt) by construction of the settled cases
and by test (tests/kernels/test_fastdiv.py, against exact rationals, SoftFloat and MPFR):

1. SIMD, profile ieee, every element settled (NaN and infinite operands and zero divisors by the
   hardware's IEEE result: specials.py): FP32 (`fp32_div`, `fp32_recip`, `fp32_sqrt`): the
   quotient or root in binary64, q = RN53(v), then one hardware conversion r = RN24(q).  Double
   rounding is innocuous here, subnormal quotients included (docs/numerics.md, "Narrow formats
   in wider hardware formats", Lemma D; for roots S. A. Figueroa, "When is double rounding
   innocuous?", ACM SIGNUM Newsletter 30(3), 1995, 53 >= 2*24 + 2; a root of a binary32 value is
   never subnormal): a midpoint m of any destination grid of p <= 25 bits lies more than 2^-51
   relative from v = x/y unless v = m, farther than q's error 2^-53.  NX is exact: r*y == x
   (division) and r*r == x (root) are computed exactly in binary64 (48-bit products of values
   at least 2^-149).  UF: inexact and q below the tininess threshold 2^-126 - 2^-151 (Lemma D
   holds for the unbounded-exponent grid too, so q and v are on the same side of it).  OF: the
   conversion overflows exactly when v rounded with an unbounded exponent exceeds the max.
   BF16 and FP16 TDIV the same way (`bf16_div`, `fp16_div`): q = RN53(v), then rounded to odd
   onto binary32's grid and by fastvec's encoders to 8 or 11 bits (round to odd: 24 >= p + 2);
   NX from the exact product of the p-bit result and y.  FP16 TSQRT (`fp16_sqrt`) in binary32
   (an FP16 value is a normal binary32, its root too; 24 >= 2*11 + 2).
   Operands are widened before any hardware division or root, so no binary32 subnormal reaches
   them (x86 takes a microcode assist on those).

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

from . import fast, specials as S
from .fast import bits_f64, f64_bits, round_rne
from .fastvec import (_F32_MAX, _NAN16, _NAN_BF16, _T16, _T32, _T_BF16, _bf16, _bf16_of64, _finite32, _flags,
                      _flags3, _fp16, _nan32, _ro32_of64, f32_half, half_f32)
from .flags import NX
from .rn import bits_f32, f32_bits, mul_rn

FALLBACK = np.uint8(0xFF)
FORMATS = ("FP32", "TF32", "HF32", "FP16", "BF16")     # tier 2's formats

_HIGH26 = np.uint64(0xFFFFFFFFF8000000)       # sign, exponent and the top 25 stored bits
_LOW27 = np.uint64((1 << 27) - 1)


# ---------------------------------------------------------------- tier 1: SIMD, ieee
# Rows of tier "fastdiv-simd" (fast.kernel): FP32 on binary32 values, BF16/FP16 on their codes;
# tier 2's routines below are tier "fastdiv": every format and op, both profiles.  Every tier-1
# routine settles every element (NaN and infinite operands and zero divisors by the hardware's
# IEEE result, specials.invalid; fastvec.py).

@fast.kernel("fastdiv-simd", "FP32", "TDIV", "raw")
def fp32_div(u, v):
    """(binary32 encoding, flags) of x / y for binary32 encodings (fastvec: why encodings):
    q = RN53(v), r = RN24(q) =
    RN24(v) for every quotient, subnormal ones included (module doc); NX from the exact
    product r*y (48 bits, at least 2^-298: binary64 holds it), UF when inexact and q below
    binary32's tininess threshold (RN24 with an unbounded exponent of q and of v agree)."""
    x, y = bits_f32(u), bits_f32(v)
    xd = np.float64(x)
    yd = np.float64(y)
    q = xd / yd
    r = np.float32(q)
    nx = mul_rn(np.float64(r), yd) != xd
    fin = _finite32(x) & _finite32(y) & (y != 0)
    sf = S.invalid(q != q, (x != x) | (y != y), S.snan32(x) | S.snan32(y)) | \
        S.divide_by_zero((y == 0) & _finite32(x) & (x != 0))
    return f32_bits(_nan32(r)), _flags3(nx, abs(q) < _T32, abs(r) > _F32_MAX) if fin else sf


@fast.kernel("fastdiv-simd", "FP32", "TRECIP", "raw")
def fp32_recip(v):
    return fp32_div(np.uint32(0x3F800000), v)


@fast.kernel("fastdiv-simd", "FP32", "TSQRT", "raw")
def fp32_sqrt(u):
    """RN24(RN53(sqrt x)) = RN24(sqrt x); a root is never tiny or overflowing; NX unless r*r = x
    (exact in binary64).  sqrt(-0) = -0; a negative x gives the hardware's NaN (NV)."""
    x = bits_f32(u)
    xd = np.float64(x)
    r = np.float32(math.sqrt(xd))               # LLVM makes this the binary32 root: the same value
    rd = np.float64(r)
    ok = (x >= 0) & _finite32(x)                               # -0 >= 0: settled
    sf = S.invalid(r != r, x != x, S.snan32(x))
    return f32_bits(_nan32(r)), _flags(mul_rn(rd, rd) != xd, False) if ok else sf


@fast.kernel("fastdiv-simd", "BF16", "TDIV", "raw")
def bf16_div(a, b):
    """(BF16 code, flags) of x / y: q = RN53(v), RN8(q) = RN8(v) (module doc), rounded by
    fastvec's _bf16_of64; NX from the exact product of the result and y."""
    x = _bf16(a)
    y = _bf16(b)
    xd, yd = np.float64(x), np.float64(y)
    q = xd / yd
    code, _, of = _bf16_of64(q)
    nx = (mul_rn(np.float64(_bf16(code)), yd) != xd) | of
    fin = _finite32(x) & _finite32(y) & (y != 0)
    sf = S.invalid(q != q, (x != x) | (y != y), S.snan_bf16(a) | S.snan_bf16(b)) | \
        S.divide_by_zero((y == 0) & _finite32(x) & (x != 0))
    return (code if q == q else _NAN_BF16), _flags3(nx, abs(q) < _T_BF16, of) if fin else sf


@fast.kernel("fastdiv-simd", "FP16", "TDIV", "raw")
def fp16_div(a, b):
    """As bf16_div for FP16: q = RN53(v), RN11(q) = RN11(v), RN11(RO24(q)) = RN11(q) by the
    hardware's binary16 conversion of fastvec._ro32_of64(q)."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    xd, yd = np.float64(x), np.float64(y)
    q = xd / yd
    code = f32_half(_ro32_of64(q)[0])
    of = (code & np.uint16(0x7FFF)) == np.uint16(0x7C00)
    nx = (mul_rn(np.float64(half_f32(code)), yd) != xd) | of
    fin = fx & fy & (y != 0)
    sf = S.invalid(q != q, (x != x) | (y != y), S.snan16(a) | S.snan16(b)) | \
        S.divide_by_zero((y == 0) & fx & (x != 0))
    return (code if q == q else _NAN16), _flags3(nx, abs(q) < _T16, of) if fin else sf


@fast.kernel("fastdiv-simd", "FP16", "TSQRT", "raw")
def fp16_sqrt(a):
    """The root in binary32 (x >= 2^-24 or 0: normal, no assist), RN11(RN24(sqrt x)) =
    RN11(sqrt x) (24 >= 2*11 + 2) by the hardware's binary16 conversion; NX unless the result
    squared (22 bits, exact in binary32) is x."""
    x, fx = _fp16(a)
    s = math.sqrt(x)
    code = f32_half(s)
    r = half_f32(code)
    ok = (x >= 0) & fx
    sf = S.invalid(s != s, x != x, S.snan16(a))
    return (code if s == s else _NAN16), _flags(mul_rn(r, r) != x, False) if ok else sf


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
