"""The format table and the codec: raw encodings <-> exact values for every Tile DataType.

One row per floating DataType (FORMATS) holds everything a rule needs: precision, exponent
range, how the specials are encoded, what substitutes for a value class the format cannot
encode, and where the encoding sits in its container.  Code reads the row; docs/numerics.md
states the same definitions in prose with their sources.

Raw values cross the API as unsigned-integer arrays (one element per logical element; X2 types
one nibble 0..15 per element).  `unpack` splits encodings into (class, sign, exp, sig) with
value = (-1)^sign * sig * 2^exp exactly; the rounding core (rounding.py) goes the other way.
All functions are vectorised array code using only the API NumPy and CuPy share; per-format
tables are plain arrays built at import with vectorised NumPy.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa.datatypes import DataType, Kind, datatype

from . import hif8 as _hif8
from .classes import CLASS_NAMES, FINITE, INF, QNAN, SNAN, ZERO  # noqa: F401  (unpack's class codes)


@dataclass(frozen=True)
class FloatFormat:
    """One row of the format table (every field is documented in docs/numerics.md)."""
    name: str
    family: str        # "ieee": sign|exponent|trailing significand; "hif8" tapered; "e8m0"
    width: int         # bits of one encoding, sign included
    shift: int         # position of the encoding's lowest bit in its container (TF32 13, HF32 12)
    ebits: int         # exponent field width (ieee family)
    t: int             # trailing significand bits (ieee family); p = t + 1
    bias: int
    specials: str      # "ieee": exponent all-ones = inf (T=0) / NaN; "fn": only S.1...1 is NaN;
                       # "none": every code is a number; "hif8"; "e8m0"
    emin: int          # exponent of the minimum normal value
    emax: int          # exponent of the largest binade holding finite values
    p: int             # precision (significant bits) of normal values; HiF8: largest (4)
    p_emin: int        # precision at the min-normal binade (tininess is judged on this grid)
    max_mag: int       # magnitude code (sign cleared, before the container shift) of max finite
    inf_subst: str     # what an infinite result becomes: "inf" | "nan" (canonical) | "max"
    nan_subst: str     # what a NaN result becomes: "nan" | "max" (+max finite)
    neg_zero: bool     # has a negative zero encoding
    subnormals: bool   # has values below the min normal
    source: str

    @property
    def sign_bit(self) -> int:
        return self.width - 1

    @property
    def mag_mask(self) -> int:
        return (1 << (self.width - 1)) - 1

    @property
    def qmin(self) -> int:
        """Exponent of the smallest quantum (ulp of the subnormals) in the ieee family."""
        return self.emin - self.t


def _ieee(name, ebits, t, bias, specials, *, width=None, shift=0, source):
    width = 1 + ebits + t if width is None else width
    top = (1 << ebits) - 1
    emax = (top - 1 - bias) if specials == "ieee" else (top - bias)
    if specials == "ieee":
        max_mag = (top << t) - 1
    elif specials == "fn":
        max_mag = (1 << (ebits + t)) - 2
    else:
        max_mag = (1 << (ebits + t)) - 1
    inf_subst = {"ieee": "inf", "fn": "nan", "none": "max"}[specials]
    nan_subst = "max" if specials == "none" else "nan"
    return FloatFormat(name, "ieee", width, shift, ebits, t, bias, specials, 1 - bias, emax,
                       t + 1, t + 1, max_mag, inf_subst, nan_subst, True, True, source)


_OCP8 = "OCP 8-bit Floating Point Specification (OFP8) rev 1.0"
_OCPMX = "OCP Microscaling Formats (MX) Specification v1.0"
_IEEE = "IEEE 754-2019"

FORMATS: dict[str, FloatFormat] = {f.name: f for f in (
    _ieee("FP64", 11, 52, 1023, "ieee", source=_IEEE + " binary64"),
    _ieee("FP32", 8, 23, 127, "ieee", source=_IEEE + " binary32"),
    _ieee("TF32", 8, 10, 127, "ieee", shift=13, source="NVIDIA TensorFloat-32 (1-8-10), high 19 bits of a binary32 container"),
    _ieee("HF32", 8, 11, 127, "ieee", shift=12, source="Huawei HF32 (1-8-11), high 20 bits of a binary32 container"),
    _ieee("FP16", 5, 10, 15, "ieee", source=_IEEE + " binary16"),
    _ieee("BF16", 8, 7, 127, "ieee", source="bfloat16 (1-8-7), high 16 bits of binary32"),
    _ieee("E4M3", 4, 3, 7, "fn", source=_OCP8 + " E4M3"),
    _ieee("E5M2", 5, 2, 15, "ieee", source=_OCP8 + " E5M2"),
    _ieee("E3M2", 3, 2, 3, "none", source=_OCPMX + " FP6 E3M2"),
    _ieee("E2M3", 2, 3, 1, "none", source=_OCPMX + " FP6 E2M3"),
    _ieee("E2M1X2", 2, 1, 1, "none", source=_OCPMX + " FP4 E2M1"),
    _ieee("E1M2X2", 1, 2, 1, "none", source="1-1-2, bias 1 (max 1.75), no inf/NaN"),
    _ieee("HiF4X2", 1, 2, 1, "none", source="HiFloat4 element S1E1M2, bias 1 (CANN op::HiFloat4; arXiv 2604.08826 S1P2)"),
    FloatFormat("HiF8", "hif8", 8, 0, 0, 0, 0, "hif8", _hif8.EMIN_NORMAL, _hif8.EMAX, 4,
                _hif8.P_AT_EMIN_NORMAL, _hif8.MAX_CODE, "inf", "nan", False, True,
                "Huawei HiFloat8, arXiv 2409.16626 (CANN ge::HiF8 bit layout)"),
    FloatFormat("E8M0", "e8m0", 8, 0, 8, 0, 127, "e8m0", -127, 127, 1, 1, 0xFE, "nan", "nan",
                False, False, _OCPMX + " E8M0 scale"),
)}

_INT_CONTAINER = {4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _xp(a):
    """The array namespace of `a` (CuPy arrays stay on the device; everything else is NumPy)."""
    from .. import device
    return device.array_module(a)


def float_format(key) -> FloatFormat:
    d = datatype(key)
    try:
        return FORMATS[d.name]
    except KeyError:
        raise ValueError(f"{d.name} is not a floating DataType") from None


def raw_dtype(key):
    return np.dtype(datatype(key).raw_dtype)


# ---------------------------------------------------------------------------------------------
# unpack
# ---------------------------------------------------------------------------------------------
def _unpack_ieee(u, f: FloatFormat, xp):
    """Arithmetic unpack of the ieee family; u = code (container shift removed) as uint64."""
    t = f.t
    sign = ((u >> np.uint64(f.sign_bit)) & np.uint64(1)).astype(np.uint8)
    mag = u & np.uint64(f.mag_mask)
    E = (mag >> np.uint64(t)).astype(np.int64)
    T = mag & np.uint64((1 << t) - 1)
    top = (1 << f.ebits) - 1
    cls = xp.where(mag == 0, ZERO, FINITE).astype(np.int8)
    if f.specials == "ieee":
        special = E == top
        quiet = (T >> np.uint64(t - 1)) & np.uint64(1)
        nan_cls = xp.where(quiet != 0, QNAN, SNAN)
        cls = xp.where(special, xp.where(T == 0, INF, nan_cls), cls).astype(np.int8)
    elif f.specials == "fn":
        cls = xp.where(mag == np.uint64(f.mag_mask), QNAN, cls).astype(np.int8)
    sig = T + (E != 0).astype(np.uint64) * np.uint64(1 << t)
    exp = xp.maximum(E, 1) - (f.bias + t)
    number = (cls == FINITE) | (cls == ZERO)
    sig = xp.where(number, sig, np.uint64(0))
    exp = xp.where(number, exp, 0)
    return cls, sign, exp, sig


@lru_cache(maxsize=None)
def _code_tables(name: str):
    """(cls, sign, exp, sig) for every code of a format of 8 bits or fewer (vectorised build)."""
    f = FORMATS[name]
    if f.family == "hif8":
        return _hif8.code_tables()
    codes = np.arange(1 << f.width, dtype=np.uint64)
    if f.family == "e8m0":
        cls = np.where(codes == 0xFF, QNAN, FINITE).astype(np.int8)
        sign = np.zeros(256, np.uint8)
        exp = np.where(cls == FINITE, codes.astype(np.int64) - f.bias, 0)
        sig = np.where(cls == FINITE, np.uint64(1), np.uint64(0)).astype(np.uint64)
        return cls, sign, exp, sig
    return _unpack_ieee(codes, f, np)


def _subnormal_table(name: str):
    f = FORMATS[name]
    cls, sign, exp, sig = _code_tables(name)
    if f.family == "hif8":
        codes = np.arange(256)
        return (cls == FINITE) & ((codes & 0x78) == 0)
    if f.family == "e8m0":
        return np.zeros(256, bool)
    return (cls == FINITE) & (sig < np.uint64(1 << f.t))


def unpack(bits, dtype, ftz: bool = False):
    """Split raw encodings into (cls int8, sign uint8, exp int64, sig uint64).

    For ZERO/FINITE the value is exactly (-1)^sign * sig * 2^exp (sig not normalised); for
    INF/QNAN/SNAN exp = sig = 0.  `ftz=True` reads subnormal (HiF8: denormal) inputs as zero of
    the same sign (profile `ftz`).  Bits outside the format (see valid_encoding) are ignored.
    """
    f = float_format(dtype)
    xp = _xp(bits)
    u = xp.asarray(bits).astype(np.uint64)
    if f.shift:
        u = u >> np.uint64(f.shift)
    if f.width <= 8:
        idx = (u & np.uint64((1 << f.width) - 1)).astype(np.intp)
        cls, sign, exp, sig = (xp.asarray(a)[idx] for a in _code_tables(f.name))
        if ftz and f.subnormals:
            sub = xp.asarray(_subnormal_table(f.name))[idx]
            cls = xp.where(sub, ZERO, cls).astype(np.int8)
            sig = xp.where(sub, np.uint64(0), sig)
        return cls, sign, exp, sig
    u = u & np.uint64((1 << f.width) - 1)
    cls, sign, exp, sig = _unpack_ieee(u, f, xp)
    if ftz:
        sub = (cls == FINITE) & (sig < np.uint64(1 << f.t))
        cls = xp.where(sub, ZERO, cls).astype(np.int8)
        sig = xp.where(sub, np.uint64(0), sig)
    return cls, sign, exp, sig


# ---------------------------------------------------------------------------------------------
# special encodings (raw, container layout) and their documented substitutes
# ---------------------------------------------------------------------------------------------
def _place(f: FloatFormat, mag: int, sign: int) -> int:
    code = mag | ((sign & 1) << f.sign_bit) if f.family == "ieee" or f.family == "hif8" else mag
    return code << f.shift


def max_bits(dtype, sign: int = 0) -> int:
    """Raw encoding of the largest finite magnitude with the given sign (E8M0: 2^127)."""
    f = float_format(dtype)
    return _place(f, f.max_mag, sign if f.family != "e8m0" else 0)


def nan_bits(dtype, sign: int = 0) -> int:
    """Canonical quiet NaN (IEEE family: exponent all ones, quiet bit set, payload 0).

    Formats without a NaN (FP6, FP4, E1M2, HiF4) return the documented substitute: +max finite.
    HiF8 and E8M0 have exactly one NaN (0x80, 0xFF) and ignore `sign`.
    """
    f = float_format(dtype)
    if f.nan_subst == "max":
        return max_bits(dtype, 0)
    if f.family == "hif8":
        return _hif8.NAN_CODE
    if f.family == "e8m0":
        return 0xFF
    if f.specials == "fn":
        return _place(f, f.mag_mask, sign)
    return _place(f, (((1 << f.ebits) - 1) << f.t) | (1 << (f.t - 1)), sign)


def inf_bits(dtype, sign: int = 0) -> int:
    """Infinity of the given sign, or the documented substitute for formats without one:
    E4M3 and E8M0 -> their canonical NaN (0x7F, 0xFF; sign ignored); FP6/FP4/E1M2/HiF4 -> +/-max."""
    f = float_format(dtype)
    if f.inf_subst == "nan":
        return nan_bits(dtype)
    if f.inf_subst == "max":
        return max_bits(dtype, sign)
    if f.family == "hif8":
        return _hif8.INF_CODE | ((sign & 1) << 7)
    return _place(f, ((1 << f.ebits) - 1) << f.t, sign)


def zero_bits(dtype, sign: int = 0) -> int:
    """Zero of the given sign; formats without -0 (HiF8) give +0.  E8M0 has no zero: ValueError."""
    f = float_format(dtype)
    if f.family == "e8m0":
        raise ValueError("E8M0 has no zero")
    if not f.neg_zero:
        sign = 0
    return _place(f, 0, sign)


# ---------------------------------------------------------------------------------------------
# decode / encode / valid_encoding / info
# ---------------------------------------------------------------------------------------------
def _int_params(d: DataType):
    n = d.bits
    if d.kind is Kind.SINT:
        return n, -(1 << (n - 1)), (1 << (n - 1)) - 1
    return n, 0, (1 << n) - 1


def decode(bits, dtype):
    """Exact values of raw encodings.

    Floating DataTypes -> float64 (every value of every format is exactly a float64; NaN ->
    NaN with the encoding's sign, FP64 payloads preserved).  Integer DataTypes -> int64 (S*,
    sign-extended from the element width, S4X2 from the nibble) or uint64 (U*).
    """
    d = datatype(dtype)
    xp = _xp(bits)
    b = xp.asarray(bits)
    if d.is_int:
        n = d.bits
        u = b.astype(np.uint64) & np.uint64((1 << n) - 1 if n < 64 else 0xFFFFFFFFFFFFFFFF)
        if d.kind is Kind.UINT:
            return u
        if n == 64:
            return u.view(np.int64)
        s = u.astype(np.int64)
        return xp.where(s >= (1 << (n - 1)), s - (1 << n), s)
    if d.name == "FP64":
        return b.astype(np.uint64).view(np.float64)
    cls, sign, exp, sig = unpack(b, d)
    mag = xp.ldexp(sig.astype(np.float64), exp.astype(np.int32))
    mag = xp.where(cls == INF, np.inf, mag)
    mag = xp.where((cls == QNAN) | (cls == SNAN), np.nan, mag)
    return xp.where(sign != 0, -mag, mag)


def field_mask(dtype) -> int:
    """Container bits that belong to the format (TF32: bits 31..13, E3M2: bits 5..0, ...)."""
    d = datatype(dtype)
    if d.is_int:
        return (1 << d.bits) - 1
    f = FORMATS[d.name]
    return ((1 << f.width) - 1) << f.shift


def valid_encoding(bits, dtype):
    """True where `bits` is an encoding of `dtype`: no bit outside the format's field is set
    (bits above a 6-bit FP6 code, TF32 low 13 / HF32 low 12 bits, nibble values > 15, any bit
    above the container).  Negative values of signed input arrays are invalid."""
    xp = _xp(bits)
    b = xp.asarray(bits)
    if b.dtype.kind == "i":
        neg = b < 0
        u = b.astype(np.int64).view(np.uint64) if b.dtype.itemsize == 8 else b.astype(np.int64).astype(np.uint64)
        return ~neg & ((u & np.uint64(~field_mask(dtype) & 0xFFFFFFFFFFFFFFFF)) == 0)
    if b.dtype.kind not in "ub":
        raise TypeError(f"raw encodings must be an integer array, got {b.dtype}")
    u = b.astype(np.uint64)
    return (u & np.uint64(~field_mask(dtype) & 0xFFFFFFFFFFFFFFFF)) == 0


@dataclass(frozen=True)
class FormatInfo:
    name: str
    kind: str                  # float | exponent | sint | uint
    width: int                 # significant bits of one element
    container: int             # bits one element occupies in a tile payload
    precision: int | None      # significant bits of normal values (HiF8: 4 near 1, tapering to 1)
    emin: int | None           # exponent of the min normal value
    emax: int | None           # exponent of the largest finite binade
    bias: int | None
    max_finite: float | int
    min_finite: float | int    # most negative finite value (E8M0: smallest positive, 2^-127)
    min_normal: float | None
    min_subnormal: float | None
    has_inf: bool
    has_nan: bool
    has_neg_zero: bool
    max_bits: int
    nan_bits: int | None       # canonical quiet NaN (None without NaN)
    inf_bits: tuple | None     # (+inf, -inf) encodings (None without infinity)
    nan_encodings: str
    source: str


@lru_cache(maxsize=None)
def info(dtype) -> FormatInfo:
    d = datatype(dtype)
    if d.is_int:
        n, lo, hi = _int_params(d)
        return FormatInfo(d.name, d.kind.value, n, d.container, None, None, None, None, hi, lo,
                          None, None, False, False, False, hi,
                          None, None, "none", "two's complement" if d.kind is Kind.SINT else "unsigned binary")
    f = FORMATS[d.name]
    mx = float(decode(np.array([max_bits(d)], dtype=raw_dtype(d)), d)[0])
    if f.family == "hif8":
        min_sub = 2.0 ** _hif8.EMIN_DENORMAL
    elif f.family == "e8m0":
        min_sub = None
    else:
        min_sub = 2.0 ** f.qmin
    has_inf = f.inf_subst == "inf"
    has_nan = f.nan_subst == "nan"
    if f.specials == "ieee":
        nan_desc = "exponent all ones, trailing significand nonzero; quiet bit = its top bit"
    elif f.specials == "fn":
        nan_desc = "S.1111.111 only (0x7F, 0xFF)"
    elif f.family == "hif8":
        nan_desc = "0x80 only"
    elif f.family == "e8m0":
        nan_desc = "0xFF only"
    else:
        nan_desc = "none"
    return FormatInfo(
        d.name, d.kind.value, f.width, d.container, f.p, f.emin, f.emax,
        f.bias if f.family != "hif8" else None, mx,
        2.0 ** -127 if f.family == "e8m0" else -mx, 2.0 ** f.emin, min_sub, has_inf, has_nan,
        f.neg_zero, max_bits(d), nan_bits(d) if has_nan else None,
        (inf_bits(d, 0), inf_bits(d, 1)) if has_inf else None, nan_desc, f.source)
