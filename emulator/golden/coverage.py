"""Coverage classes: one row per class, each a small pure generator.

A case belongs to exactly one class.  Value classes choose the operands' encodings (every
element of the case's valid rectangle comes from the class); shape classes choose the block's
geometry and fields; illegal classes apply one mutation that a MUST-reject rule of the seed
rejects, and name the reason code they expect.  `applies(ctx)` says whether an (op, DataType)
partition can have the class at all; `tile-emu golden --coverage` prints "n/a" there rather than
a missing count.  The generator then checks each illegal class's expected reason on a probe
case, so a class whose mutation is legal (or rejected for another reason) in a partition is
reported as not applicable instead of mislabelling cases.  Rules a `.tbs` stream cannot break
(PE_MASK_RANGE: the field has 4 bits; ENGINE_SPELLING: the spelling is not encoded) and rules of
another instruction or DataType (UNASSIGNED_OPCODE, DATATYPE_UNSUPPORTED) have no class here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from isa import instructions as I
from kernels import numeric

from . import windows as W
from .space import Space, nearest, negate, normal
from .windows import _swap

@dataclass(frozen=True)
class Context:
    op: I.Instruction
    src: Space
    dst: Space
    rmode: str | None = None
    sat: bool = False

    @property
    def family(self) -> str:
        """Which arithmetic a value class must aim at (the instruction table's golden family)."""
        return self.op.golden_family

    @property
    def is_float(self) -> bool:
        return self.src.kind == "float"

    @property
    def movement(self) -> bool:
        """TEXTRACT/TINSERT/TIMG2COL: encodings move unchanged through GPR offsets (posM, posK)."""
        return self.op.schema in (I.EXTRACT, I.INSERT, I.IMG2COL)

    @property
    def window(self) -> bool:
        """TEXTRACT/TINSERT: a window of a tile, placed by B.DATR.Layout."""
        return self.op.schema in (I.EXTRACT, I.INSERT)

    @property
    def img2col(self) -> bool:
        """TIMG2COL: the source is a Matrix feature map carrying its descriptor."""
        return self.op.schema == I.IMG2COL

    @property
    def value_arity(self) -> int:
        """Numeric source operands (TSEL's predicate mask is drawn separately)."""
        return self.op.arity - (1 if self.op.schema == I.SELECT else 0)


@dataclass(frozen=True)
class Variant:
    """A case's geometry and block fields (shared by every case of one group)."""
    rows: int = 1                 # physical Row of the sources
    cols: int = 8                 # physical Col
    vrow: int = 1
    vcol: int = 8
    pe_mask: int = 0b0001
    pad: int | None = None        # explicit PadValue code, None = omitted
    explicit: bool = False        # write every optional field with its default value
    alias: bool = False           # the destination renames source 0
    dest_capacity: int | None = None   # explicit destination capacity (None: omitted)
    mutation: str | None = None   # illegal classes: the name of the mutation (cases.MUTATIONS)
    undefined_outside: bool = False    # elements outside the valid rectangle are undefined
    # TEXTRACT / TINSERT / TIMG2COL: where the window sits (GPR offsets through B.IOR) and the layouts
    offsets: str = "random"       # none (B.IOR omitted) | random | edge (largest legal) | beyond
    layout: int = 0               # B.DATR.Layout of the destination
    src_layout: int = 0           # layout of the window source (TEXTRACT source, TINSERT insertion)


Gen = Callable[[Context, np.random.Generator, int], list]

# ---------------------------------------------------------------------------- crosses
# PE_MASK patterns: one PE, the partial mask shapes (two adjacent PEs, two apart, three), all four.
PE_PATTERNS = {"one_pe": (0b0001, 0b0010, 0b0100, 0b1000), "two_adjacent": (0b0011, 0b0110, 0b1100),
               "two_apart": (0b0101, 0b1010, 0b1001), "three_pes": (0b0111, 0b1011, 0b1101, 0b1110),
               "four_pes": (0b1111,)}
PATTERN_OF = {mask: name for name, masks in PE_PATTERNS.items() for mask in masks}
PAD_CODES = {0b00: "zero", 0b01: "max", 0b10: "min", 0b11: "null"}
# where the destination has elements outside ValidRow x ValidCol
GEOMETRIES = ("col", "row", "row_col")        # ValidCol < Col, ValidRow < Row, both
# The bins of each padding class: every PE_MASK pattern once and every geometry at least once,
# so the pad classes together cover PE_MASK pattern x PadValue and geometry x PadValue.
PAD_BINS = (("one_pe", "col"), ("two_adjacent", "row"), ("two_apart", "row_col"), ("three_pes", "col"),
            ("four_pes", "row"))
# Crosses of one partition: name -> its two axes.  Counted from the stored rows of committed
# cases (docs/golden-format.md, "Coverage"): pe_mask x pad and geometry x pad over cases with an
# explicit PadValue and elements outside the valid rectangle, pe_mask x alias over cases whose
# destination is a source tile.  A dataset-wide cross pad x dtype (PadValue x destination
# DataType) is summed over partitions.
CROSSES = {"pe_mask_x_pad": ("pe_mask", "pad"), "geometry_x_pad": ("geometry", "pad"),
           "pe_mask_x_alias": ("pe_mask", "alias")}


def cells_of(cls: "CoverageClass", bin: int | None) -> list[tuple[str, str]]:
    """The cross cells (cross name, "a/b") a case of class `cls`, bin `bin`, lands in."""
    if bin is None:
        return []
    if cls.name in PAD_CLASS_CODES:
        pat, geom = PAD_BINS[bin]
        code = PAD_CODES[PAD_CLASS_CODES[cls.name]]
        return [("pe_mask_x_pad", f"{pat}/{code}"), ("geometry_x_pad", f"{geom}/{code}")]
    if cls.name == "dest_aliases_source":
        return [("pe_mask_x_alias", f"{tuple(PE_PATTERNS)[bin]}/dest_aliases_source")]
    return []


@dataclass(frozen=True)
class CoverageClass:
    name: str
    kind: str                     # value | shape | illegal
    doc: str
    applies: Callable[[Context], bool]
    gen: Gen | None = None        # value classes: operand encodings
    variant: Callable[[Context, np.random.Generator], Variant] | None = None
    reason: str | None = None     # illegal classes: the expected reason code
    bins: tuple[str, ...] = ()    # cross bins (coverage points of their own; variant(ctx, rng, bin))
    boundary: bool = False        # a boundary window (allocated early: closure.py)


# ---------------------------------------------------------------------------- value helpers

def _signs(ctx: Context, rng, x):
    return np.where(rng.random(len(x)) < 0.5, x, negate(ctx.src, x)) if ctx.is_float else x


def _pool_class(pool: str) -> Gen:
    def gen(ctx: Context, rng, m):
        ops = [np.where(rng.random(m) < 0.6, ctx.src.pick(rng, pool, m), ctx.src.random(rng, m))
               for _ in range(ctx.value_arity)]
        return _fix_divisors(ctx, ops)
    return gen


def _random(ctx: Context, rng, m):
    return _fix_divisors(ctx, [ctx.src.random(rng, m) for _ in range(ctx.value_arity)])


def _fix_divisors(ctx: Context, ops: list) -> list:
    """Legal integer division cases never divide by zero (that is an illegal class of its own)."""
    if ctx.family == "div" and not ctx.is_float:
        ops[1] = np.where(ops[1] == 0, np.uint64(1), ops[1])
    return ops


def _exact(sp: Space, v, fallback):
    enc, ok = sp.encode_exact(v)
    return np.where(ok, enc, fallback)


def _subnormal_odd(sp: Space, rng, m):
    """Subnormals that are odd multiples of the smallest one (their half is a subnormal tie)."""
    info = numeric.info(sp.name)
    top = max(int(float(info.min_normal) / float(info.min_subnormal)) // 2, 1)
    return _exact(sp, (2 * rng.integers(0, top, m) + 1) * float(info.min_subnormal), sp.pick(rng, "min_subnormal", m))


def _tie(neighbour: bool) -> Gen:
    """Exact ties (and their neighbours) at a rounding boundary of the destination: around a
    random normal (every binade alike), and for TMUL/TFMA/TCVT a quarter in the subnormal range
    (an odd multiple of the smallest subnormal times 1/2; a destination subnormal plus half its
    spacing) -- sums of one format are exact there."""
    def gen(ctx: Context, rng, m):
        sp = ctx.src
        x = normal(sp, rng, m)
        fam = ctx.family
        sub = rng.random(m) < 0.25
        if fam == "convert":
            d = normal(ctx.dst, rng, m)
            v = ctx.dst.values(d)
            mid = v + np.sign(v) * ctx.dst.half_ulp(d)
            if ctx.dst.has("min_subnormal"):
                ds = _subnormal_odd(ctx.dst, rng, m)
                vs = ctx.dst.values(ds) + float(numeric.info(ctx.dst.name).min_subnormal) / 2
                mid = np.where(sub, vs * np.sign(v), mid)
            enc = _exact(sp, mid, sp.random(rng, m))
            if neighbour:
                enc = sp.step(enc, True) if rng.random() < 0.5 else sp.step(enc, False)
            return [enc]
        if fam in ("mul", "fma") and sp.has("min_subnormal"):
            x = np.where(sub, _signs(ctx, rng, _subnormal_odd(sp, rng, m)), x)
        if fam == "mul":
            k = _exact(sp, np.where(sub, 0.5, np.where(rng.random(m) < 0.5, 1.5, 0.75)), sp.pick(rng, "one", m))
            k = sp.step(k, rng.random() < 0.5) if neighbour else k
            a, b = _swap(rng, x, _signs(ctx, rng, k))
            return [a, b]
        if fam == "fma" and not neighbour:
            half = _signs(ctx, rng, _exact(sp, np.full(m, 0.5), sp.pick(rng, "one", m)))
            h = _signs(ctx, rng, _exact(sp, sp.half_ulp(x), sp.pick(rng, "min_subnormal", m)))
            return [x, np.where(sub, half, sp.pick(rng, "one", m)), np.where(sub, sp.pick(rng, "zero", m), h)]
        h = sp.half_ulp(x)
        hb = _exact(sp, h, sp.pick(rng, "min_subnormal", m))
        if neighbour:
            hb = np.where(rng.random(m) < 0.5, sp.step(hb, True), sp.step(hb, False))
        hb = _signs(ctx, rng, hb)
        if fam == "fma":
            return [x, sp.pick(rng, "one", m), hb]
        a, b = _swap(rng, x, hb)
        return [a, b]
    return gen


def _toward_zero(sp: Space, enc):
    """The next finite value toward zero (one ulp below in magnitude)."""
    return np.where(sp.values(enc) > 0, sp.step(enc, False), sp.step(enc, True))


def _overflow(ctx: Context, rng, m):
    """Operands whose exact result sits at the overflow threshold (max + ulp/2), one ulp below it
    (max - ulp/2, the tie between max - ulp and max), or just beside either."""
    sp = ctx.src
    if ctx.family == "convert":
        d = ctx.dst.pick(rng, "max_normal", m)
        v = ctx.dst.values(d)
        near = v + np.sign(v) * ctx.dst.half_ulp(d) * rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], m)
        enc = _exact(sp, near, nearest(sp, near))
        return [np.where(rng.random(m) < 0.25, sp.step(enc, True), enc)]
    mx = sp.pick(rng, "max_normal", m)
    if ctx.family == "mul":
        one = sp.pick(rng, "one", m)
        k = np.select([rng.random(m) < 0.33, rng.random(m) < 0.5], [sp.step(one, True), one],
                      _exact(sp, np.full(m, 2.0), one))
        # products near either threshold: a in [1, 2), b the value nearest T / a, and a neighbour
        vmax = float(numeric.info(sp.name).max_finite)
        t = (vmax + np.where(rng.random(m) < 0.5, 1.0, -1.0) * sp.half_ulp(sp.pick(rng, "max_normal", m)))
        a = nearest(sp, rng.uniform(1.0, 2.0, m))
        b = nearest(sp, t / sp.values(a))
        b = np.select([rng.random(m) < 0.25, rng.random(m) < 0.33], [sp.step(b, True), sp.step(b, False)], b)
        near = rng.random(m) < 0.5
        sign = rng.random(m) < 0.5
        a, b = np.where(near, np.where(sign, negate(sp, a), a), mx), np.where(near, b, k)
        return list(_swap(rng, a, b))
    mx = np.where(rng.random(m) < 0.5, mx, _toward_zero(sp, mx))
    h = _exact(sp, sp.half_ulp(sp.pick(rng, "max_normal", m)) * np.sign(sp.values(mx)), sp.pick(rng, "max_normal", m))
    h = np.select([rng.random(m) < 0.33, rng.random(m) < 0.5], [sp.step(h, True), sp.step(h, False)], h)
    if ctx.family == "sub":
        h = negate(sp, h)
    if ctx.family == "fma":
        return [mx, sp.pick(rng, "one", m), h]
    return list(_swap(rng, mx, h))


def _underflow(ctx: Context, rng, m):
    """Results at the subnormal boundary: differences of close small values, products that fall
    below the smallest normal."""
    sp = ctx.src
    if ctx.family == "convert":
        d = np.where(rng.random(m) < 0.5, ctx.dst.pick(rng, "min_normal", m),
                     ctx.dst.pick(rng, "min_subnormal", m))
        v = ctx.dst.values(d) * rng.choice([0.5, 0.75, 1.0, 1.25, 0.25], m)
        return [nearest(sp, v)]
    small = np.where(rng.random(m) < 0.5, sp.pick(rng, "min_normal", m), sp.pick(rng, "max_subnormal", m))
    if ctx.family == "mul":
        frac = nearest(sp, rng.uniform(0.25, 1.0, m))
        return list(_swap(rng, small, _signs(ctx, rng, frac)))
    other = np.where(rng.random(m) < 0.5, sp.step(small, True), sp.step(small, False))
    other = negate(sp, other) if ctx.family in ("add", "fma") else other
    if ctx.family == "fma":
        return [small, sp.pick(rng, "one", m), other]
    return list(_swap(rng, small, other))


def _cancel(ctx: Context, rng, m):
    """Operand pairs that cancel exactly or to a few ulps."""
    sp = ctx.src
    x = normal(sp, rng, m)
    y = np.select([rng.random(m) < 0.34, rng.random(m) < 0.5], [x, sp.step(x, True)], sp.step(x, False))
    if ctx.family == "add":
        y = negate(sp, y)
    return list(_swap(rng, x, y))


def _fma_straddle(ctx: Context, rng, m):
    """TFMA addends at and around -(a*b): the product straddles the addend."""
    sp = ctx.src
    a, b = normal(sp, rng, m), nearest(sp, rng.uniform(0.5, 2.0, m))
    raw = np.dtype(f"u{max(sp.container, 8) // 8}")
    p, _ = numeric.elementwise("TMUL", sp.name, a.astype(raw), b.astype(raw))
    p = np.asarray(p, np.uint64)
    c = negate(sp, p)
    c = np.select([rng.random(m) < 0.34, rng.random(m) < 0.5], [c, sp.step(c, True)], sp.step(c, False))
    return [a, b, c]


def _large_quotient(ctx: Context, rng, m):
    """TREM pairs whose quotient |x/y| is 2^24 to 2^32 (x near the top of the range, y not below
    the smallest subnormal): a remainder from unfused steps (numeric profile a5) collapses there."""
    sp = ctx.src
    info = numeric.info(sp.name)
    vx = float(info.max_finite) * np.exp2(-rng.uniform(0, 8, m))
    x = _signs(ctx, rng, nearest(sp, vx))
    vy = np.abs(sp.values(x)) * np.exp2(-rng.uniform(24, 32, m))
    y = nearest(sp, np.maximum(vy, float(info.min_subnormal)))
    return [x, _signs(ctx, rng, y)]


def _subnormal_quotient(ctx: Context, rng, m):
    """TDIV quotients at and around the smallest subnormal (FP16: 2^-24, where profile a5's
    division decides by the significands alone and rounds subnormal quotients twice)."""
    sp = ctx.src
    info = numeric.info(sp.name)
    vy = np.exp2(rng.uniform(4, np.log2(float(info.max_finite)) - 1, m))
    f = rng.choice([0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0], m) * (1 + rng.uniform(-2 ** -8, 2 ** -8, m))
    y = _signs(ctx, rng, nearest(sp, vy))
    x = _signs(ctx, rng, nearest(sp, np.abs(sp.values(y)) * float(info.min_subnormal) * f))
    return [x, y]


def _out_of_range_int(ctx: Context, rng, m):
    """Floating values whose rounded integer lies outside the integer destination: just beyond
    either bound, far beyond, negative for unsigned ones.  Without Sat profile a5 keeps their
    low bits for the pairs its sources spell out; saturation (and ieee) clamps."""
    lo, hi = (float(v) for v in (numeric.info(ctx.dst.name).min_finite, numeric.info(ctx.dst.name).max_finite))
    top = float(numeric.info(ctx.src.name).max_finite)
    span = rng.choice([1.0, 1.5, 4.0, 300.0], m) * (hi - lo + 1)
    v = np.where(rng.random(m) < 0.5, hi + 1 + rng.random(m) * span, lo - 1 - rng.random(m) * span)
    return [nearest(ctx.src, np.clip(v, -top, top))]


def _int_bounds(ctx: Context, rng, m):
    return _fix_divisors(ctx, [ctx.src.pick(rng, "special", m) for _ in range(ctx.value_arity)])


def _shift_counts(ctx: Context, rng, m):
    w = ctx.src.width
    counts = np.array([0, 1, w - 1, w, w + 1, 2 * w, (1 << w) - 1 if w < 64 else (1 << 63)], np.uint64)
    counts &= np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    return [ctx.src.random(rng, m), counts[rng.integers(0, len(counts), m)]]


def _min_div_minus_one(ctx: Context, rng, m):
    return [ctx.src.pick(rng, "min", m), ctx.src.pick(rng, "minus_one", m)]


# ---------------------------------------------------------------------------- applicability

def _float(ctx):
    return ctx.is_float


def _float_has(*pools):
    return lambda ctx: ctx.is_float and all(ctx.src.has(p) for p in pools)


def _fam(*fams, float_only=True):
    return lambda ctx: (ctx.is_float or not float_only) and ctx.family in fams


def _convert_float(ctx):
    return ctx.family == "convert" and ctx.is_float and ctx.dst.kind == "float"


def _rounds(ctx):
    """Ties exist where a result can fall exactly between two representable values."""
    if ctx.family == "convert":
        return _convert_float(ctx) and ctx.src.width > ctx.dst.width
    return ctx.is_float and ctx.family in ("add", "sub", "mul", "fma")


def _always(ctx):
    return True


def _float_op(*mnemonics, span: float = 0):
    """Floating partitions of these instructions whose finite range spans 2^span or more."""
    def applies(ctx):
        if not (ctx.is_float and ctx.op.mnemonic in mnemonics and ctx.src.has("min_subnormal")):
            return False
        info = numeric.info(ctx.src.name)
        return float(info.max_finite) / float(info.min_subnormal) >= 2.0 ** span
    return applies


def _float_to_int(ctx):
    """Float -> integer pairs where a source value can lie outside the destination's range."""
    if not (ctx.family == "convert" and ctx.is_float and ctx.dst.kind in ("sint", "uint")):
        return False
    return ctx.dst.kind == "uint" or float(numeric.info(ctx.src.name).max_finite) > float(numeric.info(ctx.dst.name).max_finite)


def _int(ctx):
    return not ctx.is_float and ctx.src.kind in ("sint", "uint")


def _movement(ctx):
    return ctx.movement


def _window(ctx):
    return ctx.window


def _img2col(ctx):
    return ctx.img2col


def _has_pad(ctx):
    return "PadValueOrByteId" in ctx.op.datr


# ---------------------------------------------------------------------------- shape variants

def _v(**kw):
    return lambda ctx, rng, bin=None: Variant(**kw)


def _pe_partial(ctx, rng, bin=None):
    return Variant(pe_mask=int(rng.choice([0b0010, 0b0101, 0b1010, 0b0110, 0b1101, 0b0111])))


def _capacity_limit(ctx, rng, bin=None):
    return Variant(rows=2, vrow=2, dest_capacity=-1)      # -1: exactly the minimal capacity


def _mask_of(rng, pattern: str) -> int:
    masks = PE_PATTERNS[pattern]
    return int(masks[rng.integers(0, len(masks))])


def _pad(code):
    """PadValue `code` with elements outside the valid rectangle; bin i of PAD_BINS picks the
    PE_MASK pattern and the geometry (columns 5 of 8 valid, row 1 of 2, or both).  Without a
    bin (the stream generator's use): columns, PE 0."""
    def variant(ctx, rng, bin=None):
        if bin is None:
            return Variant(cols=8, vcol=5, pad=code, undefined_outside=True)
        pattern, geom = PAD_BINS[bin]
        rows = 2 if geom != "col" else 1
        return Variant(rows=rows, vrow=1, cols=8, vcol=8 if geom == "row" else 5,
                       pad=code, undefined_outside=True, pe_mask=_mask_of(rng, pattern),
                       dest_capacity=-2 if rows == 2 else None)
    return variant


def _alias(ctx, rng, bin=None):
    """The destination renames source 0; bin i selects PE_MASK pattern i."""
    return Variant(alias=True, pe_mask=0b0001 if bin is None else _mask_of(rng, tuple(PE_PATTERNS)[bin]))


# ---------------------------------------------------------------------------- the table

def _value(name, doc, applies, gen, movement=False, boundary=False):
    """A value class; for TEXTRACT/TINSERT, which compute nothing, only those marked `movement`."""
    return CoverageClass(name, "value", doc, lambda c: applies(c) and (movement or not c.movement), gen=gen,
                         boundary=boundary)


def _shape(name, doc, applies, variant, bins=()):
    return CoverageClass(name, "shape", doc, applies, variant=variant, bins=bins)


_PAD_BIN_NAMES = tuple(f"{pat}/{geom}" for pat, geom in PAD_BINS)


def _illegal(reason, doc, applies=_always, mutation=None):
    return CoverageClass(f"illegal_{reason.lower()}", "illegal", doc, applies,
                         variant=_v(mutation=mutation or reason), reason=reason)


CLASSES: tuple[CoverageClass, ...] = (
    # ---- values
    _value("random", "uniformly random encodings", _always, _random, movement=True),
    _value("specials", "pairs of special values (zeros, extremes, infinities, NaNs, one)", _always,
           _pool_class("special"), movement=True),
    _value("zeros", "signed zeros", _float_has("zero"), _pool_class("zero")),
    _value("min_subnormal", "the smallest subnormals", _float_has("min_subnormal"), _pool_class("min_subnormal")),
    _value("max_subnormal", "the largest subnormals", _float_has("max_subnormal"), _pool_class("max_subnormal")),
    _value("min_normal", "the smallest normals", _float_has("min_normal"), _pool_class("min_normal")),
    _value("max_normal", "the largest finite values", _float_has("max_normal"), _pool_class("max_normal")),
    _value("infinities", "infinities", _float_has("inf"), _pool_class("inf")),
    _value("quiet_nan", "quiet NaNs with payloads", _float_has("qnan"), _pool_class("qnan")),
    _value("signalling_nan", "signalling NaNs with payloads", _float_has("snan"), _pool_class("snan")),
    _value("tie", "exact ties at a rounding boundary, in every binade and the subnormal range", _rounds,
           _tie(False), boundary=True),
    _value("tie_neighbour", "the neighbours of exact ties", _rounds, _tie(True)),
    _value("overflow", "results at the overflow threshold, one ulp below it, and around both",
           lambda c: _fam("add", "sub", "mul", "fma")(c) or _convert_float(c), _overflow, boundary=True),
    _value("round_to_min_normal", "results just below the smallest normal that round up to it "
           "(tininess before and after rounding disagree)", W.tininess_reachable, W.round_to_min_normal,
           boundary=True),
    _value("exact_zero", "exact zero results of both signs", _fam("add", "sub", "mul", "fma"), W.exact_zero,
           boundary=True),
    _value("underflow_to_zero", "products below half the smallest subnormal: they round to +-0 with UF and NX "
           "(powers of two among them)", W.underflow_to_zero_applies, W.underflow_to_zero, boundary=True),
    _value("wrap_edge", "integer results at the bounds and one past them (they wrap)", W.wrap_applies,
           W.wrap_edge, boundary=True),
    _value("sat_edge", "TCVT sources at the integer destination's bounds and one past them",
           W.sat_applies, W.sat_edge, boundary=True),
    _value("underflow", "results at and around the underflow threshold",
           lambda c: _fam("add", "sub", "mul", "fma")(c) or _convert_float(c), _underflow),
    _value("cancel", "operand pairs that cancel", _fam("add", "sub"), _cancel),
    _value("fma_straddle", "TFMA products that straddle the addend", _fam("fma"), _fma_straddle),
    _value("large_quotient", "TREM with |x/y| from 2^24 to 2^32", _float_op("TREM", span=32), _large_quotient),
    _value("subnormal_quotient", "TDIV quotients at and around the smallest subnormal",
           _float_op("TDIV", span=12), _subnormal_quotient),
    _value("out_of_range_int", "float -> integer values beyond the destination's range", _float_to_int,
           _out_of_range_int),
    _value("int_bounds", "integer min, max, -1, 0, 1", _int, _int_bounds),
    _value("shift_counts", "shift counts at and beyond the width",
           lambda c: _int(c) and c.family == "shift", _shift_counts),
    _value("min_div_minus_one", "MIN / -1", lambda c: _int(c) and c.family == "div" and c.src.kind == "sint",
           _min_div_minus_one),
    # ---- shapes and fields (random values)
    _shape("valid_col_1", "ValidCol = 1", _always, _v(cols=1, vcol=1)),
    _shape("valid_row_lt_row", "ValidRow < Row", _always, _v(rows=4, vrow=2, dest_capacity=-2)),
    _shape("col_gt_validcol", "Col > ValidCol, undefined elements outside the valid rectangle",
           _always, _v(cols=8, vcol=3, undefined_outside=True)),
    _shape("capacity_limit", "destination capacity exactly the minimum", _always, _capacity_limit),
    _shape("pad_zero", "PadValue Zero", _has_pad, _pad(0b00), _PAD_BIN_NAMES),
    _shape("pad_max", "PadValue Max", _has_pad, _pad(0b01), _PAD_BIN_NAMES),
    _shape("pad_min", "PadValue Min", _has_pad, _pad(0b10), _PAD_BIN_NAMES),
    _shape("pad_null", "PadValue Null, explicit", _has_pad, _pad(0b11), _PAD_BIN_NAMES),
    _shape("omitted_fields", "every optional field omitted", _always, _v(cols=8, vcol=8)),
    _shape("explicit_fields", "every optional field explicit with its default", _always, _v(explicit=True)),
    _shape("partial_pe_mask", "a PE_MASK selecting some of the PEs", _always, _pe_partial),
    _shape("all_pes", "PE_MASK = 0b1111", _always, _v(pe_mask=0b1111, rows=2, vrow=2)),
    _shape("dest_aliases_source", "the destination renames a source", _always, _alias, tuple(PE_PATTERNS)),
    _shape("offset_none", "B.IOR omitted: both offsets 0", _movement, _v(offsets="none")),
    _shape("offset_edge", "the window at the largest legal offsets", _movement, _v(offsets="edge")),
    _shape("layout_dn", "destination Layout DN", _window, _v(layout=1)),
    _shape("layout_fractal", "destination in a fractal layout (NZ)", _window, _v(layout=2)),
    _shape("source_layout", "the window source in a fractal layout (ZN)", _window, _v(src_layout=3)),
    # ---- one class per MUST-reject rule a one-block case can break
    _illegal("BINDING_COUNT", "B.IOT binds one tile too few"),
    _illegal("PE_MASK_MISMATCH", "two bindings carry different PE_MASKs", lambda c: c.op.arity >= 1),
    _illegal("SOURCE_CAPACITY", "a source binding carries a capacity"),
    _illegal("DIM_MISSING", "B.DIM omitted"),
    _illegal("DIM_ZERO", "LB0 = 0"),
    _illegal("DIM_RANGE", "ValidCol exceeds Col"),
    _illegal("FIELD_NOT_APPLICABLE", "an explicit nondefault field the instruction does not consume",
             lambda c: "CMode" not in c.op.datr or "RMode" not in c.op.datr),
    _illegal("FIELD_RESERVED", "a reserved B.DATR code", lambda c: bool({"CMode", "Layout"} & c.op.datr)),
    _illegal("CANONICALIZE_LAYOUT", "Canonicalize=1 with a non-NORM layout", lambda c: "Canonicalize" in c.op.datr),
    _illegal("IOR_NOT_ALLOWED", "B.IOR on an instruction without offsets", lambda c: not c.op.uses_ior),
    _illegal("IOS_NOT_ALLOWED", "B.IOS present"),
    _illegal("SOURCE_MISSING", "a source tile absent on one selected PE"),
    _illegal("SOURCE_KIND", "a source of the wrong storage kind"),
    _illegal("SOURCE_DATATYPE", "a source of another DataType", lambda c: c.op.schema != I.CONVERT),
    _illegal("SHAPE_MISMATCH", "a source whose valid shape differs"),
    _illegal("CAPACITY", "a destination capacity below the representation"),
    _illegal("ALLOCATION", "a tile store without room for the destination"),
    _illegal("SOURCE_UNDEFINED", "an undefined element inside the valid rectangle"),
    _illegal("INT_DIVIDE_BY_ZERO", "an integer zero divisor", lambda c: c.op.int_zero_check and _int(c)),
    _illegal("OFFSET_RANGE", "a window one past the edge", _movement),
    _illegal("IOR_NONZERO", "B.IOR.RegSrc2 nonzero", _movement),
    _illegal("DESCRIPTOR_INVALID", "a feature map whose channel count exceeds C1*C0", _img2col),
)

BY_NAME = {c.name: c for c in CLASSES}
assert len(BY_NAME) == len(CLASSES)
PAD_CLASS_CODES = {"pad_zero": 0b00, "pad_max": 0b01, "pad_min": 0b10, "pad_null": 0b11}


def applicable(ctx: Context) -> list[CoverageClass]:
    return [c for c in CLASSES if c.applies(ctx)]


# ---------------------------------------------------------------------------- stream classes
# Classes of random multi-block streams (emulator/golden/streams.py), recomputed from the stored
# streams themselves (decoded), never from the generator's bookkeeping: hazards between the
# executed blocks through tiles, per PE; aliasing within a block; the fault class and position.

HAZARDS = ("RAW", "WAR", "WAW")
ALIASING = ("dest_is_source", "sources_one_tile", "renamed_dest", "overwritten_dest", "fresh_dest")


def stream_hazards(blocks, executed: int) -> set[tuple[str, int, int]]:
    """(kind, producer block, consumer block) of the first `executed` blocks: RAW where block i
    reads a (PE, tile) whose last writer is j; WAR where i writes one that j read since its last
    write (j != i); WAW where i writes one whose last writer is j.  Per PE, from the B.IOT
    tile ids and PE_MASKs alone (the stream is the whole program)."""
    writer: dict = {}
    readers: dict = {}
    out = set()
    for i, b in enumerate(blocks[:executed]):
        if not b.iot:
            continue
        dest = b.iot[-1]
        pes = [p for p in range(4) if dest.PE_MASK >> p & 1]
        for p in pes:
            for s in b.iot[:-1]:
                key = (p, s.tile)
                if key in writer:
                    out.add(("RAW", writer[key], i))
            key = (p, dest.tile)
            for j in readers.get(key, ()):
                if j != i:
                    out.add(("WAR", j, i))
            if key in writer:
                out.add(("WAW", writer[key], i))
        for p in pes:
            for s in b.iot[:-1]:
                readers.setdefault((p, s.tile), set()).add(i)
            writer[(p, dest.tile)] = i
            readers[(p, dest.tile)] = set()
    return out


def stream_aliasing(blocks, executed: int, initial: dict) -> list[set[str]]:
    """Per executed block, its aliasing kinds.  `initial`: (PE, tile) -> descriptor key of the
    initial state; later descriptors are tracked as (mnemonic, DataType, block) of the writer
    -- a destination `renamed_dest` when the tile it replaces on some selected PE came from
    another instruction's or DataType's write (or the initial state), else `overwritten_dest`."""
    held = dict(initial)
    out = []
    for i, b in enumerate(blocks[:executed]):
        kinds = set()
        dest = b.iot[-1]
        srcs = [s.tile for s in b.iot[:-1]]
        if dest.tile in srcs:
            kinds.add("dest_is_source")
        if len(srcs) != len(set(srcs)):
            kinds.add("sources_one_tile")
        pes = [p for p in range(4) if dest.PE_MASK >> p & 1]
        old = [held.get((p, dest.tile)) for p in pes]
        me = (b.bstart.Mode, b.bstart.Function, b.bstart.DataType, b.datr.DataType if b.datr else None)
        if all(o is None for o in old):
            kinds.add("fresh_dest")
        elif any(o is not None and o != me for o in old):
            kinds.add("renamed_dest")
        else:
            kinds.add("overwritten_dest")
        for p in pes:
            held[(p, dest.tile)] = me
        out.append(kinds)
    return out


def streams_block_classes(b) -> list[str]:
    """The single-block shape classes (CLASSES, kind shape) a decoded block exhibits."""
    out = []
    dim, datr, dest = b.dim, b.datr, b.iot[-1]
    vcol = dim.LB0 if dim else None
    col = dim.LB2 if dim and dim.LB2 is not None else vcol
    if vcol == 1:
        out.append("valid_col_1")
    if col is not None and vcol is not None and col > vcol:
        out.append("col_gt_validcol")
    pad = datr.PadValueOrByteId if datr else None
    if pad is not None:
        out.append({0: "pad_zero", 1: "pad_max", 2: "pad_min", 3: "pad_null"}[pad])
    out.append("all_pes" if dest.PE_MASK == 0b1111 else "partial_pe_mask")
    if dest.tile in [s.tile for s in b.iot[:-1]]:
        out.append("dest_aliases_source")
    row = I.by_carrier(b.bstart.Mode, b.bstart.Function)
    if row is not None and row.uses_ior and b.ior is None:
        out.append("offset_none")
    if row is not None and row.schema in (I.EXTRACT, I.INSERT):
        lay = datr.Layout if datr and datr.Layout else 0
        if lay == 1:
            out.append("layout_dn")
        elif lay:
            out.append("layout_fractal")
    if dest.capacity is not None or (dim and dim.LB1 is not None and dim.LB2 is not None):
        out.append("explicit_fields")
    return out


def bin_record(name: str, count: int, applicable: bool = True, values=None) -> dict:
    """One bin of the coverage model (docs/golden-format.md, "Coverage as data"): its cases, and
    whether it is covered, a hole, or not applicable ("n/a")."""
    b = {"name": name, "count": int(count), "status": "n/a" if not applicable else "covered" if count else "hole"}
    if values is not None:
        b["values"] = list(values)
    return b
