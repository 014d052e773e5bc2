"""What every instruction executor shares, Spike style: the executors themselves, one small
function per instruction schema, are rows of the schema registry (emulator/schemas.py, looked up
in schemas.EXECUTORS); the reference Machine and the batch engine run the same executors.

Every executor takes a preflight Plan whose sources are TileStacks (each role's tiles on the P
selected PEs -- of one machine, or of every member of a batch cohort -- stacked as (P, elements)
arrays), the array module `xp` the arrays live in (NumPy, or CuPy on the gpu backend) and the
element-rule hook `rules`, and returns an Outcome: the destination's logical (P, Row, Col) raw
bits and definedness and each tile's numeric status.  Data-movement instructions (TSEL,
TEXTRACT, TINSERT, TIMG2COL) publish the status unchanged.  An executor first snapshots exactly
the source elements the block reads, hands the element-data rules (definedness, integer zero
divisors, encodings) the elements that break them, in the reference's order, and only then
computes -- all before anything commits.

The hook decides what a broken rule does.  The reference's (FIRST_FAULT, the default) raises the
IllegalBlockException naming the first failing element, as the seed's block semantics ask; the
batch engine's (emulator/engine.py) notes the members holding one and raises when the rules are
settled, before the numeric call.  So a new schema's executor is written once, in its
registry row.

Arithmetic is never done here: values go to kernels.numeric, which owns every numeric rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa.datatypes import DataType, datatype
from kernels import numeric as numeric_api
from kernels.numeric import tiers
from kernels.numeric.flags import NAMES as FLAG_NAMES

from .padding import padded_tiles
from .blockplan import Plan, illegal
from .tiles import Descriptor, element_dtype, index_grid, rows_of_one_stack


@dataclass
class Outcome:
    bits: np.ndarray      # (P, Row, Col) logical raw encodings of the destination
    defined: np.ndarray   # (P, Row, Col) bool
    status: np.ndarray    # (P,) uint8: OR of the valid elements' numeric flags (or kept as it was)


@lru_cache(maxsize=None)         # the few kernels.numeric entry points the executors call
def numeric(name: str):
    """kernels.numeric's `name`: the package resolves most names on each access (they are
    imported lazily there), which cost more per block than the checks around the call."""
    return getattr(numeric_api, name)


# ---------------------------------------------------------------- snapshots

def _geometry(d: Descriptor) -> tuple:
    return d.layout_key, d.Row, d.Col, d.elements


def geometries(descs) -> set:
    """The distinct geometries of `descs` (equal descriptors on every PE, the usual case: one,
    without deriving it per PE; list.count finds identical ones without a Python call each)."""
    descs = list(descs)
    d0 = descs[0]
    return {_geometry(d0)} if descs.count(d0) == len(descs) else {_geometry(d) for d in descs}


class TileStack:
    """P source tiles whose payloads are stacked as (P, elements) arrays (NumPy, or CuPy on the
    gpu backend): how an executor receives a role.  Tile k's descriptor is `descs[k // per]`
    (PE-major order: the batch engine's `per` members share each PE's descriptor; one machine
    has per = 1, or one descriptor for all P tiles).  Tiles that differ in geometry (layout,
    shape: TEXTRACT, TINSERT and TCVT sources may) are `ragged`: their rows are padded to the
    longest payload and each is read through its own layout (grid_index).  `fully_defined`
    True says every element of every tile is defined (Tile.fully_defined), so no element read
    can be undefined."""

    def __init__(self, descs, per: int, elems, defined, fully_defined: bool = False, ragged: bool | None = None):
        self.descs = tuple(descs)
        self.desc = self.descs[0]
        self.per = per
        self.elems = elems
        self.defined = defined
        self.fully_defined = fully_defined
        # `ragged` may be given by a caller that has just derived it (len(geometries(descs)) > 1)
        self.ragged = len(geometries(self.descs)) > 1 if ragged is None else ragged
        self._windows = {}            # (nr, nc) -> the row-major views `window` gives

    def __len__(self) -> int:
        return self.elems.shape[0]

    def window(self, nr: int, nc: int):
        """The top-left nr x nc window of every tile, which must be NORM and not ragged, as
        (P, nr, nc) views of the stacked payloads.  Kept per (nr, nc): a plan the batch engine
        reuses hands the same stack to every run of a block over the same tiles, and views of
        it are the same views."""
        got = self._windows.get((nr, nc))
        if got is None:
            d0, e, d = self.desc, self.elems, self.defined
            shape = (e.shape[0], d0.Row, d0.Col)
            if nr == d0.Row and nc == d0.Col:     # the whole tile (elements = Row*Col: NORM)
                got = e.reshape(shape), d.reshape(shape)
            else:
                n = d0.Row * d0.Col
                got = e[:, :n].reshape(shape)[:, :nr, :nc], d[:, :n].reshape(shape)[:, :nr, :nc]
            self._windows[(nr, nc)] = got
        return got


def stack_parts(descs, per: int, parts, xp=np) -> TileStack:
    """One TileStack of `parts`, a (elems, defined) pair of (per, elements) arrays for each
    descriptor of `descs`, in order: concatenated, each row padded to the longest payload (with
    0 and undefined) where the tiles differ in geometry."""
    width = max(e.shape[1] for e, _ in parts)
    if all(e.shape[1] == width for e, _ in parts):     # nothing to pad (one geometry): one concatenate each
        return TileStack(descs, per, xp.concatenate([e for e, _ in parts]), xp.concatenate([d for _, d in parts]))

    def padded(a, fill):
        if a.shape[1] == width:
            return a
        return xp.concatenate([a, xp.full((a.shape[0], width - a.shape[1]), fill, a.dtype)], axis=1)
    return TileStack(descs, per, xp.concatenate([padded(e, 0) for e, _ in parts]),
                     xp.concatenate([padded(d, False) for _, d in parts]))


def stack_tiles(tiles) -> TileStack:
    """One role's host Tiles (one per selected PE of one machine) as a TileStack: the rows of
    one committed stack as they are (views, tiles.rows_of_one_stack), else stacked (a copy)."""
    descs = [t.desc for t in tiles]
    d0 = descs[0]
    known = all(t.fully_defined for t in tiles)
    if descs.count(d0) != len(descs):
        ts = stack_parts(descs, 1, [(t.elems[None], t.defined[None]) for t in tiles])
        ts.fully_defined = known
        return ts
    both = rows_of_one_stack(tiles)
    if both is None:
        both = np.stack([t.elems for t in tiles]), np.stack([t.defined for t in tiles])
    return TileStack((d0,), len(tiles), both[0], both[1], known)


def stack_sources(rb, sources) -> list[TileStack]:
    """preflight.check's [role][PE] source tiles of one machine as a TileStack per role (roles
    naming the same tile id share one)."""
    done = {}
    out = []
    for role, binding in enumerate(rb.sources):
        ts = done.get(binding.tile)
        if ts is None:
            ts = done[binding.tile] = stack_tiles(sources[role])
        out.append(ts)
    return out


def grid_index(ts: TileStack, r, c) -> np.ndarray:
    """Host (P, ...) physical element indices of logical (r[p], c[p]) in tile p, each tile read
    through its own layout (the index grid of its (layout, Row, Col)); r, c in range, host
    arrays."""
    r, c = np.broadcast_arrays(np.asarray(r, np.int64), np.asarray(c, np.int64))
    if not ts.ragged:
        return index_grid(ts.desc)[r, c]
    idx = np.empty(r.shape, np.int64)
    for s, d in enumerate(ts.descs):
        rows = slice(s * ts.per, (s + 1) * ts.per)
        idx[rows] = index_grid(d)[r[rows], c[rows]]
    return idx


def gather(ts: TileStack, idx, xp=np):
    """Payload and definedness at host (P, ...) physical indices `idx` of every tile: one gather."""
    k = xp.arange(len(ts))[(slice(None),) + (None,) * (idx.ndim - 1)]
    idx = xp.asarray(idx)
    return ts.elems[k, idx], ts.defined[k, idx]


def valid(ts: TileStack, vr: int, vc: int, xp=np):
    """(P, vr, vc) payload and definedness of every tile's top-left vr x vc rectangle: views of
    the stacked storage for NORM tiles, one gather through the layout's index grid otherwise."""
    if ts.ragged:
        shape = (len(ts), vr, vc)
        return gather(ts, grid_index(ts, np.broadcast_to(np.arange(vr)[:, None], shape),
                                     np.broadcast_to(np.arange(vc)[None, :], shape)), xp)
    d = ts.desc
    if d.layout_key == 0:
        return ts.window(vr, vc)
    idx = xp.asarray(index_grid(d)[:vr, :vc])
    return ts.elems[:, idx], ts.defined[:, idx]


def window(ts: TileStack, r0, c0, nr: int, nc: int, xp=np):
    """The nr x nc logical window at (r0[p], c0[p]) of every tile p: (P, nr, nc) arrays (views
    of the stacked storage where the offsets are all zero and the tiles NORM)."""
    if not (r0.any() or c0.any()):
        return valid(ts, nr, nc, xp)
    r = r0[:, None, None] + np.arange(nr)[None, :, None]
    c = c0[:, None, None] + np.arange(nc)[None, None, :]
    return gather(ts, grid_index(ts, r, c), xp)


def read_valid(plan: Plan, role: int):
    """The valid rectangle of source `role` of one machine's plan (preflight.plan's Tiles, or a
    TileStack): (P, ValidRow, ValidCol) bits and definedness."""
    ts = plan.sources[role]
    if not isinstance(ts, TileStack):
        ts = stack_tiles(ts)
    return valid(ts, plan.rb.ValidRow, plan.rb.ValidCol)


# ---------------------------------------------------------------- element-data rules
# Each rule is written once, against the array module xp, as the mask of the elements read that
# break it.  An executor hands the masks to its `rules` hook in the reference's order: the
# reference's hook (FirstFault) names the first failing element, the batch engine's the members
# holding one (emulator/engine.py, FailingMembers).

def divisor_checked(rb) -> bool:
    """TDIV/TREM on an integer DataType: a zero divisor inside the valid rectangle rejects."""
    return rb.instr.int_zero_check and rb.dtype.is_int


def zero_divisors(rb, ops):
    """The divisor elements (role 1) that are zero, or None when the rule does not apply."""
    return ops[1] == 0 if divisor_checked(rb) else None


def invalid_encodings(bits, dtype: DataType, xp=np):
    """The elements of `bits` that are no encoding of `dtype` (e.g. bits set outside a TF32/FP6
    field), or None when none can be: integer containers, and containers every pattern of which
    encodes dtype (FP32, FP16, BF16, FP8)."""
    if not _may_be_invalid(dtype.name, bits.dtype):
        return None
    return ~xp.asarray(numeric("valid_encoding")(bits, dtype.name))


class FirstFault:
    """The reference's element rules: the IllegalBlockException naming the first element read
    that breaks one (its PE, position and, for an encoding, its value), raised at once."""

    def undefined(self, plan: Plan, role: int, defined, where=None, r0=None, c0=None):
        """SOURCE_UNDEFINED unless every element read (where `where`) is defined; positions
        are reported shifted by (r0[p], c0[p]) (a window's offsets)."""
        if where is None and defined.all():
            return
        bad = ~defined if where is None else (~defined & where)
        if bad.any():
            k, r, c = (int(x) for x in np.argwhere(bad)[0])
            if r0 is not None:
                r, c = r + int(r0[k]), c + int(c0[k])
            illegal("SOURCE_UNDEFINED", f"B.IOT[{role}]",
                    f"{plan.rb.instr.sources[role]} tile {plan.rb.sources[role].tile} on PE{plan.pes[k]}: "
                    f"element [{r},{c}] is undefined")

    def divisors(self, plan: Plan, ops):
        """INT_DIVIDE_BY_ZERO at the first zero divisor element read (zero_divisors)."""
        zero = zero_divisors(plan.rb, ops)
        if zero is not None and zero.any():
            k, r, c = (int(x) for x in np.argwhere(zero)[0])
            illegal("INT_DIVIDE_BY_ZERO", "B.IOT[1]", f"PE{plan.pes[k]}: integer divisor element [{r},{c}] is zero")

    def encodings(self, plan: Plan, role: int, bits, dtype: DataType):
        """INVALID_ENCODING at the first element read that is no encoding of `dtype`."""
        bad = invalid_encodings(bits, dtype)
        if bad is not None and bad.any():
            k, r, c = (int(x) for x in np.argwhere(bad)[0])
            illegal("INVALID_ENCODING", f"B.IOT[{role}]",
                    f"PE{plan.pes[k]}: element [{r},{c}] = {int(bits[k, r, c]):#x} is not a valid {dtype.name} encoding")

    def settle(self):
        """Every rule held (a failure has raised already)."""


FIRST_FAULT = FirstFault()


def status_kept(plan: Plan):
    """The status a data-movement instruction publishes: each PE's status as it was.  TSEL
    "performs no ... floating-status update" (Decision 079); TEXTRACT, TINSERT and TIMG2COL copy
    encodings exactly as well, and their commit lists (Decisions 126-128: contents, definedness,
    descriptor) name no numeric status, unlike every instruction that evaluates (TEXP ... TFMA,
    TCVT: "result, numeric status, ...")."""
    return plan.status.copy()


@lru_cache(maxsize=None)          # one entry per (DataType, array dtype): the tables' few pairs
def element_kernel(rb, prof, kinds=("raw", "bits")):
    """The compiled element kernel of resolved block rb under profile prof, and the container
    dtype it reads, where one compiled pass can do the block's whole element work -- same source
    and destination DataType, a kernel of one of `kinds` with no fix pass and the block's arity,
    unsigned containers that hold every encoding -- else None.  The compiled block programs and
    the batch engine's fused pass both cover exactly these blocks."""
    dt = rb.dtype
    if rb.dst_dtype is not dt and rb.dst_dtype != dt:
        return None
    t = tiers.select(rb.instr.mnemonic, dt, prof, rb.instr.arity)
    if t is None or t.kind != "kernels" or (t.ftz_marks and prof.ftz):
        return None
    k = t.kernels.get((dt.name, rb.instr.mnemonic))
    if k is None or k.kind not in kinds or k.fix is not None or k.arity != len(rb.sources):
        return None
    raw = np.dtype(dt.raw_dtype)
    if raw.kind != "u" or 8 * raw.itemsize != dt.container or _may_be_invalid(dt.name, raw):
        return None
    return k, raw


@lru_cache(maxsize=None)          # (DataType name, array dtype): the few pairs blocks use
def _may_be_invalid(name: str, np_dtype: np.dtype) -> bool:
    """Whether an element of `np_dtype` can be no encoding of DataType `name`: never for an
    integer DataType, nor where every value np_dtype can hold encodes it (_all_patterns_valid).
    Keyed by name: a name hashes once, a DataType row on every call."""
    dtype = datatype(name)
    return not (dtype.is_int or _all_patterns_valid(dtype.name, dtype.container, np_dtype))


@lru_cache(maxsize=None)
def _all_patterns_valid(name: str, container: int, np_dtype: np.dtype) -> bool:
    """True when every value `np_dtype` can hold encodes DataType `name` (FP32, FP16, BF16, FP8
    in their containers): the per-element check would only confirm it."""
    from kernels.numeric.formats import field_mask
    width = 8 * np_dtype.itemsize
    return np_dtype.kind == "u" and width <= container and field_mask(name) == (1 << width) - 1


# ---------------------------------------------------------------- status and destination assembly

def _broadcast(a, shape: tuple, xp):
    """`a` broadcast to `shape` (as it is when it has that shape already)."""
    return a if getattr(a, "shape", None) == shape else xp.broadcast_to(a, shape)


def flags_status(flags, shape: tuple, P: int, xp=np):
    """Per tile of P: the OR of its elements' numeric flags, `flags` broadcast to `shape`
    (P, ...) (on a device: one any() per flag bit)."""
    f = _broadcast(xp.asarray(flags, np.uint8), shape, xp).reshape(P, -1)
    if xp is np:
        if not f.size or not f.max():      # no flag raised (every integer operation): no per-tile reduction
            return np.zeros(P, np.uint8)
        return np.bitwise_or.reduce(f, axis=1).astype(np.uint8)
    out = xp.zeros(P, np.uint8)
    for bit in FLAG_NAMES:                             # NV DZ OF UF NX
        out |= (xp.bitwise_and(f, bit) != 0).any(axis=1).astype(np.uint8) * np.uint8(bit)
    return out


def numeric_status(rb, ops, P: int, profile: str, xp=np):
    """kernels.numeric.elementwise of the block's instruction on operands `ops` (each (P, ...)):
    (bits, each tile's status).  On NumPy elementwise_status gives both from one pass over the
    flags; elsewhere the flags are reduced per tile (flags_status)."""
    mnemonic, dtype = rb.instr.mnemonic, rb.dtype.name
    if xp is np:
        return numeric("elementwise_status")(mnemonic, dtype, *ops, groups=P, profile=profile)
    bits, flags = numeric("elementwise")(mnemonic, dtype, *ops, profile=profile)
    return xp.asarray(bits), flags_status(flags, ops[0].shape, P, xp)


def convert_status(rb, src, P: int, profile: str, xp=np):
    """kernels.numeric.convert of the TCVT block `rb` on its source `src` ((P, ...)): (bits, each
    tile's status).  On NumPy convert_status gives the status without a flag per element where it
    can; elsewhere the flags are reduced per tile (flags_status)."""
    args = (rb.dtype.name, rb.dst_dtype.name)
    if xp is np:
        return numeric("convert_status")(src, *args, P, rmode=rb.RMode, sat=rb.Sat, profile=profile)
    bits, flags = numeric("convert")(src, *args, rmode=rb.RMode, sat=rb.Sat, profile=profile)
    return xp.asarray(bits), flags_status(flags, src.shape, P, xp)


@lru_cache(maxsize=64)
def all_defined(shape: tuple[int, ...]) -> np.ndarray:
    """A read-only all-True definedness array: a whole-tile result is defined everywhere, and
    tiles never write their arrays, so blocks of one shape can share it."""
    a = np.ones(shape, bool)
    a.flags.writeable = False
    return a


def is_all_defined(defined: np.ndarray) -> bool:
    """True when `defined` is a shared all-defined array of `all_defined` (a whole-tile result):
    its tiles' definedness memo can be set without a scan.  False says nothing."""
    return not defined.flags.writeable and defined is all_defined(defined.shape)


def outcome(rb, d: Descriptor, P: int, valid_bits, status, pad_dtype: str | None, xp=np) -> Outcome:
    """The P destination tiles `d` of valid results `valid_bits` (P, ValidRow, ValidCol), or
    anything that broadcasts to it: PadValue outside the valid rectangle (pad_dtype None: a
    predicate's padding; NULL: undefined)."""
    shape, dtype = (P, d.Row, d.Col), element_dtype(d)
    if d.ValidRow == d.Row and d.ValidCol == d.Col:     # nothing to pad: the results are the tile
        bits = valid_bits
        if xp is not np or not (type(bits) is np.ndarray and bits.shape == shape and bits.dtype == dtype
                                and bits.flags.c_contiguous):
            bits = xp.ascontiguousarray(_broadcast(xp.asarray(bits), shape, xp).astype(dtype, copy=False))
        return Outcome(bits, all_defined(shape) if xp is np else xp.ones(shape, bool), status)
    bits, defined = padded_tiles(_broadcast(valid_bits, (P, d.ValidRow, d.ValidCol), xp), shape, rb.PadValue,
                                 pad_dtype, dtype, xp)
    return Outcome(bits, defined, status)


def padded(plan: Plan, valid_bits, status, pad_dtype: str | None, xp=np) -> Outcome:
    """`outcome` of the plan's destination on its P tiles."""
    return outcome(plan.rb, plan.dest, len(plan.pes), valid_bits, status, pad_dtype, xp)


# ---------------------------------------------------------------- what every executor shares
# The executors themselves are the schemas' (emulator/schemas.py); each takes (plan, xp, rules).

def operands(plan: Plan, xp, rules) -> list:
    """Every source's valid rectangle, each element read defined (rules.undefined)."""
    rb = plan.rb
    out = []
    for role, ts in enumerate(plan.sources):
        bits, defined = valid(ts, rb.ValidRow, rb.ValidCol, xp)
        if not ts.fully_defined:
            rules.undefined(plan, role, defined)
        out.append(bits)
    return out


def check_values(plan: Plan, ops, rules) -> None:
    """The value rules of an instruction that interprets its operands -- no zero integer
    divisor, every operand a valid encoding of the block's DataType -- then the rules settled."""
    rules.divisors(plan, ops)
    for role, bits in enumerate(ops):
        rules.encodings(plan, role, bits, plan.rb.dtype)
    rules.settle()
