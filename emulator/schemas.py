"""The schema registry: one row per instruction schema, the one place a schema's rules live.

A row (`Schema`) holds the three things the machine needs of a schema:

- its executor (`executor`): the block's semantics, one function written against the array
  module and taking the element-rule hook (emulator/semantics.py's module doc says what it
  receives and returns); the reference Machine and the batch engine both run it
  (`EXECUTORS`, mnemonic -> executor);
- its source relation (`sources`, one `Source` per role in B.IOT order, and the destination
  flags `row_follows_source`, `dest_layout`, `canonicalize`): how each source's descriptor
  must relate to the destination's, which preflight (emulator/preflight.py) checks generically;
- its effect rule (`reads`): which source elements each destination element reads, given a
  footprint of one PE's block that the calculus (emulator/calculus/tiles.py) supplies; the
  calculus records the reads and adds the destination write itself.

A new schema is its name and rows in isa/instructions.py and one entry here (its executor, its
relation -- a `Source` below or a new one -- and its effect rule): preflight, the calculus, the
reference and the batch engine read the entry and need no edit (docs/extending.md).

Arithmetic is never done here: values go to kernels.numeric, which owns every numeric rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from isa import instructions as I

from .blockplan import Plan, fmap_extents
from .padding import padded_tiles
from .semantics import (FIRST_FAULT, Outcome, _broadcast, check_values, convert_status, flags_status, gather,
                        grid_index, numeric, numeric_status, operands, padded, status_kept, valid, window)
from .tiles import Descriptor, element_dtype


# ---------------------------------------------------------------- source relations (preflight)

@dataclass(frozen=True)
class Source:
    """How a source role must relate to the destination; preflight.check applies it, in this
    order: the storage `kind`, the location, the representation, the DataType (numeric roles),
    the `geometry` (dest -> the (Row, Col, ValidRow, ValidCol) the source must have), a NORM
    layout (`norm`), a predicate's capacity, a feature-map descriptor (`fmap`), and the
    GPR-offset `window` ((source, dest) descriptors -> (rows, cols, limit_rows, limit_cols):
    offset + rows must stay within limit_rows, columns likewise; None: read without offsets)."""
    name: str
    kind: str = "numeric"
    geometry: Callable[[Descriptor], tuple] | None = None
    norm: bool = False
    fmap: bool = False
    window: Callable[[Descriptor, Descriptor], tuple] | None = None


def dest_geometry(dest: Descriptor) -> tuple:
    """The destination's own (Row, Col, ValidRow, ValidCol)."""
    return dest.Row, dest.Col, dest.ValidRow, dest.ValidCol


# physical Row/Col and ValidRow/ValidCol equal to the destination, row-major (NORM) layout
SAME = Source("same", geometry=dest_geometry, norm=True)
# predicate storage, the destination's logical Row/Col/ValidRow/ValidCol
MASK = Source("mask", kind="predicate", geometry=dest_geometry)
# the destination's Row/Col/ValidRow/ValidCol, any layout (TCVT, TINSERT's old destination)
LOGICAL = Source("logical", geometry=dest_geometry)
# read through a GPR-offset window: the destination's valid rectangle inside the source (TEXTRACT)
WINDOW = Source("window", window=lambda d, dest: (dest.ValidRow, dest.ValidCol, d.ValidRow, d.ValidCol))
# written through a GPR-offset window: the source's valid rectangle inside the result (TINSERT)
INSERTION = Source("insertion", window=lambda d, dest: (d.ValidRow, d.ValidCol, dest.ValidRow, dest.ValidCol))
# a Matrix feature map described by its TIMG2COL descriptor; the window is inside its (M, K) extents
FMAP = Source("fmap", fmap=True,
              window=lambda d, dest: (dest.ValidRow, dest.ValidCol) + fmap_extents(d.fmap)[2:])


@dataclass(frozen=True)
class Schema:
    """One instruction schema's registry row (the module doc)."""
    name: str
    executor: Callable
    sources: tuple[Source, ...]
    reads: Callable
    row_follows_source: bool = False   # the destination's Row is its first source's (TCVT; a predicate always)
    dest_layout: bool = False          # the destination takes B.DATR.Layout (else NORM)
    canonicalize: bool = False         # B.DATR.Canonicalize picks the sources' representation


# ---------------------------------------------------------------- effect rules (calculus)
# Each takes the footprint of one PE's block that emulator/calculus/tiles.py builds: the block
# (`rb`), the PE, each role's source descriptor (`srcs`, None where unknown), the destination
# descriptor, the GPR offsets (`offs`, None where data-dependent), the destination's whole grid
# (`r`, `c`, `pts`: each element's point) and valid grid (`vr`, `vc`, `vpts`).  A rule records
# `read(role, rows, cols, points)` (source elements read by the destination elements at
# `points`), `read_whole(role, rows, cols)` (an rows x cols rectangle read by the block as a
# whole), `note(text)` (the effect is an over-approximation) and `fail(text)` (no effect can be
# derived).

def reads_valid(fp) -> None:
    """Every source over the valid rectangle, element [r, c] read by destination element [r, c]."""
    for role in range(len(fp.srcs)):
        fp.read(role, fp.vr, fp.vc, fp.vpts)


# ---------------------------------------------------------------- element-wise: binary, unary, ternary, compare, select, convert

def ex_numeric(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TADD ... TFMA (binary, unary, ternary): one kernels.numeric.elementwise call."""
    ops = operands(plan, xp, rules)
    check_values(plan, ops, rules)
    bits, status = numeric_status(plan.rb, ops, len(plan.pes), plan.profile, xp)
    return padded(plan, bits, status, plan.rb.dtype.name, xp)


def ex_compare(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TCMP: one predicate bit per logical element; Zero/Min pad 0 bits, Max 1 bits."""
    rb = plan.rb
    ops = operands(plan, xp, rules)
    check_values(plan, ops, rules)
    bits, flags = numeric("elementwise")(rb.instr.mnemonic, rb.dtype.name, *ops, profile=plan.profile, cmode=rb.CMode)
    shape = ops[0].shape
    bits = (_broadcast(xp.asarray(bits), shape, xp) != 0).astype(np.uint8)
    return padded(plan, bits, flags_status(flags, shape, len(plan.pes), xp), None, xp)


def ex_select(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TSEL: mask bit i selects the true source's encoding (1) or the false source's (0)."""
    mask, true, false = operands(plan, xp, rules)
    rules.settle()
    return padded(plan, xp.where(mask.astype(bool), true, false), status_kept(plan), plan.rb.dtype.name, xp)


def ex_convert(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TCVT: source DataType (BSTART) -> destination DataType (B.DATR.DataType or inherited);
    with Canonicalize=1 the source is read through the private CUBE representation."""
    rb = plan.rb
    (src,) = operands(plan, xp, rules)
    check_values(plan, [src], rules)
    bits, status = convert_status(rb, src, len(plan.pes), plan.profile, xp)
    return padded(plan, bits, status, rb.dst_dtype.name, xp)


# ---------------------------------------------------------------- extract

def ex_extract(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TEXTRACT: destination [r, c] = source [row_offset + r, column_offset + c], each tile at its
    own PE's offsets."""
    rb, ts = plan.rb, plan.sources[0]
    bits, defined = window(ts, plan.row_offset, plan.col_offset, rb.ValidRow, rb.ValidCol, xp)
    if not ts.fully_defined:
        rules.undefined(plan, 0, defined, r0=plan.row_offset, c0=plan.col_offset)
    rules.settle()
    return padded(plan, bits, status_kept(plan), rb.dtype.name, xp)


def reads_extract(fp) -> None:
    """TEXTRACT: the window at the GPR offsets; the source's whole valid rectangle where the
    offsets are data-dependent."""
    if fp.offs is not None:
        fp.read(0, fp.vr + fp.offs[0], fp.vc + fp.offs[1], fp.vpts)
        return
    src = fp.srcs[0]
    if src is None:
        fp.fail(f"PE{fp.pe}: unknown offsets and unknown source descriptor")
    fp.read_whole(0, src.ValidRow, src.ValidCol)


# ---------------------------------------------------------------- insert

def ex_insert(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TINSERT: the result is the old destination with the insertion's valid rectangle written at
    (row_offset, column_offset); everything else, definedness included, is preserved."""
    d = plan.dest
    old, ins = plan.sources
    old_bits, old_def = valid(old, d.Row, d.Col, xp)
    # addresses from descriptors and offsets, on the host
    per_tile = lambda name: np.repeat([getattr(t, name) for t in ins.descs], ins.per)[:, None, None]  # noqa: E731
    ivr, ivc = per_tile("ValidRow"), per_tile("ValidCol")
    r = np.arange(d.Row)[None, :, None] - plan.row_offset[:, None, None]
    c = np.arange(d.Col)[None, None, :] - plan.col_offset[:, None, None]
    inside = (r >= 0) & (r < ivr) & (c >= 0) & (c < ivc)
    ins_bits, ins_def = gather(ins, grid_index(ins, np.clip(r, 0, ivr - 1), np.clip(c, 0, ivc - 1)), xp)
    inside = xp.asarray(inside)
    if not ins.fully_defined:
        rules.undefined(plan, 1, ins_def, where=inside, r0=-plan.row_offset, c0=-plan.col_offset)
    rules.settle()
    return Outcome(xp.where(inside, ins_bits, old_bits), xp.where(inside, True, old_def), status_kept(plan))


def reads_insert(fp) -> None:
    """TINSERT: the insertion inside the window, the old destination outside it."""
    ins, dest, r, c, pts = fp.srcs[1], fp.dest, fp.r, fp.c, fp.pts
    if fp.offs is not None and ins is not None:
        ro, co = fp.offs
        inside = (r >= ro) & (r < ro + ins.ValidRow) & (c >= co) & (c < co + ins.ValidCol)
        fp.read(1, r[inside] - ro, c[inside] - co, pts[inside])
        fp.read(0, r[~inside], c[~inside], pts[~inside])
        return
    # Over-approximation: every result element may come from the old destination, and
    # (offsets/insertion shape unknown) the insertion is read as a whole.
    fp.note(f"PE{fp.pe}: TINSERT window unknown: old destination and whole insertion assumed read")
    fp.read(0, r, c, pts)
    fp.read_whole(1, *((dest.ValidRow, dest.ValidCol) if ins is None else (ins.ValidRow, ins.ValidCol)))


# ---------------------------------------------------------------- img2col

def ex_img2col(plan: Plan, xp=np, rules=FIRST_FAULT) -> Outcome:
    """TIMG2COL: result [r, c] with m = posM + r -> (n, d, outRow, outCol) and k = posK + c ->
    (c1, kernelRow, kernelCol, c0); out-of-range inputs and channels >= the logical channel count
    read the descriptor's padding value.  Outside the valid rectangle the result is undefined
    (TIMG2COL has no PadValue)."""
    d, ts = plan.dest, plan.sources[0]
    row, col, inside, pad = img2col_reads(plan)      # addresses on the host, one gather of the payloads
    src_bits, src_def = gather(ts, grid_index(ts, row, col), xp)
    inside = xp.asarray(inside)
    if not ts.fully_defined:
        rules.undefined(plan, 0, src_def, where=inside)
    rules.settle()
    valid_bits = xp.where(inside, src_bits, xp.asarray(pad.astype(src_bits.dtype)))
    bits, defined = padded_tiles(valid_bits, (len(ts), d.Row, d.Col), None, None, element_dtype(d), xp)   # no PadValue: undefined
    return Outcome(bits, defined, status_kept(plan))


def img2col_reads(plan: Plan):
    """What TIMG2COL reads, from descriptors and offsets alone: per PE and valid result element,
    the feature-map tile's logical (row, col), whether it is inside the input (else the
    padding value, (P, 1, 1) int64, is the result)."""
    rb = plan.rb
    tiles = plan.sources[0]
    # per distinct descriptor, repeated over the tiles that share it (a TileStack's `per`
    # machines share each PE's): no Python step per machine
    descs, per = tiles.descs, tiles.per
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


def reads_img2col(fp) -> None:
    """TIMG2COL: the whole feature map (not decomposed per element)."""
    src = fp.srcs[0]
    if src is None:
        fp.fail(f"PE{fp.pe} tile {fp.rb.sources[0].tile}: unknown feature-map descriptor "
                f"(give the initial machine)")
    fp.note("TIMG2COL reads its feature map as a whole (not decomposed per element)")
    fp.read_whole(0, src.ValidRow, src.ValidCol)


# ---------------------------------------------------------------- the registry

ROWS: tuple[Schema, ...] = (
    Schema(I.BINARY, ex_numeric, (SAME, SAME), reads_valid),
    Schema(I.UNARY, ex_numeric, (SAME,), reads_valid),
    Schema(I.TERNARY, ex_numeric, (SAME, SAME, SAME), reads_valid),
    Schema(I.COMPARE, ex_compare, (SAME, SAME), reads_valid),
    Schema(I.SELECT, ex_select, (MASK, SAME, SAME), reads_valid),
    Schema(I.CONVERT, ex_convert, (LOGICAL,), reads_valid, row_follows_source=True, dest_layout=True,
           canonicalize=True),
    Schema(I.EXTRACT, ex_extract, (WINDOW,), reads_extract, dest_layout=True),
    Schema(I.INSERT, ex_insert, (LOGICAL, INSERTION), reads_insert, dest_layout=True),
    Schema(I.IMG2COL, ex_img2col, (FMAP,), reads_img2col),
)
SCHEMAS: dict[str, Schema] = {s.name: s for s in ROWS}
# mnemonic -> executor: the one place an instruction's semantics is found.
EXECUTORS = {row.mnemonic: SCHEMAS[row.schema].executor for row in I.INSTRUCTIONS}
