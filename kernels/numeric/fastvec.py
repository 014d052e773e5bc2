"""Vectorisable paths: TADD, TSUB, TMUL, TFMA on FP32, BF16 and FP16, profile `ieee` (RNE).

fast.py rounds with integer code written for one element at a time (~1.2 ns/element); these
kernels let the hardware's own binary32/binary64 arithmetic and conversions do the work, so LLVM
turns each loop into SIMD code and NVVM into a few instructions.  Every routine settles every
element in the same pass: finite operands by the arguments below, NaN and infinite operands by
the hardware's IEEE result with the canonical NaN and specials.invalid's flags (specials.py).
No operand or intermediate is ever a binary32/binary64 subnormal where the hardware multiplies,
divides or takes a root (x86 takes a microcode assist, ~100x slower, on those): subnormal
operands of the narrow formats are normal in the wider format used.  docs/numerics.md ("Narrow
formats in wider hardware formats") states and proves each theorem used; tests:
tests/kernels/test_fastvec.py, test_half_formats.py, test_specials.py.

  FP32 add/sub  s = x + y in binary32 is RN24 of the exact sum; TwoSum's error e is exact
                (gradual underflow, no overflow), so NX = (e != 0); OF when s overflows (then
                e is NaN, NX too); never UF: a sum in the subnormal range is exact.  (Binary32
                additions take no assist on subnormals.)
  FP32 mul      p = x*y in binary64, exact (48 bits, at least 2^-298: normal), r = RN24(p) by
                the conversion; NX = r != p, UF = NX and |p| below the tininess threshold, OF.
  FP32 fma      p = x*y exact in binary64, (s, e) = TwoSum(p, z) exact (every term a multiple of
                2^-298 below 2^257), ro = s + e rounded to odd at 53 bits (`_ro64`), r =
                RN24(ro) = RN24(v) by the conversion (round to odd, 53 >= 24 + 2).
  BF16 add/sub  s = RN24(x + y) in binary32, then RN8 by the carry trick: RN8(RN24(v)) = RN8(v)
                for a sum of two 8-bit values (double rounding is innocuous for + when
                24 >= 2*8 + 2; a sum in the subnormal range is exact); NX = e != 0 or dropped.
  BF16 mul/fma  as FP32 in binary64 (a BF16 product can be far below binary32's range), then
                RN8(RO24(.)) by `_bf16_of64`: round to odd onto binary32's grid, then the carry
                trick (24 >= 8 + 2).
  FP16          decoded and encoded by the hardware's binary16 conversions (F16C; integer code
                where the CPU has none, rn.HARDWARE_HALF): sums as BF16's (24 >= 2*11 + 2),
                products exact in binary32 (22 bits, at least 2^-48), fma by TwoSum in binary32
                (exact below 2^33) and round to odd at 24 bits before the conversion; UF from
                the binary32 value (exact, or odd at 24 bits, on the same side of FP16's
                tininess threshold as the exact result).
Zeros: an exact zero s has the sign IEEE 754 gives x + y, x * y or x*y + z in RNE, as the
reference does.

The scalar routines use arithmetic, comparisons, conversions and bit casts only, with
`mul_rn`/`add_rn` wherever a product feeds a sum: Numba compiles them for the CPU (plain
fmul/fadd, which LLVM never contracts without fast-math) and Numba-CUDA for the GPU (the `.rn`
NVVM intrinsics, which ptxas never fuses into `fma`; `cvt.rn.f16.f32` for the binary16
conversion).  kernels/numeric/cuda.py compiles these same routines into CUDA kernels.
"""
from __future__ import annotations

import math
import threading
from functools import lru_cache

import numba as nb
import numpy as np
from . import fast, specials as S
from .fast import bits_f64, f64_bits
from .rn import HARDWARE_HALF, add_rn, bits_f32, f32_bits, fma_rn, hw_f32_half, hw_half_f32, mul_rn, two_sum
from .flags import NX, OF, UF

FALLBACK = np.uint8(0xFF)

_F32_MAX = np.float32(3.4028234663852886e38)


# ---------------------------------------------------------------- scalar routines
# Each routine registers its row of tier "fastvec" in the kernel registry (fast.kernel): FP32 on
# binary32 values, BF16/FP16 on their codes; each runs as a fast.loop (serial below
# fast.PARALLEL_MIN elements, fast.Twin).  Every routine settles every element: finite operands
# by the argument of the module doc, NaN and infinite operands by the hardware's IEEE result
# with the canonical NaN and specials.invalid's flags.

_NAN32 = np.uint32(0x7FC00000)        # canonical quiet NaNs (docs/numerics.md)
_NAN16 = np.uint16(0x7E00)
_NAN_BF16 = np.uint16(0x7FC0)
_T32 = 2.0 ** -126 - 2.0 ** -151      # below this (exact) value, tiny after rounding to binary32
_T16 = 2.0 ** -14 - 2.0 ** -26        # ... to FP16
_T_BF16 = 2.0 ** -126 - 2.0 ** -135   # ... to BF16


@nb.njit(inline="always", error_model="numpy")
def _flags(nx, of):
    return np.uint8(nx) * np.uint8(NX) | np.uint8(of) * np.uint8(OF)


@nb.njit(inline="always", error_model="numpy")
def _flags3(nx, tiny, of):
    """NX when inexact, UF when inexact and tiny (after rounding), OF."""
    return np.uint8(nx) * np.uint8(NX) | np.uint8(nx & tiny) * np.uint8(UF) | np.uint8(of) * np.uint8(OF)


@nb.njit(inline="always", error_model="numpy")
def _finite32(x):
    return abs(x) <= _F32_MAX          # False for NaN and infinities; a compare, so it vectorises


@nb.njit(inline="always", error_model="numpy")
def _nan32(r):
    """r, or the canonical binary32 NaN when r is a NaN."""
    return r if r == r else bits_f32(_NAN32)


@nb.njit(inline="always", error_model="numpy")
def _ro64(s, e):
    """s + e rounded to odd at 53 bits, for (s, e) = TwoSum: s when e == 0, else the one of s
    and its neighbour toward e whose last significand bit is 1 (s = 0 only with e = 0)."""
    u = f64_bits(s)
    step = (e != 0) & ((u & np.uint64(1)) == np.uint64(0))
    away = (e > 0) == (s > 0)                         # the neighbour toward e is larger in magnitude
    return bits_f64((u + np.uint64(1) if away else u - np.uint64(1)) if step else u)


@nb.njit(inline="always", error_model="numpy")
def _ro32(s, e):
    """As _ro64 at 24 bits, for a binary32 TwoSum."""
    u = f32_bits(s)
    step = (e != 0) & (_U(u & _U(1)) == _U(0))
    away = (e > 0) == (s > 0)
    return bits_f32(_U(u + _U(1)) if step & away else (_U(u - _U(1)) if step else u))


@nb.njit(inline="always", error_model="numpy")
def _ro32_of64(d):
    """(binary32 f, inexact): finite binary64 d rounded to odd on binary32's grid (subnormals
    included: a step from an even f toward d), and whether that dropped anything.  A d beyond
    binary32's range gives the odd max finite (round to odd never overflows)."""
    f = np.float32(d)                                 # the hardware's RN24 (conversions: no assists)
    back = np.float64(f)
    inexact = back != d
    u = f32_bits(f)
    step = inexact & (_U(u & _U(1)) == _U(0))
    up = abs(back) < abs(d)
    return bits_f32(_U(u + _U(1)) if step & up else (_U(u - _U(1)) if step else u)), inexact


# The FP32 routines take and return the encodings (kind 'raw') and bit-cast them: a binary32
# signalling NaN passed as a value can come back quiet wherever a value is converted on the way
# (the CUDA simulator's calls from Python did), and its NV would be lost.

@fast.kernel("fastvec", "FP32", "TADD", "raw")
def fp32_add(u, v):
    """(binary32 encoding, flags) of a + b for binary32 encodings u, v."""
    a, b = bits_f32(u), bits_f32(v)
    s, e = two_sum(a, b)
    f = _flags(e != 0, abs(s) > _F32_MAX)                  # overflow: e is NaN, so NX too
    sf = S.invalid(s != s, (a != a) | (b != b), S.snan32(a) | S.snan32(b))
    return f32_bits(_nan32(s)), f if _finite32(a) & _finite32(b) else sf


@fast.kernel("fastvec", "FP32", "TSUB", "raw")
def fp32_sub(u, v):
    return fp32_add(u, v ^ np.uint32(0x80000000))


@fast.kernel("fastvec", "FP32", "TMUL", "raw")
def fp32_mul(u, v):
    """x*y exactly in binary64 (48 bits, at least 2^-298: normal, so no operand or result the
    hardware treats as subnormal), rounded once to binary32 by the conversion."""
    a, b = bits_f32(u), bits_f32(v)
    p = mul_rn(np.float64(a), np.float64(b))
    r = np.float32(p)
    f = _flags3(np.float64(r) != p, abs(p) < _T32, abs(r) > _F32_MAX)
    sf = S.invalid(p != p, (a != a) | (b != b), S.snan32(a) | S.snan32(b))
    return f32_bits(_nan32(r)), f if _finite32(a) & _finite32(b) else sf


@fast.kernel("fastvec", "FP32", "TFMA", "raw")
def fp32_fma(u, v, w):
    """x*y exactly in binary64, + z by TwoSum (exact: every term is a multiple of 2^-298 below
    2^257), rounded to odd at 53 bits and then once to binary32 by the conversion."""
    a, b, c = bits_f32(u), bits_f32(v), bits_f32(w)
    x, y, z = np.float64(a), np.float64(b), np.float64(c)
    s, e = two_sum(mul_rn(x, y), z)
    fin = _finite32(a) & _finite32(b) & _finite32(c)
    ro = _ro64(s, e) if fin else s                    # non-finite: e is NaN, s the IEEE result
    r = np.float32(ro)
    f = _flags3((e != 0) | (np.float64(r) != ro), abs(ro) < _T32, abs(r) > _F32_MAX)
    nan_in = (a != a) | (b != b) | (c != c)
    zero_inf = (math.isinf(x) & (y == 0)) | ((x == 0) & math.isinf(y))
    sf = S.invalid(s != s, nan_in, S.snan32(a) | S.snan32(b) | S.snan32(c) | zero_inf)
    return f32_bits(_nan32(r)), f if fin else sf


# ---------------------------------------------------------------- FP32 quick parts
# The block loops of emulator/blockprog.py need only each PE's status (the OR of its elements'
# flags), not every element's flags: for binary32 add, sub, mul and fma they run these quick
# parts, which compute the result with the hardware's own correctly rounded binary32 operation
# and answer, per element, three words that reduce in SIMD lanes (an OR -- taken as a max, see
# emulator/blockprog.py --, a min, a max: OR-ing booleans or flag bytes kept LLVM from
# vectorising these loops well, measured 2-5x slower):
#   nx    nonzero iff the element is inexact (an exact error-free residual, its sign bit shifted
#         out; TFMA: ~|r| where its exactness test fails)
#   low   below the routine's bound (QUICK[full][3]) only where the exact result may be tiny:
#         nonzero and at most 2^-126 in magnitude (TMUL: 2^-100, see fp32_mul_quick; TFMA: where
#         the product is below 2^-100, which covers every inexact tiny result, fp32_fma_quick)
#   high  |binary32 result| bits: above QUICK_HIGH iff the result is infinite or NaN (an operand
#         was, or the result overflowed; TFMA: or the product overflowed)
# A PE whose low or high is out of bounds is redone with the full routine (fp32_add, ...); for
# every other PE each element's full-routine flags are NX or nothing (no NV: every operand is
# finite; no OF: no result overflowed; no UF: none is tiny) and its result the one below, so the
# PE's status is NX iff some nx is nonzero.  docs/numerics.md, "FP32 quick parts".

QUICK_HIGH = np.uint32(0x7F7FFFFF)                  # binary32 bits of the max finite value
_MAX32 = np.uint32(0xFFFFFFFF)
_LOW_MUL = np.uint32(27 << 23)                      # binary32 bits of 2^-100


@nb.njit(inline="always", error_model="numpy")
def fp32_add_quick(u, v):
    """(code, nx, low, high) of a + b: s = RN24(a + b) by the hardware, exact error e by TwoSum
    (exact for finite operands unless s overflows, which `high` catches); a sum is never tiny
    and inexact (a sum in the subnormal range is exact), so low never asks for the redo."""
    s, e = two_sum(bits_f32(u), bits_f32(v))
    code = f32_bits(s)
    return code, _U(f32_bits(e) << _U(1)), _MAX32, _U(code & _U(0x7FFFFFFF))


@nb.njit(inline="always", error_model="numpy")
def fp32_sub_quick(u, v):
    return fp32_add_quick(u, v ^ np.uint32(0x80000000))


@nb.njit(inline="always", error_model="numpy")
def fp32_mul_quick(u, v):
    """(code, nx, low, high) of a * b: r = RN24(a*b) by the hardware's binary32 multiply; its
    error a*b - r is a binary32 whenever e_a + e_b >= emin + p - 1 = -103 (the error of a
    rounded product, Boldo and Daumas), which |r| >= 2^-100 ensures (|a*b| < 2^(e_a + e_b + 2)),
    so the fused multiply-add a*b - r gives it exactly.  low: |r|'s bits, or all ones when an
    operand is zero (an exact zero product): below 2^-100's bits for every result that may be
    tiny or inexact by another rule, zero results of nonzero operands included."""
    a, b = bits_f32(u), bits_f32(v)
    r = mul_rn(a, b)
    err = fma_rn(a, b, -r)
    code = f32_bits(r)
    mag = _U(code & _U(0x7FFFFFFF))
    return code, _U(f32_bits(err) << _U(1)), mag if (a != 0) & (b != 0) else _MAX32, mag


@nb.njit(inline="always", error_model="numpy")
def fp32_fma_quick(u, v, w):
    """(code, nx, low, high) of a*b + c, in binary32 alone (no conversion to binary64: those
    took half the vector ports).  r = RN24(a*b + c) by the hardware's fused multiply-add (one
    rounding, rn.fma_rn); r is exact iff r - c = a*b, tested as (s, e) == (ph, pl) with
    (s, e) = TwoSum(r, -c) and ph = RN24(a*b), pl = RN24(a*b - ph) by the fused multiply-add:
    if exact, s = RN24(a*b) = ph and e = a*b - ph, a binary32, so pl = e; conversely
    r - c = s + e = ph + pl = a*b wherever pl is a*b - ph exactly -- the error of a rounded
    product is a binary32 when |ph| >= 2^-100 (as fp32_mul_quick) or an operand is zero.
    TwoSum is exact unless s overflows, and then r - c = a*b would make ph infinite.
    low: |ph|'s bits, or all ones when an operand is zero: below 2^-100's bits for every
    product whose error may not be a binary32, and for every inexact tiny result too (with
    |ph| >= 2^-100, a*b is a multiple of ulp(a) ulp(b) >= 2^-148 and c of 2^-149, so a value
    below 2^-126 is a subnormal binary32: exact).  high: |r|'s and |ph|'s bits, so an
    overflowed product (ph infinite, r maybe finite) is redone too.  nx: ~|r| where inexact."""
    a, b, c = bits_f32(u), bits_f32(v), bits_f32(w)
    r = fma_rn(a, b, c)
    ph = mul_rn(a, b)
    pl = fma_rn(a, b, -ph)
    s = add_rn(r, -c)                 # TwoSum(r, -c) with the negation moved out of the last sum
    bb = s - r                        # (RN is odd: one instruction fewer, the same (s, e))
    e = (r - (s - bb)) - (c + bb)
    code = f32_bits(r)
    mag = _U(code & _U(0x7FFFFFFF))
    magp = _U(f32_bits(ph) & _U(0x7FFFFFFF))
    low_r = _MAX32 if (s == ph) & (e == pl) else mag       # as a blend, the fastest nx measured
    return code, _U(low_r ^ _MAX32), magp if (a != 0) & (b != 0) else _MAX32, max(mag, magp)


# the quick part of each full routine, as (quick, nx's zero, low's start, low's bound): 32-bit
# words throughout (16 lanes to a 512-bit vector); emulator/blockprog.py looks them up by the
# registered routine
QUICK = {fp32_add: (fp32_add_quick, np.uint32(0), _MAX32, np.uint32(0)),
         fp32_sub: (fp32_sub_quick, np.uint32(0), _MAX32, np.uint32(0)),
         fp32_mul: (fp32_mul_quick, np.uint32(0), _MAX32, _LOW_MUL),
         fp32_fma: (fp32_fma_quick, np.uint32(0), _MAX32, _LOW_MUL)}


_U = np.uint32
# Numba types integer arithmetic on uint32 as 64-bit: the BF16 bit operations below cast every
# intermediate back to uint32, so LLVM keeps 32-bit lanes (fastconvert.py does the same).


@nb.njit(inline="always", error_model="numpy")
def _bf16(u):
    return bits_f32(_U(_U(u) << _U(16)))


@nb.njit(inline="always", error_model="numpy")
def _rne_bf16(w):
    """(BF16 code, dropped bits nonzero, overflowed) of binary32 pattern w rounded to nearest
    even by the carry trick (a carry out of the top code is infinity: 0x7F80 | sign)."""
    code = _U(_U(_U(w + _U(0x7FFF)) + _U(_U(w >> _U(16)) & _U(1))) >> _U(16))
    of = _U(code & _U(0x7FFF)) == _U(0x7F80)
    return np.uint16(code), _U(w & _U(0xFFFF)) != _U(0), of


@nb.njit(inline="always", error_model="numpy")
def _bf16_of64(d):
    """(BF16 code, inexact, overflowed) of finite binary64 d rounded once to nearest even:
    RN8(RO24(d)) = RN8(d), 24 >= 8 + 2 (the round-to-odd theorem)."""
    f, inexact = _ro32_of64(d)
    code, dropped, of = _rne_bf16(f32_bits(f))
    return code, inexact | dropped | of, of


@nb.njit(inline="always", error_model="numpy")
def _bf16_special(code, r, a, b):
    """code, or the canonical NaN when the hardware result r is a NaN."""
    return code if r == r else _NAN_BF16


@fast.kernel("fastvec", "BF16", "TADD", "raw")
def bf16_add(a, b):
    """(BF16 code, flags) of a + b for BF16 codes a, b."""
    x = _bf16(a)
    y = _bf16(b)
    s, e = two_sum(x, y)
    code, dropped, of = _rne_bf16(f32_bits(s))
    f = _flags((e != 0) | dropped | of, of)
    sf = S.invalid(s != s, (x != x) | (y != y), S.snan_bf16(a) | S.snan_bf16(b))
    return _bf16_special(code, s, a, b), f if _finite32(x) & _finite32(y) else sf


@fast.kernel("fastvec", "BF16", "TSUB", "raw")
def bf16_sub(a, b):
    return bf16_add(a, b ^ np.uint16(0x8000))


@fast.kernel("fastvec", "BF16", "TMUL", "raw")
def bf16_mul(a, b):
    """x*y exactly in binary64 (16 bits, at least 2^-266), rounded once (_bf16_of64)."""
    x = _bf16(a)
    y = _bf16(b)
    p = mul_rn(np.float64(x), np.float64(y))
    code, nx, of = _bf16_of64(p)
    sf = S.invalid(p != p, (x != x) | (y != y), S.snan_bf16(a) | S.snan_bf16(b))
    return _bf16_special(code, p, a, b), _flags3(nx, abs(p) < _T_BF16, of) if _finite32(x) & _finite32(y) else sf


@fast.kernel("fastvec", "BF16", "TFMA", "raw")
def bf16_fma(a, b, c):
    """x*y exactly in binary64, + z by TwoSum (exact), rounded to odd at 53 bits, then once to
    BF16 (_bf16_of64: odd roundings compose, RO24(RO53(v)) = RO24(v))."""
    x = _bf16(a)
    y = _bf16(b)
    w = _bf16(c)
    xd, yd = np.float64(x), np.float64(y)
    s, e = two_sum(mul_rn(xd, yd), np.float64(w))
    fin = _finite32(x) & _finite32(y) & _finite32(w)
    ro = _ro64(s, e) if fin else s
    code, nx, of = _bf16_of64(ro)
    nan_in = (x != x) | (y != y) | (w != w)
    zero_inf = (math.isinf(xd) & (yd == 0)) | ((xd == 0) & math.isinf(yd))
    sf = S.invalid(s != s, nan_in, S.snan_bf16(a) | S.snan_bf16(b) | S.snan_bf16(c) | zero_inf)
    return _bf16_special(code, s, a, b), _flags3((e != 0) | nx, abs(ro) < _T_BF16, of) if fin else sf


# FP16: decoded and encoded by the hardware's binary16 conversions (rn.hw_half_f32/hw_f32_half:
# F16C on x86, cvt on CUDA), which handle subnormals, infinities and NaNs at full speed; where
# the CPU has none (rn.HARDWARE_HALF), by integer code: the scaling trick to decode (exponent
# field moved into binary32 and multiplied by 2^112, exact, also placing subnormals) and the
# integer carry trick in the normal range and a hardware addition of 0.5 (whose RNE drops
# exactly the bits FP16 subnormals cannot hold) below it to encode (F. Giesen's
# float_to_half_fast3_rtne).
_F16_SCALE = np.float32(2.0 ** 112)
_F16_MIN_NORMAL = 113 << 23           # binary32 pattern of 2^-14
_F16_OVERFLOW = 143 << 23             # binary32 pattern of 2^16: at or above, infinity
_F16_TINY = np.float32(_T16)          # tiny after rounding below this (ties: even)


@nb.njit(inline="always", error_model="numpy")
def sw_half_f32(h):
    """binary32 value of FP16 code h (integer decode; NaNs come back quiet, payload kept)."""
    u = np.uint32(h)
    mag = u & np.uint32(0x7FFF)
    v = f32_bits(mul_rn(bits_f32(mag << np.uint32(13)), _F16_SCALE))
    special = (mag << np.uint32(13)) | np.uint32(0x7F800000) | (np.uint32(0x400000) if mag > np.uint32(0x7C00) else np.uint32(0))
    v = special if mag >= np.uint32(0x7C00) else v
    return bits_f32(v | ((u & np.uint32(0x8000)) << np.uint32(16)))


@nb.njit(inline="always", error_model="numpy")
def sw_f32_half(r):
    """FP16 code of binary32 r rounded to nearest even (integer encode; NaNs quiet, the
    payload's top bits kept, as the hardware conversion does)."""
    w = f32_bits(r)
    f = w & np.uint32(0x7FFFFFFF)
    odd = (f >> np.uint32(13)) & np.uint32(1)
    normal = (f - np.uint32(112 << 23) + np.uint32(0xFFF) + odd) >> np.uint32(13)
    t = add_rn(bits_f32(f), np.float32(0.5))
    sub = f32_bits(t) - np.uint32(126 << 23)
    code = sub if f < np.uint32(_F16_MIN_NORMAL) else normal
    code = np.uint32(0x7C00) if f >= np.uint32(_F16_OVERFLOW) else code
    code = (np.uint32(0x7E00) | ((f >> np.uint32(13)) & np.uint32(0x3FF))) if f > np.uint32(0x7F800000) else code
    return np.uint16(code | ((w >> np.uint32(16)) & np.uint32(0x8000)))


half_f32 = hw_half_f32 if HARDWARE_HALF else sw_half_f32
f32_half = hw_f32_half if HARDWARE_HALF else sw_f32_half


@nb.njit(inline="always", error_model="numpy")
def _fp16(h):
    """(binary32 value, finite) of FP16 code h."""
    return half_f32(h), (np.uint32(h) & np.uint32(0x7C00)) != np.uint32(0x7C00)


@nb.njit(inline="always", error_model="numpy")
def _fp16_flags(nx, r, of):
    uf = nx & (abs(r) < _F16_TINY)
    return np.uint8(nx) * np.uint8(NX) | np.uint8(uf) * np.uint8(UF) | np.uint8(of) * np.uint8(OF)


@nb.njit(inline="always", error_model="numpy")
def _fp16_round(r):
    """(FP16 code, inexact, overflowed) of finite binary32 r rounded to nearest even."""
    h = f32_half(r)
    return h, half_f32(h) != r, (h & np.uint16(0x7FFF)) == np.uint16(0x7C00)


@nb.njit(inline="always", error_model="numpy")
def _fp16_special(code, r):
    return code if r == r else _NAN16


@fast.kernel("fastvec", "FP16", "TADD", "raw")
def fp16_add(a, b):
    """s = RN24(x + y) and RN11(RN24(v)) = RN11(v) for a sum of 11-bit values (24 >= 2*11 + 2);
    near the tininess threshold such a sum is exact in binary32, so |s| decides tininess."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    s, e = two_sum(x, y)
    code, dropped, of = _fp16_round(s)
    sf = S.invalid(s != s, (x != x) | (y != y), S.snan16(a) | S.snan16(b))
    return _fp16_special(code, s), _fp16_flags((e != 0) | dropped, s, of) if fx & fy else sf


@fast.kernel("fastvec", "FP16", "TSUB", "raw")
def fp16_sub(a, b):
    return fp16_add(a, b ^ np.uint16(0x8000))


@fast.kernel("fastvec", "FP16", "TMUL", "raw")
def fp16_mul(a, b):
    """x*y (22 bits, >= 2^-48) is exact in binary32: one rounding."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    p = mul_rn(x, y)
    code, nx, of = _fp16_round(p)
    sf = S.invalid(p != p, (x != x) | (y != y), S.snan16(a) | S.snan16(b))
    return _fp16_special(code, p), _fp16_flags(nx, p, of) if fx & fy else sf


@fast.kernel("fastvec", "FP16", "TFMA", "raw")
def fp16_fma(a, b, c):
    """x*y exact in binary32 (22 bits, >= 2^-48), + z by TwoSum (exact below 2^33), rounded to
    odd at 24 bits, then once to FP16: RN11(RO24(v)) = RN11(v) (24 >= 11 + 2)."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    z, fz = _fp16(c)
    s, e = two_sum(mul_rn(x, y), z)
    ro = _ro32(s, e) if fx & fy & fz else s
    code, dropped, of = _fp16_round(ro)
    nan_in = (x != x) | (y != y) | (z != z)
    zero_inf = (math.isinf(x) & (y == 0)) | ((x == 0) & math.isinf(y))
    sf = S.invalid(s != s, nan_in, S.snan16(a) | S.snan16(b) | S.snan16(c) | zero_inf)
    return _fp16_special(code, s), _fp16_flags((e != 0) | dropped, ro, of) if fx & fy & fz else sf


# Set in FALLBACK and in no flag (NV DZ OF UF NX are bits 0-4): an OR of flags that has it
# covers a marked element.
_MARK_BIT = 0x80


# Per-thread flags buffer of run_status, whose flags never leave it: a fresh 64 KiB array per
# call cost more than the TADD loop over 4 x 128x128 itself (allocation and first-touch page
# faults, measured on the 2-core dev box).  Calls above SCRATCH_MAX elements allocate their own.
_SCRATCH = threading.local()
SCRATCH_MAX = 1 << 22


def _scratch_flags(n: int) -> np.ndarray | None:
    if n > SCRATCH_MAX:
        return None
    buf = getattr(_SCRATCH, "flags", None)
    if buf is None or buf.shape[0] < n:
        buf = _SCRATCH.flags = np.empty(max(n, 1 << 12), np.uint8)
    return buf[:n]


def run_status(k: fast.Kernel, operands, groups: int, finish):
    """Kernel `k`'s (bits, flags) on `operands` with, instead of its flags, their OR over each of
    `groups` equal consecutive parts: one pass over the flags both finds marked elements and
    gives the status; `finish(bits, flags, operands)` settles the marked elements in place (the
    tier table's hand-off, tiers.hand_off)."""
    bits, flags = fast.launch(k, operands, False, k.loop, flags=_scratch_flags(operands[0].shape[0]))
    status = group_or(flags, groups)
    # a block's few PEs: Python's max of a short list is cheaper than a NumPy call
    if (max(status.tolist()) if groups <= 8 else int(status.max())) & _MARK_BIT:
        with np.errstate(all="ignore"):          # as elementwise runs the reference
            finish(bits, flags, operands)
        status = group_or(flags, groups)
    return bits, status


def group_or(flags: np.ndarray, groups: int) -> np.ndarray:
    """uint8 [groups]: the OR of each of `groups` equal consecutive parts of 1-D `flags` -- one
    reduceat over cached part starts, which on a block's few elements costs half of reducing a
    (groups, -1) reshape along axis 1 (an empty or uneven split takes that reshape, as before)."""
    n = flags.shape[0]
    if n == 0 or n % groups:
        return np.bitwise_or.reduce(flags.reshape(groups, -1), axis=1)
    return np.bitwise_or.reduceat(flags, _group_starts(n, groups))


@lru_cache(maxsize=256)          # a stream's few (elements, PEs) pairs
def _group_starts(n: int, groups: int) -> np.ndarray:
    starts = np.arange(0, n, n // groups, dtype=np.intp)
    starts.flags.writeable = False
    return starts
