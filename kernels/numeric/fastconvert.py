"""Numba twins of the conversion hot paths (CPU).  Same bits as convert.convert_generic.

Single-threaded on purpose: on the 2-core development machines a threaded loop measured
slower than one thread (and golden-vector generation parallelises over processes anyway).

- `gather_hi16`: the 2^17-entry table lookup for FP32/TF32/HF32 -> 8-bit-or-smaller floats.
- `convert_ieee`: IEEE-family -> IEEE-family conversion (FP64/FP32/TF32/HF32 sources to
  FP64/FP32/TF32/HF32/FP16/BF16), every rounding mode, Sat, ftz, NaN payloads, flags.

The per-element function `_cvt_one` (and its helpers) is plain integer arithmetic on scalars,
compiled with numba's `njit(inline="always")` (inlined, so Numba-CUDA needs no device to
compile it), so the same source is compiled into the CPU loop
below and into the CUDA kernel of `cuda_convert_ieee` (tested under NUMBA_ENABLE_CUDASIM=1);
the NumPy reference (convert.convert_generic) stays the definition and tests hold them equal.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from isa.datatypes import DataType

from .formats import FORMATS

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


def gather_hi16(bits, tb, tf):
    u = np.ascontiguousarray(bits, dtype=np.uint32).ravel()
    ob = np.empty(u.size, tb.dtype)
    of = np.empty(u.size, np.uint8)
    _gather_hi16_seq(u, tb, tf, ob, of)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


# ---------------------------------------------------------------------------------------------
# IEEE -> IEEE, one element
# ---------------------------------------------------------------------------------------------
@njit(inline="always")
def _bitlen(x):
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@njit(inline="always")
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


@njit(inline="always")
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


@njit(inline="always")
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


@njit(cache=True)
def _fp32_to_bf16_rne(u, ob, of):
    """FP32 -> BF16, RNE, profile ieee: the carry trick (BF16 shares FP32's exponent range, so
    adding 0x7FFF + lsb rounds normals, subnormals and overflow alike), branch-free so LLVM
    vectorises it.  Tininess after rounding: an FP32 subnormal below 2^-126 - 2^-135 stays
    tiny on the unbounded 8-bit grid."""
    for i in range(u.size):
        x = u[i]
        a = x & np.uint32(0x7FFFFFFF)
        nan = a > np.uint32(0x7F800000)
        special = a >= np.uint32(0x7F800000)
        r = (x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
        nx = ((x & np.uint32(0xFFFF)) != 0) & ~special
        ovf = nx & ((r & np.uint32(0x7FFF)) == np.uint32(0x7F80))
        tiny = nx & (a < np.uint32(0x7FC000))
        fl = np.uint8(16) * nx | np.uint8(4) * ovf | np.uint8(8) * tiny
        snan = nan & ((x & np.uint32(0x400000)) == 0)
        ob[i] = np.uint16(((x >> np.uint32(16)) | np.uint32(0x40)) if nan else r)
        of[i] = np.uint8(1) * snan if nan else fl


def fp32_to_bf16_rne(bits):
    u = np.ascontiguousarray(bits, dtype=np.uint32).ravel()
    ob = np.empty(u.size, np.uint16)
    of = np.empty(u.size, np.uint8)
    _fp32_to_bf16_rne(u, ob, of)
    return ob.reshape(np.shape(bits)), of.reshape(np.shape(bits))


def convert_ieee(bits, s: DataType, d: DataType, rmode: str, sat: bool, ftz: bool):
    if s.name == "FP32" and d.name == "BF16" and rmode == "RNE" and not (sat or ftz):
        return fp32_to_bf16_rne(bits)
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
