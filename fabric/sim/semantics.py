"""The one semantic kernel per operation schema the simulator runs: raw bits in, raw bits out,
a whole batch of firings per call.

Both engines (docs/fabric-graph.md, "Engines") call these kernels with the operands of every
actor of one kernel that fired in a cycle, across every instance, so they are NumPy array code
(or the array API of `kernels.numeric`); timing never lives here.

Values are the exact semantic bits of their type as unsigned integers: a W-bit integer is in
[0, 2^W); a fixed vector packs lane i at bits [i*E, (i+1)*E) (lane 0 least significant, the
dataflow.pack layout); a tagged value puts the tag above the value bits.  A kernel takes and
returns uint64 arrays: shape [n] for a value of at most 64 bits, [n, words] for a wider one
(word 0 least significant).

Results the registered schema leaves undefined (poison) get one fixed, documented hardware
value, a valid refinement: division by zero gives all ones (quotient) or the dividend
(remainder); signed INT_MIN / -1 gives INT_MIN and remainder 0; a shift by at least the width
gives 0 (or all sign bits for an arithmetic right shift); ctlz/cttz of zero gives the width.

Floating point is `kernels.numeric` (profile `ieee`): its element-wise operations for
round-to-nearest-even actors; for the other admitted rounding modes its exact evaluations
(`ops_float`) rounded once by its `round_pack` in the actor's mode; its conversions (with the
mode) for truncf, integer conversions and the rounding functions; its correctly rounded exp,
log, sqrt and rsqrt.  The other special functions (sin ... erf, pow) are evaluated correctly
rounded by MPFR (gmpy2, which the numeric kernels already use to settle hard cases): a
correctly rounded result is within every SpecialMathAccuracyTier, so it refines the actor
whatever guarantee the resource declares.  NaN results are the format's canonical quiet NaN.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from isa.instructions import INSTRUCTIONS

from ..schemas import Actor, effective_rounding
from ..types import FloatType, IntegerType, NoneType, TaggedType, VectorType, payload_bits

U64 = np.uint64
_ONE = U64(1)


def words(bits: int) -> int:
    """uint64 words a value of `bits` bits occupies (at least one)."""
    return max(1, -(-bits // 64))


def mask(w: int) -> np.uint64:
    return U64((1 << w) - 1)


def _signed(x, w: int):
    """x (uint64, w bits) as int64 two's complement."""
    if w == 64:
        return x.view(np.int64)
    sb = np.int64(1 << (w - 1))
    return (x.astype(np.int64) ^ sb) - sb


def _bool(b):
    return b.astype(U64)


# --- integer kernels: width -> function of uint64 arrays ---------------------------------------

def _binop(op: Callable):
    def kernel(w: int):
        m = mask(w)
        return lambda x, y: op(x, y) & m
    return kernel


def _shift(kind: str):
    def kernel(w: int):
        m = mask(w)
        W = U64(w)

        def f(x, s):
            c = np.minimum(s, U64(63))              # C shifts by >= 64 are undefined: clamp first
            if kind == "shrsi":
                return (_signed(x, w) >> np.minimum(c, U64(w - 1)).astype(np.int64)).view(U64) & m
            out = ((x << c) & m) if kind == "shli" else (x >> c)
            return np.where(s >= W, U64(0), out)
        return f
    return kernel


def _div(signed: bool, rem: bool):
    def kernel(w: int):
        m = mask(w)

        def f(x, y):
            zero = y == 0
            if not signed:
                d = np.where(zero, _ONE, y)
                return np.where(zero, x if rem else m, (x % d) if rem else (x // d))
            a, b = _signed(x, w), _signed(y, w)
            smin = np.int64(-(1 << (w - 1)))
            ovf = (a == smin) & (b == -1)
            d = np.where(zero | ovf, np.int64(1), b)
            q = np.abs(a) // np.abs(d)                   # truncating division on magnitudes
            q = np.where((a < 0) != (d < 0), -q, q)
            if rem:
                out = (a - q * d).view(U64) & m
                return np.where(zero, x, np.where(ovf, U64(0), out))
            return np.where(zero, m, np.where(ovf, U64(1 << (w - 1)), q.view(U64) & m))
        return f
    return kernel


def _sat(signed: bool, sub: bool):
    def kernel(w: int):
        m = mask(w)
        top = U64(w - 1)

        def f(x, y):
            s = ((x - y) if sub else (x + y)) & m
            if not signed:
                return np.where(x < y, U64(0), s) if sub else np.where((s < x) | (s < y), m, s)
            sx, sy, ss = (x >> top) & _ONE, (y >> top) & _ONE, (s >> top) & _ONE
            over = ((sx != sy) if sub else (sx == sy)) & (ss != sx)
            smax, smin = U64((1 << (w - 1)) - 1), U64(1 << (w - 1))
            return np.where(over, np.where(sx == 1, smin, smax), s)
        return f
    return kernel


def _count(leading: bool):
    def kernel(w: int):
        from kernels.numeric.rounding import bitlen
        W = np.int64(w)

        def f(x):
            if leading:
                return (W - bitlen(x)).astype(U64)
            low = x & (~x + _ONE)                         # the lowest set bit
            return np.where(x == 0, U64(w), (bitlen(low) - 1).astype(U64))
        return f
    return kernel


def _minmax(signed: bool, pick_max: bool):
    def kernel(w: int):
        def f(x, y):
            a, b = (_signed(x, w), _signed(y, w)) if signed else (x, y)
            return np.where((a >= b) if pick_max else (a <= b), x, y)
        return f
    return kernel


# schema -> (width -> function of raw operand arrays)
INTEGER_BINARY: dict[str, Callable] = {
    "arith.addi": _binop(lambda x, y: x + y),
    "arith.subi": _binop(lambda x, y: x - y),
    "arith.muli": _binop(lambda x, y: x * y),
    "arith.andi": _binop(lambda x, y: x & y),
    "arith.ori": _binop(lambda x, y: x | y),
    "llvm.or": _binop(lambda x, y: x | y),
    "arith.xori": _binop(lambda x, y: x ^ y),
    "arith.shli": _shift("shli"),
    "arith.shrsi": _shift("shrsi"),
    "arith.shrui": _shift("shrui"),
    "arith.divsi": _div(True, False),
    "arith.remsi": _div(True, True),
    "arith.divui": _div(False, False),
    "arith.remui": _div(False, True),
    "llvm.intr.sadd.sat": _sat(True, False),
    "llvm.intr.uadd.sat": _sat(False, False),
    "llvm.intr.ssub.sat": _sat(True, True),
    "llvm.intr.usub.sat": _sat(False, True),
    "arith.minsi": _minmax(True, False),
    "arith.maxsi": _minmax(True, True),
    "arith.minui": _minmax(False, False),
    "arith.maxui": _minmax(False, True),
}
INTEGER_UNARY: dict[str, Callable] = {
    "math.ctlz": _count(True), "llvm.intr.ctlz": _count(True),
    "math.cttz": _count(False), "llvm.intr.cttz": _count(False),
}

INTEGER_PREDICATE: dict[str, Callable] = {
    "eq": np.equal, "ne": np.not_equal,
    "slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal,
    "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal,
}


def compare(predicate: str, w: int) -> Callable:
    """Raw-bit integer comparison under a registered predicate (signed ones reinterpret); 0/1."""
    test = INTEGER_PREDICATE[predicate]
    if predicate in ("slt", "sle", "sgt", "sge"):
        return lambda x, y: _bool(test(_signed(x, w), _signed(y, w)))
    return lambda x, y: _bool(test(x, y))


# --- dataflow.stream: next = cur (step_kind) step --------------------------------------------------

STEP_SCHEMA = {"add": "arith.addi", "sub": "arith.subi", "shl": "arith.shli", "shr": "arith.shrui",
               "mul": "arith.muli", "div": "arith.divui"}


def stream_step(kind: str, w: int) -> Callable:
    """The step kind's update, modular in the actor width: the arith kernel it names (shr is a
    logical shift, div by zero gives all ones as arith.divui)."""
    return INTEGER_BINARY[STEP_SCHEMA[kind]](w)


def stream_kernel(kind: str, predicate: str, w: int) -> Callable:
    """(base, step, limit, is_step) -> (index, continue): Init publishes its start, a step
    publishes base (step_kind) step; continue = predicate(index, limit)."""
    step, pred = stream_step(kind, w), compare(predicate, w)

    def f(base, s, limit, is_step):
        v = np.where(is_step != 0, step(base, s), base)
        return v, pred(v, limit)
    return f


# --- lanes of packed values --------------------------------------------------------------------------

def as_words(x, nw: int):
    """x as [n, nw] words."""
    x = np.asarray(x, U64)
    return x.reshape(-1, 1) if x.ndim == 1 else x[:, :nw]


def field(wd, off: int, w: int):
    """Bits [off, off + w) (w <= 64) of packed values wd [n, nw], as a uint64 array."""
    k, s = divmod(off, 64)
    v = wd[:, k] >> U64(s)
    if s and s + w > 64 and k + 1 < wd.shape[1]:
        v = v | (wd[:, k + 1] << U64(64 - s))
    return v & mask(w)


def put_field(wd, off: int, w: int, v):
    """wd with bits [off, off + w) set to v (in place)."""
    k, s = divmod(off, 64)
    v = v & mask(w)
    wd[:, k] = (wd[:, k] & ~(mask(min(w, 64 - s)) << U64(s))) | (v << U64(s))
    if s + w > 64:
        hi = s + w - 64
        wd[:, k + 1] = (wd[:, k + 1] & ~mask(hi)) | (v >> U64(64 - s))
    return wd


def lanes(x, ew: int, n_lanes: int):
    """Packed vectors (uint64 [n] or [n, nw]) as their lanes [n, L]."""
    wd = as_words(x, words(ew * n_lanes))
    return np.stack([field(wd, i * ew, ew) for i in range(n_lanes)], axis=1)


def pack_lanes(ln, ew: int):
    """Lanes [n, L] as packed values ([n] when they fit one word)."""
    n, L = ln.shape
    nw = words(ew * L)
    wd = np.zeros((n, nw), U64)
    for i in range(L):
        put_field(wd, i * ew, ew, ln[:, i])
    return wd[:, 0] if nw == 1 else wd


def _lanewise(f, ew: int, n_lanes: int, n_ops: int):
    """An element kernel applied lane by lane to packed vectors."""
    def g(*xs):
        ls = [lanes(x, ew, n_lanes) for x in xs[:n_ops]]
        out = np.stack([f(*(l[:, i] for l in ls)) for i in range(n_lanes)], axis=1)
        return pack_lanes(out, ew)
    return g


def bit_array(x, width: int):
    """Packed values (uint64 [n] or [n, nw]) as bits [n, width], bit 0 first."""
    wd = np.ascontiguousarray(as_words(x, words(width)))
    return np.unpackbits(wd.view(np.uint8), axis=1, bitorder="little")[:, :width]


def from_bit_array(bits):
    """Bits [n, width] as packed values ([n] when they fit one word)."""
    n, width = bits.shape
    nw = words(width)
    pad = np.zeros((n, nw * 64), np.uint8)
    pad[:, :width] = bits
    wd = np.packbits(pad, axis=1, bitorder="little").view(np.uint64).reshape(n, nw)
    return wd[:, 0] if nw == 1 else wd


# --- vector.extract / vector.insert / vector.shuffle from their Direct carriers -------------------------

def slice_kernel(mode: str, offset: int, width: int, strides: list, dims: list, container_bits: int):
    """vector.extract (container, positions...) -> slice and vector.insert (slice, container,
    positions...) -> container on the geometry of the FixedVectorSliceAlignMerge carrier: the
    slice is the `width` bits at offset + sum(position_k * stride_k) of the container.  A dynamic
    position outside its dimension (poison in the schema) reads zero and inserts nothing."""
    def offsets(pos):
        off = np.full(len(pos[0]) if pos else 0, offset, np.int64)
        ok = np.ones(off.shape, np.bool_)
        for p, s, d in zip(pos, strides, dims):
            ok &= p < U64(d)
            off += np.where(p < U64(d), p, U64(0)).astype(np.int64) * s
        return off, ok

    span = np.arange(width)

    def extract(c, *pos):
        n = len(c)
        off, ok = offsets(pos) if pos else (np.full(n, offset, np.int64), np.ones(n, np.bool_))
        bits = bit_array(c, container_bits)
        out = np.take_along_axis(bits, off[:, None] + span[None, :], axis=1) * ok[:, None].astype(np.uint8)
        return (from_bit_array(out),)

    def insert(v, c, *pos):
        n = len(c)
        off, ok = offsets(pos) if pos else (np.full(n, offset, np.int64), np.ones(n, np.bool_))
        bits = bit_array(c, container_bits).copy()
        rows = np.flatnonzero(ok)
        vb = bit_array(v, width)
        bits[rows[:, None], off[rows, None] + span[None, :]] = vb[rows]
        return (from_bit_array(bits),)
    return extract if mode == "vector.extract" else insert


def shuffle_kernel(block: int, left: int, right: int, selectors: list, left_bits: int, right_bits: int):
    """vector.shuffle (v1, v2) -> result on the FixedVectorShuffle carrier: result block r is
    source block selectors[r] of v1's `left` blocks followed by v2's (a poison mask entry is
    selector zero in the carrier, a defined source refining poison)."""
    idx = np.concatenate([np.arange(s * block, (s + 1) * block) for s in selectors])

    def f(x, y):
        src = np.concatenate([bit_array(x, left_bits)[:, :left * block], bit_array(y, right_bits)[:, :right * block]],
                             axis=1)
        return (from_bit_array(src[:, idx]),)
    return f


# --- floating point through kernels.numeric ---------------------------------------------------------

DTYPE = {"f16": "FP16", "bf16": "BF16", "f32": "FP32", "f64": "FP64"}
RMODE = {"to_nearest_even": "RNE", "downward": "RTM", "upward": "RTP", "toward_zero": "RTZ",
         "to_nearest_away": "RNA"}
# the instruction table's float_schema column: which tile instruction computes a float schema
FLOAT_BINARY = {r.float_schema: r.mnemonic for r in INSTRUCTIONS if r.float_schema and r.arity == 2}
FLOAT_UNARY = {r.float_schema: r.mnemonic for r in INSTRUCTIONS if r.float_schema and r.arity == 1}
ROUNDED = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "math.fma", "arith.truncf"}
# arith.cmpf predicate -> (TCMP cmode or None, value when unordered)
CMPF = {"oeq": ("EQ", 0), "ogt": ("GT", 0), "oge": ("GE", 0), "olt": ("LT", 0), "ole": ("LE", 0),
        "one": ("NE", 0), "ueq": ("EQ", 1), "ugt": ("GT", 1), "uge": ("GE", 1), "ult": ("LT", 1),
        "ule": ("LE", 1), "une": ("NE", 1), "ord": (None, 0), "uno": (None, 1), "true": (None, 1),
        "false": (None, 0)}
# math.floor & co.: the conversion rounding mode that rounds to an integral value as the function does
INTEGRAL = {"math.floor": "RTM", "math.ceil": "RTP", "math.round": "RNA", "math.trunc": "RTZ",
            "math.roundeven": "RNE"}
# special functions kernels.numeric has no correctly rounded kernel for: the gmpy2 (MPFR) function
MPFR_FUNCTION = {"math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.sinh": "sinh",
                 "math.cosh": "cosh", "math.tanh": "tanh", "math.exp2": "exp2", "math.expm1": "expm1",
                 "math.log2": "log2", "math.log10": "log10", "math.log1p": "log1p", "math.erf": "erf",
                 "math.powf": "pow"}


def _raw(fmt: str):
    from isa.datatypes import BY_NAME
    return BY_NAME[DTYPE[fmt]].raw_dtype


@lru_cache(maxsize=None)
def float_format(fmt: str):
    """The format row (kernels/numeric/formats.py) of a fabric float type: its exponent and
    trailing significand widths, precision and exponent range.  Imported on first use, as every
    kernels.numeric import here: integer-only simulations never load the numeric layer."""
    from kernels.numeric import formats
    return formats.FORMATS[DTYPE[fmt]]


@lru_cache(maxsize=None)
def canonical_nan(fmt: str) -> int:
    """The canonical quiet NaN of a fabric float type (kernels.numeric.formats.nan_bits)."""
    from kernels.numeric import formats
    return formats.nan_bits(DTYPE[fmt])


@lru_cache(maxsize=None)
def nan_test(fmt: str):
    """is_nan(x): which raw bits of `fmt` are NaNs (exponent all ones, trailing significand
    nonzero), with the format's masks computed once, when a kernel is built."""
    f = float_format(fmt)
    shift, emask, tmask = U64(f.t), mask(f.ebits), mask(f.t)
    return lambda x: (((x >> shift) & emask) == emask) & ((x & tmask) != 0)


def _ew(op: str, fmt: str, **kw):
    from kernels.numeric.elementwise import elementwise
    dt, raw = DTYPE[fmt], _raw(fmt)
    return lambda *xs: elementwise(op, dt, *(x.astype(raw) for x in xs), **kw)[0].astype(U64)


def _cmpf(predicate: str, fmt: str):
    cmode, unordered = CMPF[predicate]
    test = _ew("TCMP", fmt, cmode=cmode) if cmode else None
    is_nan = nan_test(fmt)

    def f(x, y):
        nan = is_nan(x) | is_nan(y)
        ordered = test(x, y) if test else np.full(x.shape, U64(predicate in ("ord", "true")))
        return np.where(nan, U64(unordered), ordered)
    return f


def _ieee_minmax(op: str, fmt: str):
    pick = _ew(op, fmt)
    is_nan, nan = nan_test(fmt), U64(canonical_nan(fmt))
    return lambda x, y: np.where(is_nan(x) | is_nan(y), nan, pick(x, y))


def _convert(src: str, dst: str, rmode: str = "DEFAULT", sat: bool = False):
    from isa.datatypes import BY_NAME
    from kernels.numeric.convert import convert
    raw = BY_NAME[src].raw_dtype
    return lambda x: convert(x.astype(raw), src, dst, rmode=rmode, sat=sat)[0].astype(U64)


def _int_dtype(t, signed: bool) -> str | None:
    if isinstance(t, IntegerType) and t.width in (8, 16, 32, 64):
        return f"{'S' if signed else 'U'}{t.width}"
    return None


_EXACT = {"arith.addf": "_add", "arith.subf": "_add", "arith.mulf": "_mul", "arith.divf": "_div",
          "math.fma": "_fma"}
_RNE_OP = {"arith.addf": "TADD", "arith.subf": "TSUB", "arith.mulf": "TMUL", "arith.divf": "TDIV",
           "math.fma": "TFMA"}


def _directed(schema: str, fmt: str, rmode: str):
    """A rounded arithmetic schema in a mode other than RNE: kernels.numeric's exact evaluation
    (the one TADD/TSUB/TMUL/TDIV/TFMA round to nearest even) rounded by its round_pack in `rmode`.
    Lanes with a non-finite operand or a zero divisor have a result no rounding mode changes (NaN,
    an infinity, or an exact value): they take the TADD/... result.  One rule is the mode's own:
    an exact zero sum of operands of opposite sign is -0 rounding downward, +0 otherwise (IEEE 754
    6.3); x + x and x - (-x) keep the sign of x."""
    from kernels.numeric import ops_float
    from kernels.numeric.profiles import profile
    from kernels.numeric.rounding import round_pack

    dt, raw, prof = DTYPE[fmt], _raw(fmt), profile("ieee")
    fmtinfo = ops_float.formats.float_format(dt)
    rne = _ew(_RNE_OP[schema], fmt)
    exact = getattr(ops_float, _EXACT[schema])
    sign_bit = U64(1 << fmtinfo.sign_bit)

    def f(*xs):
        with np.errstate(all="ignore"):          # IEEE exceptions are results here, not errors
            return g(*xs)

    def g(*xs):
        _, vals, _, _ = ops_float._inputs(dt, prof, *(x.astype(raw) for x in xs))
        if schema == "arith.subf":
            vals = [vals[0], -vals[1]]
        special = ops_float._nonfinite(*vals)
        if schema == "arith.divf":
            special |= vals[1] == 0
        regular = ops_float._regular(special, *vals)
        res = exact(*regular, fmtinfo) if schema == "math.fma" else exact(*regular)
        bits = round_pack(*ops_float.to_round_pack(*res), dt, rmode)[0].astype(U64)
        if schema in ("arith.addf", "arith.subf", "math.fma"):
            # the two terms of the sum: x and y, or the exact product x*y (its sign is the
            # operands' even when it is zero) and z
            a_neg = (np.signbit(vals[0]) != np.signbit(vals[1])) if schema == "math.fma" else np.signbit(vals[0])
            b_neg = np.signbit(vals[-1])
            exact_zero = ~special & (res[0] == 0) & ((bits & ~sign_bit) == 0)
            neg = (a_neg & b_neg) | ((a_neg != b_neg) & (rmode == "RTM"))
            bits = np.where(exact_zero, np.where(neg, sign_bit, U64(0)), bits)
        return np.where(special, rne(*xs), bits)
    return f


def _integral(schema: str, fmt: str):
    """floor, ceil, round, trunc, roundeven: kernels.numeric's conversion to a 64-bit integer in
    the function's rounding mode and back (exact: a value of magnitude below 2^p is integral after
    the first step and converts back exactly); values of magnitude 2^p and above are integral
    already, infinities and NaNs are unchanged (NaN canonicalised).  The result takes the
    operand's sign (floor(-0.5) = -0, ceil(-0.5) = -0)."""
    f = float_format(fmt)
    e, m = f.ebits, f.t
    to_int = _convert(DTYPE[fmt], "S64", INTEGRAL[schema])
    back = _convert("S64", DTYPE[fmt])
    sign = U64(1 << (e + m))
    big = U64(((1 << (e - 1)) - 1 + m) << m)       # the encoding of 2^m: every value above is integral
    is_nan, nan = nan_test(fmt), U64(canonical_nan(fmt))

    def f(x):
        small = (x & ~sign) < big
        r = back(to_int(np.where(small, x, U64(0))))
        r = np.where(small, (r & ~sign) | (x & sign), x)
        return np.where(is_nan(x), nan, r)
    return f




def _to_float(x, fmt: str):
    """Exact float64 values of raw bits of `fmt` (kernels.numeric.formats.decode)."""
    from kernels.numeric import formats
    return formats.decode(x.astype(_raw(fmt)), DTYPE[fmt])


def _from_float(v, fmt: str):
    """Exactly representable float64 values as raw bits of `fmt` (kernels.numeric.encode)."""
    from kernels.numeric.convert import encode
    return encode(v, DTYPE[fmt]).astype(U64)


def _mpfr(schema: str, fmt: str):
    """A special function correctly rounded to nearest even by MPFR in an exact model of the
    format (precision, exponent range, subnormals)."""
    import gmpy2
    f = float_format(fmt)
    # MPFR's exponents place the significand in [1/2, 1): one above the format's own
    prec, emin, emax = f.p, f.qmin + 1, f.emax + 1
    name = MPFR_FUNCTION[schema]
    fn = (lambda x, y: x ** y) if name == "pow" else getattr(gmpy2, name)     # ** on mpfr is mpfr_pow
    ctx = gmpy2.context(precision=prec, emin=emin, emax=emax, subnormalize=True,
                        round=gmpy2.RoundToNearest, trap_underflow=False, trap_overflow=False,
                        trap_inexact=False, trap_invalid=False, trap_divzero=False)

    def f(*xs):
        vals = [_to_float(x, fmt).tolist() for x in xs]
        out = np.empty(len(vals[0]), np.float64)
        with ctx:
            for i, args in enumerate(zip(*vals)):
                out[i] = float(fn(*(gmpy2.mpfr(a) for a in args)))
        with np.errstate(all="ignore"):
            finite = _from_float(np.nan_to_num(out, nan=0.0, posinf=np.inf, neginf=-np.inf), fmt)
        return np.where(np.isnan(out), U64(canonical_nan(fmt)), finite)
    return f


def _fmod(fmt: str):
    """arith.remf is C fmod: x - trunc(x / y) * y, exact (NumPy's fmod is the C library's, exact
    for every binary64 and so for every narrower format); NaN for y = 0 or an infinite x."""
    def f(x, y):
        with np.errstate(all="ignore"):
            r = np.fmod(_to_float(x, fmt), _to_float(y, fmt))
            bits = _from_float(np.nan_to_num(r, nan=0.0, posinf=np.inf, neginf=-np.inf), fmt)
        return np.where(np.isnan(r), U64(canonical_nan(fmt)), bits)
    return f


def float_kernel(a: Actor) -> Callable | None:
    s = a.schema
    t = a.inputs[0]
    fmt = t.format if isinstance(t, FloatType) else None
    rmode = RMODE.get(effective_rounding(a)) if s in ROUNDED else "RNE"
    if rmode is None:
        return None
    if rmode != "RNE" and s in _EXACT and fmt:
        return _directed(s, fmt, rmode)
    if s in FLOAT_BINARY and fmt:
        return _ew(FLOAT_BINARY[s], fmt)
    if s in FLOAT_UNARY and fmt:
        return _ew(FLOAT_UNARY[s], fmt)
    if s == "math.fma" and fmt:
        return _ew("TFMA", fmt)
    if s in ("arith.maximumf", "arith.minimumf") and fmt:
        return _ieee_minmax("TMAX" if s == "arith.maximumf" else "TMIN", fmt)
    if s == "arith.cmpf" and fmt:
        return _cmpf(a.attr("predicate"), fmt)
    if s == "arith.remf" and fmt:
        return _fmod(fmt)
    if s in INTEGRAL and fmt:
        return _integral(s, fmt)
    if s in MPFR_FUNCTION and fmt:
        return _mpfr(s, fmt)
    r = a.results[0]
    if s in ("arith.extf", "arith.truncf") and fmt:
        return _convert(DTYPE[fmt], DTYPE[r.format], rmode)
    if s in ("arith.sitofp", "arith.uitofp") and isinstance(r, FloatType):
        src = _int_dtype(t, s == "arith.sitofp")
        return _convert(src, DTYPE[r.format], "RNE") if src else None
    if s in ("arith.fptosi", "arith.fptoui", "llvm.fptosi.sat", "llvm.fptoui.sat") and fmt:
        dst = _int_dtype(r, s in ("arith.fptosi", "llvm.fptosi.sat"))
        # round toward zero, saturating, NaN -> 0: the .sat schema exactly, a refinement of the plain one
        return _convert(DTYPE[fmt], dst, "RTZ", sat=True) if dst else None
    return None


# --- stateless kernels by schema -----------------------------------------------------------------

def _cast(a: Actor, iw) -> Callable:
    s, d = payload_bits(a.inputs[0], iw), payload_bits(a.results[0], iw)
    md = mask(d)
    if a.schema in ("arith.extsi", "arith.index_cast") and d > s:
        sb = U64(1 << (s - 1))
        return lambda x: ((x ^ sb) - sb) & md           # sign-extend in modular arithmetic
    return lambda x: x & md                             # extui, trunci, index_castui: zero-extend / drop


@dataclass(frozen=True)
class Kernel:
    """The semantic kernel of a stateless use: `fn(*operand arrays) -> tuple of result arrays`.
    `key` is equal for two uses whose kernels are the same function, so the engine evaluates
    all their firings of one cycle in one call."""
    key: tuple
    fn: Callable


def _tuple1(f):
    return lambda *xs: (f(*xs),)


_KERNELS: dict = {}
_KERNELS_MAX = 4096                # distinct (schema, types, attributes, index width, family)s kept


def stateless_kernel(a: Actor, family: str, index_width: int | None = None) -> Kernel | None:
    """The kernel of a stateless use, or None when this model has none for its exact types.
    Built once per key (the key is every input of this function: `Actor` is frozen), so a graph
    of a thousand equal uses - asked twice each, by the loader's check and by the model - builds
    it once (issue 32 target 8, the fabric CLI's start-up)."""
    key = (a.schema, a.inputs, a.results, a.attributes, index_width, family)
    try:
        return _KERNELS[key]
    except KeyError:
        pass
    except TypeError:                 # an attribute value that cannot be hashed: build it each time
        return _stateless_kernel(a, family, index_width, key)
    k = _stateless_kernel(a, family, index_width, key)
    if len(_KERNELS) < _KERNELS_MAX:
        _KERNELS[key] = k
    return k


def _stateless_kernel(a: Actor, family: str, index_width: int | None, key: tuple) -> Kernel | None:
    s = a.schema
    t = a.inputs[0] if a.inputs else None
    if family in ("FixedVectorIntegerAddSub", "FixedVectorIntegerLogic"):
        ew, L = t.element.width, t.num_elements
        return Kernel(key, _tuple1(_lanewise(INTEGER_BINARY[s](ew), ew, L, 2)))
    if family == "FixedVectorFloatSign":
        f = float_kernel(Actor(s, (t.element,), (t.element,)))
        ew, L = t.element.width, t.num_elements
        return None if f is None else Kernel(key, _tuple1(_lanewise(f, ew, L, 1)))
    f = float_kernel(a)
    if f is not None:
        return Kernel(key, _tuple1(f))
    if s in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
        return Kernel(key, _tuple1(_cast(a, index_width)))
    if not isinstance(t, IntegerType):
        return None
    if s in INTEGER_BINARY:
        return Kernel(key, _tuple1(INTEGER_BINARY[s](t.width)))
    if s in INTEGER_UNARY:
        return Kernel(key, _tuple1(INTEGER_UNARY[s](t.width)))
    if s == "arith.cmpi":
        return Kernel(key, _tuple1(compare(a.attr("predicate"), t.width)))
    return None


def select_kernel(a: Actor) -> Kernel:
    """arith.select(c, x, y): x where c, else y (scalars or packed vectors alike)."""
    def f(c, x, y):
        cc = c != 0
        return (np.where(cc.reshape((-1,) + (1,) * (np.ndim(x) - 1)), x, y),)
    return Kernel(("arith.select", a.inputs, a.results), f)


def constant_bits(a: Actor) -> int:
    """A dataflow.constant's value as raw bits (dense lane 0 least significant)."""
    v = a.attr("value")
    t = a.results[0]
    if isinstance(t, VectorType):
        ew = t.element.width
        return sum(int(x) << (i * ew) for i, x in enumerate(v))
    return int(v)


def value_bits(v, t, width: int) -> int:
    """A token as written in a graph (docs/fabric-graph.md) as raw bits."""
    if isinstance(t, VectorType):
        ew = t.element.width
        return sum(int(x) << (i * ew) for i, x in enumerate(v))
    if isinstance(t, TaggedType):
        return int(v[0]) | (int(v[1]) << width)
    return int(v)


def token_of(bits: int, t, width: int):
    """Raw bits as the token a graph and the outputs spell: an integer, a tuple of lanes for a
    vector, (value, tag) for a tagged value."""
    if isinstance(t, VectorType):
        ew = t.element.width
        m = (1 << ew) - 1
        return tuple((bits >> (i * ew)) & m for i in range(t.num_elements))
    if isinstance(t, TaggedType):
        return (bits & ((1 << width) - 1), bits >> width)
    if isinstance(t, NoneType):
        return 0
    return bits
