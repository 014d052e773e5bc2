"""Special operands settled in compiled code: a class table of the reference, read per element.

The compiled tiers mark (flags 0xFF) every element they do not settle, among them every element
with a NaN or infinite operand (and, depending on the routine, a zero divisor, a zero or negative
radicand, ...).  Before any marked element goes on to the next tier or to the NumPy reference,
`settle` gives each one whose result its operands' *classes* alone decide that result, in one
compiled pass over the marks.  The classes of an encoding (`klass`):

    0 quiet NaN   1 signalling NaN   2 +inf   3 -inf   4 +0   5 -0   6 finite > 0   7 finite < 0

(profile ftz: a subnormal is the zero of its sign, as every operation reads it).  An operation of
arity k has 8^k class combinations; its table (`table`) holds, for each, what the reference of
the operation under the profile gives (tiers.reference: the profile's rule, ftz included):

    the same encoding and flags for every operand value of those classes  -> that encoding
    operand i's encoding (its format field) and the same flags for all     -> "copy operand i"
    anything else                                                          -> undecided

and is built once per (op, format, profile) by running that reference on representatives of
every class (every NaN payload kind and sign, both infinities and zeros, and finite values at
1, the largest, the smallest normal and subnormal, and a full significand), so the table is a
cache of the reference, not a second definition of the special-value rules.  Only combinations
with at least one NaN, infinite or zero operand are decided this way: a result of finite
nonzero operands depends on their values.  "Copy operand i" is used only for finite nonzero
operands (never a NaN, whose payload the result does not keep, nor a zero, which under ftz can
stand for a subnormal).  IEEE 754 (and each profile rule, built on IEEE operations: profile a5's
recipes) makes these results depend on the classes alone -- inf + finite is that infinity, 0/0
and inf - inf are the canonical NaN with NV, x/0 is the infinity of the xor sign with DZ, x mod
inf is x or the infinity -- and tests/kernels/test_specials.py checks every FP16 and BF16
operand pair and random operands of the wider formats against the reference.

One class of finite nonzero operands is decided too: a finite negative operand (class 7) of
TLOG, TSQRT and TRSQRT under the ieee rule (NEGATIVE_INVALID).  IEEE 754 makes each of those an
invalid operation whatever the magnitude -- the default NaN with NV -- so its result depends on
the class alone; the table still takes it from the reference on the representatives and decides
it only where they all agree.  Random-bit operands (stream goldens) are half negative, and
without this every call on them paid the NumPy reference's fixed cost for those elements alone.

Elements whose combination is undecided stay marked for the tier's fallback as before.
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numba as nb
import numpy as np

from . import formats
from .fast import MARK_BITS, Uniform, ctz, f64_bits
from .flags import DZ, NV
from .profiles import IEEE, Profile
from .rn import f32_bits

UNDECIDED = -2            # table `src`: the classes do not decide the result
CODE = -1                 # table `src`: the result is the table's encoding
CLASSES = 8
_FALLBACK = 0xFF


class Cls(NamedTuple):
    """What `klass` needs of a format, as magnitude thresholds (compiled code reads the fields
    by name; a NamedTuple of scalars is one argument)."""
    shift: int            # position of the encoding in its container (TF32 13, HF32 12)
    signbit: int          # the sign's bit in the encoding
    magmask: int          # the magnitude bits of the encoding
    nan_above: int        # a magnitude above this is a NaN (IEEE: the infinity's; E4M3: max - 1)
    inf: int              # the infinity's magnitude (E4M3, which has none: unreachable)
    quiet: int            # the quiet bit (E4M3's one NaN has it set)
    zero_below: int       # a magnitude below this is a zero (ftz: the min normal's)


@lru_cache(maxsize=None)
def cls(name: str, ftz: bool) -> Cls:
    f = formats.FORMATS[name]
    inf = ((1 << (f.width - 1 - f.t)) - 1) << f.t
    if f.specials == "fn":
        nan_above, inf = f.mag_mask - 1, f.mag_mask + 1
    else:
        nan_above = inf
    return Cls(f.shift, f.width - 1, f.mag_mask, nan_above, inf, 1 << (f.t - 1), (1 << f.t) if ftz else 1)


@nb.njit(inline="always", error_model="numpy")
def klass(code, c):
    """The class (0..7, module doc) of raw encoding `code` in its container (selects, no
    branches: the settling loop stays straight)."""
    m = np.uint64(code) >> np.uint64(c.shift)
    neg = np.int64((m >> np.uint64(c.signbit)) & np.uint64(1))
    mag = m & np.uint64(c.magmask)
    k = np.int64(6) + neg
    k = np.int64(4) + neg if mag < np.uint64(c.zero_below) else k
    k = np.int64(2) + neg if mag == np.uint64(c.inf) else k
    quiet = (mag & np.uint64(c.quiet)) != np.uint64(0)
    return (np.int64(0) if quiet else np.int64(1)) if mag > np.uint64(c.nan_above) else k


@nb.njit(cache=True)
def _classes(codes, c):
    out = np.empty(codes.shape[0], np.int8)
    for i in range(codes.shape[0]):
        out[i] = klass(codes[i], c)
    return out


def classes(codes: np.ndarray, name: str, ftz: bool = False) -> np.ndarray:
    """int8 class (module doc) of each container code of format `name` (a test and tool hook)."""
    return _classes(np.ascontiguousarray(codes), cls(name, ftz))


# ---------------------------------------------------------------- the table

def representatives(name: str, ftz: bool) -> dict[int, list[int]]:
    """class -> encodings (in the container) standing for it when the table is built."""
    f = formats.FORMATS[name]
    t, sign = f.t, 1 << (f.width - 1)
    top = (1 << (f.width - 1 - t)) - 1
    reps: dict[int, list[int]] = {k: [] for k in range(CLASSES)}
    if f.specials == "fn":
        reps[0] = [f.mag_mask, f.mag_mask | sign]
    elif f.specials == "ieee":
        quiet = 1 << (t - 1)
        reps[0] = [top << t | quiet, top << t | quiet | 1, sign | top << t | quiet | (quiet - 1)]
        reps[1] = [top << t | 1, sign | top << t | (quiet - 1)] + ([top << t | 2] if t > 2 else [])
        reps[2], reps[3] = [top << t], [sign | top << t]
    reps[4], reps[5] = [0], [sign]
    finite = [f.bias << t, f.max_mag, 1 << t, (f.bias << t) | ((1 << t) - 1), ((f.bias - 3) << t) | (1 << (t - 1))]
    if not ftz:
        finite += [1, (1 << t) - 1]
    reps[6] = finite
    reps[7] = [sign | v for v in finite]
    return {k: [v << f.shift for v in vs] for k, vs in reps.items()}


class Table(NamedTuple):
    code: np.ndarray      # [8^k] result encodings (container dtype)
    src: np.ndarray       # [8^k] int8: CODE, UNDECIDED or the operand to copy
    flags: np.ndarray     # [8^k] uint8
    field: int            # the format's bits in the container (a copied operand is masked)
    decided: int          # how many combinations are decided


# Unary operations whose every finite negative operand is an IEEE 754 invalid operation (the
# default NaN, NV): under the ieee rule their class 7 is decided by the table (module doc).
NEGATIVE_INVALID = frozenset({"TLOG", "TSQRT", "TRSQRT"})


def _decided_by_class(op: str, name: str, prof: Profile, combo) -> bool:
    """Whether the table may decide class combination `combo` (module doc): one with a NaN,
    infinite or zero operand, or the finite negative operand of a NEGATIVE_INVALID operation
    under the ieee rule."""
    if any(k < 6 for k in combo):
        return True
    return len(combo) == 1 and combo[0] == 7 and op in NEGATIVE_INVALID and prof.rule(op, name) == IEEE


@lru_cache(maxsize=None)
def table(op: str, name: str, prof: Profile, arity: int, fn) -> Table:
    """The class table of `op` on format `name` under `prof`, from `fn(name, *operands, prof=)`
    (the reference of the profile's rule)."""
    f = formats.FORMATS[name]
    raw = np.dtype(f"u{max(1, (f.width + f.shift) // 8)}")
    reps = representatives(name, prof.ftz)
    combos = np.array(np.meshgrid(*[np.arange(CLASSES)] * arity, indexing="ij")).reshape(arity, -1).T
    cols: list[list[int]] = [[] for _ in range(arity)]
    owner: list[int] = []
    for index, combo in enumerate(combos):
        if not _decided_by_class(op, name, prof, combo):
            continue                                   # finite nonzero operands: by value
        groups = np.meshgrid(*[np.asarray(reps[k], np.uint64) for k in combo], indexing="ij")
        for i, g in enumerate(groups):
            cols[i].extend(g.ravel().tolist())
        owner.extend([index] * groups[0].size)
    ops = [np.asarray(c, np.uint64).astype(raw) for c in cols]
    with np.errstate(all="ignore"):
        bits, flags = fn(name, *ops, prof=prof)
    bits, flags = np.asarray(bits).astype(raw), np.asarray(flags, np.uint8)
    owner = np.asarray(owner)
    n = CLASSES ** arity
    code = np.zeros(n, raw)
    src = np.full(n, UNDECIDED, np.int8)
    fl = np.zeros(n, np.uint8)
    field = ((1 << f.width) - 1) << f.shift
    order = np.argsort(owner, kind="stable")
    bounds = np.flatnonzero(np.diff(owner[order])) + 1
    for part in np.split(order, bounds):
        if part.size == 0:
            continue
        index = int(owner[part[0]])
        b, fg = bits[part], flags[part]
        if not (fg == fg[0]).all():
            continue
        fl[index] = fg[0]
        if (b == b[0]).all():
            code[index], src[index] = b[0], CODE
            continue
        for i in range(arity):
            if combos[index][i] >= 6 and (b == (ops[i][part] & raw.type(field))).all():
                src[index] = i
                break
    return Table(code, src, fl, field, int((src != UNDECIDED).sum()))


# ---------------------------------------------------------------- inline, from hardware results
# The SIMD routines (fastvec.py, fastdiv.py, fast64.py) compute with the hardware's binary32 /
# binary64 arithmetic, whose results on NaN and infinite operands are IEEE 754's: an infinity
# where IEEE gives one (inf + finite, inf * nonzero, x / 0), a NaN for every invalid operation
# and NaN operand, exact zeros and infinities otherwise.  So such elements need no pass of their
# own: the routine keeps the hardware's result, replaces a NaN by the format's canonical NaN
# (docs/numerics.md: no payload or sign propagates) and takes its flags from `invalid` -- NV
# where the NaN result has no NaN operand to explain it (an invalid operation), or an operand
# is a signalling NaN -- plus DZ for an exact infinity from a zero divisor; an infinite or NaN
# operand never raises OF, UF or NX.  Selects, no branches: the loops stay vectorised.

@nb.njit(inline="always", error_model="numpy")
def invalid(nan_result, nan_in, nv):
    """The flags of an element with a NaN or infinite operand (or a zero divisor): NV when the
    result is a NaN that no NaN operand explains, or when `nv` (a signalling NaN operand, or
    TFMA's 0 * inf, invalid even with a quiet NaN addend: Decision 081)."""
    return np.uint8(NV) if (nan_result & (not nan_in)) | nv else np.uint8(0)


@nb.njit(inline="always", error_model="numpy")
def divide_by_zero(dz):
    return np.uint8(DZ) if dz else np.uint8(0)


@nb.njit(inline="always", error_model="numpy")
def snan32(x):
    """Whether binary32 value x is a signalling NaN (from its bits: the magnitude doubled lies
    strictly between the infinity's and the first quiet NaN's; 32-bit lanes throughout)."""
    m = np.uint32(f32_bits(x) << np.uint32(1))
    return (m > np.uint32(0xFF000000)) & (m < np.uint32(0xFF800000))


@nb.njit(inline="always", error_model="numpy")
def snan64(x):
    """Whether binary64 value x is a signalling NaN."""
    u = f64_bits(x)
    return (((u & np.uint64(0x7FF8000000000000)) == np.uint64(0x7FF0000000000000))
            & ((u & np.uint64(0x7FFFFFFFFFFFF)) != np.uint64(0)))


@nb.njit(inline="always", error_model="numpy")
def snan16(h):
    """Whether FP16 code h is a signalling NaN (snan_bf16: of BF16)."""
    m = np.uint16(np.uint16(h) << np.uint16(1))
    return (m > np.uint16(0xF800)) & (m < np.uint16(0xFC00))


@nb.njit(inline="always", error_model="numpy")
def snan_bf16(h):
    m = np.uint16(np.uint16(h) << np.uint16(1))
    return (m > np.uint16(0xFF00)) & (m < np.uint16(0xFF80))


# ---------------------------------------------------------------- the compiled pass

_BLOCK_WORDS = 8                               # marks are looked for 8 words (64 flags) at a time


@nb.njit(inline="always")
def _tail(flags, start, n):
    """flags[start:n] (fewer than 8) packed into a word as an 8-byte view would read them."""
    w = np.uint64(0)
    for i in range(start, n):
        w |= np.uint64(flags[i]) << np.uint64(8 * (i - start))
    return w


@nb.njit(cache=True, error_model="numpy")
def settle_marked(arity, a, b, d, bits, flags, code, src, fl, field, c):
    """One compiled pass for every arity: operands past `arity` are never read (the caller
    passes `a` in their place), so the class index and the copied operand are the same rule
    for unary, binary and ternary operations."""
    left = 0
    n = a.shape[0]
    words = flags[:n // 8 * 8].view(np.uint64)
    nw = words.shape[0]
    for start in range(0, nw + 1, _BLOCK_WORDS):
        end = min(start + _BLOCK_WORDS, nw + 1)
        m = np.uint64(0)
        for j in range(start, min(end, nw)):
            m |= words[j]
        if end > nw:
            for i in range(nw * 8, n):
                m |= np.uint64(flags[i]) << np.uint64(8 * (i - nw * 8))
        if (m & MARK_BITS) == 0:
            continue
        for j in range(start, end):
            w = (words[j] if j < nw else _tail(flags, nw * 8, n)) & MARK_BITS
            while w:
                i = j * 8 + np.int64(ctz(w) >> np.uint64(3))
                w &= w - np.uint64(1)
                k = klass(a[i], c)
                if arity > 1:
                    k = k * CLASSES + klass(b[i], c)
                if arity > 2:
                    k = k * CLASSES + klass(d[i], c)
                s = src[k]
                if s == UNDECIDED:
                    left += 1
                else:
                    bits[i] = code[k] if s == CODE else (a[i] if s == 0 else b[i] if s == 1 else d[i]) & field
                    flags[i] = fl[k]
    return left


# the operands a, b, d are read, never written: one body for read-only and writable ones (fast.Uniform)
settle_marked = Uniform(settle_marked, lambda n: frozenset({1, 2, 3}))


def settle(op: str, name: str, prof: Profile, fn, operands, bits, flags) -> int:
    """Settle, in place, the marked elements whose operand classes decide their result (module
    doc); returns how many marked elements are left.  `operands`: the 1-D container-dtype
    operands; `fn`: the reference of the profile's rule for (op, name).  TEXP's operands beyond
    its thresholds are decided too (settle_exp, below)."""
    arity = len(operands)
    tb = table(op, name, prof, arity, fn)
    field = bits.dtype.type(tb.field)
    a = operands[0]
    b, d = (tuple(operands[1:]) + (a, a))[:2]
    left = settle_marked(arity, a, b, d, bits, flags, tb.code, tb.src, tb.flags, field, cls(name, prof.ftz))
    if left and op == "TEXP":
        left = settle_exp(name, prof, fn, a, bits, flags)
    return left


# ---------------------------------------------------------------- TEXP beyond its thresholds
# A compiled TEXP marks every element whose result overflows or underflows; random-bit operands
# are mostly such (|x| > 128 for about half of all codes), and each call paid the NumPy
# reference's fixed cost for them.  Under the ieee rule without ftz, exp is increasing, so every
# x >= T_hi = ln(MAX) + 1 has exp(x) >= e * MAX > MAX + ulp(MAX) / 2: round-to-nearest gives +inf
# with the overflow flags; every x <= T_lo = ln(min subnormal) - 1 has 0 < exp(x) < min
# subnormal / 2: it gives +0 with the underflow flags.  Which encoding and flags each side gets
# is taken from the reference on representatives of that side (its first code, its last finite
# code and two between), and a side is decided only where they all agree, as the class table is.

class ExpRanges(NamedTuple):
    shift: int            # the format's place in its container
    signbit: int          # the sign's bit in the encoding
    magmask: int          # the magnitude bits
    finite_below: int     # a magnitude below this is finite (the infinity's)
    hi: int               # positive magnitudes from here on are decided (0: side undecided)
    hi_code: int
    hi_flags: int
    lo: int               # negative magnitudes from here on are decided (0: side undecided)
    lo_code: int
    lo_flags: int


def _first_at_least(name: str, f, value: float) -> int:
    """The smallest positive finite magnitude code whose value is at least `value` (the values
    of a format's magnitudes increase with the code), or 0 when none is."""
    lo, hi = 0, f.max_mag
    if formats.decode(np.array([f.max_mag << f.shift], np.uint64).astype(formats.raw_dtype(name)), name)[0] < value:
        return 0
    while lo < hi:
        mid = (lo + hi) // 2
        v = formats.decode(np.array([mid << f.shift], np.uint64).astype(formats.raw_dtype(name)), name)[0]
        lo, hi = (mid + 1, hi) if v < value else (lo, mid)
    return lo


@lru_cache(maxsize=None)
def exp_ranges(name: str, prof: Profile, fn) -> ExpRanges | None:
    """TEXP's decided ranges on format `name` under `prof`, from `fn` (the reference of its
    rule), or None where none is (another rule, ftz, a format without infinities)."""
    f = formats.FORMATS.get(name)
    if f is None or f.specials != "ieee" or prof.ftz or prof.rule("TEXP", name) != IEEE:
        return None
    raw = formats.raw_dtype(name)
    top = formats.decode(np.array([f.max_mag << f.shift], np.uint64).astype(raw), name)[0]
    bottom = formats.decode(np.array([1 << f.shift], np.uint64).astype(raw), name)[0]
    sign = 1 << (f.width - 1)
    sides = []
    for start, negative in ((_first_at_least(name, f, float(np.log(top)) + 1.0), False),
                            (_first_at_least(name, f, -(float(np.log(bottom)) - 1.0)), True)):
        if start == 0:
            sides.append((0, 0, 0))
            continue
        mags = sorted({start, start + 1, (start + f.max_mag) // 2, f.max_mag})
        codes = np.array([((m | (sign if negative else 0)) << f.shift) for m in mags], np.uint64).astype(raw)
        with np.errstate(all="ignore"):
            bits, flags = fn(name, codes, prof=prof)
        bits, flags = np.asarray(bits).astype(raw), np.broadcast_to(np.asarray(flags, np.uint8), bits.shape)
        if (bits == bits[0]).all() and (flags == flags[0]).all():
            sides.append((start, int(bits[0]), int(flags[0])))
        else:
            sides.append((0, 0, 0))
    (hi, hi_code, hi_flags), (lo, lo_code, lo_flags) = sides
    if not hi and not lo:
        return None
    inf = ((1 << (f.width - 1 - f.t)) - 1) << f.t
    return ExpRanges(f.shift, f.width - 1, f.mag_mask, inf, hi, hi_code, hi_flags, lo, lo_code, lo_flags)


def settle_exp(name: str, prof: Profile, fn, x, bits, flags) -> int:
    """Settle, in place, the marked TEXP elements of operand `x` beyond its thresholds
    (exp_ranges); returns how many marked elements are left."""
    marked = np.flatnonzero(flags == _FALLBACK)
    r = exp_ranges(name, prof, fn)
    if r is None or not marked.size:
        return marked.size
    code = x[marked].astype(np.uint64) >> np.uint64(r.shift)
    mag = code & np.uint64(r.magmask)
    negative = (code >> np.uint64(r.signbit)) & np.uint64(1) != 0
    finite = mag < np.uint64(r.finite_below)
    left = marked.size
    for decided, side, out, fl in (((~negative) & finite, r.hi, r.hi_code, r.hi_flags),
                                   (negative & finite, r.lo, r.lo_code, r.lo_flags)):
        if not side:
            continue
        at = marked[decided & (mag >= np.uint64(side))]
        bits[at] = out
        flags[at] = fl
        left -= at.size
    return left
