"""Instruction semantics, Spike style: one small executor per instruction, looked up in EXECUTORS.

Every executor takes the preflight Plan and returns an Outcome: the destination's logical
(P, Row, Col) raw bits and definedness for the P selected PEs, and the per-PE numeric status.
Data-movement instructions (TSEL, TEXTRACT, TINSERT, TIMG2COL) publish the status unchanged.
It first snapshots exactly the source elements the block reads (stacked with a leading PE
axis), checks the element-data rules on them (definedness, integer zero divisors, encodings),
and only then computes -- all before Machine commits anything.  Arithmetic is never done here:
values go to kernels.numeric, which owns every numeric rule.  The executors import it where they
call it: the package loads Numba (~0.3 s), which commands that never compute (`tile-emu asm`,
`show`, `diff`) should not pay for.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module

import numpy as np

from isa import instructions as I
from isa.datatypes import DataType, datatype

from .padding import padded_tiles
from .preflight import Plan, fmap_extents, illegal
from .tiles import Descriptor, Tile, element_dtype, index_grid, rows_of_one_stack


@dataclass
class Outcome:
    bits: np.ndarray      # (P, Row, Col) logical raw encodings of the destination
    defined: np.ndarray   # (P, Row, Col) bool
    status: np.ndarray    # (P,) uint8: OR of the valid elements' numeric flags (or kept as it was)


@lru_cache(maxsize=None)         # the few kernels.numeric entry points the executors call
def numeric(name: str):
    """kernels.numeric's `name`, imported on first use (see above): an `import` statement in
    each executor cost more per block than the checks around it."""
    return getattr(import_module("kernels.numeric"), name)


# ---------------------------------------------------------------- snapshots

class TileStack(Sequence):
    """P source tiles of one geometry (layout, Row, Col, elements) whose payloads are already
    stacked as (P, elements) arrays: how the batched engine (emulator/batch.py) hands a role
    of many machines to an executor without building P Tile objects.  Tile k's descriptor is
    `descs[k // per]` (PE-major order: `per` machines share each PE's descriptor).  Machine
    hands its sources over the same way (one descriptor, per = P), with `fully_defined` True
    when every member tile is wholly defined (Tile.fully_defined): no element read can be
    undefined."""

    def __init__(self, descs, per: int, elems, defined, fully_defined: bool = False):
        self.descs = tuple(descs)
        self.desc = self.descs[0]
        self.per = per
        self.elems = elems
        self.defined = defined
        self.fully_defined = fully_defined
        self._windows = {}            # (nr, nc) -> the row-major views read_window gives (window)

    def __len__(self) -> int:
        return self.elems.shape[0]

    def __getitem__(self, k):
        k = range(len(self))[k]       # IndexError past the end ends iteration
        if isinstance(k, range):
            return [self[i] for i in k]
        return Tile(self.descs[k // self.per], self.elems[k], self.defined[k])

    def __iter__(self):               # executors iterating for descriptors: no Tile per member
        per, descs = self.per, self.descs
        return (_Member(self, k, descs[k // per]) for k in range(len(self)))

    def window(self, nr: int, nc: int) -> tuple[np.ndarray, np.ndarray]:
        """The top-left nr x nc window of every tile, which must be NORM, as (P, nr, nc) views of
        the stacked payloads.  Kept per (nr, nc): a machine hands the same stack to every run of
        a block over the same tiles (Machine._plan), and views of it are the same views."""
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


class _Member:
    """Tile k of a TileStack as iteration yields it: its descriptor, payload views on demand."""
    __slots__ = ("stack", "k", "desc")

    def __init__(self, stack: TileStack, k: int, desc: Descriptor):
        self.stack, self.k, self.desc = stack, k, desc

    @property
    def elems(self):
        return self.stack.elems[self.k]

    @property
    def defined(self):
        return self.stack.defined[self.k]


def gather(tiles: list[Tile], r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logical elements (r[p, ...], c[p, ...]) of tile p, for every selected PE p at once.

    Tiles may differ per PE in geometry and layout (TEXTRACT sources, TINSERT insertions): the
    PEs' payloads are concatenated and one gather reads them; the physical index is looked up in
    the (cached) index grid of each distinct (layout, Row, Col) -- usually one.  Indices must be
    in range (preflight guarantees it).
    """
    P = len(tiles)
    r, c = np.broadcast_arrays(np.asarray(r, np.int64), np.asarray(c, np.int64))
    expand = (slice(None),) + (None,) * (r.ndim - 1)
    if isinstance(tiles, TileStack):             # one geometry: index the stacked payloads
        idx = index_grid(tiles.desc)[r, c]
        pe = np.arange(P, dtype=np.int64)[expand]
        return tiles.elems[pe, idx], tiles.defined[pe, idx]
    sizes = np.array([t.desc.elements for t in tiles], np.int64)
    base = (np.cumsum(sizes) - sizes)[expand]
    keys = [(t.desc.layout_key, t.desc.Row, t.desc.Col) for t in tiles]
    groups = {key: k for k, key in reversed(list(enumerate(keys)))}   # key -> first PE with it
    if len(groups) == 1:
        idx = index_grid(tiles[0].desc)[r, c]
    else:
        idx = np.empty(r.shape, np.int64)
        for key, first in groups.items():
            sel = np.array([k == key for k in keys])
            idx[sel] = index_grid(tiles[first].desc)[r[sel], c[sel]]
    idx = idx + base
    both = rows_of_one_stack(tiles) if len(groups) == 1 else None
    if both is not None:                       # rows of one stack: flat without a copy (or one)
        flat_bits, flat_def = both[0].reshape(-1), both[1].reshape(-1)
    else:
        flat_bits = np.concatenate([t.elems for t in tiles])
        flat_def = np.concatenate([t.defined for t in tiles])
    return flat_bits[idx], flat_def[idx]


def read_window(tiles: list[Tile], r0, c0, nr: int, nc: int) -> tuple[np.ndarray, np.ndarray]:
    """The nr x nc logical window at (r0[p], c0[p]) of every PE's tile: (P, nr, nc) arrays.
    r0 = c0 = None reads at offset zero.  The arrays may be the tiles' own (read-only) storage."""
    zero = r0 is None or not (r0.any() or c0.any())
    if isinstance(tiles, TileStack):
        d0 = tiles.desc
        if zero and d0.layout_key == 0:          # row-major views of the stacked payloads
            return tiles.window(nr, nc)
        same = False
    else:
        d0 = tiles[0].desc
        same = all(t.desc is d0 or t.desc == d0 for t in tiles)
    if same and zero and d0.layout_key == 0:   # the common case: row-major views, stacked once
        shape = (len(tiles), d0.Row, d0.Col)
        both = rows_of_one_stack(tiles)
        if both is None:
            both = (np.concatenate([t.elems for t in tiles]), np.concatenate([t.defined for t in tiles]))
        bits, defined = both[0].reshape(shape), both[1].reshape(shape)
        if (nr, nc) != (d0.Row, d0.Col):
            bits = np.ascontiguousarray(bits[:, :nr, :nc])
            defined = np.ascontiguousarray(defined[:, :nr, :nc])
        return bits, defined
    if zero:
        r0 = c0 = np.zeros(len(tiles), np.int64)
    r = np.asarray(r0, np.int64)[:, None, None] + np.arange(nr, dtype=np.int64)[None, :, None]
    c = np.asarray(c0, np.int64)[:, None, None] + np.arange(nc, dtype=np.int64)[None, None, :]
    return gather(tiles, r, c)


def read_valid(plan: Plan, role: int):
    return read_window(plan.sources[role], None, None, plan.rb.ValidRow, plan.rb.ValidCol)


# ---------------------------------------------------------------- element-data rules
# Each rule is written once, against the array module xp, as the mask of the elements read that
# break it: the executors here name the first such element (require_*), the batch engine
# (emulator/batch.py) the members holding one (element_faults).

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


def element_faults(rb, ops, P: int, xp=np):
    """(P,) bool: the tiles of P whose operands `ops` (each (P, ...)) hold a zero integer divisor
    or an invalid encoding -- the value rules of every instruction that interprets values."""
    bad = xp.zeros(P, bool)
    zero = zero_divisors(rb, ops)
    if zero is not None:
        bad |= zero.reshape(P, -1).any(axis=1)
    for bits in ops:
        invalid = invalid_encodings(bits, rb.dtype, xp)
        if invalid is not None:
            bad |= invalid.reshape(P, -1).any(axis=1)
    return bad


def require_defined(plan: Plan, role: int, defined: np.ndarray, where: np.ndarray | None = None,
                    r0=None, c0=None):
    """SOURCE_UNDEFINED unless every element read (where `where`) is defined."""
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


def require_nonzero_divisor(plan: Plan, ops: list[np.ndarray]):
    """INT_DIVIDE_BY_ZERO at the first zero divisor element read (zero_divisors)."""
    zero = zero_divisors(plan.rb, ops)
    if zero is not None and zero.any():
        k, r, c = (int(x) for x in np.argwhere(zero)[0])
        illegal("INT_DIVIDE_BY_ZERO", "B.IOT[1]", f"PE{plan.pes[k]}: integer divisor element [{r},{c}] is zero")


def require_encodings(plan: Plan, role: int, bits: np.ndarray, dtype: DataType):
    """INVALID_ENCODING at the first element read that is no encoding of `dtype`
    (invalid_encodings)."""
    bad = invalid_encodings(bits, dtype)
    if bad is not None and bad.any():
        k, r, c = (int(x) for x in np.argwhere(bad)[0])
        illegal("INVALID_ENCODING", f"B.IOT[{role}]",
                f"PE{plan.pes[k]}: element [{r},{c}] = {int(bits[k, r, c]):#x} is not a valid {dtype.name} encoding")


def status_kept(plan: Plan) -> np.ndarray:
    """The status a data-movement instruction publishes: each PE's status as it was.  TSEL
    "performs no ... floating-status update" (Decision 079); TEXTRACT, TINSERT and TIMG2COL copy
    encodings exactly as well, and their commit lists (Decisions 126-128: contents, definedness,
    descriptor) name no numeric status, unlike every instruction that evaluates (TEXP ... TFMA,
    TCVT: "result, numeric status, ...")."""
    return plan.status.copy()


@lru_cache(maxsize=None)          # one entry per (DataType, array dtype): the tables' few pairs
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


def status_of(flags: np.ndarray, P: int) -> np.ndarray:
    flags = np.asarray(flags, np.uint8)
    if flags.size == 0:
        return np.zeros(P, np.uint8)
    return np.bitwise_or.reduce(flags.reshape(P, -1), axis=1)


# ---------------------------------------------------------------- destination assembly

def _shaped(a, shape) -> np.ndarray:
    """`a` (an array or scalar result) broadcast to `shape`; as it is when it already has it."""
    a = np.asarray(a)
    return a if a.shape == shape else np.broadcast_to(a, shape)


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


def padded(plan: Plan, valid_bits: np.ndarray, status: np.ndarray, pad_dtype: str | None) -> Outcome:
    """The full destination: valid results, then PadValue outside ValidRow x ValidCol."""
    d: Descriptor = plan.dest
    P = len(plan.pes)
    if d.ValidRow == d.Row and d.ValidCol == d.Col:     # nothing to pad: the results are the tile
        shape, dtype = (P, d.Row, d.Col), element_dtype(d)
        bits = valid_bits
        if not (type(bits) is np.ndarray and bits.shape == shape and bits.dtype == dtype
                and bits.flags.c_contiguous):
            bits = np.ascontiguousarray(_shaped(bits, shape), dtype)
        return Outcome(bits, all_defined(shape), status)
    bits, defined = padded_tiles(valid_bits, (P, d.Row, d.Col), plan.rb.PadValue, pad_dtype, element_dtype(d))
    return Outcome(bits, defined, status)


def known_defined(tiles) -> bool:
    """True when every tile of a role is wholly defined by its memo (Tile.fully_defined), so no
    window of it can hold an undefined element; False means "look at the elements read"."""
    if isinstance(tiles, TileStack):
        return tiles.fully_defined
    for t in tiles:
        if not t.fully_defined:
            return False
    return True


def _read_checked(plan: Plan) -> list[np.ndarray]:
    """Snapshot every source's valid rectangle, requiring each element defined."""
    out = []
    for role in range(len(plan.sources)):
        bits, defined = read_valid(plan, role)
        if not known_defined(plan.sources[role]):
            require_defined(plan, role, defined)
        out.append(bits)
    return out


# ---------------------------------------------------------------- executors

def ex_numeric(plan: Plan) -> Outcome:
    """TADD ... TFMA (binary, unary, ternary): one kernels.numeric.elementwise call."""
    rb = plan.rb
    ops = _read_checked(plan)
    require_nonzero_divisor(plan, ops)
    for role, bits in enumerate(ops):
        require_encodings(plan, role, bits, rb.dtype)
    bits, status = numeric("elementwise_status")(rb.instr.mnemonic, rb.dtype.name, *ops, groups=len(plan.pes),
                                      profile=plan.profile)
    return padded(plan, bits if bits.shape == ops[0].shape else _shaped(bits, ops[0].shape), status, rb.dtype.name)


def ex_compare(plan: Plan) -> Outcome:
    """TCMP: one predicate bit per logical element; Zero/Min pad 0 bits, Max 1 bits."""
    rb = plan.rb
    ops = _read_checked(plan)
    for role, bits in enumerate(ops):
        require_encodings(plan, role, bits, rb.dtype)
    bits, flags = numeric("elementwise")("TCMP", rb.dtype.name, *ops, profile=plan.profile, cmode=rb.CMode)
    bits = (np.broadcast_to(np.asarray(bits), ops[0].shape) != 0).astype(np.uint8)
    return padded(plan, bits, status_of(np.broadcast_to(flags, ops[0].shape), len(plan.pes)), None)


def ex_select(plan: Plan) -> Outcome:
    """TSEL: mask bit i selects the true source's encoding (1) or the false source's (0)."""
    mask, true, false = _read_checked(plan)
    bits = np.where(mask.astype(bool), true, false)
    return padded(plan, bits, status_kept(plan), plan.rb.dtype.name)


def ex_convert(plan: Plan) -> Outcome:
    """TCVT: source DataType (BSTART) -> destination DataType (B.DATR.DataType or inherited);
    with Canonicalize=1 the source is read through the private CUBE representation."""
    rb = plan.rb
    (src,) = _read_checked(plan)
    require_encodings(plan, 0, src, rb.dtype)
    bits, flags = numeric("convert")(src, rb.dtype.name, rb.dst_dtype.name, rmode=rb.RMode, sat=rb.Sat,
                          profile=plan.profile)
    bits = np.broadcast_to(np.asarray(bits), src.shape).astype(element_dtype(plan.dest), copy=False)
    return padded(plan, bits, status_of(np.broadcast_to(flags, src.shape), len(plan.pes)), rb.dst_dtype.name)


def ex_extract(plan: Plan) -> Outcome:
    """TEXTRACT: destination [r, c] = source [row_offset + r, column_offset + c]."""
    rb = plan.rb
    bits, defined = read_window(plan.sources[0], plan.row_offset, plan.col_offset, rb.ValidRow, rb.ValidCol)
    require_defined(plan, 0, defined, r0=plan.row_offset, c0=plan.col_offset)
    return padded(plan, bits, status_kept(plan), rb.dtype.name)


def ex_insert(plan: Plan) -> Outcome:
    """TINSERT: the result is the old destination with the insertion's valid rectangle written at
    (row_offset, column_offset); everything else, definedness included, is preserved."""
    d = plan.dest
    old, ins = plan.sources
    P = len(plan.pes)
    z = np.zeros(P, np.int64)
    old_bits, old_def = read_window(old, z, z, d.Row, d.Col)
    ivr = np.array([t.desc.ValidRow for t in ins], np.int64)[:, None, None]
    ivc = np.array([t.desc.ValidCol for t in ins], np.int64)[:, None, None]
    r = np.arange(d.Row, dtype=np.int64)[None, :, None] - plan.row_offset[:, None, None]
    c = np.arange(d.Col, dtype=np.int64)[None, None, :] - plan.col_offset[:, None, None]
    inside = (r >= 0) & (r < ivr) & (c >= 0) & (c < ivc)
    ins_bits, ins_def = gather(ins, np.clip(r, 0, ivr - 1), np.clip(c, 0, ivc - 1))
    require_defined(plan, 1, ins_def, where=inside, r0=-plan.row_offset, c0=-plan.col_offset)
    bits = np.where(inside, ins_bits, old_bits)
    defined = np.where(inside, True, old_def)
    return Outcome(bits, defined, status_kept(plan))


def ex_img2col(plan: Plan) -> Outcome:
    """TIMG2COL: result [r, c] with m = posM + r -> (n, d, outRow, outCol) and k = posK + c ->
    (c1, kernelRow, kernelCol, c0); out-of-range inputs and channels >= the logical channel count
    read the descriptor's padding value.  Outside the valid rectangle the result is undefined
    (TIMG2COL has no PadValue)."""
    d = plan.dest
    tiles = plan.sources[0]
    P = len(plan.pes)
    row, col, inside, pad = img2col_reads(plan)
    src_bits, src_def = gather(tiles, row, col)
    require_defined(plan, 0, src_def, where=inside)
    valid = np.where(inside, src_bits, pad.astype(src_bits.dtype))
    bits, defined = padded_tiles(valid, (P, d.Row, d.Col), None, None, element_dtype(d))   # no PadValue: undefined
    return Outcome(bits, defined, status_kept(plan))


def img2col_reads(plan: Plan):
    """What TIMG2COL reads, from descriptors and offsets alone: per PE and valid result element,
    the feature-map tile's logical (row, col), whether it is inside the input (else the
    padding value, (P, 1, 1) int64, is the result)."""
    rb = plan.rb
    tiles = plan.sources[0]
    # per distinct descriptor, repeated over the tiles that share it (a TileStack's `per`
    # machines share each PE's): no Python step per machine
    descs, per = (tiles.descs, tiles.per) if isinstance(tiles, TileStack) else ([t.desc for t in tiles], 1)
    fms = [d.fmap for d in descs]
    col = lambda vals: np.repeat(np.array(vals, np.int64), per)[:, None, None]  # noqa: E731  per-PE parameter
    prm = {name: col([getattr(f, name) for f in fms]) for name in fms[0].PARAMS}
    ext = [fmap_extents(f) for f in fms]
    out_h, out_w = col([e[0] for e in ext]), col([e[1] for e in ext])
    m = plan.row_offset[:, None, None] + np.arange(rb.ValidRow, dtype=np.int64)[None, :, None]
    k = plan.col_offset[:, None, None] + np.arange(rb.ValidCol, dtype=np.int64)[None, None, :]
    m, k = np.broadcast_arrays(m, k)
    ow, t = m % out_w, m // out_w
    oh, t = t % out_h, t // out_h
    dd, n = t % prm["D"], t // prm["D"]
    c0, t = k % prm["C0"], k // prm["C0"]
    kc, t = t % prm["filterW"], t // prm["filterW"]
    kr, c1 = t % prm["filterH"], t // prm["filterH"]
    ih = oh * prm["strideH"] + kr * prm["dilationH"] - prm["padTop"]
    iw = ow * prm["strideW"] + kc * prm["dilationW"] - prm["padLeft"]
    inside = ((ih >= 0) & (ih < prm["H"]) & (iw >= 0) & (iw < prm["W"])
              & (c1 * prm["C0"] + c0 < prm["channels"]))
    flat = ((((n * prm["D"] + dd) * prm["C1"] + c1) * prm["H"] + ih) * prm["W"] + iw) * prm["C0"] + c0
    flat = np.where(inside, flat, 0)
    # The feature map is a NORM (N*D*C1*H*W) x C0 tile: logical (flat // C0, flat % C0).
    return flat // prm["C0"], flat % prm["C0"], inside, col([f.pad_bits for f in fms])


SCHEMA_EXECUTORS = {
    I.BINARY: ex_numeric, I.UNARY: ex_numeric, I.TERNARY: ex_numeric, I.COMPARE: ex_compare,
    I.SELECT: ex_select, I.CONVERT: ex_convert, I.EXTRACT: ex_extract, I.INSERT: ex_insert,
    I.IMG2COL: ex_img2col,
}
# mnemonic -> executor: the one place an instruction's semantics is found.
EXECUTORS = {row.mnemonic: SCHEMA_EXECUTORS[row.schema] for row in I.INSTRUCTIONS}
