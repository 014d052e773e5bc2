"""The rounding core: an exact value (sign, exp, sig, sticky) rounded once to a DataType.

    bits, flags = round_pack(sign, exp, sig, sticky, "E4M3", rmode="RNE", sat=False, ftz=False)

The value is v = (-1)^sign * (sig + s) * 2^exp with s = 0 when sticky is False and some unknown
0 < s < 1 when sticky is True (callers then guarantee sig >= 2^63, so s lies far below every
destination's rounding position).  sig == 0 without sticky is a signed zero.  NaN and infinity
never reach round_pack: callers handle those classes with formats.nan_bits / inf_bits.

One algorithm for every floating format: find the binade e of v, take the destination's quantum
2^q for that binade (IEEE family: q = max(e, emin) - t; HiF8: its tapered width table; E8M0:
q = e), split sig into the kept integer m, the round bit R and the sticky S, add the mode's
increment, and pack (m + inc) * 2^q into an encoding.  "Even" and "odd" always mean the last bit
of the encoding of the truncated candidate, so tapered HiF8 rounds like every other format.
Overflow results follow the overflow table of docs/numerics.md (FORMAT_OVERFLOW below), flags
are IEEE 754-2019 with tininess detected after rounding on the min-normal binade's grid.

Integer destinations are rounded by `round_to_int` (same inputs; used by convert).
Everything is array code over the API NumPy and CuPy share; tables are plain arrays.
"""
from __future__ import annotations

import numpy as np

from isa.datatypes import Kind, datatype

from . import hif8 as _hif8
from .flags import NV, NX, OF, UF
from .formats import FORMATS, _xp, float_format

RMODES = ("RNE", "RTZ", "RTM", "RTP", "RNA", "RTO", "RHB")
NEAREST = frozenset({"RNE", "RNA", "RHB"})
# RMode 7 (RHB, "hybrid") is assigned for every TCVT destination (Decision 080).  Profile ieee
# 1.0 gives it one definition for all of them: the published HiF8 codecs' TA rounding (round to
# nearest, ties away from zero); docs/numerics.md "RHB" gives the sources and the reasoning.
RHB_RULE = "RNA"

_U1 = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def check_rmode(rmode: str) -> str:
    """Validate a resolved rounding mode (every mode is defined for every destination)."""
    if rmode not in RMODES:
        raise ValueError(f"unknown rounding mode {rmode!r}; expected one of {RMODES}")
    return rmode


# ---------------------------------------------------------------------------------------------
# bit helpers (uint64 arrays; every shift count is clamped so NumPy and CuPy agree)
# ---------------------------------------------------------------------------------------------
def _clamp(x, lo, hi, xp=np):
    """x limited to [lo, hi]: xp.clip's values (integer arrays here), without its Python-level
    wrapper, which costs a few microseconds a call -- most of a call on the small arrays of a
    batch step, and the reference paths make a dozen a call."""
    return xp.minimum(xp.maximum(x, lo), hi)


def bitlen(x, xp=np):
    """Number of significant bits of uint64 x (0 for 0), exact for all 64-bit values."""
    _, e = xp.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    # float64(x) may have rounded up to the next power of two: correct by one where needed
    top = _clamp(e - 1, 0, 63, xp).astype(np.uint64)
    too_big = (e > 0) & (((x >> top) == 0) | (e - 1 > 63))
    return xp.where(too_big, e - 1, e)


def shl(x, s, xp=np):
    """x << s for 0 <= s; 0 when s >= 64."""
    sc = _clamp(s, 0, 63, xp).astype(np.uint64)
    return xp.where(s >= 64, np.uint64(0), x << sc)


def shr(x, s, xp=np):
    """x >> s for 0 <= s; 0 when s >= 64."""
    sc = _clamp(s, 0, 63, xp).astype(np.uint64)
    return xp.where(s >= 64, np.uint64(0), x >> sc)


def split(sig, exp, sticky, q, xp=np):
    """Split (sig + s) * 2^exp at quantum 2^q: (m, R, S) with m the kept integer (truncated),
    R the first discarded bit and S the OR of everything below it (sticky included).

    When q <= exp nothing is discarded: m = sig << (exp - q) (callers keep that small)."""
    shift = q - exp
    k = shift - 1
    kc = _clamp(k, 0, 63, xp).astype(np.uint64)
    R = (k >= 0) & (k <= 63) & (((sig >> kc) & _U1) != 0)
    low = xp.where(k >= 64, _ALL, (_U1 << kc) - _U1)
    S = ((k > 0) & ((sig & low) != 0)) | sticky
    m = xp.where(shift <= 0, shl(sig, -shift, xp), shr(sig, shift, xp))
    return m, R, S


def increment(R, S, odd, sign, rmode: str, xp=np):
    """Whether the mode moves the truncated candidate one step away from zero."""
    if rmode == "RHB":
        rmode = RHB_RULE
    if rmode == "RNE":
        return R & (S | odd)
    if rmode == "RNA":
        return R
    if rmode == "RTZ":
        return xp.zeros_like(R)
    inexact = R | S
    if rmode == "RTP":
        return inexact & ~sign
    if rmode == "RTM":
        return inexact & sign
    if rmode == "RTO":
        return inexact & ~odd
    raise ValueError(rmode)


def _toward_overflow(sign, rmode, xp):
    """Elements whose rounding direction points away from zero at an overflow (inf side)."""
    if rmode in NEAREST:
        return xp.ones_like(sign)
    if rmode == "RTP":
        return ~sign
    if rmode == "RTM":
        return sign.copy()
    return xp.zeros_like(sign)      # RTZ, RTO: never infinity


def _carry_at_emin(sig, exp, sticky, sign, t_emin, emin, rmode, xp):
    """For values in the binade just below the min normal: does rounding on the unbounded grid
    of the min-normal precision (t_emin trailing bits) reach 2^emin?  (tininess after rounding)"""
    q2 = emin - 1 - t_emin
    m2, R2, S2 = split(sig, exp, sticky, xp.full_like(exp, q2), xp)
    inc2 = increment(R2, S2, (m2 & _U1) != 0, sign, rmode, xp)
    return (m2 + inc2.astype(np.uint64)) >> np.uint64(t_emin + 1) != 0


# ---------------------------------------------------------------------------------------------
# per-family rounding: each returns (magnitude/code uint64, sign_kept bool, flags uint8)
# ---------------------------------------------------------------------------------------------
def _round_ieee(f, sign, exp, sig, sticky, e, rmode, sat, ftz, xp):
    t = f.t
    nonzero = sig != 0
    big = nonzero & (e > f.emax)
    ec = xp.where(nonzero, _clamp(e, f.emin - 2 * 64, f.emax, xp), f.emin - 200)
    q = xp.maximum(ec, f.emin) - t
    m, R, S = split(sig, exp, sticky, q, xp)
    inc = increment(R, S, (m & _U1) != 0, sign, rmode, xp)
    M = m + inc.astype(np.uint64)
    mag = ((q - f.qmin).astype(np.uint64) << np.uint64(t)) + M
    inexact = R | S
    over = big | (mag > np.uint64(f.max_mag))
    tiny = nonzero & (e < f.emin)
    tiny &= ~((e == f.emin - 1) & _carry_at_emin(sig, exp, sticky, sign, t, f.emin, rmode, xp))
    flags = xp.where(inexact, NX, 0) | xp.where(tiny & inexact, UF, 0)
    keep_sign = xp.ones_like(sign)
    # overflow table
    toward = _toward_overflow(sign, rmode, xp) & (not sat)
    if f.inf_subst == "inf":
        subst = np.uint64(((1 << f.ebits) - 1) << t)
    elif f.inf_subst == "nan":
        subst = np.uint64(f.mag_mask)          # canonical NaN, sign cleared below
        keep_sign = ~(over & toward)
    else:
        subst = np.uint64(f.max_mag)
    mag = xp.where(over, xp.where(toward, subst, np.uint64(f.max_mag)), mag)
    flags = xp.where(over, OF | NX, flags)
    if ftz:
        flush = ~over & (mag != 0) & (mag < np.uint64(1 << t))
        mag = xp.where(flush, np.uint64(0), mag)
        flags = xp.where(flush, flags | UF | NX, flags)
    return mag, keep_sign, flags


_Q_HIF8 = np.concatenate([[_hif8.EMIN_DENORMAL], _hif8.BINADES - _hif8.WIDTH]).astype(np.int64)  # e = -23..15
_WIDTH_HIF8 = _hif8.WIDTH
_BASE_HIF8 = _hif8.BASE_CODE.astype(np.uint64)


def _pack_hif8(M, q, xp):
    """Code (sign cleared) of the exactly representable magnitude M * 2^q, and overflow mask."""
    bl = bitlen(M, xp)
    e2 = q + bl - 1
    pow2 = (M & (M - xp.minimum(M, _U1))) == 0
    over = (M != 0) & ((e2 > _hif8.EMAX) | ((e2 == _hif8.EMAX) & ~pow2))
    i = _clamp(e2, _hif8.EMIN_DENORMAL, _hif8.EMAX, xp) - _hif8.EMIN_DENORMAL
    W = xp.asarray(_WIDTH_HIF8)[i]
    sh = W - bl + 1
    Mn = xp.where(sh >= 0, shl(M, sh, xp), shr(M, -sh, xp))
    field = Mn - shl(xp.ones_like(M), W, xp)
    code = xp.asarray(_BASE_HIF8)[i] | field
    return xp.where(M == 0, np.uint64(0), code), over


def _round_hif8(f, sign, exp, sig, sticky, e, rmode, sat, ftz, xp):
    nonzero = sig != 0
    big = nonzero & (e > _hif8.EMAX)
    ec = xp.where(nonzero, _clamp(e, _hif8.EMIN_DENORMAL - 1, _hif8.EMAX, xp), _hif8.EMIN_DENORMAL - 1)
    q = xp.asarray(_Q_HIF8)[ec - (_hif8.EMIN_DENORMAL - 1)]
    m, R, S = split(sig, exp, sticky, q, xp)
    lo_code, _ = _pack_hif8(m, q, xp)
    inc = increment(R, S, (lo_code & _U1) != 0, sign, rmode, xp)
    code, over = _pack_hif8(m + inc.astype(np.uint64), q, xp)
    over |= big
    inexact = R | S
    tiny = nonzero & (e < _hif8.EMIN_NORMAL)
    tiny &= ~((e == _hif8.EMIN_NORMAL - 1)
              & _carry_at_emin(sig, exp, sticky, sign, _hif8.P_AT_EMIN_NORMAL - 1, _hif8.EMIN_NORMAL, rmode, xp))
    flags = xp.where(inexact, NX, 0) | xp.where(tiny & inexact, UF, 0)
    toward = _toward_overflow(sign, rmode, xp) & (not sat)
    code = xp.where(over, xp.where(toward, np.uint64(_hif8.INF_CODE), np.uint64(_hif8.MAX_CODE)), code)
    flags = xp.where(over, OF | NX, flags)
    if ftz:
        flush = ~over & (code != 0) & (code < np.uint64(0x08))
        code = xp.where(flush, np.uint64(0), code)
        flags = xp.where(flush, flags | UF | NX, flags)
    return code, code != 0, flags           # HiF8 has no -0: a zero result drops its sign


def _round_e8m0(f, sign, exp, sig, sticky, e, rmode, sat, ftz, xp):
    nonzero = sig != 0
    invalid = sign | ~nonzero               # no sign, no zero: NaN with NV
    ec = _clamp(xp.where(nonzero, e, 0), -129, 128, xp)
    m, R, S = split(sig, exp, sticky, ec, xp)
    odd = ((ec + 127) & 1) != 0             # the truncated candidate 2^ec is code ec + 127
    inc = increment(R, S, odd, sign, rmode, xp)
    k = ec + inc.astype(np.int64)
    inexact = R | S
    over = nonzero & ((e > 127) | (k > 127))
    under = nonzero & ((e < -128) | (k < -127))
    code = (_clamp(k, -127, 127, xp) + 127).astype(np.uint64)
    flags = xp.where(inexact, NX, 0)
    code = xp.where(under, np.uint64(0), code)
    flags = xp.where(under, UF | NX, flags)
    toward = _toward_overflow(sign, rmode, xp) & (not sat)
    code = xp.where(over, xp.where(toward, np.uint64(0xFF), np.uint64(0xFE)), code)
    flags = xp.where(over, OF | NX, flags)
    code = xp.where(invalid, np.uint64(0xFF), code)
    flags = xp.where(invalid, NV, flags)
    return code, xp.zeros_like(sign), flags


_FAMILY = {"ieee": _round_ieee, "hif8": _round_hif8, "e8m0": _round_e8m0}


def _as_arrays(sign, exp, sig, sticky, xp):
    sign, exp, sig, sticky = xp.broadcast_arrays(
        xp.asarray(sign), xp.asarray(exp), xp.asarray(sig), xp.asarray(sticky))
    return (sign.astype(bool), exp.astype(np.int64), sig.astype(np.uint64), sticky.astype(bool))


def round_pack(sign, exp, sig, sticky, dtype, rmode: str = "RNE", sat: bool = False, ftz: bool = False):
    """Round v = (-1)^sign * (sig + s) * 2^exp once to floating `dtype`; returns (bits, flags).

    bits: raw encodings (the DataType's container dtype); flags: uint8 NV/OF/UF/NX per element.
    Overflow follows docs/numerics.md; `sat` clamps to the max finite value (OF|NX still
    raised); `ftz` flushes nonzero subnormal results to zero of the same sign with UF|NX.
    E8M0 (no zero, no sign): zero or negative values give 0xFF with NV; positive values below
    2^-127 give 0x00 (2^-127) with UF|NX.
    """
    f = float_format(dtype)
    check_rmode(rmode)
    xp = _xp(sig)
    sign, exp, sig, sticky = _as_arrays(sign, exp, sig, sticky, xp)
    e = exp + bitlen(sig, xp) - 1
    mag, keep_sign, flags = _FAMILY[f.family](f, sign, exp, sig, sticky, e, rmode, bool(sat), bool(ftz), xp)
    if f.family != "e8m0":
        s = (sign & keep_sign).astype(np.uint64)
        mag = mag | (s << np.uint64(f.sign_bit))
    if f.shift:
        mag = mag << np.uint64(f.shift)
    return mag.astype(datatype(f.name).raw_dtype), flags.astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# integer destinations
# ---------------------------------------------------------------------------------------------
def int_range(dtype):
    d = datatype(dtype)
    n = d.bits
    if d.kind is Kind.SINT:
        return n, -(1 << (n - 1)), (1 << (n - 1)) - 1
    return n, 0, (1 << n) - 1


def int_bits_of(neg, mag, n, xp=np):
    """Two's complement n-bit encodings of (-1)^neg * mag (uint64 arithmetic, modulo 2^n)."""
    v = xp.where(neg, (~mag) + _U1, mag)
    if n < 64:
        v = v & np.uint64((1 << n) - 1)
    return v


def round_to_int(sign, exp, sig, sticky, dtype, rmode: str = "RTZ", wrap: bool = False):
    """Round v (as in round_pack) to an integer of `dtype`; returns (bits, flags).

    In range: the rounded integer, NX when inexact.  Out of range (after rounding): the nearest
    bound (min or max; unsigned negatives -> 0) with NV only; with `wrap` (profile a5's
    non-saturating conversions) the low N bits of the rounded integer instead, NV still raised.
    RHB rounds as RHB_RULE.
    """
    d = datatype(dtype)
    if not d.is_int:
        raise ValueError(f"{d.name} is not an integer DataType")
    check_rmode(rmode)
    xp = _xp(sig)
    sign, exp, sig, sticky = _as_arrays(sign, exp, sig, sticky, xp)
    n, lo, hi = int_range(d)
    nonzero = sig != 0
    e = exp + bitlen(sig, xp) - 1
    huge = nonzero & (e >= 64)
    q = xp.zeros_like(exp)
    m, R, S = split(sig, xp.where(huge, 0, exp), sticky, q, xp)
    inc = increment(R, S, (m & _U1) != 0, sign, rmode, xp)
    M = m + inc.astype(np.uint64)
    wrapped = inc & (M == 0)                # 2^64 - 1 + 1
    pos_limit = np.uint64(hi)
    neg_limit = np.uint64(-lo)              # 2^(n-1) for signed, 0 for unsigned
    oor = huge | wrapped | xp.where(sign, M > neg_limit, M > pos_limit)
    bits = int_bits_of(sign & (M != 0), M, n, xp)
    bound = xp.where(sign, np.uint64(lo & 0xFFFFFFFFFFFFFFFF) & np.uint64((1 << n) - 1 if n < 64 else 0xFFFFFFFFFFFFFFFF),
                     pos_limit)
    if wrap:      # the rounded integer modulo 2^64 (sig << exp when it is that large), then 2^n
        Mw = xp.where(huge, shl(sig, _clamp(exp, 0, 64, xp), xp), M)
        bound = int_bits_of(sign & (Mw != 0), Mw, n, xp)
    bits = xp.where(oor, bound, bits)
    flags = xp.where(oor, NV, xp.where(R | S, NX, 0))
    return bits.astype(d.raw_dtype), flags.astype(np.uint8)


def round_integral(sign, exp, sig, rmode: str, xp=np):
    """(sig', exp') of v = (-1)^sign * sig * 2^exp rounded to an integral value in `rmode` (exact
    inputs, no sticky): values already integral (exp >= 0) are returned as they are."""
    check_rmode(rmode)
    m, R, S = split(sig, exp, xp.zeros(sig.shape, bool), xp.zeros_like(exp), xp)
    inc = increment(R, S, (m & _U1) != 0, sign, rmode, xp)
    frac = exp < 0
    return xp.where(frac, m + inc.astype(np.uint64), sig), xp.where(frac, 0, exp)


__all__ = ["round_pack", "round_to_int", "RMODES", "RHB_RULE", "FORMATS"]
