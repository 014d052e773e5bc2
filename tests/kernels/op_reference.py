"""Test-side reference for the floating element-wise operations (docs/numerics.md, "Operations").

Nothing here imports kernels.numeric.  Operands are decoded by the format definitions of
tests/kernels/oracles.py (or Python's IEEE binary32/binary64 codecs), exact results are computed
with Python integers/Fractions (MPFR for exp/log), and rounded by oracles.round_f64 after
replacing each exact value x by a float64 stand-in: x itself when it has at most 53 significant
bits, otherwise round-to-odd(x) at 53 bits -- which lies strictly between the same two
neighbours of every grid of at most 52 bits, so RNE, the inexact flag and tininess after
rounding come out as for x itself (the round-to-odd theorem; every destination here has at most
24 bits).  FP64 destinations use oracles.round_exact on the exact Fraction instead.

Special operands follow IEEE 754-2019 and Decisions 067-081 as restated in the docs: NaN results
are the format's canonical quiet NaN, infinite results of E4M3 its NaN 0x7F, sNaN operands NV.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np

import oracles as O

NV, DZ, OF, UF, NX = O.NV, O.DZ, O.OF, O.UF, O.NX


# ---------------------------------------------------------------- codes <-> values

def fields(name):
    fam, eb, t, bias, specials, shift, cont = O.SPECS[name]
    return eb, t, specials, shift, cont


def values(name, codes):
    """(float64 values, signalling-NaN mask) of container codes."""
    eb, t, specials, shift, cont = fields(name)
    w = 1 + eb + t
    c = (np.asarray(codes).astype(np.uint64) >> np.uint64(shift)) & np.uint64((1 << w) - 1)
    if cont <= 16:
        v = O.value_table(name)[2][c.astype(np.int64)]
    elif cont == 32:
        with np.errstate(invalid="ignore"):   # widening a signalling NaN raises invalid; it stays a NaN
            v = (c << np.uint64(shift)).astype(np.uint32).view(np.float32).astype(np.float64)
    else:
        v = c.view(np.float64)
    E = (c >> np.uint64(t)) & np.uint64((1 << eb) - 1)
    T = c & np.uint64((1 << t) - 1)
    quiet = (T >> np.uint64(t - 1)) & np.uint64(1)
    snan = (specials == "ieee") & (E == (1 << eb) - 1) & (T != 0) & (quiet == 0)
    return v, np.asarray(snan)


def nan_code(name):
    return O.SPEC[name].nan_code << O.SPEC[name].shift


def inf_code(name, neg):
    sp = O.SPEC[name]
    if sp.inf_code is None:               # E4M3: the canonical NaN stands for infinity
        return nan_code(name)
    return (sp.inf_code | (sp.sign_mask if neg else 0)) << sp.shift


def zero_code(name, neg):
    sp = O.SPEC[name]
    return (sp.sign_mask if neg else 0) << sp.shift


def raw(name):
    return O.RAW[O.SPEC[name].container]


# ---------------------------------------------------------------- exact values -> stand-ins

def ro53(x: Fraction) -> float:
    """x if it has <= 53 significant bits, else x rounded to odd at 53 bits (as a float64)."""
    if x == 0:
        return 0.0
    neg = x < 0
    n, d = abs(x.numerator), x.denominator

    def scaled(k):                          # floor(|x| 2^k), and whether that drops a rest
        q, r = divmod(n << k, d) if k >= 0 else divmod(n, d << -k)
        return q, r != 0

    v = _odd53(53 - (n.bit_length() - d.bit_length()), scaled)
    return -v if neg else v


def _odd53(k, scaled):
    """The 53-bit round-to-odd value q 2^-k, with k moved until `scaled(k)`'s q has 53 bits;
    q's last bit is set when `scaled` says the scaling was inexact."""
    while True:
        q, inexact = scaled(k)
        if q >= 1 << 53:
            k -= 1
        elif q < 1 << 52:
            k += 1
        else:
            return math.ldexp(q | inexact, -k)


def sqrt_ro53(x: Fraction) -> float:
    """Stand-in of sqrt(x) for x > 0, from an integer square root."""
    n, d = x.numerator, x.denominator

    def scaled(k):                          # floor(sqrt(x) 2^k), and whether that drops a rest
        m, rem = divmod(n << (2 * k), d) if k >= 0 else divmod(n, d << (-2 * k))
        q = math.isqrt(m)
        return q, bool(rem) or q * q != m

    return _odd53(53 - (n.bit_length() - d.bit_length()) // 2, scaled)


def daz(name, codes):
    """Profile ftz: subnormal operand encodings read as the zero of their sign."""
    eb, t, specials, shift, cont = fields(name)
    c = np.asarray(codes).astype(np.uint64)
    E = (c >> np.uint64(shift + t)) & np.uint64((1 << eb) - 1)
    T = (c >> np.uint64(shift)) & np.uint64((1 << t) - 1)
    sign = c & np.uint64(1 << (eb + t + shift))
    return np.where((E == 0) & (T != 0), sign, c).astype(np.asarray(codes).dtype)


FTZ = False   # set by reference(..., ftz=True) for the rounding helpers below


def round_exact_values(name, exact, zero_neg):
    """(bits, flags) of exact Fractions `exact` (a list) rounded to `name`; exact zeros take the
    sign in zero_neg."""
    if name == "FP64":
        out = [O.round_exact(x, "FP64", ftz=FTZ) if x != 0 else (zero_code(name, z), 0) for x, z in zip(exact, zero_neg)]
        return (np.array([b for b, _ in out], np.uint64), np.array([f for _, f in out], np.uint8))
    standins = np.array([ro53(x) for x in exact], np.float64)
    bits, flags = O.round_f64(standins, name, ftz=FTZ)
    zero = standins == 0
    bits = np.where(zero, np.where(zero_neg, zero_code(name, True), 0), bits).astype(raw(name))
    return bits, np.where(zero, 0, flags).astype(np.uint8)


# ---------------------------------------------------------------- the operations

def _finite_results(name, lanes, exact_fn, zero_neg_fn, xs):
    """Round exact_fn(*Fractions) for the lanes given; returns dense (bits, flags)."""
    n = xs[0].shape[0]
    bits = np.zeros(n, raw(name))
    flags = np.zeros(n, np.uint8)
    idx = np.flatnonzero(lanes)
    if idx.size:
        ex = [exact_fn(*(Fraction(float(v[i])) for v in xs)) for i in idx]
        zn = [bool(zero_neg_fn(*(v[i] for v in xs))) for i in idx]
        b, f = round_exact_values(name, ex, zn)
        bits[idx], flags[idx] = b, f
    return bits, flags


def _put(bits, flags, mask, code, flag=0):
    bits[mask] = code
    flags[mask] = flag


def reference(op, name, *codes, ftz=False):
    """(bits, flags) of element-wise `op` on `name` for 1-D code arrays, from the definitions;
    ftz=True: profile ftz (subnormal operands read as zero, subnormal results flush with UF|NX)."""
    global FTZ
    FTZ = ftz
    try:
        return _reference(op, name, *(daz(name, c) if ftz else np.asarray(c) for c in codes))
    finally:
        FTZ = False


def _reference(op, name, *codes):
    codes = [np.asarray(c) for c in codes]
    vs = [values(name, c) for c in codes]
    xs = [v for v, _ in vs]
    snan = np.zeros(codes[0].shape, bool)
    for _, s in vs:
        snan |= s
    nan_any = np.zeros(codes[0].shape, bool)
    for x in xs:
        nan_any |= np.isnan(x)
    NAN = nan_code(name)
    finite = np.ones(codes[0].shape, bool)
    for x in xs:
        finite &= np.isfinite(x)
    sb = [np.signbit(x) for x in xs]

    if op in ("TADD", "TSUB"):
        x, y = xs
        ys = -y if op == "TSUB" else y
        ysb = ~sb[1] if op == "TSUB" else sb[1]
        # exact zero sum: -0 only when both addends are -0 (RNE)
        bits, flags = _finite_results(name, finite, lambda p, q: p + q, lambda p, q: False, [x, ys])
        both_neg_zero = (x == 0) & (ys == 0) & sb[0] & ysb
        bits[finite & both_neg_zero] = zero_code(name, True)
        for i in np.flatnonzero(~nan_any & ~finite):
            if np.isinf(x[i]) and np.isinf(ys[i]) and sb[0][i] != ysb[i]:
                bits[i], flags[i] = NAN, NV                  # inf - inf
            else:
                bits[i], flags[i] = inf_code(name, sb[0][i] if np.isinf(x[i]) else ysb[i]), 0
        _put(bits, flags, nan_any, NAN)
    elif op == "TMUL":
        x, y = xs
        neg = sb[0] ^ sb[1]
        bits, flags = _finite_results(name, finite, lambda p, q: p * q, lambda p, q: np.signbit(p) ^ np.signbit(q), [x, y])
        inf = (np.isinf(x) | np.isinf(y)) & ~nan_any
        invalid = inf & ((x == 0) | (y == 0))
        bits[inf & ~invalid] = [inf_code(name, s) for s in neg[inf & ~invalid]]
        flags[inf] = 0
        _put(bits, flags, invalid, NAN, NV)
        _put(bits, flags, nan_any, NAN)
    elif op in ("TDIV", "TRECIP"):
        if op == "TRECIP":
            x, y = np.ones_like(xs[0]), xs[0]
            sx, sy = np.zeros_like(sb[0]), sb[0]
        else:
            (x, y), (sx, sy) = xs, sb
        neg = sx ^ sy
        lanes = finite & (y != 0)
        bits, flags = _finite_results(name, lanes, lambda p, q: p / q, lambda p, q: np.signbit(p) ^ np.signbit(q), [x, y])
        ok = ~nan_any
        m = ok & np.isinf(x) & np.isfinite(y)                # inf / finite = inf
        bits[m] = [inf_code(name, s) for s in neg[m]]
        flags[m] = 0
        m = ok & np.isfinite(x) & np.isinf(y)                # finite / inf = 0
        bits[m] = [zero_code(name, s) for s in neg[m]]
        flags[m] = 0
        m = ok & np.isfinite(x) & (x != 0) & (y == 0)        # divide by zero
        bits[m] = [inf_code(name, s) for s in neg[m]]
        flags[m] = DZ
        _put(bits, flags, ok & (((x == 0) & (y == 0)) | (np.isinf(x) & np.isinf(y))), NAN, NV)
        _put(bits, flags, nan_any, NAN)
    elif op == "TSQRT":
        (x,) = xs
        lanes = finite & (x > 0)
        idx = np.flatnonzero(lanes)
        bits = np.zeros(x.shape, raw(name))
        flags = np.zeros(x.shape, np.uint8)
        if idx.size:
            if name == "FP64":
                raise NotImplementedError("FP64 square roots are checked against softfloat")
            b, f = O.round_f64(np.array([sqrt_ro53(Fraction(float(x[i]))) for i in idx]), name, ftz=FTZ)
            bits[idx], flags[idx] = b, f
        bits[x == 0] = [zero_code(name, s) for s in sb[0][x == 0]]
        _put(bits, flags, np.isposinf(x), inf_code(name, False))
        _put(bits, flags, ~nan_any & (x < 0), NAN, NV)
        _put(bits, flags, nan_any, NAN)
    elif op == "TFMA":
        x, y, z = xs
        pneg = sb[0] ^ sb[1]

        def zero_neg(p, q, r):        # exact zero: -0 only when the zero product and r are both -0
            return (p == 0 or q == 0) and (r == 0) and (np.signbit(p) ^ np.signbit(q)) and np.signbit(r)
        bits, flags = _finite_results(name, finite, lambda p, q, r: p * q + r, zero_neg, [x, y, z])
        prod_invalid = (np.isinf(x) & (y == 0)) | ((x == 0) & np.isinf(y))
        pinf = (np.isinf(x) | np.isinf(y)) & ~prod_invalid & ~np.isnan(x) & ~np.isnan(y)
        zinf = np.isinf(z)
        m = pinf & ~np.isnan(z) & ~(zinf & (np.signbit(z) != pneg))
        bits[m] = [inf_code(name, s) for s in pneg[m]]
        flags[m] = 0
        _put(bits, flags, pinf & zinf & (np.signbit(z) != pneg), NAN, NV)
        m = ~pinf & ~prod_invalid & np.isfinite(x) & np.isfinite(y) & zinf
        bits[m] = [inf_code(name, s) for s in np.signbit(z)[m]]
        flags[m] = 0
        _put(bits, flags, nan_any, NAN)
        _put(bits, flags, prod_invalid, NAN, NV)            # even with a quiet-NaN addend
    elif op == "TREM":
        x, y = xs
        lanes = finite & (y != 0)

        def floor_mod(p, q):
            return p - math.floor(p / q) * q
        bits, flags = _finite_results(name, lanes, floor_mod, lambda p, q: np.signbit(q), [x, y])
        ok = ~nan_any
        _put(bits, flags, ok & ((y == 0) | np.isinf(x)), NAN, NV)
        m = ok & np.isfinite(x) & np.isinf(y)
        for i in np.flatnonzero(m):
            if x[i] == 0:
                bits[i] = zero_code(name, sb[1][i])
            elif sb[0][i] == sb[1][i]:
                bits[i] = codes[0][i]
            else:
                bits[i] = inf_code(name, sb[1][i])
            flags[i] = 0
        _put(bits, flags, nan_any, NAN)
    else:
        raise ValueError(op)
    flags = flags | np.where(snan, NV, 0).astype(np.uint8)
    return bits.astype(raw(name)), flags.astype(np.uint8)


def select_reference(op, name, a, b):
    """TMAX/TMIN as Decisions 067/068 state them, on encodings."""
    (x, sa), (y, sb_) = values(name, a), values(name, b)
    out = []
    for i in range(len(a)):
        xn, yn = math.isnan(x[i]), math.isnan(y[i])
        if xn and yn:
            out.append(nan_code(name))
        elif xn:
            out.append(int(b[i]))
        elif yn:
            out.append(int(a[i]))
        elif x[i] == y[i] == 0 and np.signbit(x[i]) != np.signbit(y[i]):
            out.append(zero_code(name, op == "TMIN"))
        elif x[i] == y[i]:
            out.append(int(a[i]))
        elif (x[i] > y[i]) == (op == "TMAX"):
            out.append(int(a[i]))
        else:
            out.append(int(b[i]))
    return np.array(out, np.uint64).astype(raw(name)), np.where(sa | sb_, NV, 0).astype(np.uint8)


def compare_reference(cmode, name, a, b):
    (x, sa), (y, sb_) = values(name, a), values(name, b)
    fx, fy = [Fraction(float(v)) if np.isfinite(v) else None for v in x], [Fraction(float(v)) if np.isfinite(v) else None for v in y]
    out = []
    for i in range(len(a)):
        if math.isnan(x[i]) or math.isnan(y[i]):
            out.append(int(cmode == "NE"))
            continue
        p = fx[i] if fx[i] is not None else x[i]       # infinities compare as floats
        q = fy[i] if fy[i] is not None else y[i]
        out.append(int({"EQ": p == q, "NE": p != q, "LT": p < q, "GT": p > q, "LE": p <= q, "GE": p >= q}[cmode]))
    return np.array(out, np.uint8), np.where(sa | sb_, NV, 0).astype(np.uint8)


def stand_in_bits(name, standins):
    """Round float64 stand-ins (see module doc) to `name` with oracles.round_f64."""
    return O.round_f64(np.asarray(standins, np.float64), name)


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]
