"""Floating element-wise operations, profile `ieee` / `ftz`: the exact result rounded once (RNE).

Every floating value of every element-wise format (FP64 ... E5M2) is exactly a binary64, so an
operation decodes its operands to float64 (`decode_operands`), evaluates the exact result as

    x = (h + l + delta) * 2^scale

with h, l float64 arrays (a double-double, l the exact low part or 0) and delta a value of known
sign d in {-1, 0, +1} that is too small to move x across any rounding boundary of a format of
53 bits or fewer (see `to_round_pack`), then hands x to the rounding core
`rounding.round_pack` -- the one place where rounding, overflow, tininess and FTZ are decided.

Exactness comes from error-free transformations (eft.py) on frexp-normalised significands, so
the same algorithm serves FP64 (whose products and quotients would leave binary64's range) and
the narrow formats:
  add/sub  TwoSum: s + e = a + b exactly (FP64: where an intermediate overflows, both halved,
           scale 1 -- see _two_sum_scaled)
  mul      TwoProduct of the significands: p + e = ma * mb exactly, scale ea + eb
  div      q = RN(ma / mb); the remainder ma - q*mb is exact (Sterbenz + TwoProduct): d = its sign
  sqrt     q = RN(sqrt(m)); the remainder m - q^2 is exact the same way
  fma      narrow formats: a*b is exact in binary64, TwoSum adds c; FP64: significand product
           as a double-double plus the scaled addend, summed exactly with a TwoSum cascade
  rem      fmod is exact; the floor-modulo adjustment r + b is one (scaled) TwoSum
Special operands (NaN, infinity, zero divisors, invalid operations) take `special` lanes that
follow IEEE 754 with the results docs/numerics.md ("Operations") lists: every NaN result is the
format's canonical quiet NaN, an infinite result of a format without infinity is its documented
substitute (E4M3: 0x7F), signalling NaN operands raise NV.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from isa.datatypes import DataType

from . import formats
from .eft import sign as _sign, two_prod, two_sum
from .flags import DZ, NV
from .profiles import Profile
from .rounding import round_pack

_U = np.uint64


# ---------------------------------------------------------------- operands

@lru_cache(maxsize=None)
def _tables(name: str):
    """(values float64, signalling-NaN bool, subnormal bool) for every code of a <= 16-bit format."""
    f = formats.FORMATS[name]
    codes = np.arange(1 << f.width, dtype=np.uint64)
    bits = codes.astype(np.dtype(f"u{max(1, f.width // 8)}"))
    values = np.asarray(formats.decode(bits, name), np.float64)
    cls = formats.unpack(bits, name)[0]
    subnormal = np.isfinite(values) & (values != 0) & (np.abs(values) < 2.0 ** f.emin)
    return values, cls == formats.SNAN, subnormal


def _field(bits, f: formats.FloatFormat):
    """Drop container bits outside the format (TF32 low 13, HF32 low 12): unpack ignores them."""
    if f.shift:
        return bits & bits.dtype.type(((1 << f.width) - 1) << f.shift)
    return bits


@lru_cache(maxsize=None)
def _device_tables(name: str, xp):
    """_tables' values and signalling-NaN mask copied to the device of module xp once."""
    values, snan, _ = _tables(name)
    return xp.asarray(values), xp.asarray(snan)


def decode_operand(bits, f: formats.FloatFormat, prof: Profile):
    """(float64 values, signalling-NaN mask) of raw encodings; `ftz` reads subnormals as zero.
    Device (CuPy) encodings decode on their device: the selection, sign and comparison
    operations below are array code that runs there unchanged (kernels/numeric/cuda.py)."""
    if f.width <= 16:
        xp = formats._xp(bits)
        values, snan = _tables(f.name)[:2] if xp is np else _device_tables(f.name, xp)
        v, s = values[bits], snan[bits]
    else:
        v = _field(bits, f).view(np.float64 if f.width == 64 else np.float32).astype(np.float64)
        nan = np.isnan(v)
        s = np.zeros_like(v, dtype=bool)
        if nan.any():
            s[nan] = formats.unpack(bits[nan], f.name)[0] == formats.SNAN
    if prof.ftz:
        v = np.where(np.abs(v) < 2.0 ** f.emin, np.copysign(0.0, v), v)
    return v, s


def flush_bits(bits, f: formats.FloatFormat, prof: Profile):
    """Encodings with subnormals replaced by the zero of their sign (profile `ftz`), else as is."""
    if not prof.ftz:
        return bits
    v = decode_operand(bits, f, Profile("ieee", ""))[0]
    sub = np.isfinite(v) & (v != 0) & (np.abs(v) < 2.0 ** f.emin)
    return np.where(sub, _sign_mask(f, bits.dtype) & bits, bits)


def _sign_mask(f: formats.FloatFormat, dtype):
    return np.dtype(dtype).type(1 << (f.sign_bit + f.shift))


# ---------------------------------------------------------------- rounding hand-off

def to_round_pack(h, l, d, scale):
    """round_pack arguments (sign, exp, sig, sticky) for x = (h + l + delta) * 2^scale.

    Preconditions (callers guarantee them): h, l finite; |l| <= ulp(h)/2 (h = RN(h + l)); h = 0
    only when x = 0 exactly (then l = d = 0 and the sign of h is the sign of the zero); delta has
    sign d and either (a) l = 0 and h = RN(x) in binary64 -- then no point of the 54-bit grid
    around h lies strictly between h and x -- or (b) |delta| is below half the spacing of the
    grid that h + l lies on.  In both cases the 64-bit window below keeps x in the same open
    interval between rounding boundaries of every format with at most 53 significant bits, which
    is all round_pack needs.
    """
    neg = np.signbit(h)
    a = np.abs(h)
    la = np.where(neg, -l, l)
    dm = np.where(neg, -d, d)
    m, e = np.frexp(a)                                        # a = m * 2^e, m in [1/2, 1)
    # just below a power of two the sum lives in the lower binade: open the window one bit lower
    down = (m == 0.5) & ((la < 0) | ((la == 0) & (dm < 0)))
    e0 = e.astype(np.int64) - 64 - down
    A = (m * 2.0 ** 53).astype(_U) << (_U(11) + down.astype(_U))   # h * 2^-e0, modulo 2^64
    L = np.ldexp(la, -e0)                                     # l * 2^-e0, |L| <= 2^11
    Lf = np.floor(L)
    frac = L - Lf
    # l so far below h that l * 2^-e0 underflowed to 0: it still lies strictly inside (-1, 1)
    lost = (L == 0) & (la != 0)
    Lf = np.where(lost & (la < 0), -1.0, Lf)
    frac = np.where(lost, 0.5, frac)
    S = A + Lf.astype(np.int64).view(_U)                      # exact: the sum is in [2^63, 2^64)
    S = S - ((frac == 0) & (dm < 0)).astype(_U)
    sticky = (frac != 0) | (dm != 0)
    zero = a == 0
    return neg, np.where(zero, 0, e0 + scale), np.where(zero, _U(0), S), sticky & ~zero


def pack(dt, prof, h, l=0.0, d=0.0, scale=0):
    f = formats.float_format(dt)
    h, l, d, scale = np.broadcast_arrays(h, np.asarray(l, np.float64), np.asarray(d, np.float64),
                                         np.asarray(scale, np.int64))
    sign, exp, sig, sticky = to_round_pack(h, l, d, scale)
    return round_pack(sign, exp, sig, sticky, f.name, "RNE", ftz=prof.ftz)


def finish(dt, prof, res, special, hw, sflags, snan, nv, packed=None):
    """Round the regular lanes of `res` = (h, l, d, scale); special lanes take the IEEE result
    `hw` (NaN, +-inf, or an exactly representable value) with the flags `sflags` (DZ).  NaN
    results are the canonical quiet NaN; NV is raised where `nv` or an operand is a signalling NaN.
    `packed`: (bits, flags) of that rounding done by the caller (res is then not read), who
    rounded the special lanes' inputs `special_inputs` gives in the same pack call as its own."""
    f = formats.float_format(dt)
    if packed is not None:
        bits, flags = packed
    else:
        h, l, d, scale = res
        if special.any():
            h = special_inputs(special, hw, h)
            l, d = np.where(special, 0.0, l), np.where(special, 0.0, d)
            scale = np.where(special, 0, scale)
        bits, flags = pack(dt, prof, h, l, d, scale)
    if special.any():
        raw = bits.dtype.type
        nan = special & np.isnan(hw)
        inf = special & np.isinf(hw)
        bits = np.where(nan, raw(formats.nan_bits(f.name)), bits)
        bits = np.where(inf & (hw > 0), raw(formats.inf_bits(f.name, 0)), bits)
        bits = np.where(inf & (hw < 0), raw(formats.inf_bits(f.name, 1)), bits)
        flags = np.where(special, sflags, flags)
    return bits, (flags | np.where(snan | nv, NV, 0)).astype(np.uint8)


# ---------------------------------------------------------------- exact evaluations (finite lanes)

def _two_sum_scaled(x, y):
    """(s, e, k): s + e = (x + y) / 2^k exactly, k in {0, 1}, for all finite x, y.

    TwoSum is exact unless an intermediate overflows, and that happens with a finite sum too:
    b' = s - x can round past the largest finite value (x = -max/2, y = max: s = max/2 and
    s - x = max + half an ulp).  Any overflow inside TwoSum leaves e non-finite (an infinity
    meets its negative or propagates), so e is the one test.  Overflow needs the exact
    |s - x| or |x + y| to reach max + ulp(max)/2 = max + 2^970, so both operands are then at
    least 2^970 in magnitude (binary64 only: every narrower format stays below 2^129): halving
    them is exact, and the halved TwoSum's intermediates stay below max."""
    s, e = two_sum(x, y)
    k = np.zeros(np.shape(s), np.int64)
    bad = ~np.isfinite(e)
    if bad.any():
        s2, e2 = two_sum(x * 0.5, y * 0.5)
        s, e, k = np.where(bad, s2, s), np.where(bad, e2, e), np.where(bad, 1, k)
    return s, e, k


def _add(x, y):
    s, e, scale = _two_sum_scaled(x, y)
    return s, e, 0.0, scale


def _mul(x, y):
    mx, ex = np.frexp(x)
    my, ey = np.frexp(y)
    p, e = two_prod(mx, my)
    return p, e, 0.0, ex.astype(np.int64) + ey


def _div(x, y):
    mx, ex = np.frexp(x)
    my, ey = np.frexp(y)
    q = mx / my
    ph, pl = two_prod(q, my)
    r = (mx - ph) - pl                          # exact remainder mx - q*my
    return q, 0.0, _sign(r) * _sign(my), ex.astype(np.int64) - ey


def _sqrt(x):
    m, e = np.frexp(x)
    odd = (e & 1) != 0
    m = np.where(odd, 2 * m, m)                 # m * 2^e with e even, m in [1/2, 2)
    e = (e - odd).astype(np.int64)
    q = np.sqrt(m)
    ph, pl = two_prod(q, q)
    r = (m - ph) - pl                           # exact remainder m - q^2
    return q, 0.0, _sign(r), e // 2


def _fma(x, y, z, f):
    if 2 * f.p <= 53:                           # x*y exact in binary64: one TwoSum is exact
        s, e = two_sum(x * y, z)
        return s, e, 0.0, 0
    return _fma_wide(x, y, z)


def _fma_wide(x, y, z):
    """x*y + z exactly for binary64 operands: significand product (ph + pl) * 2^E and addend."""
    mx, ex = np.frexp(x)
    my, ey = np.frexp(y)
    mz, ez = np.frexp(z)
    E = ex.astype(np.int64) + ey
    ph, pl = two_prod(mx, my)                   # |P| in [1/4, 1) unless x*y = 0
    k = ez.astype(np.int64) - E
    # addend far above the product: x = z * (1 + tiny), the tiny part only has a sign
    far_above = (k > 110) & (ph != 0) & (mz != 0)
    # addend far below: any value of the same sign below 2^-107 sits in the same gap of P's grid
    far_below = k < -110
    zk = np.where(far_below, np.copysign(2.0 ** -200, mz), np.ldexp(mz, np.clip(k, -200, 200)))
    zk = np.where(mz == 0, mz, zk)
    s, t = two_sum(ph, zk)
    u, v = two_sum(t, pl)
    h, w = two_sum(s, u)
    l, r = two_sum(w, v)
    h, l2 = two_sum(h, l)
    # x = h + l2 + r exactly with |r| <= ulp(l)/2: below every grid h + l2 lies on (case b)
    h = np.where(far_above, mz, h)
    l2 = np.where(far_above, 0.0, l2)
    d = np.where(far_above, _sign(ph), _sign(r))
    scale = np.where(far_above, ez, E)
    # x*y = 0: x = z exactly (zero signs follow IEEE addition of the exact zero product)
    zero_prod = ph == 0
    h = np.where(zero_prod, x * y + z, h)
    l2, d = np.where(zero_prod, 0.0, l2), np.where(zero_prod, 0.0, d)
    scale = np.where(zero_prod, 0, scale)
    return h, l2, d, scale


def _rem(x, y):
    """Floor modulo x - floor(x/y)*y: fmod (exact, sign of x), then + y when the signs differ."""
    r = np.fmod(x, y)
    adjust = (r != 0) & (np.signbit(r) != np.signbit(y))
    # r + y is finite (|r| < |y|) but TwoSum's s - r can still overflow near max: scaled form
    s, e, k = _two_sum_scaled(r, y)
    h = np.where(adjust, s, np.where(r == 0, np.copysign(0.0, y), r))
    return h, np.where(adjust, e, 0.0), 0.0, np.where(adjust, k, 0)


# ---------------------------------------------------------------- operations

def _inputs(dt, prof, *operands):
    f = formats.float_format(dt)
    decoded = [decode_operand(b, f, prof) for b in operands]
    values = [v for v, _ in decoded]
    snan = np.zeros_like(values[0], dtype=bool)
    for _, s in decoded:
        snan |= s
    nan_in = np.zeros_like(values[0], dtype=bool)
    for v in values:
        nan_in |= np.isnan(v)
    return f, values, snan, nan_in


def _regular(special, *values):
    """Operands with special lanes replaced by 1.0, so exact paths never see inf/NaN/zero divisors."""
    if not special.any():
        return values
    return tuple(np.where(special, 1.0, v) for v in values)


def special_inputs(special, hw, h):
    """finish's h on the special lanes (l, d and scale are 0 there): hw where it is finite (an
    exactly representable result), 1.0 where it is not (the bits are replaced after rounding)."""
    return np.where(special, np.where(special & np.isfinite(hw), hw, 1.0), h)


def _done(dt, prof, res, special, hw, nan_in, snan, extra=0, nv=None, packed=None):
    """finish() with the default invalid rule: a NaN result no operand NaN explains is invalid."""
    if nv is None:
        nv = special & np.isnan(hw) & ~nan_in
    return finish(dt, prof, res, special, hw, extra, snan, nv, packed)


def _nonfinite(*values):
    out = np.zeros(values[0].shape, bool)
    for v in values:
        out |= ~np.isfinite(v)
    return out


def tadd(dt, a, b, *, prof):
    f, (x, y), snan, nan_in = _inputs(dt, prof, a, b)
    special = _nonfinite(x, y)
    return _done(dt, prof, _add(*_regular(special, x, y)), special, x + y, nan_in, snan)


def tsub(dt, a, b, *, prof):
    f, (x, y), snan, nan_in = _inputs(dt, prof, a, b)
    special = _nonfinite(x, y)
    return _done(dt, prof, _add(*_regular(special, x, -y)), special, x - y, nan_in, snan)


def tmul(dt, a, b, *, prof):
    f, (x, y), snan, nan_in = _inputs(dt, prof, a, b)
    special = _nonfinite(x, y)
    return _done(dt, prof, _mul(*_regular(special, x, y)), special, x * y, nan_in, snan)


def tdiv(dt, a, b, *, prof):
    f, (x, y), snan, nan_in = _inputs(dt, prof, a, b)
    special = _nonfinite(x, y) | (y == 0)
    dz = np.where((y == 0) & np.isfinite(x) & (x != 0), DZ, 0)
    return _done(dt, prof, _div(*_regular(special, x, y)), special, x / y, nan_in, snan, dz)


def trecip(dt, a, *, prof):
    f, (x,), snan, nan_in = _inputs(dt, prof, a)
    special = _nonfinite(x) | (x == 0)
    dz = np.where(x == 0, DZ, 0)
    one = np.ones(x.shape)
    return _done(dt, prof, _div(one, *_regular(special, x)), special, 1.0 / x, nan_in, snan, dz)


def tsqrt(dt, a, *, prof):
    f, (x,), snan, nan_in = _inputs(dt, prof, a)
    special = _nonfinite(x) | (x <= 0)        # zeros keep their sign; negatives are invalid
    hw = np.where(x == 0, x, np.sqrt(x))
    return _done(dt, prof, _sqrt(*_regular(special, x)), special, hw, nan_in, snan)


def tfma(dt, a, b, c, *, prof):
    f, (x, y, z), snan, nan_in = _inputs(dt, prof, a, b, c)
    special = _nonfinite(x, y, z)
    # Decision 081: 0 * inf and inf * 0 are invalid even with a quiet-NaN addend
    product_invalid = (np.isinf(x) & (y == 0)) | ((x == 0) & np.isinf(y))
    # special lanes have a non-finite operand: an infinite product (its sign from the operands,
    # never from binary64 overflow of a finite product) meets z; a finite product yields z
    pneg = np.signbit(x) != np.signbit(y)
    pinf = (np.isinf(x) | np.isinf(y)) & ~product_invalid
    hw = np.where(pinf, np.where(np.isinf(z) & (np.signbit(z) != pneg), np.nan,
                                 np.where(pneg, -np.inf, np.inf)), z)
    hw = np.where(nan_in | product_invalid, np.nan, hw)
    nv = (np.isnan(hw) & ~nan_in) | product_invalid
    return _done(dt, prof, _fma(*_regular(special, x, y, z), f), special, hw, nan_in, snan, nv=nv)


def trem(dt, a, b, *, prof):
    f, (x, y), snan, nan_in = _inputs(dt, prof, a, b)
    special = _nonfinite(x, y) | (y == 0)
    # x mod +-inf (x finite): x when x is zero or has the divisor's sign, else the infinity
    # itself (the limit of floor modulo as the divisor grows); zero takes the divisor's sign
    same = (x == 0) | (np.signbit(x) == np.signbit(y))
    by_inf = np.where(x == 0, np.copysign(0.0, y), np.where(same, x, y))
    hw = np.where(np.isinf(y) & np.isfinite(x), by_inf, np.nan)
    hw = np.where(np.isnan(x) | np.isnan(y), np.nan, hw)
    return _done(dt, prof, _rem(*_regular(special, x, y)), special, hw, nan_in, snan)


# ---------------------------------------------------------------- selection and sign-bit operations

def _select(dt, a, b, prof, maximum: bool):
    """TMAX/TMIN (Decisions 067/068): one NaN selects the other operand's encoding unchanged,
    two NaNs give the canonical NaN, mixed-sign zero ties give +0 (max) / -0 (min), any
    signalling NaN raises NV; operand order never matters."""
    f, (x, y), snan, _ = _inputs(dt, prof, a, b)
    a, b = flush_bits(a, f, prof), flush_bits(b, f, prof)
    xn, yn = np.isnan(x), np.isnan(y)
    if maximum:
        keep_a = (x > y) | ((x == y) & ~((x == 0) & np.signbit(x) & ~np.signbit(y)))
    else:
        keep_a = (x < y) | ((x == y) & ~((x == 0) & ~np.signbit(x) & np.signbit(y)))
    bits = np.where(keep_a | yn, a, b)
    bits = np.where(xn & ~yn, b, bits)
    bits = np.where(xn & yn, a.dtype.type(formats.nan_bits(f.name)), bits)
    return bits, np.where(snan, NV, 0).astype(np.uint8)


def tmax(dt, a, b, *, prof):
    return _select(dt, a, b, prof, True)


def tmin(dt, a, b, *, prof):
    return _select(dt, a, b, prof, False)


_COMPARE = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "GT": np.greater, "LE": np.less_equal, "GE": np.greater_equal,
}


def tcmp(dt, a, b, *, prof, cmode):
    """Decision 069: NaN makes EQ/LT/LE/GT/GE false and NE true (IEEE unordered); +0 == -0;
    only signalling NaNs raise NV."""
    f, (x, y), snan, _ = _inputs(dt, prof, a, b)
    return _COMPARE[cmode](x, y).astype(np.uint8), np.where(snan, NV, 0).astype(np.uint8)


def tabs(dt, a, *, prof):
    """Decision 070: clears only the sign bit (NaN payloads kept, no NV even for sNaN)."""
    f = formats.float_format(dt)
    return a & ~_sign_mask(f, a.dtype), np.zeros_like(a, dtype=np.uint8)


def tneg(dt, a, *, prof):
    """Decision 072: toggles only the sign bit."""
    f = formats.float_format(dt)
    return a ^ _sign_mask(f, a.dtype), np.zeros_like(a, dtype=np.uint8)


def trelu(dt, a, *, prof):
    """Decision 078: positive values keep their encoding; negatives, -inf and both zeros give +0;
    NaN gives the canonical quiet NaN (NV for signalling)."""
    f, (x,), snan, _ = _inputs(dt, prof, a)
    a = flush_bits(a, f, prof)
    bits = np.where(x > 0, a, a.dtype.type(formats.zero_bits(f.name, 0)))
    bits = np.where(np.isnan(x), a.dtype.type(formats.nan_bits(f.name)), bits)
    return bits, np.where(snan, NV, 0).astype(np.uint8)


OPS = {
    "TADD": tadd, "TSUB": tsub, "TMUL": tmul, "TDIV": tdiv, "TREM": trem, "TFMA": tfma,
    "TSQRT": tsqrt, "TRECIP": trecip, "TMAX": tmax, "TMIN": tmin, "TCMP": tcmp,
    "TABS": tabs, "TNEG": tneg, "TRELU": trelu,
}
