"""Test-side models of profile a5's recipes (docs/numerics.md "Profile a5"), from the A5 sources'
steps, every IEEE step computed by op_reference.py (exact rationals rounded by oracles.py's own
rounding) and every other step (floor, the conversion toward zero, DivIEEE754HalfImpl's
normalisation and rescaling) written here with Fractions and integers.  Nothing here imports
kernels.numeric.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np

import op_reference as R
import oracles as O

NV, DZ, OF, UF, NX = O.NV, O.DZ, O.OF, O.UF, O.NX
QNAN16 = 0x7E00


def f32_code(v: Fraction, neg_zero=False) -> int:
    """The FP32 encoding of a value representable in FP32."""
    if v == 0:
        return 0x80000000 if neg_zero else 0
    code = struct.unpack("<I", struct.pack("<f", float(v)))[0]
    assert Fraction(struct.unpack("<f", struct.pack("<I", code))[0]) == v
    return code


def negative(codes, name):
    """codes < 0 as a quiet comparison: sign set, not a zero, not a NaN."""
    out = []
    for c in np.asarray(codes).tolist():
        kind, sign, _ = O.decode_code(name, int(c))
        out.append(kind in ("finite", "inf") and sign == 1)
    return np.array(out, bool)


def floor_fp32(codes):
    """floor of FP32 codes: integral toward -inf, zero's sign kept, inf/NaN unchanged."""
    out = []
    for c in np.asarray(codes, np.uint32).tolist():
        kind, sign, v = O.decode_code("FP32", int(c))
        if kind != "finite":
            out.append(c)
            continue
        f = Fraction(math.floor(v))
        out.append(f32_code(f, neg_zero=sign == 1 and f == 0))
    return np.array(out, np.uint32)


def widen16(codes):
    """FP16 -> FP32 codes, exact (NaN lanes are the models' business, not read here)."""
    return np.asarray(codes, np.uint16).view(np.float16).astype(np.float32).view(np.uint32)


def rtz16_sat(codes):
    """FP32 codes -> FP16 toward zero with saturation (finite inputs; NaN -> 0x7E00)."""
    bits, flags = [], []
    for c in np.asarray(codes, np.uint32).tolist():
        kind, sign, v = O.decode_code("FP32", int(c))
        if kind == "nan":
            b, f = QNAN16, 0
        elif kind == "inf":
            b, f = 0x7C00 | (sign << 15), 0
        elif kind == "zero":
            b, f = sign << 15, 0
        else:
            b, f = O.round_exact(v, "FP16", "RTZ", sat=True)
        bits.append(b)
        flags.append(f)
    return np.array(bits, np.uint16), np.array(flags, np.uint8)


def _nan_lanes(name, *codes):
    """(any NaN operand, any signalling NaN operand) per element."""
    nan = np.zeros(len(codes[0]), bool)
    snan = np.zeros(len(codes[0]), bool)
    for c in codes:
        v, s = R.values(name, np.asarray(c))
        nan |= np.isnan(v)
        snan |= s
    return nan, snan


def trsqrt(name, x):
    """RN(1 / RN(sqrt x)) in `name` (TRsqrt.hpp:49-50)."""
    s, f1 = R.reference("TSQRT", name, x)
    one = np.full(len(x), 0x3F800000 if name == "FP32" else 0x3C00, R.raw(name))
    r, f2 = R.reference("TDIV", name, one, s)
    return r, f1 | f2


def trem_fp32(x, y):
    """TRem.hpp:33-43 on FP32 codes."""
    x, y = np.asarray(x, np.uint32), np.asarray(y, np.uint32)
    q, f1 = R.reference("TDIV", "FP32", x, y)
    p, f2 = R.reference("TMUL", "FP32", floor_fp32(q), y)
    r, f3 = R.reference("TSUB", "FP32", x, p)
    t, f4 = R.reference("TMUL", "FP32", y, r)
    neg = negative(t, "FP32")
    s, f5 = R.reference("TADD", "FP32", r, y)
    return np.where(neg, s, r), f1 | f2 | f3 | f4 | np.where(neg, f5, 0).astype(np.uint8)


def trem_fp16(x, y):
    """TRem.hpp:45-73 on FP16 codes: the FP32 steps on the widened operands, toward zero with
    saturation back to FP16, the sign fix-up in FP16."""
    x, y = np.asarray(x, np.uint16), np.asarray(y, np.uint16)
    nan, snan = _nan_lanes("FP16", x, y)
    X, Y = widen16(np.where(nan, 0, x)), widen16(np.where(nan, 0x3C00, y))
    q, f1 = R.reference("TDIV", "FP32", X, Y)
    p, f2 = R.reference("TMUL", "FP32", floor_fp32(q), Y)
    r, f3 = R.reference("TSUB", "FP32", X, p)
    h, f4 = rtz16_sat(r)
    t, f5 = R.reference("TMUL", "FP16", y, h)
    neg = negative(t, "FP16")
    s, f6 = R.reference("TADD", "FP16", h, y)
    bits = np.where(neg, s, h)
    flags = f1 | f2 | f3 | f4 | f5 | np.where(neg, f6, 0).astype(np.uint8)
    # a NaN operand: NaN through every step, NV from the widening of a signalling one
    return np.where(nan, QNAN16, bits).astype(np.uint16), np.where(nan, np.where(snan, NV, 0), flags).astype(np.uint8)


# ---------------------------------------------------------------- DivIEEE754HalfImpl

_MAXSUB = Fraction(1023, 1 << 24)       # the largest FP16 subnormal, 0x03FF


def _fp16_round(v: Fraction):
    """(code, flags) of an exact value rounded once to FP16 (RNE); 0 is +0 (callers sign it)."""
    if v == 0:
        return 0, 0
    return O.round_exact(v, "FP16", "RNE")


def _sign_of(code):
    return code & 0x8000


def div16_one(a: int, b: int):
    """One element of TDIV FP16 by A5's DivIEEE754HalfImpl (custom/Div754.hpp:361-565): the
    significands normalised to [1, 2), divided once, the quotient rescaled by the operands'
    exponent difference with the source's special cases; lanes with a zero, infinite or NaN
    operand take the IEEE quotient."""
    ka, sa, x = O.decode_code("FP16", a)
    kb, sb, y = O.decode_code("FP16", b)
    if ka != "finite" or kb != "finite":
        bits, flags = R.reference("TDIV", "FP16", np.array([a], np.uint16), np.array([b], np.uint16))
        return int(bits[0]), int(flags[0])
    flags = 0
    # operands strictly below the largest subnormal are scaled by 2^10 (exact), adjust -10/+10
    adjust = 0
    if abs(x) < _MAXSUB:
        x, adjust = x * 1024, adjust - 10
    if abs(y) < _MAXSUB:
        y, adjust = y * 1024, adjust + 10

    def fields(v, sign):
        """(exponent field, significand field) of the FP16 encoding of v; 0x03FF has field 0."""
        code = O.round_exact(v, "FP16")[0] if v != 0 else 0
        return (code >> 10) & 0x1F, code & 0x3FF
    e0, t0 = fields(abs(x), sa)
    e1, t1 = fields(abs(y), sb)
    m0 = 1 + Fraction(t0, 1024)                     # the significand with the exponent of 1.0
    m1 = 1 + Fraction(t1, 1024)
    qcode, f = _fp16_round(m0 / m1)
    flags |= f
    q = O.decode_code("FP16", qcode)[2] * Fraction(2) ** adjust     # exact: 2^+-10 of (1/2, 2)
    neg = sa != sb
    scale = e0 - e1 + 15
    if scale == -9:
        return (0x8000 if neg else 0) | (0 if m0 <= m1 else 1), flags
    if scale < -9:
        return 0x8000 if neg else 0, flags
    if scale == 31:
        c, f = _fp16_round(q * 2)
        flags |= f
        q, scale = O.decode_code("FP16", c)[2], 30
    if scale > 31:
        return (0x8000 if neg else 0) | 0x7C00, flags
    c, f = _fp16_round(q * Fraction(2) ** (scale - 15))     # an FP16 multiplication: RNE
    return c | (0x8000 if neg else 0), flags | f


def tdiv_fp16(a, b):
    out = [div16_one(int(x), int(y)) for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist())]
    return np.array([o[0] for o in out], np.uint16), np.array([o[1] for o in out], np.uint8)


def trecip_fp16(a):
    return tdiv_fp16(np.full(len(a), 0x3C00, np.uint16), a)


# ---------------------------------------------------------------- TCVT

def rounded_integer(v: Fraction, mode: str) -> int:
    """v rounded to an integer in `mode` (no range limit)."""
    fl = math.floor(v)
    frac = v - fl
    if frac == 0:
        return fl
    half = Fraction(1, 2)
    if mode == "RNE":
        return fl if frac < half or (frac == half and fl % 2 == 0) else fl + 1
    if mode in ("RNA", "RHB"):
        return (fl + 1 if frac >= half else fl) if v > 0 else (fl if frac <= half else fl + 1)
    if mode == "RTZ":
        return fl if v > 0 else fl + 1
    if mode == "RTP":
        return fl + 1
    if mode == "RTM":
        return fl
    if mode == "RTO":
        return fl if fl % 2 else fl + 1
    raise ValueError(mode)


def wrap_convert(src, dst, codes, mode):
    """Float -> integer without Sat, profile a5: the rounded integer when it fits (NX when
    inexact), else its low N bits with NV; inf/NaN are not modelled here (None)."""
    n, signed = O.INTS[dst]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    bits, flags = [], []
    for c in np.asarray(codes).tolist():
        kind, _, v = O.decode_code(src, int(c))
        if kind not in ("finite", "zero"):
            bits.append(None)
            flags.append(None)
            continue
        r = rounded_integer(v, mode)
        bits.append(r & ((1 << n) - 1))
        flags.append(NV if not lo <= r <= hi else (NX if r != v else 0))
    return bits, flags


def integral_fp32(codes, mode):
    """FP32 -> FP32, profile a5: finite values rounded to an integral value (RTO as RNE), the sign
    of a zero result kept, no flag; inf/NaN not modelled here (None)."""
    mode = "RNE" if mode == "RTO" else mode
    out = []
    for c in np.asarray(codes, np.uint32).tolist():
        kind, sign, v = O.decode_code("FP32", int(c))
        if kind not in ("finite", "zero"):
            out.append(None)
            continue
        r = Fraction(rounded_integer(v, mode))
        out.append(f32_code(r, neg_zero=sign == 1 and r == 0))
    return out
