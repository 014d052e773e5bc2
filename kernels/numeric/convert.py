"""TCVT (Decision 080): every source DataType to every destination DataType, bit-exact.

    bits, flags = convert(src_bits, "FP32", "E4M3", rmode="RNE", sat=False, profile="ieee")

Raw encodings in (one element per logical element, X2 types one nibble 0..15 each), raw
encodings of the destination out plus per-element NV/OF/UF/NX flags.  The value rules
(docs/numerics.md, "Conversion"):

- RMode DEFAULT is RTZ for floating (incl. E8M0) -> integer, RNE otherwise; RHB is
  rounding.RHB_RULE (ties away) for every destination; exact conversions ignore the mode.
- float -> float: the exact source value rounded once (rounding.round_pack); infinities and
  NaNs per the special-class table; NaN payloads propagate left-aligned, sNaN -> qNaN with NV.
- float -> integer: rounded per RMode, out of range (and +-inf) -> the nearest bound with NV,
  NaN -> 0 with NV (always saturating; Sat changes nothing).
- integer -> float: the exact integer rounded once (no detour through float64).
- integer -> integer: modulo 2^width without Sat; Sat=1 clamps to [min, max] with NV.
- profile ftz: subnormal sources read as zero, subnormal results flush to zero (UF|NX).
- a profile's TCVT rule for the pair (profiles.Profile.rule("TCVT", "SRC->DST")): WRAP (float
  -> integer without Sat: an out-of-range finite value gives the low N bits of its rounded
  integer, NV), INTEGRAL (same-type float: rounded to an integral value in the block's RMode,
  RTO as RNE); docs/numerics.md "Profile a5".

Paths, all giving the same bits (the generic path is the reference; the others are built from
it or checked against it): sources of 16 bits or fewer use a full table of their 2^w codes;
FP32/TF32/HF32 sources to 8-bit-or-smaller floating destinations use a 2^17-entry table indexed
by the high 16 bits plus "low 16 bits nonzero" (valid because every such destination rounds
above bit 16; verified when the table is built); everything else runs the vectorised generic
path (or its Numba twin, kernels/numeric/fastconvert.py, for wide IEEE pairs on the CPU).
CuPy sources stay on their device (`convert_device`) and give CuPy results.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from isa.datatypes import DataType, Kind, datatype

from .flags import NV
from .formats import (FORMATS, INF, QNAN, SNAN, _xp, field_mask, inf_bits, max_bits, nan_bits, unpack,
                      valid_encoding)
from .interp import INTERPRETED
from .profiles import IEEE, INTEGRAL, WRAP, profile as _profile
from .rounding import RHB_RULE, check_rmode, int_bits_of, int_range, round_integral, round_pack, round_to_int

_RMODE_CODES = {0: "DEFAULT", 1: "RNE", 2: "RTZ", 3: "RTM", 4: "RTP", 5: "RNA", 6: "RTO", 7: "RHB"}
RULES = frozenset({IEEE, WRAP, INTEGRAL})       # the TCVT rules convert_generic implements


class InvalidEncoding(ValueError):
    """Source bits outside the DataType's field (see formats.valid_encoding)."""


def is_floating(d: DataType) -> bool:
    return d.kind in (Kind.FLOAT, Kind.EXPONENT)


def resolve_rmode(rmode, src, dst) -> str:
    """RMode name (or field code 0..7) -> the concrete mode; DEFAULT is RTZ for float -> int,
    RHB is its one rule RHB_RULE (so RHB and that mode share tables and compiled paths)."""
    s, d = datatype(src), datatype(dst)
    if isinstance(rmode, (int, np.integer)):
        try:
            rmode = _RMODE_CODES[int(rmode)]
        except KeyError:
            raise ValueError(f"RMode code {rmode} is not assigned") from None
    rmode = "DEFAULT" if rmode is None else str(rmode).upper()
    if rmode == "DEFAULT":
        rmode = "RTZ" if is_floating(s) and d.is_int else "RNE"
    check_rmode(rmode)
    return RHB_RULE if rmode == "RHB" else rmode


# ---------------------------------------------------------------------------------------------
# the generic (reference) path
# ---------------------------------------------------------------------------------------------
def _int_value(bits, s: DataType, xp):
    """(negative bool, magnitude uint64) of integer encodings."""
    n = s.bits
    u = bits.astype(np.uint64)
    if n < 64:
        u = u & np.uint64((1 << n) - 1)
    if s.kind is Kind.UINT:
        return xp.zeros(u.shape, bool), u
    neg = ((u >> np.uint64(n - 1)) & np.uint64(1)) != 0
    mag = (~u) + np.uint64(1)
    if n < 64:
        mag = mag & np.uint64((1 << n) - 1)
    return neg, xp.where(neg, mag, u)


def _int_to_int(neg, mag, d: DataType, sat: bool, xp):
    n, lo, hi = int_range(d)
    if not sat:
        return int_bits_of(neg, mag, n, xp).astype(d.raw_dtype), xp.zeros(mag.shape, np.uint8)
    over = xp.where(neg, mag > np.uint64(-lo), mag > np.uint64(hi))
    bound = xp.where(neg, np.uint64((lo & ((1 << n) - 1))), np.uint64(hi))
    bits = xp.where(over, bound, int_bits_of(neg, mag, n, xp))
    return bits.astype(d.raw_dtype), xp.where(over, NV, 0).astype(np.uint8)


def _nan_payload_result(bits, sign, s: DataType, d: DataType, xp):
    """NaN -> NaN-capable destination: sign kept where the destination has signed NaNs, quiet
    bit set, payload (trailing significand below the quiet bit) kept left-aligned."""
    fd = FORMATS[d.name]
    if fd.family == "hif8" or fd.family == "e8m0":
        return xp.full(bits.shape, np.uint64(nan_bits(d)))
    sgn = sign.astype(np.uint64) << np.uint64(fd.sign_bit)
    if fd.specials == "fn":
        return (sgn | np.uint64(fd.mag_mask)) << np.uint64(fd.shift)
    payload = xp.zeros(bits.shape, np.uint64)
    fs = FORMATS.get(s.name)
    if fs is not None and fs.specials == "ieee" and fs.t > 1 and fd.t > 1:
        T = (bits.astype(np.uint64) >> np.uint64(fs.shift)) & np.uint64((1 << (fs.t - 1)) - 1)
        if fd.t >= fs.t:
            payload = T << np.uint64(fd.t - fs.t)
        else:
            payload = T >> np.uint64(fs.t - fd.t)
    quiet = np.uint64((((1 << fd.ebits) - 1) << fd.t) | (1 << (fd.t - 1)))
    return (sgn | quiet | payload) << np.uint64(fd.shift)


def _special_results(bits, cls, sign, s, d, sat, xp):
    """(mask, bits, flags) for the INF/QNAN/SNAN source elements to a floating destination."""
    fd = FORMATS[d.name]
    neg = sign != 0
    inf = cls == INF
    nan = (cls == QNAN) | (cls == SNAN)
    # infinities (docs/numerics.md, special-class table)
    if fd.inf_subst == "inf":
        inf_out = xp.where(neg, np.uint64(inf_bits(d, 1)), np.uint64(inf_bits(d, 0)))
        inf_fl = 0
    elif fd.family == "e8m0":
        inf_out = xp.where(neg | (not sat), np.uint64(0xFF), np.uint64(0xFE))
        inf_fl = NV
    elif fd.inf_subst == "nan":            # E4M3: canonical NaN, or +-max under Sat
        inf_out = (xp.where(neg, np.uint64(max_bits(d, 1)), np.uint64(max_bits(d, 0))) if sat
                   else xp.full(bits.shape, np.uint64(nan_bits(d))))
        inf_fl = NV
    else:                                  # FP6 / FP4 / E1M2 / HiF4: +-max
        inf_out = xp.where(neg, np.uint64(max_bits(d, 1)), np.uint64(max_bits(d, 0)))
        inf_fl = NV
    # NaNs
    if fd.nan_subst == "max":
        nan_out = xp.full(bits.shape, np.uint64(nan_bits(d)))
        nan_fl = xp.full(bits.shape, NV)
    else:
        nan_out = _nan_payload_result(bits, sign, s, d, xp)
        nan_fl = xp.where(cls == SNAN, NV, 0)
    out = xp.where(inf, inf_out, nan_out)
    fl = xp.where(inf, inf_fl, nan_fl)
    return inf | nan, out, fl


def pair(s: DataType, d: DataType) -> str:
    """The class of a TCVT pair in a profile's rules."""
    return f"{s.name}->{d.name}"


def convert_generic(bits, s: DataType, d: DataType, rmode: str, sat: bool, ftz: bool, xp=np, rule: str = IEEE):
    """The reference conversion (vectorised array code); inputs already validated/resolved;
    `rule` the profile's rule for the pair."""
    raw = np.dtype(d.raw_dtype)
    if s.is_int:
        neg, mag = _int_value(bits, s, xp)
        if d.is_int:
            return _int_to_int(neg, mag, d, sat, xp)
        return round_pack(neg, xp.zeros(mag.shape, np.int64), mag, False, d.name, rmode, sat, ftz)
    cls, sign, exp, sig = unpack(bits, s.name, ftz=ftz)
    neg = sign != 0
    if d.is_int:
        out, fl = round_to_int(neg, exp, sig, False, d.name, rmode, wrap=rule == WRAP and not sat)
        n, lo, hi = int_range(d)
        nan = (cls == QNAN) | (cls == SNAN)
        inf = cls == INF
        out = xp.where(inf, xp.where(neg, np.uint64(lo & ((1 << n) - 1)), np.uint64(hi)), out.astype(np.uint64))
        out = xp.where(nan, np.uint64(0), out)
        fl = xp.where(nan | inf, NV, fl)
        return out.astype(raw), fl.astype(np.uint8)
    if rule == INTEGRAL:        # A5 vtrc: CAST_ODD is honoured for FP32 -> FP16 only, RTO is RNE
        sig, exp = round_integral(neg, exp, sig, "RNE" if rmode == "RTO" else rmode, xp)
        out, fl = round_pack(neg, exp, sig, False, d.name, "RNE", sat, ftz)
        fl = xp.zeros_like(fl)  # roundToIntegral raises no inexact (docs/numerics.md)
    else:
        out, fl = round_pack(neg, exp, sig, False, d.name, rmode, sat, ftz)
    special, sp_out, sp_fl = _special_results(bits, cls, sign, s, d, sat, xp)
    out = xp.where(special, sp_out, out.astype(np.uint64)).astype(raw)
    fl = xp.where(special, sp_fl, fl).astype(np.uint8)
    return out, fl


# ---------------------------------------------------------------------------------------------
# tables built from the generic path
# ---------------------------------------------------------------------------------------------
def conversion_table(src: str, dst: str, rmode: str, sat: bool, ftz: bool, rule: str = IEEE):
    """(bits, flags) for every code of a source of 16 bits or fewer (read-only NumPy arrays;
    built on each call: host_table and _device_table keep them)."""
    s, d = datatype(src), datatype(dst)
    codes = np.arange(1 << s.bits, dtype=np.uint64).astype(s.raw_dtype)
    tb, tf = convert_generic(codes, s, d, rmode, sat, ftz, np, rule)
    tb.setflags(write=False)
    tf.setflags(write=False)
    return tb, tf


def _hi16_eligible(s: DataType, d: DataType) -> bool:
    return (s.name in ("FP32", "TF32", "HF32") and d.name in FORMATS and FORMATS[d.name].width <= 8)


def hi16_table(src: str, dst: str, rmode: str, sat: bool, ftz: bool, rule: str = IEEE):
    """2^17-entry table indexed by (u >> 16) << 1 | (u & 0xFFFF != 0) for 32-bit float sources.

    Built from the generic path with the smallest valid nonzero low half, then checked against
    other low halves (tie-sized, all-ones): None if any result differed (the fast path is then
    not used)."""
    s, d = datatype(src), datatype(dst)
    rep = 1 << FORMATS[s.name].shift
    hi = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    b0, f0 = convert_generic(hi, s, d, rmode, sat, ftz, np, rule)
    b1, f1 = convert_generic(hi | np.uint32(rep), s, d, rmode, sat, ftz, np, rule)
    for lo in {0x8000, 0x8000 | rep, 0xFFFF & ~(rep - 1), 0x7FFF & ~(rep - 1)}:
        bg, fg = convert_generic(hi | np.uint32(lo), s, d, rmode, sat, ftz, np, rule)
        if not (np.array_equal(bg, b1) and np.array_equal(fg, f1)):
            return None
    tb = np.empty(1 << 17, dtype=b0.dtype)
    tf = np.empty(1 << 17, dtype=np.uint8)
    tb[0::2], tb[1::2], tf[0::2], tf[1::2] = b0, b1, f0, f1
    tb.setflags(write=False)
    tf.setflags(write=False)
    return tb, tf


# ---- when a host conversion goes through a table
# A table is built from the generic path over every code it holds, so building one costs about
# as much as converting that many elements directly (hi16: six passes over 2^16 codes).  A run
# of many small TCVTs spread over thousands of (pair, RMode, Sat) keys -- a stream golden's --
# would rebuild tables it then reads a few thousand elements of, again after each LRU eviction.
# So a key gets its table once the elements converted under it without one reach the table's
# building cost (at once for a call that large); until then, and after its table is evicted,
# its elements are converted directly, by the path the table is built from or an equal one
# (fastconvert, bit-exact to it: tests/kernels/test_convert_tables.py).  At most twice the
# direct cost in the worst case; a key in steady use reads its table.
TABLE_COST = {"full": lambda s: 1 << datatype(s).bits, "hi16": lambda s: 6 << 16}
_HOST_TABLES = {"full": {}, "hi16": {}}    # key -> (bits, flags) or None (hi16: no table); LRU order
HOST_TABLE_LIMIT = {"full": 96, "hi16": 128}
_demand: dict = {}                         # (kind, key) -> elements converted without a table
DEMAND_KEYS = 1 << 12                      # bound: the counts are forgotten beyond this many keys


def host_table(kind: str, key: tuple, n: int):
    """The `kind` table ("full": conversion_table, "hi16": hi16_table) of `key` for a host
    conversion of n elements, or None when the elements are to be converted directly."""
    cache = _HOST_TABLES[kind]
    if key in cache:
        t = cache.pop(key)                 # most recently used last
        cache[key] = t
        return t
    seen = _demand.get((kind, key), 0) + n
    if seen < TABLE_COST[kind](key[0]):
        if len(_demand) >= DEMAND_KEYS:
            _demand.clear()
        _demand[(kind, key)] = seen
        return None
    _demand.pop((kind, key), None)
    t = (conversion_table if kind == "full" else hi16_table)(*key)
    cache[key] = t
    if len(cache) > HOST_TABLE_LIMIT[kind]:
        del cache[next(iter(cache))]
    return t


def hi16_index(u, xp=np):
    u = u.astype(np.uint32)
    return ((u >> np.uint32(16)) << np.uint32(1)) | ((u & np.uint32(0xFFFF)) != 0).astype(np.uint32)


# ---------------------------------------------------------------------------------------------
# the public entry point
# ---------------------------------------------------------------------------------------------
# The exact widenings the host computes with fastconvert's loops instead of a table: FP16 -> FP32
# (the hardware's conversion, where the CPU has one) and BF16 -> FP32 (a shift).
_WIDEN = frozenset({("BF16", "FP32"), ("FP16", "FP32")})


# The calls that end in one of fastconvert's loops (the exact widenings, the RNE narrowings to
# FP16/BF16) on a NumPy array of the source's own unsigned container type -- where there is
# nothing to validate -- remember that loop under the call's arguments, so that the next such
# call goes to it without resolving DataTypes, mode and rule again (about half the cost of a
# 64K-element FP16 -> FP32 call before this).  Same function, same bits.
# The array's dtype is not part of the key but checked by identity (a dtype's hash costs a sixth of
# the lookup): NumPy gives every array of a native unsigned type the same dtype object, and an
# equal dtype that is another object only takes the long way.
_DIRECT: dict = {}                         # (src_dtype, dst_dtype, rmode, sat, profile) -> (array dtype, fn(bits))
DIRECT_LIMIT = 256


def _remember(key, dtype, fn):
    if len(_DIRECT) >= DIRECT_LIMIT:
        _DIRECT.clear()
    _DIRECT[key] = (dtype, fn)
    return fn


def convert(src_bits, src_dtype, dst_dtype, rmode="DEFAULT", sat: bool = False, profile="ieee"):
    """TCVT src_dtype -> dst_dtype on raw encodings; returns (bits, flags).

    Raises InvalidEncoding when a source element has bits outside its format,
    ValueError for unknown modes.
    """
    direct = None
    if type(src_bits) is np.ndarray and not INTERPRETED[0]:    # interpreted: never a compiled loop
        try:
            direct = (src_dtype, dst_dtype, rmode, sat, profile)
            hit = _DIRECT.get(direct)
        except TypeError:                        # an unhashable argument: no shortcut
            direct = hit = None
        if hit is not None and hit[0] is src_bits.dtype:
            return hit[1](src_bits)
    prof = _profile(profile)
    s, d = datatype(src_dtype), datatype(dst_dtype)
    rm = resolve_rmode(rmode, s, d)
    sat = bool(sat)
    xp = _xp(src_bits)
    bits = xp.asarray(src_bits)
    if bits.dtype.kind not in "uib":
        raise TypeError(f"raw encodings must be an integer array, got {bits.dtype}")
    if bits.dtype.kind == "i":                   # e.g. np.array([0x3C00]): validate, then go unsigned
        ok = valid_encoding(bits, s)
        if not bool(ok.all()):
            bad = int(xp.argmax(~ok.ravel()))
            raise InvalidEncoding(f"{s.name} source element {bad} ({int(bits.ravel()[bad])}) is not an encoding")
        bits = bits.astype(s.raw_dtype)
    full = s.bits == bits.dtype.itemsize * 8 and s.bits == s.container
    if not full:
        ok = valid_encoding(bits, s)
        if not bool(ok.all()):
            bad = int(xp.argmax(~ok.ravel()))
            raise InvalidEncoding(f"{s.name} source element {bad} has bits outside the format "
                                  f"({int(bits.ravel()[bad]):#x}; field mask {valid_mask_hex(s)})")
    ftz = prof.ftz
    rule = prof.rule("TCVT", pair(s, d))
    if xp is not np:
        return convert_device(bits, s, d, rm, sat, ftz, xp, rule)
    key = (s.name, d.name, rm, sat, ftz, rule)
    if INTERPRETED[0]:           # the compiled paths off (interp.py): the tables or the reference
        if s.bits <= 16:
            t = host_table("full", key, bits.size)
            if t is not None:
                idx = bits.astype(np.intp) if bits.dtype.itemsize > 2 else bits
                return t[0][idx], t[1][idx]
        return convert_generic(bits, s, d, rm, sat, ftz, xp, rule)
    if direct is not None and (bits is not src_bits or not full or bits.dtype != np.dtype(s.raw_dtype)):
        direct = None                            # converted or validated above: no shortcut
    if rule == IEEE and (s.name, d.name) in _WIDEN:
        from . import fastconvert
        if (s.name, d.name) in fastconvert.WIDEN_PAIRS:
            if direct is not None:
                return _remember(direct, bits.dtype, fastconvert.direct(s, d, ftz))(bits)
            return fastconvert.widen(bits, s, d, ftz)
    if s.bits <= 16:
        t = host_table("full", key, bits.size)
        if t is not None:
            idx = bits.astype(np.intp) if bits.dtype.itemsize > 2 else bits
            return t[0][idx], t[1][idx]
    elif _hi16_eligible(s, d):
        t = host_table("hi16", key, bits.size)
        if t is not None:
            from . import fastconvert
            return fastconvert.gather_hi16(bits, t[0], t[1])
    from . import fastconvert
    if rule == IEEE and fastconvert.supports(s, d):
        if fastconvert.is_fast_rne(s, d, rm, sat) and direct is not None:
            return _remember(direct, bits.dtype, fastconvert.direct(s, d, ftz))(bits)
        return fastconvert.convert_ieee(bits, s, d, rm, sat, ftz)
    return convert_generic(bits, s, d, rm, sat, ftz, xp, rule)


def convert_status(src_bits, src_dtype, dst_dtype, groups: int, rmode="DEFAULT", sat: bool = False,
                   profile="ieee"):
    """(bits, status): `convert`'s bits, and for flags the OR of its per-element flags over each
    of `groups` equal consecutive parts of the elements in C order (uint8 [groups]): the numeric
    status of each PE of a TCVT block whose source is stacked with a leading PE axis.
    Bit-identical to convert followed by that reduction, which is what runs unless the source is
    a native uint32 NumPy array and the call is FP32 -> FP16 in RNE without Sat under a profile
    whose TCVT rule is ieee without ftz, on a CPU with the hardware conversion
    (fastconvert.STATUS_PAIRS): then the status is reduced in the conversion loop's lanes, and
    no flag byte per element is stored (docs/numerics.md, "TCVT status route")."""
    if type(src_bits) is np.ndarray and src_bits.dtype is _U32 and groups > 0 and not INTERPRETED[0] \
            and src_bits.size % groups == 0:
        try:
            key = (src_dtype, dst_dtype, rmode, sat, profile)
            route = _STATUS.get(key)
        except TypeError:                        # an unhashable argument: no shortcut
            key = route = None
        if route is None and key is not None:
            route = _status_route(*key)
            if len(_STATUS) >= DIRECT_LIMIT:
                _STATUS.clear()
            _STATUS[key] = route
        if route:
            return route(src_bits, groups)
    bits, flags = convert(src_bits, src_dtype, dst_dtype, rmode, sat, profile)
    flags = np.asarray(flags, np.uint8)
    if flags.size == 0:
        return bits, np.zeros(groups, np.uint8)
    return bits, np.bitwise_or.reduce(flags.reshape(groups, -1), axis=1)


_U32 = np.dtype(np.uint32)                 # NumPy's one dtype object of every native uint32 array
_STATUS: dict = {}                         # (src_dtype, dst_dtype, rmode, sat, profile) -> fn(bits, groups) or False


def _status_route(src_dtype, dst_dtype, rmode, sat, profile):
    """fastconvert.rne_status's function when convert_status's arguments select a pair of its STATUS_PAIRS
    (the same DataTypes, mode, Sat and rule for which convert runs fastconvert.fast_rne without
    ftz); False otherwise, arguments convert rejects included (it then raises as it does)."""
    try:
        prof = _profile(profile)
        s, d = datatype(src_dtype), datatype(dst_dtype)
        rm = resolve_rmode(rmode, s, d)
    except (ValueError, KeyError, TypeError):
        return False
    from . import fastconvert
    if ((s.name, d.name) not in fastconvert.STATUS_PAIRS or prof.ftz or prof.rule("TCVT", pair(s, d)) != IEEE
            or not fastconvert.is_fast_rne(s, d, rm, bool(sat))):
        return False
    return fastconvert.rne_status(s.name, d.name)


@lru_cache(maxsize=128)
def _device_table(kind: str, key: tuple, xp_name: str):
    """A conversion table copied to the device once (kind 'full' or 'hi16')."""
    from .. import device
    t = conversion_table(*key) if kind == "full" else hi16_table(*key)
    if t is None:
        return None
    xp = np if xp_name == "numpy" else device.device_module()
    return device.to_device(t[0], xp), device.to_device(t[1], xp)


def convert_device(bits, s: DataType, d: DataType, rm: str, sat: bool, ftz: bool, xp, rule: str = IEEE):
    """TCVT of a device array (CuPy; NumPy under the CUDA simulator, tests/kernels/
    test_cuda_sim.py): sources of <= 16 bits and FP32/TF32/HF32 -> 8-bit floats gather from the
    tables on the device, IEEE -> IEEE pairs run fastconvert's Numba-CUDA kernel (the CPU
    loop's per-element function), the remaining pairs (integer sources or destinations,
    FP64 -> 8-bit, ...) are computed on the host and copied back."""
    from .. import device
    from . import fastconvert
    key = (s.name, d.name, rm, sat, ftz, rule)
    if s.bits <= 16:
        tb, tf = _device_table("full", key, xp.__name__)
        return tb[bits], tf[bits]
    if _hi16_eligible(s, d):
        t = _device_table("hi16", key, xp.__name__)
        if t is not None:
            idx = hi16_index(bits, xp)
            return t[0][idx], t[1][idx]
    if rule == IEEE and fastconvert.supports(s, d):
        shape = bits.shape
        ob, of = fastconvert.cuda_convert_ieee(xp.ascontiguousarray(bits).reshape(-1), s, d, rm, sat, ftz)
        return device.from_cuda(ob, xp).reshape(shape), device.from_cuda(of, xp).reshape(shape)
    return convert_generic(bits, s, d, rm, sat, ftz, xp, rule)


def valid_mask_hex(s: DataType) -> str:
    return hex(field_mask(s))


def encode(values, dtype, rmode: str = "RNE", sat: bool = False, profile="ieee"):
    """Raw encodings of float64 `values` in `dtype`: the TCVT FP64 -> dtype conversion."""
    xp = _xp(values)
    v = xp.asarray(values, dtype=np.float64)
    return convert(v.view(np.uint64), "FP64", dtype, rmode=rmode, sat=sat, profile=profile)[0]
