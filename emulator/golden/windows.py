"""Boundary windows: operand generators whose exact results land where an implementation choice
shows (docs/golden-format.md, "Coverage classes").

- `round_to_min_normal`: exact results below the smallest normal that round up to it, where
  detecting tininess before rounding and after rounding disagree (the underflow flag of an
  inexact result); a quarter of the elements just below that window (tiny both ways).
- `exact_zero`: operands whose exact result is zero, of both signs.
- `wrap_edge`: integer results at the DataType's bounds and one past them (they wrap).
- `sat_edge`: TCVT sources at an integer destination's bounds and one past them (Sat=1 clamps,
  Sat=0 wraps or follows the profile).

Every generator builds its operands from exact constructions (products of values of the form
1 - j*2^-(p-1) and m*(1 + j*2^-(p-1)), sums with the bound, powers of two), so the window is hit
by arithmetic, not by luck; the tests classify the stored operands' exact results independently.
All of it is vectorised over the elements.
"""
from __future__ import annotations

from math import isqrt

import numpy as np

from kernels import numeric

from .space import Space, negate, normal

# DataTypes whose finite values are sign x significand of `precision` bits x 2^e with
# subnormals below 2^emin (IEEE-like), so a window defined by precision and emin exists.
# HiF8 and HiF4X2 taper their precision and E8M0 has no significand: they get no window.
IEEE_LIKE = ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2", "E3M2", "E2M3", "E2M1X2", "E1M2X2")
# TCVT rounding modes, as the window just below the smallest normal m of the destination
# (precision p) that rounds up to m: [m(1 - 2^-(p+1)), m) for the nearest modes, (m(1 - 2^-p), m)
# on the side a directed mode rounds away from zero; RTZ and RTO never round up to m.
NEAREST = ("DEFAULT", "RNE", "RNA", "RHB")
UPWARD = {"RTP": 1.0, "RTM": -1.0}


def _encode(sp: Space, v) -> np.ndarray:
    enc, ok = sp.encode_exact(v)
    assert ok.all(), f"{sp.name}: a window construction left the format"
    return enc


def _sign(rng, m) -> np.ndarray:
    return np.where(rng.random(m) < 0.5, 1.0, -1.0)


def _zeros(sp: Space, rng, m) -> np.ndarray:
    return sp.pick(rng, "zero", m)


def _swap(rng, a, b):
    s = rng.random(len(a)) < 0.5
    return [np.where(s, b, a), np.where(s, a, b)]


# ---------------------------------------------------------------------------- tininess

def tininess_reachable(ctx) -> bool:
    """Whether round_to_min_normal applies: TMUL and TFMA of an IEEE-like format of at least 3
    significant bits (sums and differences of one format are exact below the smallest normal,
    and no quotient of two p-bit values lies within 2^-(p+1) below a power of two), and TCVT
    between IEEE-like floating formats in a mode that rounds up to the smallest normal, where
    the source holds a value in the window."""
    if ctx.family in ("mul", "fma"):
        return ctx.is_float and ctx.src.name in IEEE_LIKE and numeric.info(ctx.src.name).precision >= 3
    if ctx.family != "convert" or ctx.src.name not in IEEE_LIKE or ctx.dst.name not in IEEE_LIKE:
        return False
    if (ctx.rmode or "DEFAULT") not in NEAREST + tuple(UPWARD):
        return False
    lo, hi = _cvt_window(ctx)
    enc = _nearest_in(ctx.src, np.array([(lo + hi) / 2]))
    v = ctx.src.values(enc)
    return bool(np.isfinite(v[0]) and lo <= v[0] < hi)


def _cvt_window(ctx) -> tuple[float, float]:
    """(low, high) of |value| rounding up to the destination's smallest normal (low inclusive
    for the nearest modes)."""
    info = numeric.info(ctx.dst.name)
    mn, p = float(info.min_normal), info.precision
    if (ctx.rmode or "DEFAULT") in NEAREST:
        return mn * (1 - 2.0 ** -(p + 1)), mn
    return mn * (1 - 2.0 ** -p) + mn * 2.0 ** -(p + 8), mn       # open below: a hair above


def _nearest_in(sp: Space, v) -> np.ndarray:
    from .space import nearest
    return nearest(sp, v)


def round_to_min_normal(ctx, rng, m):
    """TMUL/TFMA: a = (1 - j*2^-(p-1)) * 2^s and b = m*(1 + j*2^-(p-1)) * 2^-s give the exact
    product m*(1 - 4j^2*2^-2p), inside [m(1 - 2^-(p+1)), m) for 4j^2 <= 2^(p-1) and inexact
    on the subnormal grid; a quarter take a larger j (just below the window).  TFMA adds a
    signed zero.  TCVT: source values inside the destination's window for the partition's
    RMode (a quarter just below it)."""
    sp = ctx.src
    inside = rng.random(m) < 0.75
    if ctx.family == "convert":
        sign = UPWARD.get(ctx.rmode or "DEFAULT")
        s = _sign(rng, m) if sign is None else np.full(m, sign)
        lo, hi = _cvt_window(ctx)
        p = numeric.info(ctx.dst.name).precision
        below = float(numeric.info(ctx.dst.name).min_normal) * (1 - 2.0 ** -p * rng.uniform(1.0, 2.0, m))
        v = np.where(inside, lo + (hi - lo) * rng.random(m), below)
        enc = _nearest_in(sp, v)
        x = sp.values(enc)
        bad = inside & ~((x >= lo) & (x < hi))
        # the source value nearest the middle of the window, where a draw rounded out of it
        mid = _nearest_in(sp, np.array([(lo + hi) / 2]))[0]
        enc = np.where(bad, mid, enc)
        return [np.where(s < 0, negate(sp, enc), enc)]
    info = numeric.info(sp.name)
    p = info.precision
    jin = max(1, isqrt(1 << (p - 3)))            # the largest j with 4j^2 <= 2^(p-1)
    jout = min(jin + 3, 1 << (p - 2))            # a = 1 - j*2^-(p-1) stays >= 1/2
    j = np.where(inside, rng.integers(1, jin + 1, m), rng.integers(jin + 1, max(jout, jin + 1) + 1, m))
    j = np.minimum(j, 1 << (p - 2)).astype(np.float64)
    s = rng.integers(info.emin + 1, 1, m)       # a * 2^s stays normal, b * 2^-s finite
    step = 2.0 ** -(p - 1)
    a = _encode(sp, np.ldexp(1 - j * step, s) * _sign(rng, m))
    b = _encode(sp, np.ldexp(float(info.min_normal) * (1 + j * step), -s) * _sign(rng, m))
    ops = _swap(rng, a, b)
    if ctx.family == "fma":
        return ops + [_zeros(sp, rng, m)]
    return ops


# ---------------------------------------------------------------------------- exact zeros

def exact_zero(ctx, rng, m):
    """Exact zero results of both signs: x + (-x), x - x, x * +-0, x * 1 - x (half the
    elements), and signed zeros combined so that either sign results (-0 + -0, -0 - +0,
    -x * +0, ...)."""
    sp = ctx.src
    fam = ctx.family
    x = normal(sp, rng, m)
    z1, z2 = _zeros(sp, rng, m), _zeros(sp, rng, m)
    cancel = rng.random(m) < 0.5
    if fam == "add":
        return [np.where(cancel, x, z1), np.where(cancel, negate(sp, x), z2)]
    if fam == "sub":
        return [np.where(cancel, x, z1), np.where(cancel, x, z2)]
    if fam == "mul":
        return _swap(rng, np.where(cancel, x, z1), z2)
    one = _encode(sp, np.ones(m))
    return [x, np.where(cancel, one, z1), np.where(cancel, negate(sp, x), z2)]


# ---------------------------------------------------------------------------- integers

def _bounds(name: str) -> tuple[int, int, int]:
    info = numeric.info(name)
    return int(info.min_finite), int(info.max_finite), int(info.width)


def _draw(rng, lo, hi, m) -> np.ndarray:
    """Uniform integers in [lo, hi] as their two's-complement uint64 bits."""
    if lo >= 0:
        return rng.integers(lo, hi, m, dtype=np.uint64, endpoint=True)
    return rng.integers(lo, hi, m, dtype=np.int64, endpoint=True).astype(np.uint64)


def _mod(v: int, w: int) -> np.uint64:
    return np.uint64(v % (1 << w) if w < 64 else v % (1 << 64))


def wrap_edge(ctx, rng, m):
    """Integer TADD/TSUB/TMUL/TFMA whose exact result is the DataType's max, max + 1, min or
    min - 1 (signed), max or 2^W, and for TSUB -1 or 0 (unsigned): a is drawn from the range
    that keeps b = target -+ a in the type, so every pair is exact.  TMUL: +-2^k times
    +-2^(W-1-k) and its neighbours (2^W and 2^W - 2^k unsigned).  TFMA: 1 * b + c with b, c
    a TADD pair."""
    lo, hi, w = _bounds(ctx.src.name)
    mask = np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    signed = lo < 0
    fam = ctx.family
    if fam == "mul":
        k = rng.integers(1, w - 1, m).astype(np.uint64)
        one = np.uint64(1)
        if signed:                               # +-2^k * +-2^(W-1-k) (+-1): at max + 1 and min
            a = one << k
            b = (one << (np.uint64(w - 1) - k)) + rng.integers(-1, 2, m).astype(np.int64).astype(np.uint64)
            neg_a, neg_b = rng.random(m) < 0.5, rng.random(m) < 0.5
            a = np.where(neg_a, (~a + one), a) & mask
            b = np.where(neg_b, (~b + one), b) & mask
        else:                                    # 2^k * (2^(W-k) - 1 or 2^(W-k) - 0): 2^W - 2^k, 2^W
            a = one << k
            b = ((one << (np.uint64(w) - k)) - rng.integers(0, 2, m).astype(np.uint64)) & mask
        return _swap(rng, a & mask, b)
    # (target, low, high of a) with b = target - a (TADD) or a - target (TSUB) in the type
    if fam == "sub":
        rows = ([(hi, -1, hi), (hi + 1, 0, hi), (lo, lo, -1), (lo - 1, lo, -2)] if signed
                else [(-1, 0, hi - 1), (0, 0, hi)])
    else:
        rows = ([(hi, 0, hi), (hi + 1, 1, hi), (lo, lo, 0), (lo - 1, lo, -1)] if signed
                else [(hi, 0, hi), (hi + 1, 1, hi)])
    pick = rng.integers(0, len(rows), m)
    a = np.zeros(m, np.uint64)
    t = np.zeros(m, np.uint64)
    for i, (target, alo, ahi) in enumerate(rows):          # a handful of rows, each vectorised
        sel = pick == i
        a[sel] = _draw(rng, alo, ahi, int(sel.sum()))
        t[sel] = _mod(target, w)
    a &= mask
    b = ((t - a) if fam != "sub" else (a - t)) & mask
    if fam == "fma":
        one = np.full(m, 1, np.uint64)
        return [one, a, b]
    if fam == "sub":
        return [a, b]
    return _swap(rng, a, b)


def wrap_applies(ctx) -> bool:
    return not ctx.is_float and ctx.src.kind in ("sint", "uint") and ctx.family in ("add", "sub", "mul", "fma")


def sat_applies(ctx) -> bool:
    """TCVT into an integer DataType from a source that holds values beyond its bounds."""
    if ctx.family != "convert" or ctx.dst.kind not in ("sint", "uint"):
        return False
    dlo, dhi, _ = _bounds(ctx.dst.name)
    if ctx.src.kind in ("sint", "uint"):
        slo, shi, _ = _bounds(ctx.src.name)
        return slo < dlo or shi > dhi
    return ctx.is_float and ctx.src.name in IEEE_LIKE


def sat_edge(ctx, rng, m):
    """TCVT sources at the integer destination's bounds: max - 1, max, max + 1, max + 2 and
    min + 1, min, min - 1, min - 2 where the source holds them; floating sources also the
    halves between (max + 0.5 rounds past the bound in the nearest modes), exact where the
    source can hold them, else the nearest value."""
    dlo, dhi, _ = _bounds(ctx.dst.name)
    sp = ctx.src
    if sp.kind in ("sint", "uint"):
        slo, shi, w = _bounds(sp.name)
        cands = [v for v in (dhi - 1, dhi, dhi + 1, dhi + 2, dlo + 1, dlo, dlo - 1, dlo - 2) if slo <= v <= shi]
        table = np.array([_mod(v, w) for v in cands], np.uint64)
        return [table[rng.integers(0, len(table), m)]]
    offsets = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5])
    base = np.where(rng.random(m) < 0.5, float(dhi), float(dlo))
    off = offsets[rng.integers(0, len(offsets), m)] * np.where(base == dlo, -1.0, 1.0)
    v = base + off
    enc, ok = sp.encode_exact(v)
    return [np.where(ok, enc, _nearest_in(sp, v))]


# ---------------------------------------------------------------------------- underflow to zero

def underflow_to_zero_applies(ctx) -> bool:
    """TMUL and TFMA of an IEEE-like format whose smallest subnormal s is below 1/2, so that a
    product of two of its values can lie below s/2 (E2M1X2's smallest product is s^2 = s/2).
    Sums and differences of one format are multiples of s: TADD/TSUB never land there."""
    if ctx.family not in ("mul", "fma") or not ctx.is_float or ctx.src.name not in IEEE_LIKE:
        return False
    return float(numeric.info(ctx.src.name).min_subnormal) < 0.5


def underflow_to_zero(ctx, rng, m):
    """TMUL/TFMA operands whose exact product is nonzero and below half the smallest subnormal
    s = 2^es (so it rounds to +-0 in the nearest modes, raising UF and NX).  A tile's status is
    the OR of its elements' flags, so the elements go in runs of 8 (a value class's tile, one
    case's PE) of one kind: all products the same power of two 2^ea x 2^eb (ea + eb = es - 3,
    then es - 2, es - 4, never below 2 es; random splits and signs), so a tile whose only
    inexactness is one bit below the round bit -- 2^-12 = 2^-6 x 2^-6 for E4M3 first, where a
    DUT that leaves that bit out of its sticky OR loses UF and NX --, and every fourth run a
    normal a = (1 + i 2^-(p-1)) 2^ea times b = (1 + j 2^-(p-1)) 2^eb with ea + eb <= es - 3 (so
    |ab| < 4 x 2^(es-3) = s/2), a power of two where b would not be exact.  TFMA adds a signed
    zero."""
    sp = ctx.src
    info = numeric.info(sp.name)
    p, emin = info.precision, int(info.emin)
    es = emin - (p - 1)
    emax = int(np.floor(np.log2(float(info.max_finite))))
    run = (np.arange(m) // 8) % 4
    pow2 = run < 3
    total = np.where(pow2, es - np.array([3, 2, 4, 0])[run], es - 3 - rng.integers(0, 4, m))
    total = np.maximum(total, 2 * es)                        # 2^es x 2^es is the smallest product
    # ea: both factors representable (>= 2^es, <= 2^emax); the significand runs keep a normal where they can
    lo = np.maximum(np.where(pow2, es, emin), total - emax)
    hi = np.minimum(emax, total - es)
    lo = np.where(lo > hi, np.maximum(es, total - emax), lo)
    ea = lo + np.floor(rng.random(m) * (hi - lo + 1)).astype(np.int64)
    eb = total - ea
    step = 2.0 ** -(p - 1)
    sa = np.where(pow2, 1.0, 1 + rng.integers(0, 1 << (p - 1), m) * step)
    sb = np.where(pow2, 1.0, 1 + rng.integers(0, 1 << (p - 1), m) * step)
    a_enc, a_ok = sp.encode_exact(np.ldexp(sa, ea))
    b_enc, b_ok = sp.encode_exact(np.ldexp(sb, eb))
    ok = a_ok & b_ok                                          # else the power-of-two pair
    a = np.where(ok, a_enc, _encode(sp, np.ldexp(1.0, ea)))
    b = np.where(ok, b_enc, _encode(sp, np.ldexp(1.0, eb)))
    a = np.where(rng.random(m) < 0.5, a, negate(sp, a))
    b = np.where(rng.random(m) < 0.5, b, negate(sp, b))
    ops = _swap(rng, a, b)
    if ctx.family == "fma":
        return ops + [_zeros(sp, rng, m)]
    return ops
