"""Numba twins of the conversion hot paths (CPU).  Same bits as convert.convert_generic.

Single-threaded on purpose (on the 2-core development machines a threaded loop measured
slower than one thread, and golden-vector generation parallelises over processes anyway),
except the two branch-free RNE kernels FP32 -> BF16 and FP32 -> FP16, which are `fast.Twin`s:
serial below fast.PARALLEL_MIN elements or without an idle core.

- `gather_hi16`: the 2^17-entry table lookup for FP32/TF32/HF32 -> 8-bit-or-smaller floats.
- `convert_ieee`: IEEE-family -> IEEE-family conversion (FP64/FP32/TF32/HF32 sources to
  FP64/FP32/TF32/HF32/FP16/BF16), every rounding mode, Sat, ftz, NaN payloads, flags; FP32 ->
  BF16 and FP32 -> FP16 in RNE without Sat by the vectorised kernels of FAST_PAIRS (profile
  ftz: then one flushing pass, FLUSH_AFTER).

The per-element function `_cvt_one` (and its helpers) is plain integer arithmetic on scalars,
compiled with numba's `njit(inline="always")` (inlined, so Numba-CUDA needs no device to
compile it), so the same source is compiled into the CPU loop
below and into the CUDA kernel of `cuda_convert_ieee` (tested under NUMBA_ENABLE_CUDASIM=1);
the NumPy reference (convert.convert_generic) stays the definition and tests hold them equal.
"""
from __future__ import annotations

import sys

import numba as nb
import numpy as np
from numba import njit

from isa.datatypes import DataType

from .fast import PARALLEL_MIN, Twin, Uniform, bind, canonical_signature, wide_vectors     # wide_vectors: 16 lanes, 1.5x on the conversion loops
from .flags import NX, UF
from .formats import FORMATS
from .rn import HARDWARE_HALF, bits_f32, f32_bits, hw_f32_half, hw_half_f32

MODE_CODE = {"RNE": 0, "RTZ": 1, "RTM": 2, "RTP": 3, "RNA": 4, "RTO": 5}
_WIDE_SRC = ("FP64", "FP32", "TF32", "HF32")
_WIDE_DST = ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16")


def supports(s: DataType, d: DataType) -> bool:
    return s.name in _WIDE_SRC and d.name in _WIDE_DST


@njit(cache=True)
def _gather_hi16_seq(u, tb, tf, ob, of):
    for i in range(u.size):
        x = u[i]
        j = ((x >> 16) << 1) | (1 if (x & 0xFFFF) != 0 else 0)
        ob[i] = tb[j]
        of[i] = tf[j]


# u is read, never written: one body for a read-only or a writable u (fast.Uniform)
_gather_hi16_seq = Uniform(_gather_hi16_seq, lambda n: frozenset({0}))


def gather_hi16(bits, tb, tf):
    u = np.ascontiguousarray(bits, dtype=np.uint32).ravel()
    ob = np.empty(u.size, tb.dtype)
    of = np.empty(u.size, np.uint8)
    _gather_hi16_seq(u, tb, tf, ob, of)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


# ---------------------------------------------------------------------------------------------
# IEEE -> IEEE, one element
# ---------------------------------------------------------------------------------------------
@njit(inline="always", error_model="numpy")
def _bitlen(x):
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@njit(inline="always", error_model="numpy")
def _increment(R, S, odd, sign, mode):
    """0/1 increment; R, S, odd, sign are 0/1 ints (bitwise, no data-dependent branches)."""
    if mode == 0:
        return R & (S | odd)
    if mode == 1:
        return 0
    if mode == 2:
        return (R | S) & sign
    if mode == 3:
        return (R | S) & (1 - sign)
    if mode == 4:
        return R
    return (R | S) & (1 - odd)                           # RTO


@njit(inline="always", error_model="numpy")
def _split(sig, exp, q):
    """(m, R, S) of sig * 2^exp at quantum 2^q as ints (R, S in 0/1); sig < 2^62, no sticky."""
    shift = q - exp
    if shift <= 0:
        return sig << (-shift), 0, 0
    if shift > 63:
        return 0, 0, 1 if sig != 0 else 0
    m = sig >> shift
    R = (sig >> (shift - 1)) & 1
    low = sig & ((1 << (shift - 1)) - 1)
    return m, R, (low | -low) >> 63 & 1


@njit(inline="always", error_model="numpy")
def _cvt_one(u, s_ebits, s_t, s_bias, s_shift, s_width,
             d_ebits, d_t, d_bias, d_shift, d_width, mode, sat, ftz):
    """(bits uint64, flags) of one IEEE-family encoding converted to an IEEE-family format
    whose exponent all-ones field holds inf/NaN.  Mirrors convert_generic/round_pack."""
    NV, OF, UF, NX = 1, 4, 8, 16
    v = u >> np.uint64(s_shift)
    sign = np.int64((v >> np.uint64(s_width - 1)) & np.uint64(1))
    E = np.int64((v >> np.uint64(s_t)) & np.uint64((1 << s_ebits) - 1))
    T = np.int64(v & np.uint64((1 << s_t) - 1))
    d_top = (1 << d_ebits) - 1
    sbit = np.uint64(sign) << np.uint64(d_width - 1)
    if E == (1 << s_ebits) - 1:
        if T == 0:                                          # infinity stays infinity
            return (sbit | np.uint64(d_top << d_t)) << np.uint64(d_shift), 0
        quiet_s = (T >> (s_t - 1)) & 1
        payload = T & ((1 << (s_t - 1)) - 1)
        if d_t >= s_t:
            payload = payload << (d_t - s_t)
        else:
            payload = payload >> (s_t - d_t)
        code = sbit | np.uint64((d_top << d_t) | (1 << (d_t - 1)) | payload)
        return code << np.uint64(d_shift), (0 if quiet_s else NV)
    if E == 0 and (T == 0 or ftz):
        return sbit << np.uint64(d_shift), 0
    if E != 0:
        sig = T | (1 << s_t)
        exp = E - s_bias - s_t
        e = E - s_bias
    else:
        sig = T
        exp = 1 - s_bias - s_t
        e = exp + _bitlen(sig) - 1
    d_emin = 1 - d_bias
    d_emax = d_top - 1 - d_bias
    qmin = d_emin - d_t
    max_mag = (d_top << d_t) - 1
    toward = mode == 0 or mode == 4 or (mode == 3 and sign == 0) or (mode == 2 and sign == 1)
    if e > d_emax:
        over = True
        mag = 0
        flags = 0
    else:
        q = max(e, d_emin) - d_t
        m, R, S = _split(sig, exp, q)
        M = m + _increment(R, S, m & 1, sign, mode)
        mag = ((q - qmin) << d_t) + M
        over = mag > max_mag
        flags = NX * (R | S)
        if e < d_emin and (R | S) != 0:
            tiny = True
            if e == d_emin - 1:
                m2, R2, S2 = _split(sig, exp, d_emin - 1 - d_t)
                if (m2 + _increment(R2, S2, m2 & 1, sign, mode)) >> (d_t + 1) != 0:
                    tiny = False
            if tiny:
                flags |= UF
    if over:
        flags = OF | NX
        mag = (d_top << d_t) if (toward and not sat) else max_mag
    elif ftz and mag != 0 and mag < (1 << d_t):
        mag = 0
        flags |= UF | NX
    return (sbit | np.uint64(mag)) << np.uint64(d_shift), flags


@njit(cache=True)
def _cvt_loop_seq(u, ob, of, p):
    for i in range(u.size):
        b, f = _cvt_one(np.uint64(u[i]), p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
                        p[10], p[11] != 0, p[12] != 0)
        ob[i] = b
        of[i] = f


_cvt_loop_seq = Uniform(_cvt_loop_seq, lambda n: frozenset({0}))    # as _gather_hi16_seq


@njit(inline="always")
def _room_at(a, n, first):
    """Where a loop's n results start in its output array `a`: at 0 when `a` holds exactly n,
    else (direct() allocates 64 bytes more) where result `first` falls on a 64-byte boundary, so
    that no 512-bit store of the loop splits across two cache lines (a NumPy array starts 16-byte
    aligned; stores at 16 bytes past a line made the FP16 <-> FP32 loops 1.2-1.25x slower).  The
    loops return s1 * 64 + s2, the start in the bits and in the flags array."""
    if a.shape[0] == n:
        return 0
    return ((64 - ((a.ctypes.data + first * a.itemsize) & 63)) & 63) // a.itemsize


@njit(inline="always")
def _outputs(ob_room, of_room, n, first):
    """(s1, s2, bits, flags): where a loop's results start in its two output arrays (_room_at,
    result `first` on a 64-byte boundary) and the n-element views it writes."""
    s1, s2 = _room_at(ob_room, n, first), _room_at(of_room, n, first)
    return s1, s2, ob_room[s1:s1 + n], of_room[s2:s2 + n]


@njit(inline="always")
def _lead(u, n):
    """Elements of u before its first 64-byte boundary (at most n): a loop that takes them
    apart reads the rest in whole cache lines, and _room_at lines its stores up with them."""
    if u.ctypes.data % u.itemsize != 0:
        return 0
    return min(((64 - (u.ctypes.data & 63)) & 63) // u.itemsize, n)


_U = np.uint32
_H = np.uint16
_B = np.uint8
# Numba types integer arithmetic as 64-bit: every uint32 intermediate below is cast back with
# _U(...) so that LLVM keeps 8 lanes per AVX2 register (without the casts the loops ran on 4
# 64-bit lanes at less than half the speed).


@njit(inline="always")
def _fp32_to_bf16_block(u, F, ob, of):
    """FP32 -> BF16, RNE: the carry trick (BF16 shares FP32's exponent range, so
    adding 0x7FFF + lsb rounds normals, subnormals and overflow alike), branch-free so LLVM
    vectorises it.  NX when the low half is nonzero (an infinity has none: no flag); OF when that
    rounding reaches the infinity code; UF when inexact and tiny after rounding: below
    2^-126 - 2^-135 (binary32 0x007FC000) the unbounded 8-bit grid stays below 2^-126.  ftz:
    a subnormal input reads as the zero of its sign, and then no result is subnormal (a normal
    binary32 value rounds to at least 2^-126): the flush is one select, branch-free."""
    for i in range(u.shape[0]):
        wide_vectors()
        x = u[i]
        z = _U(_U(_U(x & _U(0x7F800000)) == _U(0)) & F)
        x = _U(x & _U(_U(0x80000000) | _U(_U(0x7FFFFFFF) * _U(_U(1) - z))))
        a = _U(x & _U(0x7FFFFFFF))
        r = _U(_U(_U(x + _U(0x7FFF)) + _U(_U(x >> _U(16)) & _U(1))) >> _U(16))
        nx = _U((x & _U(0xFFFF)) != _U(0))
        ovf = _U(_U(r & _U(0x7FFF)) == _U(0x7F80))
        tiny = _U(a < _U(0x7FC000))
        fl = _U(nx * _U(_U(16) | _U(ovf << _U(2)) | _U(tiny << _U(3))))
        nan = a > _U(0x7F800000)                       # quiet, payload truncated; NV if signalling
        ob[i] = np.uint16(_U(_U(x >> _U(16)) | _U(0x40)) if nan else r)
        of[i] = np.uint8(_U(_U(x & _U(0x400000)) == _U(0)) if nan else fl)


def _fp32_to_fp16_rne(u, ob_room, of_room):
    """FP32 -> FP16, RNE, profile ieee, branch-free: normal results by the integer carry trick
    on the rebiased pattern (a carry into 0x7C00 is the overflow to infinity, min() keeps larger
    values there), results below 2^-14 by one hardware binary32 addition of 0.5, whose RNE drops
    exactly the bits an FP16 subnormal cannot hold (F. Giesen's float_to_half_fast3_rtne); NX
    from the dropped bits, OF|NX at the infinity code from a finite value, UF when inexact and
    below 2^-14 - 2^-26 (binary32 0x387FF000: tiny after rounding, ties to the even 2^-14);
    NaNs quiet with the payload truncated, NV if signalling."""
    n = u.shape[0]
    s1, s2, ob, of = _outputs(ob_room, of_room, n, 0)
    for b in nb.prange(_blocks(0, n)):     # in blocks: see _in_blocks (same fault, same cure)
        lo, hi = _block_at(b, 0, n)
        _fp32_to_fp16_rne_block(u[lo:hi], ob[lo:hi], of[lo:hi])
    return s1 * 64 + s2


@njit(inline="always")
def _fp32_to_fp16_rne_block(u, ob, of):
    for i in range(u.shape[0]):
        wide_vectors()
        x = u[i]
        a = _U(x & _U(0x7FFFFFFF))
        sign = _U(_U(x >> _U(16)) & _U(0x8000))
        rebiased = _U(_U(_U(a - _U(112 << 23)) + _U(0xFFF)) + _U(_U(a >> _U(13)) & _U(1)))
        normal = min(_U(rebiased >> _U(13)), _U(0x7C00))
        t = bits_f32(a) + np.float32(0.5)
        low = a < _U(113 << 23)
        code = _U(f32_bits(t) - _U(126 << 23)) if low else normal
        nx = _U((t - np.float32(0.5) != bits_f32(a)) if low else (_U(a & _U(0x1FFF)) != _U(0)))
        ovf = _U(code == _U(0x7C00))
        nan = a > _U(0x7F800000)          # computed here: placed after fl, the loop ran 2x slower
        tiny = _U(a < _U(0x387FF000))
        fl = _U(_U(nx | ovf) * _U(_U(16) | _U(ovf << _U(2)) | _U(_U(tiny & nx) << _U(3))))
        fl = _U(0) if a == _U(0x7F800000) else fl
        ob[i] = np.uint16(_U((_U(_U(0x7E00) | _U(_U(a >> _U(13)) & _U(0x3FF)))) if nan else code) | sign)
        of[i] = np.uint8(_U(_U(x & _U(0x400000)) == _U(0)) if nan else fl)


_OVERFLOW = 0x477FF000      # |x| from here up: infinity (or NaN), OF|NX
_TINY = 0x387FF000          # |x| below this: tiny after rounding, UF when inexact


@njit(inline="always")
def _fp32_to_fp16_exact(u, ob, of):
    """FP32 -> FP16, RNE, profile ieee, by the hardware's conversion (rn.hw_f32_half: vcvtps2ph,
    which rounds to nearest even with subnormal results and overflow to infinity as IEEE 754 does,
    and quiets a NaN keeping its payload's top bits -- the definition's truncation); the flags
    from the value: NX when the FP16 result converted back differs (an ordered comparison: never
    for a NaN, and an infinity comes back equal), OF|NX when inexact at or above 65520 (the
    overflow threshold, 0x477FF000), UF when inexact and below 2^-14 - 2^-26 (tiny after
    rounding), NV for a signalling NaN (0x7F800001..0x7FBFFFFF in magnitude).  The flag byte is
    built in 8-bit lanes: on AVX-512 that is byte-masked moves on 128-bit registers instead of
    32-bit lanes narrowed at the store."""
    for i in range(u.shape[0]):
        wide_vectors()
        x = u[i]
        v = bits_f32(x)
        h = hw_f32_half(v)
        a = _U(x & _U(0x7FFFFFFF))
        w = hw_half_f32(h)
        nx = (w < v) | (w > v)
        ovf = nx & (a >= _U(_OVERFLOW))
        tiny = nx & (a < _U(_TINY))
        snan = _U(a - _U(0x7F800001)) < _U(0x3FFFFF)
        ob[i] = h
        of[i] = _B(_B(_B(nx) << _B(4)) | _B(_B(ovf) << _B(2)) | _B(_B(tiny) << _B(3)) | _B(snan))


# Elements a block of _fp32_to_fp16_hw: large enough that a block's set-up and reduction cost
# little (4,096: within 4% of one block for the whole 65,536-element call), small enough that a
# block holding a special value redoes few elements.
BLOCK = 4096


@njit(inline="always")
def _block_at(b, lead, n):
    """[lo, hi) of block b of an n-element source: block 0 the `lead` elements before its first
    64-byte boundary (_lead), then BLOCK elements at a time."""
    lo = 0 if b == 0 else lead + (b - 1) * BLOCK
    return lo, (lead if b == 0 else min(lo + BLOCK, n))


@njit(inline="always")
def _blocks(lead, n):
    return 1 + (n - lead + BLOCK - 1) // BLOCK


@njit(inline="always")
def _uncommon(top, low):
    """Whether a block whose running max of |x| is `top` and min of |x| - 1 is `low` holds a value
    outside the common case (_fp32_to_fp16_hw): the exact loop settles it."""
    return top >= _U(_OVERFLOW) or low < _U(_TINY - 1)


def _fp32_to_fp16_hw(u, ob_room, of_room):
    """FP32 -> FP16, RNE, profile ieee, in blocks: the elements before u's first 64-byte boundary,
    then BLOCK elements at a time (so that the vector loop reads whole cache lines).  Each block
    first by the common case, then, only where that case does not hold for the whole block, again
    by the exact loop (_fp32_to_fp16_exact, which settles every element).  The common case is every |x| zero or in
    [_TINY, _OVERFLOW): there the hardware's conversion is the result, the result is a zero or
    normal and not tiny after rounding (no UF), finite (no OF), no NaN (no NV), and it is exact
    exactly when the 13 low bits that a binary16 significand drops are zero (NX otherwise; in
    [_TINY, 2^-14) they never are: those round up to 2^-14).  The block's test is a running
    maximum of |x| and minimum of |x| - 1 (a zero wraps to the largest value, so it never sets
    the minimum): two vector min/max a 16 elements, where four compares per element made the
    flags cost more than the conversion."""
    n = u.shape[0]
    lead = _lead(u, n)                     # block 0: the elements before u's first cache line
    s1, s2, ob, of = _outputs(ob_room, of_room, n, lead)
    blocks = _blocks(lead, n)
    # The blocks the common case does not settle are marked and converted again in a second
    # loop: with the exact loop inside the first one, the common case's loop ran 1.1x slower
    redo = np.zeros(blocks, np.uint8)
    for b in nb.prange(blocks):
        lo, hi = _block_at(b, lead, n)
        # slices, so that the loop index runs from 0 (LLVM then sees no negative index to wrap)
        ub, bb, fb = u[lo:hi], ob[lo:hi], of[lo:hi]
        top = _U(0)
        low = _U(0xFFFFFFFF)
        for i in range(ub.shape[0]):
            wide_vectors()
            x = ub[i]
            a = _U(x & _U(0x7FFFFFFF))
            bb[i] = hw_f32_half(bits_f32(x))
            fb[i] = _B(_B(_U(x & _U(0x1FFF)) != _U(0)) << _B(4))
            top = max(top, a)
            low = min(low, _U(a - _U(1)))
        redo[b] = _uncommon(top, low)
    for b in nb.prange(blocks):
        if redo[b]:
            lo, hi = _block_at(b, lead, n)
            _fp32_to_fp16_exact(u[lo:hi], ob[lo:hi], of[lo:hi])
    return s1 * 64 + s2


_NX_CHUNK = 256          # elements whose NX test is reduced before asking whether one was inexact


@njit(inline="always")
def _common_part(x, top, low):
    """One element of the common case: its binary16 code, and the block's running max of |x| and
    min of |x| - 1 (_uncommon) with it."""
    a = _U(x & _U(0x7FFFFFFF))
    return hw_f32_half(bits_f32(x)), max(top, a), min(low, _U(a - _U(1)))


@njit(inline="always")
def _common_block(ub, bb, nx):
    """A block by the common case's conversion into bb: (nx, top, low), where nx, given 0, is the
    max of the 13 low bits (shifted to the top) of the elements read until one was nonzero --
    nonzero iff some element is inexact -- read _NX_CHUNK elements at a time; given nonzero, it
    is returned as it is and the loop leaves the test out (LLVM drops its arithmetic), as the
    FP32 quick parts do (docs/numerics.md)."""
    top, low = _U(0), _U(0xFFFFFFFF)
    w = ub.shape[0]
    k = 0
    while nx == 0 and k < w:
        end = min(k + _NX_CHUNK, w)
        uc, bc = ub[k:end], bb[k:end]
        for j in range(end - k):
            wide_vectors()
            x = uc[j]
            bc[j], top, low = _common_part(x, top, low)
            nx = max(nx, _U(x << _U(19)))          # max keeps uint32 lanes (| widens them)
        k = end
    uc, bc = ub[k:], bb[k:]
    for j in range(w - k):
        wide_vectors()
        bc[j], top, low = _common_part(uc[j], top, low)
    return nx, top, low


def _fp32_to_fp16_status(u, groups, status, ob_room):
    """FP32 -> FP16 as _fp32_to_fp16_hw (same bits), for a caller that takes only each group's
    status -- the OR of the flags of each of `groups` equal consecutive parts of u (a block's PEs)
    -- into status[groups], instead of a flag byte per element (its store and the per-element NX
    test took about 0.7 us of _fp32_to_fp16_hw's 4.8-5.0 us on 65,536 elements).  Blocks as
    there, within each group: a block of the common case gives NX or nothing (NX is every flag
    there is in it: _fp32_to_fp16_hw), and its NX test stops once the group has NX
    (_common_block); a block outside it is redone by the exact loop into a spare flag array,
    whose OR it adds.  Returns where the results start in ob_room (in elements; _room_at)."""
    n = u.shape[0]
    m = n // groups
    s1 = _room_at(ob_room, n, _lead(u, n))
    ob = ob_room[s1:s1 + n]
    lead = _lead(u[:m], m)                 # each group's blocks from here (aligned ones when 16 divides m)
    per = _blocks(lead, m)
    redo = np.zeros(groups * per, np.uint8)
    for g in nb.prange(groups):
        ug, bg = u[g * m:(g + 1) * m], ob[g * m:(g + 1) * m]
        nx = _U(0)
        for b in range(per):
            lo, hi = _block_at(b, lead, m)
            got, top, low = _common_block(ug[lo:hi], bg[lo:hi], nx)
            if _uncommon(top, low):
                redo[g * per + b] = 1          # its nx may come from a NaN's payload: not kept
            else:
                nx = got
        status[g] = _B(_B(nx != _U(0)) << _B(4))
    # a second pass, as in _fp32_to_fp16_hw: the blocks the common case does not settle
    for g in nb.prange(groups):
        for b in range(per):
            if redo[g * per + b]:
                lo, hi = _block_at(b, lead, m)
                fb = np.empty(hi - lo, np.uint8)
                _fp32_to_fp16_exact(u[g * m + lo:g * m + hi], ob[g * m + lo:g * m + hi], fb)
                st = status[g]
                for i in range(fb.shape[0]):
                    st |= fb[i]
                status[g] = st
    return s1


def _fp16_to_fp32_hw(u, ftz, ob_room, of_room):
    """FP16 -> FP32 (exact; every rounding mode): the hardware's conversion (rn.hw_half_f32:
    vcvtph2ps quiets a signalling NaN and keeps its payload left-aligned, the definition's rule),
    NV for a signalling NaN; profile ftz: a subnormal reads as the zero of its sign, no flag."""
    n = u.shape[0]
    lead = _lead(u, n)                     # block 0: the elements before u's first cache line
    s1, s2, ob, of = _outputs(ob_room, of_room, n, lead)
    F = _U(1) if ftz else _U(0)
    for b in nb.prange(1 + (n - lead + BLOCK - 1) // BLOCK):
        lo = 0 if b == 0 else lead + (b - 1) * BLOCK
        hi = lead if b == 0 else min(lo + BLOCK, n)
        ub, bb, fb = u[lo:hi], ob[lo:hi], of[lo:hi]
        for i in range(ub.shape[0]):
            wide_vectors()
            h = ub[i]
            w = f32_bits(hw_half_f32(h))
            sub = _U(_U(_U(h & np.uint16(0x7C00)) == _U(0)) & F)
            bb[i] = _U(w & _U(_U(0x80000000) | _U(_U(0x7FFFFFFF) * _U(_U(1) - sub))))
            a = _H(h & _H(0x7FFF))                      # NV: |h| in 0x7C01..0x7DFF, a signalling NaN,
            fb[i] = _B(_H(a - _H(0x7C01)) < _H(0x1FF))  # tested in 16-bit lanes (in 64-bit ones the loop ran 1.2x slower)
    return s1 * 64 + s2


@njit(inline="always")
def _bf16_to_fp32_block(u, F, ob, of):
    """BF16 -> FP32 (exact; every rounding mode): the code in the high half, a signalling NaN
    made quiet (payload kept) with NV; profile ftz: a subnormal reads as the zero of its sign."""
    for i in range(u.shape[0]):
        wide_vectors()
        w = _U(_U(u[i]) << _U(16))
        a = _U(w & _U(0x7FFFFFFF))
        snan = _U(_U(a > _U(0x7F800000)) & _U(_U(w & _U(0x400000)) == _U(0)))
        sub = _U(_U(_U(w & _U(0x7F800000)) == _U(0)) & F)
        w = _U(w | _U(snan << _U(22)))
        ob[i] = _U(w & _U(_U(0x80000000) | _U(_U(0x7FFFFFFF) * _U(_U(1) - sub))))
        of[i] = np.uint8(snan)


# serial below fast.PARALLEL_MIN elements, both cores only when one is idle (fast.Twin); FP32 ->
# FP16 by the hardware conversion where the CPU has one (rn.HARDWARE_HALF), else by integer code
def _in_blocks(u, ftz, ob_room, of_room):
    """The driver of a loop whose per-element routine SCALAR(u, F, ob, of) works on slices (F: 1
    under profile ftz): the prange runs over blocks of slices of the output views.  A prange over
    the elements of the views _outputs returns lost its stores in the parallel build (Numba's
    parfor pass takes an array returned by another compiled function for a local one nobody
    reads: docs/numerics.md, the audit of every parallel build)."""
    n = u.shape[0]
    s1, s2, ob, of = _outputs(ob_room, of_room, n, 0)
    F = _U(1) if ftz else _U(0)
    for b in nb.prange(_blocks(0, n)):
        lo, hi = _block_at(b, 0, n)
        SCALAR(u[lo:hi], F, ob[lo:hi], of[lo:hi])
    return s1 * 64 + s2


SCALAR = None                   # bound in each driver's own globals (fast.bind)
_fp32_to_bf16_rne = bind(_in_blocks, _fp32_to_bf16_block, name="_fp32_to_bf16_rne")
_bf16_to_fp32 = bind(_in_blocks, _bf16_to_fp32_block, name="_bf16_to_fp32")


FAST_PAIRS = {("FP32", "BF16"): Twin(_fp32_to_bf16_rne, outputs=2),
              ("FP32", "FP16"): Twin(_fp32_to_fp16_hw if HARDWARE_HALF else _fp32_to_fp16_rne, outputs=2)}
# FP32 -> FP16 in RNE, profile ieee, for a caller that takes a status per group (rne_status)
STATUS_PAIRS = {("FP32", "FP16"): Twin(_fp32_to_fp16_status, outputs=2)} if HARDWARE_HALF else {}


def rne_status(s: str, d: str):
    """fn(bits, groups) -> (bits, status) of STATUS_PAIRS' (s, d) on a native uint32 NumPy array
    whose size `groups` divides: fast_rne's bits, and per group of equal consecutive elements (C
    order) the OR of their flags.  Below PARALLEL_MIN elements, as direct(): the serial body's
    compiled entry point, and the last outputs of a shape written again when nobody holds them
    (a block's commit holds its bits: then they are fresh ones)."""
    loop = STATUS_PAIRS[(s, d)]
    calls = Twin.calls
    entry_point = [None]
    kept = {}                                   # (shape, groups) -> _Kept, as direct() keeps them

    def fn(bits, groups):
        u = bits.ravel()
        n = u.size
        call = entry_point[0]
        if n >= PARALLEL_MIN or call is None or not u.flags.aligned:    # the Twin; outputs not kept
            ob, status = np.empty(n + 32, np.uint16), np.empty(groups, np.uint8)   # 64 bytes more: aligned stores
            s1 = loop(u, groups, status, ob)
            if call is None and n < PARALLEL_MIN:
                entry_point[0] = _entry_point(loop.serial, (u, groups, status, ob))
            return ob[s1:s1 + n].reshape(bits.shape), status
        key = (bits.shape, groups)
        k = _take(kept, key)
        if k is None:
            k = _Kept(np.empty(n + 32, np.uint16), np.empty(groups, np.uint8))
        s1 = call(u, groups, k.of, k.ob)
        calls["serial"] += 1
        if k.at != s1:
            k.place(s1, k.ob[s1:s1 + n].reshape(bits.shape), k.of[:])
        return _give(kept, key, k)
    return fn


# the exact widenings to FP32 (RMode and Sat change nothing): (kernel, takes ftz)
WIDEN_PAIRS = {("BF16", "FP32"): Twin(_bf16_to_fp32, outputs=2)}
if HARDWARE_HALF:
    WIDEN_PAIRS[("FP16", "FP32")] = Twin(_fp16_to_fp32_hw, outputs=2)


def widen(bits, s: DataType, d: DataType, ftz: bool):
    """(bits, flags) of the exact conversion of WIDEN_PAIRS' (s, d) on any-shape bits."""
    u = np.ascontiguousarray(bits, dtype=np.uint16).ravel()
    ob = np.empty(u.size, np.uint32)
    of = np.empty(u.size, np.uint8)
    WIDEN_PAIRS[(s.name, d.name)](u, bool(ftz), ob, of)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


def _flush_after(u, min_normal, ob, of):
    """Profile ftz on the ieee results of FP32 -> FP16, in place (a pass of its own: the flush
    inside the FP16 loop, even branch-free, halved that loop's speed under profile ieee too): a result below the destination's min
    normal code is the zero of its sign with UF|NX, and a subnormal binary32 input, which ftz
    reads as the zero of its sign, gives that zero without a flag."""
    m = _U(min_normal - _U(1))
    for i in nb.prange(u.shape[0]):
        wide_vectors()
        x = u[i]
        b = _U(ob[i])
        sub_out = _U(_U(_U(b & _U(0x7FFF)) - _U(1)) < m)
        sub_in = _U(_U(x & _U(0x7F800000)) == _U(0))
        keep = _U(_U(1) - _U(sub_out | sub_in))                  # branch-free: LLVM vectorises it
        ob[i] = np.uint16(_U(b & _U(_U(0x8000) | _U(keep * _U(0x7FFF)))))
        of[i] = np.uint8(_U(_U(_U(of[i]) * keep) | _U(sub_out * _U(_U(1) - sub_in) * _U(UF | NX))))


FLUSH_AFTER = Twin(_flush_after, outputs=2)
_MIN_NORMAL = {"FP16": np.uint32(0x0400), "BF16": np.uint32(0x0080)}


def fast_rne(bits, s: DataType, d: DataType, ftz: bool = False):
    """The branch-free RNE kernel of (s, d) (FAST_PAIRS) on any-shape bits, then profile
    ftz's flushing when `ftz`."""
    u = np.ascontiguousarray(bits, dtype=np.uint32).ravel()
    ob = np.empty(u.size, np.uint16)
    of = np.empty(u.size, np.uint8)
    if d.name == "BF16":
        FAST_PAIRS[(s.name, d.name)](u, bool(ftz), ob, of)
    else:
        FAST_PAIRS[(s.name, d.name)](u, ob, of)
        if ftz:
            FLUSH_AFTER(u, _MIN_NORMAL[d.name], ob, of)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


def direct(s: DataType, d: DataType, ftz: bool):
    """fn(bits) -> (bits, flags) of WIDEN_PAIRS' (s, d), or of FAST_PAIRS' (s, d) in RNE without
    Sat, for NumPy arrays of s's unsigned container type (what convert._DIRECT remembers): widen
    and fast_rne without their per-call conversions of the argument."""
    if (s.name, d.name) in WIDEN_PAIRS:
        loop, out, args = WIDEN_PAIRS[(s.name, d.name)], np.uint32, (bool(ftz),)
    elif d.name == "BF16":
        loop, out, args = FAST_PAIRS[(s.name, d.name)], np.uint16, (bool(ftz),)
    elif ftz:
        return lambda bits: fast_rne(bits, s, d, True)
    else:
        loop, out, args = FAST_PAIRS[(s.name, d.name)], np.uint16, ()

    # Below PARALLEL_MIN elements the Twin runs its serial body: call that body's compiled entry
    # point straight away (Twin's, Uniform's and the dispatcher's Python layers cost about 0.55 us
    # of the 2 us a call; the entry point takes these exact types, which `fn` guarantees: convert
    # remembers `fn` per source dtype, ravel() gives a C-ordered 1-D array, the outputs are made
    # here; an unaligned source goes through the Twin); no entry point yet: the Twin compiles it
    calls = Twin.calls
    room = 64 // np.dtype(out).itemsize          # 64 bytes more: the loop aligns its stores (_room)
    kept = {}                                    # bits.shape -> _Kept (the last outputs of that shape)
    entry_point = [None]

    def fresh(u, n):
        ob, of = np.empty(n + room, out), np.empty(n + 64, np.uint8)
        at = loop(u, *args, ob, of)
        if entry_point[0] is None and n < PARALLEL_MIN:
            entry_point[0] = _entry_point(loop.serial, (u, *args, ob, of))
        return ob, of, at

    def fn(bits):
        u = bits.ravel()                         # a view of a C-ordered array, else a C-ordered copy
        n = u.size
        shape = bits.shape
        call = entry_point[0]
        if n >= PARALLEL_MIN or call is None or not u.flags.aligned:    # the Twin; outputs not kept
            ob, of, at = fresh(u, n)
            s1, s2 = divmod(at, 64)
            return ob[s1:s1 + n].reshape(shape), of[s2:s2 + n].reshape(shape)
        k = _take(kept, shape)
        if k is None:
            k = _Kept(np.empty(n + room, out), np.empty(n + 64, np.uint8))
        at = call(u, *args, k.ob, k.of) if args else call(u, k.ob, k.of)    # no splat: 0.03 us
        calls["serial"] += 1
        if k.at != at:
            s1, s2 = divmod(at, 64)
            k.place(at, k.ob[s1:s1 + n].reshape(shape), k.of[s2:s2 + n].reshape(shape))
        return _give(kept, shape, k)
    return fn


def _take(kept: dict, key):
    """The last call's buffers under `key` (a _Kept), to be written again, when nothing outside
    holds them (the buffers' reference counts as _Kept.place took them); else None, and `kept`
    is emptied when full.  Taken out of `kept` while in use, so that a concurrent call makes its
    own."""
    k = kept.pop(key, None)
    if k is not None and sys.getrefcount(k.ob) == k.ob_refs and sys.getrefcount(k.of) == k.of_refs:
        return k
    if len(kept) >= KEPT_SHAPES:
        kept.clear()
    return None


def _give(kept: dict, key, k):
    """k kept under `key` again, and fresh views of its results: whatever a caller does to a
    result (its shape, dtype, flags) leaves k's own arrays as they are, and every view's base is
    the buffer (NumPy collapses view chains), so a result alive shows in the buffer's reference
    count."""
    kept[key] = k
    return k.r.view(), k.f.view()


KEPT_SHAPES = 8                                  # output sets a remembered call keeps, one a shape


class _Kept:
    """The two output buffers of a remembered call for one source shape (bits and flags, or bits
    and status: rne_status), the results' arrays in them (`r`, `f`: never handed out, only views of them) and the buffers' reference counts while
    only this object refers to them: a later call finds the same counts exactly when nobody else
    holds a result, a view of one, its buffer, a memoryview of any of them or a weak reference to
    a result (each holds the buffer, directly or through the result it refers to)."""
    __slots__ = ("ob", "of", "at", "r", "f", "ob_refs", "of_refs")

    def __init__(self, ob, of):
        self.ob, self.of, self.at = ob, of, -1
        self.r = self.f = None
        self.ob_refs = self.of_refs = 0

    def place(self, at, r, f):
        """The results, views of ob and of, start at `at` (what the loop returned): keep them and
        the buffers' counts."""
        self.at = at
        self.r, self.f = r, f
        self.ob_refs, self.of_refs = sys.getrefcount(self.ob), sys.getrefcount(self.of)


def _entry_point(uniform, args):
    """The compiled entry point (no type dispatch) of the canonical body (fast.Uniform) that
    `uniform` runs for `args`, or None while it has none."""
    cres = uniform.dispatcher.overloads.get(canonical_signature(args, uniform.reads(len(args))))
    return None if cres is None else cres.entry_point


def is_fast_rne(s: DataType, d: DataType, rmode: str, sat: bool) -> bool:
    """Whether convert_ieee runs (s, d, rmode, sat) by fast_rne."""
    return (s.name, d.name) in FAST_PAIRS and rmode == "RNE" and not sat


def convert_ieee(bits, s: DataType, d: DataType, rmode: str, sat: bool, ftz: bool):
    if is_fast_rne(s, d, rmode, sat):
        return fast_rne(bits, s, d, ftz)
    fs, fd = FORMATS[s.name], FORMATS[d.name]
    p = np.array([fs.ebits, fs.t, fs.bias, fs.shift, fs.width, fd.ebits, fd.t, fd.bias, fd.shift, fd.width,
                  MODE_CODE[rmode], int(sat), int(ftz)], dtype=np.int64)
    u = np.ascontiguousarray(bits).ravel()
    ob = np.empty(u.size, d.raw_dtype)
    of = np.empty(u.size, np.uint8)
    _cvt_loop_seq(u, ob, of, p)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


# ---------------------------------------------------------------------------------------------
# CUDA: the same per-element function in a numba.cuda kernel (device arrays in, device out)
# ---------------------------------------------------------------------------------------------
_CUDA_KERNEL = None
cuda = None                      # numba.cuda, imported on first GPU use (a module global, so the
                                 # CUDA simulator can substitute its own module)


def _cvt_kernel_body(u, ob, of, p):
    i = cuda.grid(1)
    if i < u.size:
        b, f = _cvt_one(np.uint64(u[i]), p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
                        p[10], p[11] != 0, p[12] != 0)
        ob[i] = b
        of[i] = f


def _cuda_kernel():
    global _CUDA_KERNEL, cuda
    if _CUDA_KERNEL is None:
        from numba import cuda as _cuda
        cuda = _cuda
        _CUDA_KERNEL = cuda.jit(_cvt_kernel_body)
    return _CUDA_KERNEL


def cuda_convert_ieee(bits, s: DataType, d: DataType, rmode: str, sat: bool, ftz: bool, threads: int = 256):
    """IEEE -> IEEE conversion of a 1-D host or device array on the GPU (numba.cuda)."""
    kernel = _cuda_kernel()
    fs, fd = FORMATS[s.name], FORMATS[d.name]
    p = np.array([fs.ebits, fs.t, fs.bias, fs.shift, fs.width, fd.ebits, fd.t, fd.bias, fd.shift, fd.width,
                  MODE_CODE[rmode], int(sat), int(ftz)], dtype=np.int64)
    u = cuda.to_device(np.ascontiguousarray(bits).ravel()) if isinstance(bits, np.ndarray) else bits
    ob = cuda.device_array(u.size, d.raw_dtype)
    of = cuda.device_array(u.size, np.uint8)
    kernel[(u.size + threads - 1) // threads, threads](u, ob, of, cuda.to_device(p))
    return ob, of
