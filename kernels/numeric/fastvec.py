"""Vectorisable fast paths: TADD, TSUB, TMUL, TFMA on FP32 and BF16, TADD, TSUB, TMUL on FP16,
profile `ieee` (RNE).

fast.py rounds with integer code written for one element at a time (~1.2 ns/element); these
kernels let the hardware's own binary32/binary64 rounding do the work on the common path, so LLVM
turns each loop into SIMD code (AVX2: 0.2-0.6 ns/element) and NVVM into a few instructions.
Every element they cannot settle this way is marked (flags 0xFF) and recomputed by fast.py
(which hands non-finite operands on to the reference), so the results are the reference's by
construction of the cases settled here, and by test (tests/kernels/test_fastvec.py).

Why each settled result is the single correctly rounded one (x, y, z finite format values):
  FP32 add/sub  s = x + y in binary32 is RN24 of the exact sum; TwoSum's error e is exact
                (gradual underflow, no overflow), so NX = (e != 0); OF when s overflows (then
                e is NaN, NX too); never UF: a sum in the subnormal range is exact.
  FP32 mul      r = x * y in binary32, its exact error e = x*y - r by rn.prod_err (one fused
                multiply-add on the CPU, binary64 arithmetic on CUDA), settled for
                2^-100 <= |r| <= max (or a zero operand times a finite one): there e cannot
                underflow and the result is neither tiny nor overflowing: NX = (e != 0).
  FP32 fma      r = fma(x, y, z), the hardware's single rounding (rn.fma_rn); w = x*y + (z - r)
                rounded once in binary64 (z - r exact while their exponents differ by <= 29)
                is zero exactly when r is exact: NX = (w != 0); settled when 2^-126 <= |r| <=
                max (never UF or OF) or r and w are zero.
  BF16 fma      x*y is exact in binary32 (16 bits, normal range), s = RN24(p + z) with TwoSum's
                error e; settled when e == 0 (s exact, rounded once by the carry trick) and s
                is zero or in the normal range (never UF; OF only by that last rounding).
  BF16 add/sub  s = RN24(x + y) in binary32, then RN8 by the carry trick: RN8(RN24(v)) = RN8(v)
                for a sum of two 8-bit values since 24 >= 2*8 + 2 (double-rounding theorem, the
                subnormal range included: a sum there is exact); NX = e != 0 or dropped bits.
  BF16 mul      x * y (16 bits) is exact in binary32 when |x*y| >= 2^-125 (or an operand is
                zero), then rounded once by the carry trick; other products are marked.
  FP16          as BF16 (24 >= 2*11 + 2; a product of 22 bits >= 2^-48 is exact in binary32),
                with its own encoder (`_rne_fp16`) and UF from the binary32 sum or product,
                which is exact wherever it is near FP16's tininess threshold.
Zeros: an exact zero s has the sign IEEE 754 gives x + y, x * y or x*y + z in RNE, as the
reference does.

The scalar routines use arithmetic, comparisons and bit casts only (plus rn.py's prod_err and
fma_rn where named above), with `mul_rn`/`add_rn` wherever a product feeds a sum: Numba
compiles them for the CPU (plain fmul/fadd, which LLVM never contracts without fast-math) and Numba-CUDA for the GPU (the `.rn` NVVM intrinsics, which ptxas
never fuses into `fma`).  kernels/numeric/cuda.py compiles these same routines into CUDA kernels.
"""
from __future__ import annotations

import threading
from functools import lru_cache

import numba as nb
import numpy as np
from . import fast
from .fast import f64_bits
from .rn import add_rn, bits_f32, f32_bits, fma_rn, mul_rn, prod_err, two_sum
from .flags import NX, OF, UF

FALLBACK = np.uint8(0xFF)

_MAX64 = 1.7976931348623157e308
_F32_MAX = np.float32(3.4028234663852886e38)
_F32_MAX64 = 3.4028234663852886e38
_NORMAL32 = 2.0 ** -126              # FP32 and BF16 share the normal range


# ---------------------------------------------------------------- scalar routines
# Each routine registers its row of tier "fastvec" in the kernel registry (fast.kernel): FP32 on
# binary32 values, BF16/FP16 on their codes; each runs as a fast.loop (serial below
# fast.PARALLEL_MIN elements, fast.Twin).

@nb.njit(inline="always", error_model="numpy")
def _flags(nx, of):
    return np.uint8(nx) * np.uint8(NX) | np.uint8(of) * np.uint8(OF)


@nb.njit(inline="always", error_model="numpy")
def _finite32(x):
    return abs(x) <= _F32_MAX          # False for NaN and infinities; a compare, so it vectorises


_SMALL32 = np.float32(2.0 ** -100)


@fast.kernel("fastvec", "FP32", "TADD", "f32")
def fp32_add(a, b):
    """(binary32 result, flags) of a + b for binary32 values a, b."""
    s, e = two_sum(a, b)
    f = _flags(e != 0, abs(s) > _F32_MAX)                  # overflow: e is NaN, so NX too
    return s, f if _finite32(a) & _finite32(b) else FALLBACK


@fast.kernel("fastvec", "FP32", "TSUB", "f32")
def fp32_sub(a, b):
    return fp32_add(a, -b)


@fast.kernel("fastvec", "FP32", "TMUL", "f32")
def fp32_mul(a, b):
    r = mul_rn(a, b)
    e = prod_err(a, b, r)
    ar = abs(r)
    # exact error and no UF/OF for 2^-100 <= |r| <= max; a zero product of a zero operand (not
    # inf * 0, whose r is NaN) is exact
    ok = ((ar >= _SMALL32) & (ar <= _F32_MAX)) | ((r == 0) & ((a == 0) | (b == 0)))
    return r, _flags(e != 0, False) if ok else FALLBACK


_GAP = np.float32(2.0 ** 29)


@fast.kernel("fastvec", "FP32", "TFMA", "f32")
def fp32_fma(a, b, c):
    r = fma_rn(a, b, c)                                            # the result: one rounding
    # a*b + (c - r) in one binary64 rounding is zero exactly when r is exact; c - r is exact in
    # binary64 while their exponents differ by at most 29 (or either is zero)
    w = fma_rn(np.float64(a), np.float64(b), np.float64(c) - np.float64(r))
    ar = abs(r)
    ac = abs(c)
    gap = (ac <= ar * _GAP) & (ar <= ac * _GAP) | (ac == 0) | (ar == 0)
    # |r| >= 2^-126: never tiny; finite r: no overflow; NaN/infinite operands fail both
    ok = (((ar >= np.float32(_NORMAL32)) & (ar <= _F32_MAX)) | ((r == 0) & (w == 0))) & gap
    return r, _flags(w != 0, False) if ok else FALLBACK


@nb.njit(inline="always", error_model="numpy")
def _bf16(u):
    return bits_f32(np.uint32(u) << np.uint32(16))


@nb.njit(inline="always", error_model="numpy")
def _rne_bf16(w):
    """(BF16 code, dropped bits nonzero, overflowed) of binary32 pattern w rounded to nearest
    even by the carry trick (a carry out of the top code is infinity: 0x7F80 | sign)."""
    code = (w + np.uint32(0x7FFF) + ((w >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    of = (code & np.uint32(0x7FFF)) == np.uint32(0x7F80)
    return np.uint16(code), (w & np.uint32(0xFFFF)) != np.uint32(0), of


@fast.kernel("fastvec", "BF16", "TADD", "raw")
def bf16_add(a, b):
    """(BF16 code, flags) of a + b for BF16 codes a, b."""
    x = _bf16(a)
    y = _bf16(b)
    s, e = two_sum(x, y)
    code, dropped, of = _rne_bf16(f32_bits(s))
    f = _flags((e != 0) | dropped | of, of)
    return code, f if _finite32(x) & _finite32(y) else FALLBACK


@fast.kernel("fastvec", "BF16", "TSUB", "raw")
def bf16_sub(a, b):
    return bf16_add(a, b ^ np.uint16(0x8000))


@fast.kernel("fastvec", "BF16", "TMUL", "raw")
def bf16_mul(a, b):
    x = _bf16(a)
    y = _bf16(b)
    p = mul_rn(x, y)
    code, dropped, of = _rne_bf16(f32_bits(p))
    ok = _finite32(x) & _finite32(y) & ((abs(p) >= np.float32(2.0 ** -125)) | (x == 0) | (y == 0))
    return code, _flags(dropped | of, of) if ok else FALLBACK


@fast.kernel("fastvec", "BF16", "TFMA", "raw")
def bf16_fma(a, b, c):
    x = _bf16(a)
    y = _bf16(b)
    p = mul_rn(x, y)
    s, e = two_sum(p, _bf16(c))
    code, dropped, of = _rne_bf16(f32_bits(s))
    m = abs(s)
    exact_p = (abs(p) >= np.float32(_NORMAL32)) | (x == 0) | (y == 0)
    ok = (e == 0) & exact_p & (((m >= np.float32(_NORMAL32)) & (m <= _F32_MAX)) | (s == 0))
    return code, _flags(dropped | of, of) if ok else FALLBACK


# FP16: decoded with the scaling trick (exponent field moved into binary32 and multiplied by
# 2^112, which is exact and also places subnormals), encoded by the integer carry trick in the
# normal range and by hardware addition of 0.5 (whose RNE drops exactly the bits FP16 subnormals
# cannot hold) below it (F. Giesen's float_to_half_fast3_rtne).
_F16_SCALE = np.float32(2.0 ** 112)
_F16_MIN_NORMAL = 113 << 23           # binary32 pattern of 2^-14
_F16_OVERFLOW = 143 << 23             # binary32 pattern of 2^16: at or above, infinity
_F16_TINY = np.float32(2.0 ** -14 - 2.0 ** -26)   # tiny after rounding below this (ties: even)


@nb.njit(inline="always", error_model="numpy")
def _fp16(h):
    """(binary32 value, finite) of FP16 code h."""
    u = np.uint32(h)
    v = mul_rn(bits_f32((u & np.uint32(0x7FFF)) << np.uint32(13)), _F16_SCALE)
    v = bits_f32(f32_bits(v) | ((u & np.uint32(0x8000)) << np.uint32(16)))
    return v, (u & np.uint32(0x7C00)) != np.uint32(0x7C00)


@nb.njit(inline="always", error_model="numpy")
def _rne_fp16(r):
    """(FP16 code, dropped bits nonzero, overflowed) of binary32 r rounded to nearest even."""
    w = f32_bits(r)
    f = w & np.uint32(0x7FFFFFFF)
    odd = (f >> np.uint32(13)) & np.uint32(1)
    normal = (f - np.uint32(112 << 23) + np.uint32(0xFFF) + odd) >> np.uint32(13)
    t = add_rn(bits_f32(f), np.float32(0.5))
    sub = f32_bits(t) - np.uint32(126 << 23)
    low = f < np.uint32(_F16_MIN_NORMAL)
    code = sub if low else normal
    code = np.uint32(0x7C00) if f >= np.uint32(_F16_OVERFLOW) else code
    dropped = (t - np.float32(0.5) != bits_f32(f)) if low else (f & np.uint32(0x1FFF)) != np.uint32(0)
    of = code == np.uint32(0x7C00)
    return np.uint16(code | ((w >> np.uint32(16)) & np.uint32(0x8000))), dropped, of


@nb.njit(inline="always", error_model="numpy")
def _fp16_flags(nx, r, of):
    uf = nx & (abs(r) < _F16_TINY)
    return np.uint8(nx) * np.uint8(NX) | np.uint8(uf) * np.uint8(UF) | np.uint8(of) * np.uint8(OF)


@fast.kernel("fastvec", "FP16", "TADD", "raw")
def fp16_add(a, b):
    """s = RN24(x + y) and RN11(RN24(v)) = RN11(v) for a sum of 11-bit values (24 >= 2*11 + 2);
    near the tininess threshold such a sum is exact in binary32, so |s| decides tininess."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    s, e = two_sum(x, y)
    code, dropped, of = _rne_fp16(s)
    nx = (e != 0) | dropped | of
    return code, _fp16_flags(nx, s, of) if fx & fy else FALLBACK


@fast.kernel("fastvec", "FP16", "TSUB", "raw")
def fp16_sub(a, b):
    return fp16_add(a, b ^ np.uint16(0x8000))


@fast.kernel("fastvec", "FP16", "TMUL", "raw")
def fp16_mul(a, b):
    """x*y (22 bits, >= 2^-48) is exact in binary32: one rounding."""
    x, fx = _fp16(a)
    y, fy = _fp16(b)
    p = mul_rn(x, y)
    code, dropped, of = _rne_fp16(p)
    return code, _fp16_flags(dropped | of, p, of) if fx & fy else FALLBACK


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
