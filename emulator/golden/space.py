"""The encodings of one DataType, ordered by value, as the golden generator needs them.

A `Space` answers the questions a coverage class asks when it builds operands: which
encodings are zeros, subnormals, normals, infinities, quiet and signalling NaNs; the next
representable value up or down; the encoding of a value that is exactly representable; half an
ulp of a value.  Formats of at most 20 significant bits are enumerated once (every encoding
decoded through kernels.numeric); FP32 and FP64 use NumPy's own binary32/binary64, which are
those formats bit for bit.  Everything is vectorised over arrays of encodings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from isa.datatypes import datatype
from kernels import numeric

NATIVE = {"FP32": (np.float32, np.uint32), "FP64": (np.float64, np.uint64)}


def _u(bits) -> np.ndarray:
    return np.asarray(bits, np.uint64)


@dataclass(eq=False)
class Space:
    name: str
    kind: str                       # float | sint | uint | exponent
    width: int                      # significant bits of one element
    container: int                  # bits one element occupies
    shift: int                      # significant bits sit at the top of the container (TF32/HF32)
    pools: dict[str, np.ndarray] = field(default_factory=dict)   # named encodings (uint64)
    _enc: np.ndarray | None = None   # finite encodings sorted by value (one per value, +0 for zero)
    _val: np.ndarray | None = None   # their values (float64)
    # enumerated formats: the value of every encoding (by its significant bits) and the index
    # searchsorted(_val, value) gives it -- values() and step() look them up instead of decoding
    # and searching each draw again (the same numbers: computed by that very code once)
    _all_val: np.ndarray | None = None
    _rank: np.ndarray | None = None

    # ---------------------------------------------------------------- value <-> encoding
    def values(self, enc) -> np.ndarray:
        """float64 values of encodings (NaN for NaN); exact for every format except FP64 ints."""
        enc = _u(enc)
        if self.name in NATIVE:
            ft, ut = NATIVE[self.name]
            return enc.astype(ut).view(ft).astype(np.float64)
        i = self._index(enc)
        if i is not None:
            return self._all_val[i]
        return numeric.decode(enc.astype(datatype(self.name).raw_dtype), self.name).astype(np.float64)

    def encode_exact(self, v) -> tuple[np.ndarray, np.ndarray]:
        """(encodings, ok): ok where the finite value v is exactly representable."""
        v = np.asarray(v, np.float64)
        if self.name in NATIVE:
            ft, ut = NATIVE[self.name]
            with np.errstate(over="ignore", invalid="ignore"):
                f = v.astype(ft)
            ok = np.isfinite(f) & (f.astype(np.float64) == v)
            return f.view(ut).astype(np.uint64), ok
        i = np.clip(np.searchsorted(self._val, v), 0, len(self._val) - 1)
        ok = np.isfinite(v) & (self._val[i] == v)
        enc = self._enc[i].copy()
        if self.has("negzero"):
            enc[ok & (v == 0) & np.signbit(v)] = self.pools["negzero"][0]
        return enc, ok

    def step(self, enc, up: bool) -> np.ndarray:
        """The next representable finite value above (up) or below each finite encoding,
        saturating at the largest/smallest finite value."""
        if self.name in NATIVE:
            ft, ut = NATIVE[self.name]
            x = _u(enc).astype(ut).view(ft)
            lim = np.finfo(ft).max
            with np.errstate(over="ignore"):
                y = np.nextafter(x, np.array(lim if up else -lim, ft))
            return y.view(ut).astype(np.uint64)
        enc = _u(enc)
        at = self._index(enc)
        i = self._rank[at] if at is not None else np.searchsorted(self._val, self.values(enc))
        i = np.clip(i + (1 if up else -1), 0, len(self._enc) - 1)
        return self._enc[i]

    def _index(self, enc: np.ndarray) -> np.ndarray | None:
        """Each encoding's row of the enumerated tables (its significant bits), or None where
        there are no tables or some encoding lies outside them (those take the computed path)."""
        if self._all_val is None or enc.ndim == 0 or enc.size == 0:
            return None
        i = enc >> np.uint64(self.shift) if self.shift else enc
        if int(i.max()) >= len(self._all_val) or (self.shift and (enc & np.uint64((1 << self.shift) - 1)).any()):
            return None
        return i

    def half_ulp(self, enc) -> np.ndarray:
        """Half the gap from each positive finite value to the next larger one (float64)."""
        v = np.abs(self.values(enc))
        pos, _ = self.encode_exact(v)
        up = self.values(self.step(pos, True)) - v
        below = v - self.values(self.step(pos, False))      # at the largest finite value, the
        return np.where(up > 0, up, below) / 2              # ulp of its own binade

    def random(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Uniformly random bit patterns of the significant bits (any class, NaNs included)."""
        hi = 1 << self.width
        r = rng.integers(0, hi, n, dtype=np.uint64) if self.width < 64 else rng.integers(
            0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
        return r << np.uint64(self.shift) if self.shift else r

    def pick(self, rng: np.random.Generator, pool: str, n: int) -> np.ndarray:
        p = self.pools[pool]
        return p[rng.integers(0, len(p), n)]

    def has(self, pool: str) -> bool:
        return pool in self.pools and len(self.pools[pool]) > 0


# ---------------------------------------------------------------------------- construction

def _float_pools(enc: np.ndarray, val: np.ndarray, info, ieee_quiet_bit: int | None) -> dict:
    fin = np.isfinite(val)
    mag = np.abs(val)
    pools = {
        "zero": enc[fin & (val == 0)],
        "subnormal": enc[fin & (mag > 0) & (mag < info.min_normal)],
        "normal": enc[fin & (mag >= info.min_normal)],
        "inf": enc[np.isinf(val)],
    }
    nan = enc[np.isnan(val)]
    if ieee_quiet_bit is not None:
        quiet = (nan >> np.uint64(ieee_quiet_bit)) & np.uint64(1)
        pools["qnan"], pools["snan"] = nan[quiet == 1], nan[quiet == 0]
    else:
        pools["qnan"], pools["snan"] = nan, nan[:0]
    for name, target in (("min_subnormal", info.min_subnormal), ("min_normal", info.min_normal),
                         ("max_normal", info.max_finite), ("one", 1.0)):
        pools[name] = enc[fin & (mag == target)]
    sub = pools["subnormal"]
    pools["max_subnormal"] = sub[np.abs(val[np.isin(enc, sub)]) == np.abs(val[np.isin(enc, sub)]).max()] \
        if len(sub) else sub
    pools["negzero"] = enc[fin & (val == 0) & np.signbit(val)]
    specials = [pools[k] for k in ("zero", "min_subnormal", "max_subnormal", "min_normal", "max_normal",
                                   "inf", "qnan", "snan", "one")]
    pools["special"] = np.unique(np.concatenate(specials))
    return pools


def _quiet_index(fmt, info) -> int:
    # significand bits below the quiet bit: precision - 2; significant bits sit at the top
    return (fmt.container - fmt.bits) + info.precision - 2


@lru_cache(maxsize=None)
def space(name: str) -> Space:
    fmt = datatype(name)
    info = numeric.info(fmt.name)
    kind = fmt.kind.value
    shift = fmt.container - fmt.bits if fmt.bits >= 16 else 0
    sp = Space(fmt.name, kind, fmt.bits, fmt.container, shift)
    if fmt.is_int:
        bits = fmt.bits
        lo, hi = int(info.min_finite), int(info.max_finite)
        mask = (1 << bits) - 1
        enc = lambda xs: _u([x & mask for x in xs])  # noqa: E731  (a handful of constants)
        sp.pools = {"min": enc([lo]), "max": enc([hi]), "zero": enc([0]), "one": enc([1]),
                    "minus_one": enc([-1]) if fmt.signed else enc([]),
                    "special": np.unique(enc([lo, hi, 0, 1] + ([-1] if fmt.signed else [])))}
        return sp
    if fmt.name in NATIVE:
        ft, ut = NATIVE[fmt.name]
        fi = np.finfo(ft)
        mant = fi.nmant
        one = np.ones(1, ut)
        sign = ut(1) << ut(fmt.bits - 1)
        expmask = ut(((1 << fi.nexp) - 1) << mant)
        mk = lambda *xs: _u(np.array(xs, ut))  # noqa: E731
        min_sub, max_sub = 1, (1 << mant) - 1
        min_norm, max_norm = 1 << mant, int(expmask) - (1 << mant) + max_sub
        qbit = 1 << (mant - 1)
        sp.pools = {
            "zero": mk(0, sign), "negzero": mk(sign),
            "min_subnormal": mk(min_sub, sign | min_sub), "max_subnormal": mk(max_sub, sign | max_sub),
            "min_normal": mk(min_norm, sign | min_norm), "max_normal": mk(max_norm, sign | max_norm),
            "inf": mk(expmask, sign | expmask),
            "qnan": mk(expmask | qbit, sign | expmask | qbit, expmask | qbit | 1, expmask | qbit | 0x5A5),
            "snan": mk(expmask | 1, sign | expmask | 1, expmask | (qbit - 1), expmask | 0x2A),
            "one": np.asarray(np.array([1.0, -1.0], ft).view(ut), np.uint64),
        }
        sp.pools["special"] = np.unique(np.concatenate(list(sp.pools.values())))
        del one
        return sp
    # enumerate every encoding of the significant bits
    enc = np.arange(1 << fmt.bits, dtype=np.uint64) << np.uint64(shift)
    val = sp.values(enc)
    fin = np.isfinite(val)
    order = np.argsort(val[fin], kind="stable")
    fe, fv = enc[fin][order], val[fin][order]
    keep = np.concatenate([[True], fv[1:] != fv[:-1]])        # one encoding per value
    zero_first = fe[keep]
    # for the zero value keep +0 (the encoding whose value has no sign bit)
    sp._enc, sp._val = zero_first, fv[keep]
    sp._all_val, sp._rank = val, np.searchsorted(sp._val, val)
    if np.any(sp._val == 0):
        z = np.flatnonzero(sp._val == 0)[0]
        pos0 = enc[fin & (val == 0) & ~np.signbit(val)]
        if len(pos0):
            sp._enc[z] = pos0[0]
    if kind == "float":
        sp.pools = _float_pools(enc, val, info, _quiet_index(fmt, info)
                                if info.has_nan and "exponent all ones" in info.nan_encodings else None)
    else:   # E8M0: exponent-only
        sp.pools = {"special": np.unique(enc[~fin | (np.abs(val) == 1) | (val == val[fin].min())
                                             | (val == val[fin].max())])}
    return sp


def normal(sp: Space, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random finite normal encodings of either sign (uniform over the normal encodings)."""
    if sp.name in NATIVE:
        ft, ut = NATIVE[sp.name]
        fi = np.finfo(ft)
        mant, nexp = fi.nmant, fi.nexp
        m = rng.integers(0, 1 << mant, n, dtype=np.uint64)
        e = rng.integers(1, (1 << nexp) - 1, n, dtype=np.uint64)
        s = rng.integers(0, 2, n, dtype=np.uint64)
        return (s << np.uint64(sp.width - 1)) | (e << np.uint64(mant)) | m
    return sp.pick(rng, "normal", n)


def nearest(sp: Space, v) -> np.ndarray:
    """Encodings of the representable finite values nearest to v (ties to the lower one)."""
    v = np.asarray(v, np.float64)
    if sp.name in NATIVE:
        ft, ut = NATIVE[sp.name]
        with np.errstate(over="ignore"):
            f = np.clip(v, np.finfo(ft).min, np.finfo(ft).max).astype(ft)
        return f.view(ut).astype(np.uint64)
    i = np.clip(np.searchsorted(sp._val, v), 1, len(sp._val) - 1)
    lower = (v - sp._val[i - 1]) <= (sp._val[i] - v)
    return np.where(lower, sp._enc[i - 1], sp._enc[i])


def negate(sp: Space, enc) -> np.ndarray:
    """Flip the sign bit (the top bit of the significant bits) of float encodings."""
    return _u(enc) ^ (np.uint64(1) << np.uint64(sp.shift + sp.width - 1))
