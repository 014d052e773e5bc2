"""TEXP, TLOG, TRSQRT correctly rounded (RNE) for every floating format, FP64 included.

Fast path: a double-double approximation Y = (h + l) * 2^scale of f(x) with a proven relative
error bound eps (a constant for exp, computed per element for log and rsqrt from the size of the
Newton correction).  Rounding test: the true value lies strictly inside (Y - 2 eps |Y|,
Y + 2 eps |Y|); when round_pack gives the same encoding and flags at both ends, that is the
correctly rounded result.  Otherwise -- rare: the interval must straddle a rounding boundary of
the destination, which happens for about one element in 2^(90-53) even for FP64 -- the element
is settled exactly with MPFR (gmpy2) at 256 bits: f(x) is irrational at every finite nonzero
input except the listed exact cases (exp 0, log 1, rsqrt 4^k), and no binary64 input brings
exp, log or rsqrt within 2^-200 of a rounding boundary (the known worst cases are near 2^-120),
so the 256-bit value always lands on the boundary's correct side.

Approximations (all array code over the NumPy/CuPy common API, error-free transformations from
eft.py; docs/numerics.md "Operations" gives the error analysis):
  exp    x = k ln2/64 + r, |r| <= ln2/128 (ln2/64 in three parts, k ln2/64 exact in the first two);
         exp(x) = 2^(k>>6) * T[k & 63] * (1 + expm1(r)), T[j] = 2^(j/64) as double-doubles from
         MPFR; expm1(r) by Horner in double-double for degrees 1..6, binary64 for 7..11.
         Relative error < 2^-98; the test uses eps = 2^-90.
  log    x = m 2^e, m in [1/sqrt2, sqrt2); y0 = log(m) in binary64, one Newton step
         y1 = y0 + (m - e^y0) e^-y0 with m - e^y0 = (m - 1) - expm1(y0) in double-double; the
         Newton error is below c^2 (c the correction), so eps is bounded per element.
  rsqrt  x = m 4^e; y0 = 1/sqrt(m); c = 1 - m y0^2 exactly to 2^-105; y1 = y0 (1 + c/2 + 3c^2/8).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

try:
    import gmpy2
except ImportError:      # a declared dependency; optional only where TEXP/TLOG/TRSQRT never run
    gmpy2 = None         # (e.g. a GPU check machine without it): those then raise, nothing else

from . import formats
from .eft import fast_two_sum, two_prod, two_sum
from .flags import DZ
from .ops_float import _done, _inputs, _nonfinite, pack, special_inputs
from .rounding import round_pack

EPS_EXP = 2.0 ** -90
MPFR_BITS = 256


# ---------------------------------------------------------------- double-double helpers

def dd_add(ah, al, bh, bl):
    s, e = two_sum(ah, bh)
    return fast_two_sum(s, e + (al + bl))


def dd_mul(ah, al, bh, bl):
    p, e = two_prod(ah, bh)
    return fast_two_sum(p, e + (ah * bl + al * bh))


def _dd(v) -> tuple[float, float]:
    """An MPFR value as a double-double (hi, lo), hi = RN(v), lo = RN(v - hi)."""
    hi = float(v)
    return hi, float(v - hi)


def _cut(v, bits: int) -> float:
    """v truncated to `bits` significant bits (so small integer multiples stay exact)."""
    m, e = np.frexp(float(v))
    return float(np.ldexp(np.floor(np.ldexp(m, bits)), int(e) - bits))


def _need_gmpy2():
    if gmpy2 is None:
        raise ImportError("TEXP/TLOG/TRSQRT need gmpy2 (MPFR) for their constants and exact fallback: "
                          "pip install gmpy2")


@lru_cache(maxsize=None)
def _constants():
    _need_gmpy2()
    with gmpy2.context(gmpy2.get_context(), precision=400):
        ln2 = gmpy2.log(2)
        ln2_64 = ln2 / 64
        c1 = _cut(ln2_64, 36)                    # k*c1, k*c2 exact for |k| < 2^17
        c2 = _cut(ln2_64 - c1, 36)
        c3 = float(ln2_64 - c1 - c2)
        l1 = _cut(ln2, 42)                       # e*l1, e*l2 exact for |e| < 2^11
        l2 = _cut(ln2 - l1, 42)
        l3 = float(ln2 - l1 - l2)
        table = np.array([_dd(gmpy2.exp2(gmpy2.mpfr(j) / 64)) for j in range(64)])
        inv = [_dd(1 / gmpy2.fac(k)) for k in range(12)]
        inv_ln2_64 = float(64 / ln2)
    return dict(c1=c1, c2=c2, c3=c3, T=table, l1=l1, l2=l2, l3=l3, inv=inv, inv_ln2_64=inv_ln2_64)


def _expm1_reduced(rh, rl):
    """expm1(r) for |r| <= ln2/128 (+ tiny) as a double-double, relative error < 2^-100."""
    C = _constants()
    inv = C["inv"]
    t = inv[11][0]
    for k in (10, 9, 8, 7):                      # degrees 7..11 in binary64 (below 2^-47 of r)
        t = inv[k][0] + rh * t
    sh, sl = dd_add(inv[6][0], inv[6][1], *two_prod(rh, t))
    for k in (5, 4, 3, 2, 1):                    # Horner in double-double
        sh, sl = dd_mul(rh, rl, sh, sl)
        sh, sl = dd_add(inv[k][0], inv[k][1], sh, sl)
    return dd_mul(rh, rl, sh, sl)


def _reduce(x, k):
    """r = x - k ln2/64 as a double-double (exact to ~2^-115 absolute for |k| < 2^17)."""
    C = _constants()
    t1 = x - k * C["c1"]                         # exact (Sterbenz; k*c1 exact)
    rh, rl = two_sum(t1, -(k * C["c2"]))         # k*c2 exact
    return fast_two_sum(rh, rl - k * C["c3"])


def _two_pow_j(k):
    """(2^(k mod 64 / 64) as a double-double, k div 64)."""
    C = _constants()
    j = np.mod(k, 64).astype(np.int64)
    return C["T"][j, 0], C["T"][j, 1], np.floor_divide(k, 64).astype(np.int64)


def exp_dd(x):
    """exp(x) = (h + l) * 2^scale for finite |x| <= 1100, relative error < 2^-98."""
    k = np.rint(x * _constants()["inv_ln2_64"])
    rh, rl = _reduce(x, k)
    eh, el = _expm1_reduced(rh, rl)
    th, tl, scale = _two_pow_j(k)
    oh, ol = dd_add(1.0, 0.0, eh, el)
    h, l = dd_mul(th, tl, oh, ol)
    return h, l, scale


def log_dd(x):
    """log(x) = h + l for finite x > 0, with a per-element relative error bound eps."""
    C = _constants()
    m, e = np.frexp(x)
    low = m < 0.7071067811865476
    m = np.where(low, 2 * m, m)                  # m in [1/sqrt2, sqrt2), exact
    e = (e - low).astype(np.float64)
    y0 = np.log(m)
    k = np.rint(y0 * C["inv_ln2_64"])            # |k| <= 33
    rh, rl = _reduce(y0, k)
    eh, el = _expm1_reduced(rh, rl)
    th, tl, sc = _two_pow_j(k)
    th, tl = np.ldexp(th, sc), np.ldexp(tl, sc)  # 2^(k/64) exactly scaled
    # expm1(y0) = (T - 1) + T * expm1(r), T - 1 exact by Sterbenz
    ph, pl = dd_mul(th, tl, eh, el)
    gh, gl = dd_add(th - 1.0, tl, ph, pl)
    dh, dl = dd_add(m - 1.0, 0.0, -gh, -gl)      # m - e^y0 = (m - 1) - expm1(y0)
    c = (dh + dl) / (1.0 + gh)                   # the Newton correction (m e^-y0 - 1)
    y1h, y1l = two_sum(y0, c)
    # + e * ln2 in three exact-product parts
    a1, a2 = two_sum(e * C["l1"], e * C["l2"])     # both products exact
    h, l = dd_add(a1, a2 + e * C["l3"], y1h, y1l)
    # Newton error |c|^2 (|c| small), the correction's own rounding 2^-50 |c|, expm1's 2^-98 |y0|
    # relative to |m - 1|-sized terms, and 2^-100 |log x| for the final sums
    err = c * c + np.abs(c) * 2.0 ** -50 + (np.abs(y0) + np.abs(m - 1.0)) * 2.0 ** -97
    eps = err / np.abs(h) + 2.0 ** -98
    return h, l, eps


def rsqrt_dd(x):
    """1/sqrt(x) = (h + l) * 2^scale for finite x > 0, with a per-element error bound eps."""
    m, e = np.frexp(x)
    odd = (e & 1) != 0
    m = np.where(odd, 2 * m, m)                  # x = m 2^e, e even, m in [1/2, 2)
    e = (e - odd).astype(np.int64)
    y0 = 1.0 / np.sqrt(m)
    ph, pl = two_prod(y0, y0)
    ah, al = two_prod(m, ph)
    c = ((1.0 - ah) - al) - m * pl               # 1 - m y0^2, absolute error < 2^-104
    corr = y0 * c * (0.5 + 0.375 * c)
    h, l = two_sum(y0, corr)
    # truncation 5/16 c^3, the correction's rounding 2^-53 |c|, c's own error 2^-104
    eps = np.abs(c) ** 3 * 0.5 + np.abs(c) * 2.0 ** -52 + 2.0 ** -100
    return h, l, -(e // 2), eps


# ---------------------------------------------------------------- rounding test + MPFR fallback

def _decide(dt, prof, h, l, scale, eps, exact=None):
    """(bits, flags, decided) from both ends of the interval (Y - 2 eps|Y|, Y + 2 eps|Y|); with
    `exact` (values of h's shape), also (bits, flags) of pack(exact) (l, d, scale 0): a third
    row of the same call."""
    w = 2.0 * np.abs(h) * eps
    lo_h, lo_l = fast_two_sum(h, l - w)
    hi_h, hi_l = fast_two_sum(h, l + w)
    # both ends (and `exact`) rounded by one pack call over a leading axis: pack works element
    # by element, so each row's bits and flags are what a call of its own gives, at a fraction
    # of the fixed cost of NumPy calls on the few elements of a small block
    rows = 2 if exact is None else 3
    d = np.array([1.0, -1.0, 0.0][:rows]).reshape((rows,) + (1,) * lo_h.ndim)   # the true value is above lo, below hi
    hs, ls = [lo_h, hi_h], [lo_l, hi_l]
    if exact is not None:
        shape = np.broadcast_shapes(lo_h.shape, np.shape(scale))
        zero = np.zeros(shape, np.float64)
        hs.append(np.broadcast_to(exact, shape))
        ls.append(zero)
        scale = np.stack([np.broadcast_to(np.asarray(scale, np.int64), shape)] * 2 + [zero.astype(np.int64)])
    b, f = pack(dt, prof, np.stack(hs), np.stack(ls), d, scale)
    b_lo, b_hi, f_lo, f_hi = b[0], b[1], f[0], f[1]
    if exact is None:
        return b_lo, f_lo, (b_lo == b_hi) & (f_lo == f_hi)
    return b_lo, f_lo, (b_lo == b_hi) & (f_lo == f_hi), (b[2], f[2])


_MPFR = {"TEXP": "exp", "TLOG": "log", "TRSQRT": "rec_sqrt"}     # gmpy2 function names


def mpfr_round(op, x, dt, prof):
    """Exact fallback: f(x) at 256 bits (never a rounding boundary, see module doc), then one
    rounding by round_pack with the sticky bit set.  x: finite float64 values (per element)."""
    n = x.shape[0]
    sign = np.zeros(n, bool)
    exp = np.zeros(n, np.int64)
    sig = np.zeros(n, np.uint64)
    _need_gmpy2()
    fn = getattr(gmpy2, _MPFR[op])
    with gmpy2.context(gmpy2.get_context(), precision=MPFR_BITS, emin=-(1 << 30), emax=1 << 30):
        for i, v in enumerate(x.tolist()):
            r = fn(gmpy2.mpfr(v))
            man, ex = r.as_mantissa_exp()
            sign[i] = man < 0
            man = abs(int(man))
            nb = man.bit_length()
            sig[i] = man >> (nb - 64) if nb > 64 else man << (64 - nb)
            exp[i] = int(ex) + nb - 64
    return round_pack(sign, exp, sig, np.ones(n, bool), formats.float_format(dt).name, "RNE", ftz=prof.ftz)


def _settle(op, dt, prof, x, h, l, scale, eps, lanes, exact=None):
    """(bits, flags) of the lanes; with `exact`, and pack(exact) (_decide's third row)."""
    bits, flags, decided, *packed = _decide(dt, prof, h, l, scale, eps, exact)
    todo = np.flatnonzero(lanes & ~decided)
    if todo.size:
        bits, flags = bits.copy(), flags.copy()
        bits[todo], flags[todo] = mpfr_round(op, x[todo], dt, prof)
    return (bits, flags, *packed)


def _result(op, dt, prof, x, approx, lanes, special, hw, nan_in, snan, extra=0):
    h, l, scale, eps = approx
    keep = lanes & ~special
    h = np.where(keep, h, 1.0)
    l = np.where(keep, l, 0.0)
    scale = np.where(keep, scale, 0)
    # the special lanes' rounding (what _done rounds of res = 1.0 everywhere) in the same pack call
    exact = special_inputs(special, hw, np.ones_like(x))
    bits, flags, packed = _settle(op, dt, prof, x, h, l, scale, eps, keep, exact)
    sbits, sflags = _done(dt, prof, None, special, hw, nan_in, snan, extra, packed=packed)
    return np.where(special, sbits, bits), np.where(special, sflags, flags).astype(np.uint8)


# ---------------------------------------------------------------- operations

def texp(dt, a, *, prof):
    """Decision 073: exp(+-0) = 1 exactly, exp(+inf) = +inf, exp(-inf) = +0."""
    f, (x,), snan, nan_in = _inputs(dt, prof, a)
    special = _nonfinite(x) | (x == 0)
    hw = np.where(x == 0, 1.0, np.where(x < 0, 0.0, x))       # +inf and NaN pass through
    big = np.abs(x) > 1100.0                                  # certain overflow / underflow
    xs = np.where(special | big, 0.0, x)
    h, l, scale = exp_dd(xs)
    scale = np.where(big, np.where(x > 0, 4000, -4000), scale)
    h, l = np.where(big, 1.0, h), np.where(big, 0.0, l)
    return _result("TEXP", dt, prof, x, (h, l, scale, EPS_EXP), ~special, special, hw, nan_in, snan)


def tlog(dt, a, *, prof):
    """Decision 074: log(+1) = +0, log(+-0) = -inf with DZ (E4M3: 0x7F), log(+inf) = +inf,
    negative inputs give NaN with NV."""
    f, (x,), snan, nan_in = _inputs(dt, prof, a)
    special = _nonfinite(x) | (x <= 0) | (x == 1)
    with np.errstate(all="ignore"):
        hw = np.where(x == 0, -np.inf, np.where(x == 1, 0.0, np.where(x < 0, np.nan, x)))
    dz = np.where(x == 0, DZ, 0)
    xs = np.where(special, 2.0, x)
    h, l, eps = log_dd(xs)
    return _result("TLOG", dt, prof, x, (h, l, 0, eps), ~special, special, hw, nan_in, snan, dz)


def trsqrt(dt, a, *, prof):
    """Decision 077: rsqrt(+-0) = +-inf with DZ (E4M3: 0x7F), rsqrt(+inf) = +0, negative inputs
    NaN with NV; rsqrt(4^k) = 2^-k exactly."""
    f, (x,), snan, nan_in = _inputs(dt, prof, a)
    m, e = np.frexp(np.where(np.isfinite(x), x, 1.0))
    power4 = np.isfinite(x) & (x > 0) & (m == 0.5) & ((e & 1) == 1)   # x = 2^(e-1), e-1 even
    special = _nonfinite(x) | (x <= 0) | power4
    with np.errstate(all="ignore"):
        hw = np.where(power4, np.ldexp(1.0, -((e - 1) // 2)), 1.0 / np.sqrt(x))
    hw = np.where(x == 0, np.copysign(np.inf, x), hw)
    dz = np.where(x == 0, DZ, 0)
    xs = np.where(special, 2.0, x)
    h, l, scale, eps = rsqrt_dd(xs)
    return _result("TRSQRT", dt, prof, x, (h, l, scale, eps), ~special, special, hw, nan_in, snan, dz)


OPS = {"TEXP": texp, "TLOG": tlog, "TRSQRT": trsqrt}
