"""The batch engine's fused element pass (engine._attempt on NumPy): for a covered element-wise
block, one compiled (Numba) pass over every selected tile of every member computes the results,
each tile's status (the OR of its elements' flags) and whether each tile reads an undefined
element -- the work that semantics.ex_numeric does as separate NumPy steps (a definedness
reduction per source, the compiled loop into a flags buffer, a per-tile reduction of the flags).
Anything it does not cover, and a pass in which the tier's kernel left an element to its hand-off
(fast.FALLBACK), runs on today's path (the schema's executor), which gives the same answer.

Covered (`program`): the schema's executor is semantics.ex_numeric (TADD ... TFMA), no B.IOR
offsets, the destination DataType is the source DataType, and the tier table gives (op,
DataType, profile) to a compiled kernel whose scalar routine takes and returns encodings (kind
'raw', or 'bits': a rounded routine on decoded binary32 patterns) with no fix pass, every pattern
of the container encodes the DataType (no encoding rule: semantics._may_be_invalid), and no
integer divisor rule applies -- the same facts that emulator/blockprog.py requires for one
machine.  Per call (`run`): at least FUSE_MIN elements, every source a NORM, non-ragged TileStack in the
container dtype, C-contiguous, all read with one row length.

A tile that reads an undefined element makes its member fail the rules: `run` names those
members (FailingMembers' answer) and the engine refuses them before anything is committed.
The module imports Numba: the engine imports it on the first block it could serve.

What the pass does not redo (issue 32 target 4; each changes no bit):
  * definedness: a source whose owning array is defined everywhere (`known_defined`, scanned
    once in that array's life) is not read for it;
  * allocation: results go into an earlier result array that nothing refers to any more
    (emulator/reuse.py, the pool the block programs use), not a fresh one whose pages may have to be faulted in and zeroed;
    and FP32 TADD/TSUB write over the destination array they replace when nothing else holds it
    (engine._spent, `writes_in_place`): one array in the cache's working set instead of two;
  * special values: FP32 TADD/TSUB run a screen (`SCREENS`), the add and its TwoSum error
    alone, and a tile in which it meets a NaN, an infinity or an overflow is redone by the full
    routine (`_screened`); a call that redoes more than 1/REDONE_MAX of its tiles sends the next
    SKIP_CALLS calls of its Program to the unscreened pass, so streams rich in special values pay
    the screen once in SKIP_CALLS + 1 calls.
"""
from __future__ import annotations

import types
import weakref

import numba as nb
import numpy as np
from numba import prange  # noqa: F401  (the templates' prange, bound into their globals)

from isa import instructions as I
from kernels.numeric import fast, fastvec
from kernels.numeric.fast import wide_vectors
from kernels.numeric.flags import NX
from kernels.numeric.profiles import profile as resolve_profile

from . import padding, schemas, semantics
from .reuse import destination
from .tiles import element_dtype

SCALAR = READ = SCREEN = REDO = None     # bound in each loop's own globals (fast.bind, _bind)
_MARK_BIT = 0x80                # set in fast.FALLBACK (0xFF) and in no flag (NV DZ OF UF NX: bits 0-4)
UNDEFINED_BIT = 0x100           # in a pass's summary (_summary): some tile reads an undefined element


# ---------------------------------------------------------------- compiled template
# One loop for every kernel kind and arity (`_fuse`); what differs is the element routine bound as
# its SCALAR: one of the adapters below, itself bound to the kernel's scalar routine (and READ),
# which takes (x, s, c) and gives (code, flags) of element c of the current runs s of the sources.
# srcs: the (P, W) source stacks (NORM: logical (r, c) at r*col + c), three of them, an arity
# below 3 repeating its last; defs their definedness as uint8 (0/1), likewise, read only when
# `check`; the geometry (step, rows, width): a tile's vr x vc valid elements read as `rows` runs
# of `width` (`_geometry`), run r of tile p written at out[p * step[0] + r * step[1]:]; x: the
# rounded routine's Fmt, Dec and op code as one flat tuple for kind 'bits' (flat_extra), () for
# 'raw'; out: the results (the last
# argument: fast.Twin picks the parallel build by its length) -- (P*vr*vc,) packed row-major per
# tile, or (P*Row*Col,) the destination tiles themselves, the valid rectangle written and the
# padding left to the caller (Program.run); status (P,) the OR of each tile's flags (bit 0x80: an
# element left to the hand-off); undefined (P,) 1 where the tile reads an undefined element.
# Branch-free over the elements: a tile that fails is discarded by the caller, so nothing stops
# early.

def _raw1(x, s, c):
    return SCALAR(s[0][c])


def _raw2(x, s, c):
    return SCALAR(s[0][c], s[1][c])


def _raw3(x, s, c):
    return SCALAR(s[0][c], s[1][c], s[2][c])


# Kind 'bits': x is one flat tuple of scalars, the fields of the format's Fmt, then of its Dec,
# then the op code (`flat_extra`), rebuilt into the records here.  Nested -- (Fmt, Dec, op) -- the
# loops' parallel builds did not compile: Numba's parfor lowering takes a tuple argument of a
# prange body apart one level only, and a Fmt inside it failed ("scalar type Fmt(int64 x 8)
# given for non scalar argument"), so every batch of such a block raised on a machine with an
# idle core from fast.PARALLEL_MIN elements (tests/kernels/test_parallel_builds.py).
_FMT_N = len(fast.Fmt._fields)
_DEC_END = _FMT_N + len(fast.Dec._fields)


def flat_extra(p, op: int) -> tuple:
    """The 'bits' loops' x of Params p and op code `op` (see above)."""
    return (*p.fmt, *p.dec, op)


@nb.njit(inline="always")
def _records(x):
    """(op, Fmt, Dec) of a flat x (flat_extra)."""
    return x[_DEC_END], fast.Fmt(*x[:_FMT_N]), fast.Dec(*x[_FMT_N:_DEC_END])


def _bits1(x, s, c):
    op, fmt, dec = _records(x)
    return SCALAR(op, READ(s[0][c], dec), fmt)


def _bits2(x, s, c):
    op, fmt, dec = _records(x)
    return SCALAR(op, READ(s[0][c], dec), READ(s[1][c], dec), fmt)


def _bits3(x, s, c):
    op, fmt, dec = _records(x)
    return SCALAR(op, READ(s[0][c], dec), READ(s[1][c], dec), READ(s[2][c], dec), fmt)


ELEMENTS = {("raw", 1): _raw1, ("raw", 2): _raw2, ("raw", 3): _raw3,
            ("bits", 1): _bits1, ("bits", 2): _bits2, ("bits", 3): _bits3}


@nb.njit(inline="always")
def _row(t, p, start, width):
    """Tile p's run [start, start + width) in each of the three stacks in t."""
    return (t[0][p, start:start + width], t[1][p, start:start + width], t[2][p, start:start + width])


@nb.njit(inline="always")
def _all_defined(defs, p, rows, width, col):
    """1 when tile p reads no undefined element (AND over its runs of every source), else 0."""
    ok = np.uint8(1)
    for r in range(rows):
        d = _row(defs, p, r * col, width)
        for c in range(width):
            ok &= d[0][c] & d[1][c] & d[2][c]
    return ok


@nb.njit(inline="always")
def _pad_tile(out, p, pad, fill):
    """Tile p's padding, while the tile is in cache: `fill` (the PadValue's encoding; 0 for NULL)
    in every element of out's tile p outside its top-left vr x vc rectangle, pad = (tile, col, vr,
    vc): the destination tiles `tile` elements apart, rows of `col`.  Packed results (tile =
    vr*vc, col = vc) have none: nothing is written."""
    tile, col, vr, vc = pad
    at = p * tile
    for r in range(vr - 1):
        for i in range(at + r * col + vc, at + (r + 1) * col):
            out[i] = fill
    for i in range(at + (vr - 1) * col + vc, at + tile):     # the last valid row's tail, then whole rows
        out[i] = fill


@nb.njit(inline="always")
def _summary(status, undefined, check):
    """What Program.run decides on, read in the pass instead of by NumPy reductions after it:
    the OR of every tile's status, with UNDEFINED_BIT set where (`check`) some tile reads an
    undefined element."""
    acc = np.uint32(0)
    for p in range(status.shape[0]):
        acc |= status[p]
    if check:
        for p in range(undefined.shape[0]):
            if undefined[p]:
                acc |= np.uint32(UNDEFINED_BIT)
                break
    return acc


def _fuse(srcs, defs, check, step, rows, width, col, x, pad, fill, status, undefined, out):
    """Every tile's results, status and definedness; SCALAR here is a tile's loop (_tile bound
    to the element routine, inlined).  Returns (0 tiles redone, _summary), as _screened."""
    wide_vectors()
    for p in prange(status.shape[0]):
        status[p] = SCALAR(srcs, p, rows, width, col, x, out, step)
        _pad_tile(out, p, pad, fill)
        undefined[p] = check and _all_defined(defs, p, rows, width, col) == 0
    return 0, _summary(status, undefined, check)


def _tile(srcs, p, rows, width, col, x, out, step):
    """Tile p's results by the element routine SCALAR, written to out (run r at p * step[0] +
    r * step[1]): its status (the OR of its
    elements' flags).  Inlined into _fuse and _screened's first loop; the screened loop's redo
    is a build of its own (inline='never'), so that loop's body stays the screen's alone and
    vectorises."""
    st = np.uint8(0)
    for r in range(rows):
        s = _row(srcs, p, r * col, width)
        at = p * step[0] + r * step[1]
        o = out[at:at + width]
        for c in range(width):
            code, f = SCALAR(x, s, c)
            o[c] = code
            st |= f
    return st


def _screened(srcs, defs, check, step, rows, width, col, x, pad, fill, status, undefined, out):
    """_fuse with a screen (SCREEN: _tile bound to it): a cheaper routine that gives the full routine's code and flags
    wherever it does not set _MARK_BIT; a tile in which it marks an element is redone by the full
    routine (REDO) in a second loop (in the first, the call kept the element loop from
    vectorising as well), so the results and statuses are _fuse's.  Returns (the number of
    tiles redone, _summary of the final statuses)."""
    wide_vectors()
    for p in prange(status.shape[0]):
        status[p] = SCREEN(srcs, p, rows, width, col, x, out, step)
        _pad_tile(out, p, pad, fill)
        undefined[p] = check and _all_defined(defs, p, rows, width, col) == 0
    redone = 0
    for p in prange(status.shape[0]):
        if status[p] & _MARK_BIT:
            status[p] = REDO(srcs, p, rows, width, col, x, out, step)
            redone += 1
    return redone, _summary(status, undefined, check)


# ---------------------------------------------------------------- screens
# A screen stands for a kernel's scalar routine on the common case in fewer instructions: where
# it leaves _MARK_BIT clear its code and flags are exactly the routine's, by the argument in its
# doc; elsewhere the tile is redone by the routine itself (_screened).  FP32 add/sub: the full
# routine (fastvec.fp32_add) also settles NaN and infinite operands and overflow, about half its
# vector instructions, which the 4,096-machine TADD batch never needs.

def _screen(quick):
    """The screen of a binary32 routine whose quick part (fastvec.QUICK) never asks for the redo
    on tininess (add, sub: a sum is never tiny and inexact): the quick part's code, NX where its
    nx word is nonzero, and _MARK_BIT where its high word says the result is infinite or NaN
    (an operand was, or the sum overflowed), the cases the full routine settles otherwise."""
    @nb.njit(inline="always", error_model="numpy")
    def screen(u, v):
        code, nx, _, high = quick(u, v)
        return code, np.uint8(nx != 0) * np.uint8(NX) | np.uint8(high > fastvec.QUICK_HIGH) * np.uint8(_MARK_BIT)
    return screen


fp32_add_screen = _screen(fastvec.fp32_add_quick)
fp32_sub_screen = _screen(fastvec.fp32_sub_quick)

SCREENS = {fastvec.fp32_add: fp32_add_screen, fastvec.fp32_sub: fp32_sub_screen}   # full routine -> screen


def _geometry(vr: int, vc: int, col: int, tile: int, ocol: int):
    """(step, rows, width) of the loops: a tile's vr x vc valid elements, read from sources of
    row length `col`, written to tiles `tile` elements apart of row length `ocol` (vr*vc and vc:
    the packed results), as `rows` runs of `width`; rows whole on both sides (vc == col == ocol)
    are one run per tile."""
    if vc == col == ocol:
        return (tile, 0), 1, vr * vc
    return (tile, ocol), vr, vc


_LOOPS: dict = {}               # (kind, arity, scalar) -> fast.Twin; a few dozen routines


def _loop(kind: str, arity: int, scalar) -> fast.Twin:
    """The fused loop of a kernel kind and arity running `scalar`.  Both bindings name what they
    bind (fast.bind), so every loop has a name of its own -- `_fuse__batchfuse__bits2_read_bits__
    <module>_<routine>` -- and Numba's on-disk cache cannot hand one loop's build to another.
    As with any cached function calling another (fast.bind), an edit to an adapter above is not
    noticed by that cache: clear __pycache__ after one."""
    key = (kind, arity, scalar)
    fn = _LOOPS.get(key)
    if fn is None:
        read = fast.READERS["bits"] if kind == "bits" else None
        element = nb.njit(inline="always", error_model="numpy")(
            fast.bind(ELEMENTS[(kind, arity)], scalar, read))
        tile = nb.njit(inline="always", error_model="numpy")(fast.bind(_tile, element))
        fn = _LOOPS[key] = fast.Twin(fast.bind(_fuse, tile), error_model="numpy", nogil=True)
    return fn


def _bind(template, name: str, **names):
    """A copy of `template` with `names` bound in its globals, under `name` (as fast.bind: the
    on-disk cache tells loops apart by their names)."""
    code = template.__code__.replace(co_name=name, co_qualname=name)
    g = dict(template.__globals__)
    g.update(names)
    return types.FunctionType(code, g, name, template.__defaults__)


_SCREENED: dict = {}            # (arity, routine) -> fast.Twin


def _screened_loop(arity: int, scalar) -> fast.Twin | None:
    """The screened loop of kernel routine `scalar` (kind 'raw'), or None when it has no screen."""
    screen = SCREENS.get(scalar)
    if screen is None:
        return None
    key = (arity, scalar)
    fn = _SCREENED.get(key)
    if fn is None:
        full = nb.njit(inline="always", error_model="numpy")(fast.bind(ELEMENTS[("raw", arity)], scalar))
        cheap = nb.njit(inline="always", error_model="numpy")(fast.bind(ELEMENTS[("raw", arity)], screen))
        tail = f"{scalar.py_func.__module__.rsplit('.', 1)[-1]}_{scalar.py_func.__name__}"
        redo = nb.njit(inline="never", error_model="numpy", nogil=True, cache=True)(
            _bind(_tile, f"_redo__batchfuse__{tail}", SCALAR=full))
        cheap_tile = nb.njit(inline="always", error_model="numpy")(fast.bind(_tile, cheap))
        fn = _SCREENED[key] = fast.Twin(_bind(_screened, f"_screened__batchfuse__{tail}", SCREEN=cheap_tile, REDO=redo),
                                        error_model="numpy", nogil=True)
    return fn


# ---------------------------------------------------------------- programs

class Program:
    """A covered (op, DataType, profile): its compiled loop, the container dtype, and the
    rounded routine's (fmt, dec, op) for kind 'bits'."""

    def __init__(self, kernel, raw: np.dtype, prof):
        self.raw = raw
        self.fn = _loop(kernel.kind, kernel.arity, kernel.scalar)
        self.screened = _screened_loop(kernel.arity, kernel.scalar) if kernel.kind == "raw" else None
        self.unscreened = 0         # calls left to run unscreened (after a call rich in special values)
        # The screened routines (FP32 add, sub) never hand an element off (their flags are the
        # routine's, never fast.FALLBACK), so a pass reading only defined sources cannot end
        # without its results: it may write them over the destination it replaces (run's `spent`).
        self.writes_in_place = self.screened is not None
        if kernel.kind == "bits":
            p = fast.params(kernel.format, bool(prof.ftz))
            self.extra = flat_extra(p, kernel.op)
        else:
            self.extra = ()

    def run(self, plan, m: int, spent: np.ndarray | None = None):
        """Outcome of the plan's block on its P = S x m tiles (PE-major); None when today's
        path must run it (a source this pass does not read, an element left to the hand-off);
        or the members (sorted indices, an int64 array) one of whose tiles reads an undefined
        element, for the engine to refuse.  `spent` (only where writes_in_place): the array
        under the destination tiles this block replaces, held by nothing else (engine._spent);
        the results go into it when the pass cannot fail (every source known defined) and it
        is no source's memory."""
        rb = plan.rb
        vr, vc = rb.ValidRow, rb.ValidCol
        P = len(plan.pes)
        if P * vr * vc < FUSE_MIN:
            return None
        raw = self.raw
        elems, defs = [], []
        col = None
        check = False
        for ts in plan.sources:
            e = ts.elems
            if ts.ragged or ts.desc.layout_key != 0 or type(e) is not np.ndarray or e.dtype != raw \
                    or e.ndim != 2 or not e.flags.c_contiguous or not ts.defined.flags.c_contiguous:
                return None
            d0 = ts.desc
            if col is None:
                col = d0.Col
            elif d0.Col != col:
                return None
            if vr > d0.Row or vc > d0.Col or e.shape[1] < d0.Row * d0.Col:
                return None
            elems.append(e)
            defs.append(ts.defined.view(np.uint8))       # bool as bytes: the AND vectorises
            check = check or not (ts.fully_defined or known_defined(ts.defined))
        status = np.empty(P, np.uint8)
        undefined = np.empty(P, np.bool_)
        d = plan.dest
        whole = in_place_padding(d, vr, vc, raw)       # the shape of the destination tiles, or None
        size = P * vr * vc if whole is None else P * d.Row * d.Col
        if spent is not None and not check and spent.shape == (size,) and spent.dtype == raw \
                and all(e.base is not spent and e is not spent for e in elems):
            out = spent
            out.setflags(write=True)        # a commit's views are read-only; the array owns its memory
        else:
            out = destination((size,), raw, size * np.dtype(raw).itemsize)
        tile, ocol = (vr * vc, vc) if whole is None else (d.Row * d.Col, d.Col)
        enc = None if whole is None else padding.pad_encoding(rb.PadValue, rb.dtype.name)
        more = 3 - len(elems)                            # the loop reads three: repeat the last
        args = ((*elems, *elems[-1:] * more), (*defs, *defs[-1:] * more), check,
                *_geometry(vr, vc, col, tile, ocol), col, self.extra, (tile, ocol, vr, vc),
                out.dtype.type(0 if enc is None else enc), status, undefined, out)
        if self.screened is None or self.unscreened:
            self.unscreened = max(0, self.unscreened - 1)
            _, summary = self.fn(*args)
        else:
            redone, summary = self.screened(*args)
            if redone * REDONE_MAX > P:
                # most tiles needed the full routine anyway (special values): the next few calls skip
                # the screen, so such a stream costs the screen's pass once in SKIP_CALLS + 1 calls
                self.unscreened = SKIP_CALLS
        if summary & UNDEFINED_BIT:
            return np.unique(np.flatnonzero(undefined) % m)
        if summary & _MARK_BIT:
            if out is spent:         # writes_in_place promised no hand-off: never a silent wrong state
                raise RuntimeError("batchfuse: a pass written over its destination left elements to the hand-off")
            return None
        if whole is not None:        # the results are the destination tiles, padded by the pass
            shape = (P,) + whole
            defined = padding.padded_definedness(shape, vr, vc) if enc is None else semantics.all_defined(shape)
            return semantics.Outcome(out.reshape(shape), defined, status)
        return semantics.padded(plan, out.reshape(P, vr, vc), status, rb.dtype.name, np)


def in_place_padding(d, vr: int, vc: int, raw) -> tuple[int, int] | None:
    """(Row, Col) where the pass writes its vr x vc results straight into destination tiles `d`
    (NORM, container dtype `raw`) that have elements outside that rectangle to pad, which
    the pass pads tile by tile (_pad_tile): one pass over the results instead of the
    packed results copied into freshly padded tiles (semantics.outcome); None otherwise (a
    whole-tile result is the destination already)."""
    if (d.Row, d.Col) == (vr, vc) or d.layout_key != 0 or (d.ValidRow, d.ValidCol) != (vr, vc) \
            or element_dtype(d) != raw:
        return None
    return d.Row, d.Col


# ---------------------------------------------------------------- what the pass need not redo
# Both below rest on the engine's rule that a cohort's definedness arrays are never written in place (a
# commit replaces them: emulator/engine.py), so what is true of an array's bytes once stays true
# while the array lives.

_DEFINED: dict = {}             # id(array) -> (weakref of the array, every element True)


def known_defined(defined: np.ndarray) -> bool:
    """True when every element of the array owning `defined`'s memory is True (so `defined`,
    a view of it, is too).  Each owner is scanned once in its life: the pass then reads no
    definedness for it (a seventh of its memory traffic on a binary FP32 block), and an owner
    holding an undefined element is read by the pass, as before, without a second scan a
    block."""
    owner = defined if defined.base is None else defined.base
    if type(owner) is not np.ndarray or owner.dtype != np.bool_ or not owner.flags.owndata:
        return False
    key = id(owner)
    got = _DEFINED.get(key)
    if got is not None and got[0]() is owner:
        return got[1]
    if len(_DEFINED) >= 4096:                     # entries leave as their arrays die: a safety net
        _DEFINED.clear()
    everywhere = bool(owner.all())
    _DEFINED[key] = (weakref.ref(owner, lambda _, key=key, memo=_DEFINED: memo.pop(key, None)), everywhere)
    return everywhere




REDONE_MAX = 8                  # a screened call redoing more than 1/8 of its tiles ...
SKIP_CALLS = 4                  # ... runs the next calls of its Program unscreened


# Calls over fewer elements run today's path: there the pass saves a few NumPy calls of
# microseconds, while each (op, DataType) it serves costs a compilation on the first run after
# install (the golden stream generator's many small batches would pay it for little).
FUSE_MIN = 1 << 16

_PROGRAMS: dict = {}            # (op, DataType, destination DataType, profile name) -> Program or False


def program(rb, profile: str) -> Program | None:
    """The fused pass of resolved block rb under numeric profile `profile`, or None (not
    covered: today's path)."""
    if rb.offset_regs is not None:
        return None
    key = (rb.instr.mnemonic, rb.dtype, rb.dst_dtype, profile)
    got = _PROGRAMS.get(key)
    if got is None:
        got = _build(rb, profile)
        if len(_PROGRAMS) < 4096:
            _PROGRAMS[key] = got
    return got or None


def _build(rb, profile: str):
    if rb.instr.schema not in (I.UNARY, I.BINARY, I.TERNARY) \
            or schemas.EXECUTORS.get(rb.instr.mnemonic) is not schemas.ex_numeric:
        return False
    try:
        prof = resolve_profile(profile)
    except Exception:
        return False
    if semantics.divisor_checked(rb):
        return False
    got = semantics.element_kernel(rb, prof, TEMPLATES_KINDS)
    if got is None:
        return False
    k, raw = got
    return Program(k, raw, prof)


TEMPLATES_KINDS = ("raw", "bits")
