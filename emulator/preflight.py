"""Stateful preflight: every rule that needs the PEs' state, checked before any effect.

`check(state, rb, pes, offsets)` runs after isa.legality.resolve and checks, for every selected
PE, the descriptor-level rules (sources exist with the right kind, location, representation,
DataType, shape and layout; window offsets; the feature-map descriptor; destination capacity
and allocation).  It reads the PEs through `TileState`, which a Machine provides for one machine
and a batch cohort (emulator/engine.py) for machines of one shape.  `plan(machine, rb, pes)` adds
what one machine's executors need (its GPR offsets and statuses).  Rules on element data
(definedness of exactly the elements read, integer zero divisors, source encodings) are checked
by the executors in emulator/semantics.py on the stacked snapshot, still before the commit.
Nothing here mutates state.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Protocol

import numpy as np

from isa import instructions as I
from isa.fields import ZERO_GPR
from isa.datatypes import datatype
from isa.legality import ResolvedBlock
from isa.memo import memo

from .blockplan import Plan, fmap_extents, illegal  # noqa: F401  (re-exported: preflight.Plan, ...)
from .config import MachineConfig
from .schemas import SCHEMAS, Source
from .tiles import Descriptor, Tile, intern

# A schema's source relation (each role's Source) and destination flags are its row of the
# schema registry (emulator/schemas.py, SCHEMAS); the rules here are generic over it.
FMAP_FIELD_LIMIT = 1 << 31
OFFSET_MASK = 0xFFFF          # an offset is the low 16 bits of its GPR


class TileState(Protocol):
    """What preflight reads of the PEs' state.  A Machine provides it; so does a batch cohort
    (machines of one shape: every member holds the same descriptors)."""
    config: MachineConfig

    def store(self, pe: int) -> Mapping[int, Any]:
        """PE `pe`'s tile store: tile id -> tile (anything with a `.desc` Descriptor)."""

    def used_bytes(self, pe: int, location: str) -> int:
        """Bytes PE `pe`'s `location` store holds (emulator.state.used_bytes)."""


class MachineView(TileState, Protocol):
    """One machine's state: its tiles, and each PE's GPRs and status (emulator.Machine)."""

    def gpr(self, pe: int, index: int) -> int:
        """GPR r<index> of PE `pe` (r0 reads 0)."""

    def statuses(self, pes) -> np.ndarray:
        """uint8 numeric status of each PE of `pes` (PEs a resolved block selected)."""


def _binding(i: int) -> str:
    return f"B.IOT[{i}]"


def row_follows_source(instr: I.Instruction) -> bool:
    """Whether the destination's physical Row is its first source's rather than capacity-derived:
    TCMP's predicate retains its sources' Row, and TCVT's source and destination "have equal
    logical Row, Col, ValidRow, and ValidCol" with capacities that need only "contain their
    complete physical representations" (Decision 080) -- for a 4-bit X2 destination with Col=1
    no capacity derives an odd Row.  (The registry row's `row_follows_source`.)"""
    return instr.dest_kind == "predicate" or SCHEMAS[instr.schema].row_follows_source


def pe_groups(state: TileState, rb: ResolvedBlock, pes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Selected PEs that share one destination descriptor.  Every destination is a function of
    the block alone except where its Row follows the source (TCMP, TCVT): PEs whose first
    source differs in Row execute as separate groups (each PE is independent)."""
    if not row_follows_source(rb.instr):
        return [pes]
    groups: dict[int, list[int]] = {}
    for pe in pes:
        t = state.store(pe).get(rb.sources[0].tile)
        groups.setdefault(-1 if t is None else t.desc.Row, []).append(pe)
    return [tuple(g) for g in groups.values()]


def dest_descriptor(rb: ResolvedBlock, source_rows: int | None = None) -> Descriptor:
    """The destination descriptor, identical on every PE of the group.

    Numeric destinations: physical rows derive from the destination capacity, Col and the
    DataType's container width; an omitted capacity is the smallest one holding ValidRow rows.
    TCMP's predicate and TCVT's destination retain the source's Row (`row_follows_source`); the
    capacity must hold ceil(Row*Col*bits/8) bytes and defaults to exactly that.
    """
    cap = rb.dest.capacity
    fn = _dest_of if cap is None or type(cap) is int else _dest_values   # anything else: CAPACITY, uncached
    return fn(rb.instr.mnemonic, rb.dst_dtype.name, cap, len(rb.sources), rb.ValidRow, rb.ValidCol, rb.Col,
              rb.Layout, source_rows)


def _dest_values(mnemonic: str, dst_dtype: str, cap, n_sources: int, ValidRow, ValidCol, Col, Layout,
                 source_rows) -> Descriptor:
    """dest_descriptor of the block fields it reads (interned)."""
    row = I.lookup(mnemonic)
    predicate = row.dest_kind == "predicate"
    width = 1 if predicate else datatype(dst_dtype).container
    field = f"{_binding(n_sources)}.capacity"
    if row_follows_source(row):
        rows = max(source_rows or ValidRow, 1)
        need = (rows * Col * width + 7) // 8
        cap = need if cap is None else cap
        if not isinstance(cap, int) or cap < need:
            what = "predicate" if predicate else f"{dst_dtype} tile"
            illegal("CAPACITY", field, f"capacity {cap!r} is below ceil(Row*Col*{width}/8) = {need} bytes "
                                       f"for a {rows}x{Col} {what}")
    else:
        if cap is None:
            cap = (ValidRow * Col * width + 7) // 8
        if not isinstance(cap, int) or cap < 0:
            illegal("CAPACITY", field, f"capacity {cap!r} is not a byte count")
        rows = cap * 8 // (Col * width)
    if rows < ValidRow:
        illegal("CAPACITY", field, f"{cap} bytes hold {rows} row(s) of {Col} x {width}-bit elements; "
                                   f"ValidRow is {ValidRow}")
    return intern(Descriptor(
        location=row.location, kind=row.dest_kind, dtype=None if predicate else datatype(dst_dtype).code,
        Row=rows, Col=Col, ValidRow=ValidRow, ValidCol=ValidCol,
        Layout=Layout if SCHEMAS[row.schema].dest_layout else 0,
        representation="standard", capacity=cap))


# dest_descriptor is a pure function of the block's fields it reads (isa.memo rule 2): a stream's
# blocks repeat a few destinations, and each block is a new ResolvedBlock.  typed: 64 and
# np.int64(64) give descriptors that repr (and so intern, validate and digest) tells apart.
# Rejections are not kept (an exception is never cached): each is raised afresh.  Bound: 4096
# (mnemonic, DataType, capacity, shape) combinations.
_dest_of = lru_cache(maxsize=4096, typed=True)(_dest_values)


@lru_cache(maxsize=64)
def no_offsets(n: int) -> np.ndarray:
    """A shared read-only int64 zero vector: the offsets of n PEs of every block without B.IOR."""
    z = np.zeros(n, np.int64)
    z.flags.writeable = False
    return z


def gpr_offsets(rb: ResolvedBlock, read, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) int64 offsets of n PE instances: the low 16 bits of each one's private GPR
    B.IOR.RegSrc0 (posM) and RegSrc1 (posK); zero without B.IOR, and from r0, the hard-wired
    zero, whatever it stores.  `read(index)` gives that register of every instance (n values,
    in the order of the offsets)."""
    if rb.offset_regs is None:
        z = no_offsets(n)
        return z, z
    row, col = (no_offsets(n) if r == ZERO_GPR else
                (np.asarray(read(r), np.uint64).reshape(n) & np.uint64(OFFSET_MASK)).astype(np.int64)
                for r in rb.offset_regs)
    return row, col


def window_fits(bounds, r0, c0):
    """(rows fit, columns fit) of a GPR-offset window at offsets r0, c0 (scalars or arrays):
    offset + extent stays within the limit (bounds from window_bounds)."""
    rows, cols, limit_rows, limit_cols = bounds
    return r0 + rows <= limit_rows, c0 + cols <= limit_cols


def _check_source(i: int, role: str, shape: Source, t: Tile, pe: int, rb: ResolvedBlock, dest: Descriptor):
    d = t.desc
    f = _binding(i)
    where = f"{role} tile {rb.sources[i].tile} on PE{pe}"
    want_kind = shape.kind
    if d.kind != want_kind:
        illegal("SOURCE_KIND", f, f"{where} is {d.kind} storage; {rb.instr.mnemonic} needs {want_kind}")
    if d.location != rb.instr.location:
        illegal("SOURCE_KIND", f, f"{where} is in {d.location}; {rb.instr.mnemonic} reads {rb.instr.location}")
    if SCHEMAS[rb.instr.schema].canonicalize:
        if (d.representation == "cube") != rb.Canonicalize:
            illegal("REPRESENTATION", "B.DATR.Canonicalize",
                    f"{where} has the {d.representation} representation; Canonicalize="
                    f"{int(rb.Canonicalize)} requires {'private CUBE' if rb.Canonicalize else 'standard'}")
    elif d.representation != "standard":
        illegal("REPRESENTATION", f, f"{where} carries the private CUBE representation; only TCVT "
                                     f"Canonicalize=1 reads it")
    if want_kind == "numeric" and d.dtype != rb.dtype.code:
        illegal("SOURCE_DATATYPE", f, f"{where} is {d.datatype.name}; the block's DataType is {rb.dtype.name}")
    if shape.geometry is not None:
        got = (d.Row, d.Col, d.ValidRow, d.ValidCol)
        need = shape.geometry(dest)
        if got != need:
            illegal("SHAPE_MISMATCH", f, f"{where} is {d.Row}x{d.Col} valid {d.ValidRow}x{d.ValidCol}; "
                                         f"the block needs {need[0]}x{need[1]} valid {need[2]}x{need[3]}")
    if shape.norm and d.Layout != 0:
        illegal("SHAPE_MISMATCH", f, f"{where} has layout code {d.Layout}; {rb.instr.mnemonic} needs row-major (NORM)")
    if want_kind == "predicate" and d.capacity < (d.Row * d.Col + 7) // 8:
        illegal("SHAPE_MISMATCH", f, f"{where} capacity {d.capacity} is below ceil(Row*Col/8)")


def _check_window(role: str, pe: int, r0: int, c0: int, bounds):
    rows_fit, cols_fit = window_fits(bounds, r0, c0)
    rows, cols, limit_rows, limit_cols = bounds
    if not rows_fit:
        illegal("OFFSET_RANGE", "B.IOR.RegSrc0",
                f"PE{pe}: row offset {r0} + {rows} rows exceeds ValidRow {limit_rows} ({role})")
    if not cols_fit:
        illegal("OFFSET_RANGE", "B.IOR.RegSrc1",
                f"PE{pe}: column offset {c0} + {cols} columns exceeds ValidCol {limit_cols} ({role})")


def window_bounds(shape: Source, d: Descriptor, dest: Descriptor):
    """(rows, cols, limit_rows, limit_cols) of a GPR-offset window role (its Source's `window`):
    offset + rows must stay within limit_rows (columns likewise); None for roles read without
    offsets.  Shared with the batched engine (emulator/engine.py), which checks every machine's
    offsets at once.  A fmap role's descriptor must have passed check_fmap."""
    return None if shape.window is None else shape.window(d, dest)


def check_fmap(t: Tile, pe: int, tile_id: int):
    """Raise DESCRIPTOR_INVALID unless tile `t` carries a complete, valid feature-map descriptor."""
    fm, d = t.desc.fmap, t.desc
    where = f"feature map tile {tile_id} on PE{pe}"

    def bad(msg):
        illegal("DESCRIPTOR_INVALID", "B.IOT[0]", f"{where}: {msg}")

    if fm is None:
        bad("carries no feature-map descriptor")
    if fm.transposed:
        bad("transposed IMG2COL is not assigned by this form")
    if fm.layout not in ("NC1HWC0", "NDC1HWC0"):
        bad(f"feature-map layout {fm.layout!r} is neither NC1HWC0 nor NDC1HWC0")
    if fm.layout == "NC1HWC0" and fm.D != 1:
        bad("NC1HWC0 has no D dimension (D must be 1)")
    for name in ("N", "D", "C1", "H", "W", "C0", "filterH", "filterW", "strideH", "strideW",
                 "dilationH", "dilationW"):
        if getattr(fm, name) <= 0:
            bad(f"{name} must be nonzero")
    for name in ("padLeft", "padRight", "padTop", "padBottom", "channels"):
        if getattr(fm, name) < 0:
            bad(f"{name} must be nonnegative")
    for name in fm.PARAMS:   # 32-bit descriptor fields (keeps the index arithmetic inside int64)
        if getattr(fm, name) >= FMAP_FIELD_LIMIT:
            bad(f"{name}={getattr(fm, name)} exceeds the 31-bit descriptor field")
    if fm.channels > fm.C1 * fm.C0:
        bad(f"channel count {fm.channels} exceeds C1*C0 = {fm.C1 * fm.C0}")
    if fm.pad_bits < 0 or fm.pad_bits >= 1 << d.datatype.container:
        bad(f"padding value {fm.pad_bits:#x} does not fit a {d.datatype.name} element")
    rows = fm.N * fm.D * fm.C1 * fm.H * fm.W
    if (d.Row, d.Col, d.ValidRow, d.ValidCol) != (rows, fm.C0, rows, fm.C0) or d.Layout != 0:
        bad(f"tile geometry {d.Row}x{d.Col} valid {d.ValidRow}x{d.ValidCol} layout {d.Layout} does not hold "
            f"the described {fm.layout} map (NORM {rows}x{fm.C0})")
    out_h, out_w, _, _ = fmap_extents(fm)
    if out_h <= 0 or out_w <= 0:
        bad(f"output extent outH={out_h}, outW={out_w} is not positive")


def _dest(rb: ResolvedBlock, src_rows: int | None) -> Descriptor:
    """dest_descriptor, kept on rb by source Row (isa.memo): the destination is a function of the
    resolved block alone (and of the source's Row for TCMP/TCVT).  Only descriptors that passed
    are kept, so a CAPACITY rejection is raised afresh."""
    m = memo(rb)
    key = ("dest", src_rows)
    dest = m.get(key)
    if dest is None:
        dest = m[key] = dest_descriptor(rb, src_rows)
    return dest


def _source_passes(i: int, role: str, shape: Source, t, pe: int, tile_id: int, rb: ResolvedBlock,
                   dest: Descriptor):
    """Check tile `t`'s descriptor as source role `i`: its window bounds (None: no window).

    A descriptor that passed every descriptor rule of a role is kept with its bounds (isa.memo
    rule 2, _PASSED): those rules (_check_source, check_fmap, window_bounds) are functions of
    the descriptor, the destination and the block fields they read (the instruction, its
    DataType, Canonicalize), all immutable values; the PE and tile id only name the tile in a
    rejection's message.  So an equal descriptor passes again without the checks, in this
    block or a later one; only passes are kept, so every rejection is raised afresh, and the
    GPR-offset windows (_check_window), the allocation and the status are checked on every
    block."""
    d = t.desc
    key = (rb.instr.mnemonic, rb.dtype.code, rb.Canonicalize, i, d, dest)
    bounds = _PASSED.get(key, False)
    if bounds is False:
        _check_source(i, role, shape, t, pe, rb, dest)
        if shape.fmap:
            check_fmap(t, pe, tile_id)
        bounds = window_bounds(shape, d, dest)
        if len(_PASSED) < 4096:
            _PASSED[key] = bounds
    return bounds


# (mnemonic, DataType code, Canonicalize, role, source descriptor, destination) -> window bounds
# of a source descriptor that passed (_source_passes); bound: 4096 entries, then unkept
_PASSED: dict = {}


def check(state: TileState, rb: ResolvedBlock, pes: tuple[int, ...], offsets=None) -> tuple[Descriptor, list[list]]:
    """Every descriptor rule of `rb` on PEs `pes` (one destination group, pe_groups) of `state`:
    (destination descriptor, [role][PE] source tiles), or IllegalBlockException.  GPR-offset
    windows are checked at `offsets` ((row, col) int64 arrays, one entry per PE of `pes`) in the
    order of the roles and PEs; a batch cohort, whose members' offsets differ, passes None and
    checks every member's windows itself (window_bounds, window_fits)."""
    src_rows = None
    if row_follows_source(rb.instr):
        t = state.store(pes[0]).get(rb.sources[0].tile)
        src_rows = None if t is None else t.desc.Row
    dest = _dest(rb, src_rows)
    shapes = SCHEMAS[rb.instr.schema].sources
    stores = [state.store(pe) for pe in pes]
    sources: list[list] = []
    for i, binding in enumerate(rb.sources):
        tid = binding.tile
        role = rb.instr.sources[i]
        tiles = []
        checked = None        # a descriptor that passed: PEs with an equal one pass too
        for k, store in enumerate(stores):
            t = store.get(tid)
            if t is None:
                illegal("SOURCE_MISSING", _binding(i), f"{role} tile {tid} does not exist on PE{pes[k]}")
            if checked is None or (t.desc is not checked and t.desc != checked):
                bounds = _source_passes(i, role, shapes[i], t, pes[k], tid, rb, dest)
                checked = t.desc
            if bounds is not None and offsets is not None:
                _check_window(role, pes[k], int(offsets[0][k]), int(offsets[1][k]), bounds)
            tiles.append(t)
        sources.append(tiles)
    check_allocation(state, rb, pes, dest)
    return dest, sources


def plan(machine: MachineView, rb: ResolvedBlock, pes: tuple[int, ...]) -> Plan:
    """One machine's plan of `rb` on PEs `pes`: check at its GPR offsets, with each PE's status."""
    offsets = gpr_offsets(rb, lambda r: [machine.gpr(pe, r) for pe in pes], len(pes))
    dest, sources = check(machine, rb, pes, offsets)
    return Plan(rb, pes, sources, dest, offsets[0], offsets[1], machine.config.profile, machine.statuses(pes))


def check_allocation(state: TileState, rb: ResolvedBlock, pes, dest: Descriptor):
    """The old tile under the destination's name is released only at commit (it may be a
    source), so the new one must fit beside everything the store holds now."""
    location, need = dest.location, dest.capacity
    limit = state.config.store_bytes(location)
    used_bytes = state.used_bytes
    for pe in pes:
        used = used_bytes(pe, location)
        if used + need > limit:
            illegal("ALLOCATION", f"{_binding(len(rb.sources))}.capacity",
                    f"PE{pe} {dest.location} store holds {used} of {limit} bytes; "
                    f"the destination needs {dest.capacity} more")
