"""Tile-block leaves: run them on the emulator, and derive their effects from the isa tables.

A `block` leaf is one tile instruction; each PE its PE_MASK selects executes independently, so
a block is itself a `parallel` over its selected PEs.  Its effects, per selected PE:

- reads: every source binding's tile (as the instruction row names them, `isa.instructions`)
  over the elements the schema reads (its registry row's effect rule, `emulator.schemas`) -- the valid rectangle for element-wise schemas; the
  window at the GPR offsets (low 16 bits of B.IOR.RegSrc0/RegSrc1 on that PE) for TEXTRACT;
  the old destination outside, and the insertion inside, the window for TINSERT; the whole
  feature map for TIMG2COL (not decomposed per element) -- and the two offset GPRs;
- writes: the destination tile, every physical element (rename: a new tile replaces the old).

Element-level effects carry a *point* per access, the destination element instance
(PE, r, c) that performs it, so a planner can ask whether a dependence between two blocks stays
on one element (pointwise fusion) or crosses elements.  Destination geometry comes from the
emulator's own rule (`emulator.preflight.dest_descriptor`), source descriptors from the
evolving descriptor state (the initial machine, then each block's destination).

Tile reductions (`reduce` with `into`/`value` tile references) fold contribution tiles into an
accumulator tile with a binary tile instruction; each merge runs as a real block on a scratch
machine of the same configuration, and the folded tile replaces the accumulator.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa import instructions as I
from isa.block import BDim, Block, BStart, TileBinding
from isa.errors import IllegalBlockException
from isa.legality import resolve

from .cells import DATA, Access, describe
from .errors import ReductionPolicyError, RegionError, RegionRuntimeError
from .expr import EvalError
from .functions import Function
from .tilelaws import merge_laws

def tile_key(m: int, pe: int, tile: int, version: int | None = None) -> str:
    return f"tile:m{m}:pe{pe}:t{tile}" + ("" if version is None else f"@v{version}")


def gpr_key(m: int, pe: int) -> str:
    return f"gpr:m{m}:pe{pe}"


def describe_tile_cell(key: str, cell: int) -> str:
    """Tile-granular cells (cell -1) as `PE1 tile 3`; element cells as effects.describe."""
    if cell == -1 and key.startswith("tile:"):
        _, m, pe, t = key.split(":")
        return f"{'' if m == 'm0' else f'machine {m[1:]} '}{pe.upper()} tile {t.partition('@')[0][1:]}"
    return describe(None, key, cell)


# ---------------------------------------------------------------------------------------------
# Leaves

@lru_cache(maxsize=4096)
def _assemble_one(text: str) -> Block:
    from isa.assembly import assemble_blocks
    blocks = assemble_blocks(text)
    if len(blocks) != 1:
        raise ValueError(f"block text holds {len(blocks)} blocks")
    return blocks[0]


def leaf_block(node, value_of, path_coords=None) -> Block:
    """The Block of a leaf, placeholders `${expr}` filled with `value_of(expr)` (integers)."""
    if node.block is not None:
        return node.block
    text = node.text
    for hole, e in node.holes:
        v = value_of(e)
        if isinstance(v, bool) or not isinstance(v, int):
            raise RegionRuntimeError(f"{node.path}.block", f"placeholder {hole} is {v!r}, not an integer",
                                     path_coords)
        text = text.replace(hole, str(v), 1)
    try:
        return _assemble_one(text)
    except Exception as exc:          # AsmError / ValueError: report, never a traceback
        raise RegionRuntimeError(f"{node.path}.block", f"block text after substitution: {exc}",
                                 path_coords) from None


def _selected(mask: int) -> list[int]:
    from isa.fields import SELECTED_PES
    return list(SELECTED_PES[mask])


def _need_machine(interp, path, coords):
    m = interp.machine
    if m is None:
        raise RegionRuntimeError(path, "a tile block needs a machine (tile-emu run --init, or machines=[...])",
                                 coords)
    return m


def exec_tile_op(interp, node, env) -> None:
    block = leaf_block(node, lambda e: interp.ev(e, env, f"{node.path}.block"), env.coords)
    m = _need_machine(interp, node.path, env.coords)
    if interp.collectors:
        try:
            rb = resolve(block)
        except IllegalBlockException:
            rb = None                    # execute() raises it below
        if rb is not None:
            mi = interp.machine_index
            reads, writes = [], []
            for p in _selected(rb.PE_MASK):
                reads += [(tile_key(mi, p, s.tile), -1) for s in rb.sources]
                if rb.offset_regs is not None:
                    reads += [(gpr_key(mi, p), r) for r in rb.offset_regs]
                writes.append((tile_key(mi, p, rb.dest.tile), -1))
            interp.touch(reads, writes)
    try:
        m.execute(block)
    except IllegalBlockException as exc:
        raise RegionRuntimeError(node.path, f"block rejected: {exc}", env.coords) from None
    interp.blocks_executed += 1


def exec_gpr_op(interp, node, env) -> None:
    m = _need_machine(interp, node.path, env.coords)
    pe = interp.ev(node.pe, env, f"{node.path}.gpr.pe")
    idx = interp.ev(node.index, env, f"{node.path}.gpr.index")
    val = interp.ev(node.value, env, f"{node.path}.gpr.value")
    for name, v in (("pe", pe), ("index", idx), ("value", val)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise RegionRuntimeError(f"{node.path}.gpr.{name}", f"must be an integer, got {v!r}", env.coords)
    interp.touch(writes=[(gpr_key(interp.machine_index, pe), idx)] if 0 <= idx else ())
    try:
        m.set_gpr(pe, idx, val)
    except ValueError as exc:
        raise RegionRuntimeError(f"{node.path}.gpr", str(exc), env.coords) from None


# ---------------------------------------------------------------------------------------------
# Tile values and tile merges

@dataclass(frozen=True, eq=False)
class TileValue:
    """A snapshot of one tile: descriptor, logical (Row, Col) raw bits and definedness."""
    desc: object
    bits: np.ndarray
    defined: np.ndarray

    @staticmethod
    def of(view) -> "TileValue":
        return TileValue(view.desc, view.bits.copy(), view.defined.copy())

    def vkey(self):
        return ("tile", repr(self.desc), self.bits.tobytes(), self.defined.tobytes())

    def __repr__(self):
        d = self.desc
        return f"<tile {d.datatype.name if d.dtype is not None else 'predicate'} {d.ValidRow}x{d.ValidCol}>"


def tile_merge_function(mnemonic: str, dtype_name: str, config) -> Function:
    """The tile instruction as a merge of TileValues, executed on a scratch machine."""
    from isa.datatypes import datatype
    from emulator.reference import ReferenceMachine as Machine
    dt = datatype(dtype_name)
    kind = "int" if dt.is_int else "float"
    a, c, g = merge_laws(mnemonic, kind)
    row = I.BY_MNEMONIC[mnemonic]

    def fn(x: TileValue, y: TileValue) -> TileValue:
        m = Machine(config)
        d = x.desc
        for tid, v in ((1, x), (2, y)):
            try:
                m.write_tile(0, tid, v.desc.datatype.name, v.bits, valid_row=v.desc.ValidRow,
                             valid_col=v.desc.ValidCol, capacity=v.desc.capacity, layout=v.desc.Layout,
                             defined=v.defined)
            except ValueError as exc:
                raise EvalError(f"{mnemonic} merge operand: {exc}") from None
        block = Block(BStart(row.mode, row.function, dt.code, row.engine),
                      (TileBinding(1, 1), TileBinding(2, 1), TileBinding(3, 1, d.capacity)),
                      BDim(d.ValidCol, d.ValidRow, d.Col))
        try:
            m.execute(block)
        except IllegalBlockException as exc:
            raise EvalError(f"{mnemonic} merge rejected: {exc}") from None
        return TileValue.of(m.read_tile(0, 3))
    return Function(mnemonic, 2, "merge", fn, a, c, g, doc=f"{mnemonic} on {dtype_name} tiles")


def _ref(interp, ref, env, path):
    out = []
    for name in ("pe", "tile"):
        v = interp.ev(getattr(ref, name), env, f"{path}.{name}")
        if isinstance(v, bool) or not isinstance(v, int):
            raise RegionRuntimeError(f"{path}.{name}", f"must be an integer, got {v!r}", env.coords)
        out.append(v)
    return tuple(out)


def _snapshot(m, pe, tile, path, coords) -> TileValue:
    try:
        return TileValue.of(m.read_tile(pe, tile))
    except (KeyError, ValueError) as exc:
        raise RegionRuntimeError(path, str(exc).strip("'\""), coords) from None


def exec_tile_reduce(interp, node, env) -> None:
    from . import reduction as red
    from .expr import truth
    m = _need_machine(interp, node.path, env.coords)
    path = node.path
    mi = interp.machine_index
    insts = interp.instances(node.domain, env, f"{path}.reduce")
    accs = [_ref(interp, node.into, env.child(coords=c), f"{path}.into") for c in insts]
    seeds = {}
    for a in accs:                                    # seeds: the accumulators when the reduce starts
        if a not in seeds:
            seeds[a] = _snapshot(m, *a, f"{path}.into", env.coords)
            interp.touch(reads=[(tile_key(mi, a[0], a[1]), -1)])
    fibers: dict = {}
    seen: dict = {}
    for coords, acc in zip(insts, accs):
        it = env.child(coords=coords)
        if node.body is not None:
            interp.exec(node.body, it)
        if node.mask is not None and not truth(interp.ev(node.mask, it, f"{path}.mask")):
            continue
        pe, tile = _ref(interp, node.value, it, f"{path}.value")
        v = _snapshot(m, pe, tile, f"{path}.value", coords)
        interp.touch(reads=[(tile_key(mi, pe, tile), -1)])
        k = tuple(coords.values()) if node.key is None else \
            tuple(interp.ev(e, it, f"{path}.key") for e in node.key)
        if k in seen:
            if seen[k][0] != acc or not red.same(seen[k][1], v):
                raise RegionRuntimeError(f"{path}.key", f"replicas of contribution {k} disagree", coords)
            continue
        seen[k] = (acc, v)
        fibers.setdefault(acc, []).append(v)          # source order; keys only identify replicas
    for acc in sorted(fibers):
        seed = seeds[acc]
        if seed.desc.dtype is None:
            raise RegionRuntimeError(f"{path}.into", f"accumulator PE{acc[0]} tile {acc[1]} is a predicate tile")
        f = tile_merge_function(node.combine, seed.desc.datatype.name, m.config)
        fiber = fibers[acc]
        try:
            result = interp.fold(node, f, seed, fiber, None, f"PE{acc[0]} tile {acc[1]}")
        except (EvalError, ReductionPolicyError) as exc:
            raise RegionRuntimeError(f"{path}.combine", str(exc), {"PE": acc[0], "tile": acc[1]}) from None
        d = result.desc
        try:
            m.write_tile(acc[0], acc[1], d.datatype.name, result.bits, valid_row=d.ValidRow,
                         valid_col=d.ValidCol, capacity=d.capacity, layout=d.Layout, defined=result.defined)
        except ValueError as exc:
            raise RegionRuntimeError(f"{path}.into", f"the folded tile does not fit PE{acc[0]} tile {acc[1]}: "
                                                     f"{exc}") from None
        interp.touch(writes=[(tile_key(mi, acc[0], acc[1]), -1)])
        interp.reductions.append((path, acc, node.policy, seed, fiber, result))


# ---------------------------------------------------------------------------------------------
# Static effects of tile leaves (used by effects.Walker)

def _grid(rows: int, cols: int):
    r = np.repeat(np.arange(rows, dtype=np.int64), cols)
    c = np.tile(np.arange(cols, dtype=np.int64), rows)
    return r, c


def _cells(r, c):
    return (r << 16) | c


def _points(pe, r, c):
    return (np.int64(pe) << 32) | (r << 16) | c


class Footprint:
    """One PE's block as a schema's effect rule (emulator/schemas.py, `Schema.reads`) sees it:
    the block, the PE, each role's source descriptor (None: unknown), the destination, the GPR
    offsets (None: data-dependent) and the destination's whole (r, c, pts) and valid (vr, vc,
    vpts) grids; the rule's reads become the block's Accesses, in the order it makes them."""

    def __init__(self, path, rb, pe, srcs, keys, dest, offs, block_point, accs, notes):
        self.path, self.rb, self.pe, self.srcs, self.keys = path, rb, pe, srcs, keys
        self.dest, self.offs, self.block_point = dest, offs, block_point
        self.accs, self.notes = accs, notes
        self.r, self.c = _grid(dest.Row, dest.Col)
        self.pts = _points(pe, self.r, self.c)
        self.vr, self.vc = _grid(dest.ValidRow, dest.ValidCol)
        self.vpts = _points(pe, self.vr, self.vc)

    def read(self, role: int, r, c, points) -> None:
        """Source `role`'s elements (r, c), each read by the destination element at its point."""
        self.accs.append(Access(self.keys[role], False, _cells(r, c), points))

    def read_whole(self, role: int, rows: int, cols: int) -> None:
        """Source `role`'s top-left rows x cols elements, read by the block as a whole."""
        r, c = _grid(rows, cols)
        self.read(role, r, c, np.full(len(r), self.block_point))

    def note(self, text: str) -> None:
        """The effect is an over-approximation, for this reason."""
        self.notes.append(text)

    def fail(self, text: str):
        raise RegionError(self.path, text)


def _desc(walker, m, pe, tile):
    d = walker.tile_desc.get((m, pe, tile))
    if d is not None:
        return d
    machines = walker.machines
    if machines and m < len(machines):
        try:
            return machines[m].read_tile(pe, tile).desc
        except (KeyError, ValueError):
            return None
    return None


def _gpr(walker, m, pe, idx):
    if idx == 0:                                        # r0 is the hard-wired zero
        return 0
    v = walker.gprs.get((m, pe, idx))
    if v is not None:
        return v
    machines = walker.machines
    if machines and m < len(machines):
        return machines[m].gpr(pe, idx)
    return DATA


def _version(walker, m, pe, tile) -> int | None:
    return walker.versions.get((m, pe, tile), 0) if walker.renamed else None


def walk_tile_op(walker, node, env, coords) -> None:
    from emulator.preflight import dest_descriptor, row_follows_source
    from emulator.schemas import SCHEMAS
    block = leaf_block(node, lambda e: walker.pure(e, env, f"{node.path}.block"))
    try:
        rb = resolve(block)
    except IllegalBlockException as exc:
        raise RegionError(node.path, f"block is illegal: {exc}") from None
    m = walker.machine
    schema = rb.instr.schema
    for pe in _selected(rb.PE_MASK):
        ordinal = len(walker.events)
        block_point = np.int64(-(ordinal + 1))          # the whole block: never equal to an element
        notes: list[str] = []
        srcs = [_desc(walker, m, pe, s.tile) for s in rb.sources]
        src_rows = None
        if row_follows_source(rb.instr):
            if srcs[0] is None:
                raise RegionError(node.path, f"PE{pe} tile {rb.sources[0].tile}: its descriptor is unknown "
                                             f"(give the initial machine) and {rb.instr.mnemonic}'s destination "
                                             f"rows derive from it")
            src_rows = srcs[0].Row
        try:
            dest = dest_descriptor(rb, src_rows)
        except IllegalBlockException as exc:
            raise RegionError(node.path, f"block is illegal: {exc}") from None
        keys = [tile_key(m, pe, s.tile, _version(walker, m, pe, s.tile)) for s in rb.sources]
        offs = None
        accs: list[Access] = []
        if rb.offset_regs is not None:
            accs.append(Access(gpr_key(m, pe), False, np.array(rb.offset_regs, np.int64),
                               np.full(2, block_point)))
            vals = [_gpr(walker, m, pe, r) for r in rb.offset_regs]
            offs = None if any(v is DATA for v in vals) else tuple(int(v) & 0xFFFF for v in vals)
            if offs is None:
                notes.append(f"PE{pe}: offset GPRs r{rb.offset_regs[0]}/r{rb.offset_regs[1]} are data-dependent")
        else:
            offs = (0, 0)
        entry = SCHEMAS.get(schema)
        if entry is None:
            raise RegionError(node.path, f"no effect rule for schema {schema!r}")
        fp = Footprint(node.path, rb, pe, srcs, keys, dest, offs, block_point, accs, notes)
        entry.reads(fp)
        # the write: a renamed destination, every physical element
        v = None
        if walker.renamed:
            v = walker.versions.get((m, pe, rb.dest.tile), 0) + 1
            walker.versions[(m, pe, rb.dest.tile)] = v
        walker.tile_desc[(m, pe, rb.dest.tile)] = dest
        accs.append(Access(tile_key(m, pe, rb.dest.tile, v), True, _cells(fp.r, fp.c), fp.pts))
        walker.emit(node.path, coords, "block", accs, exact=not notes, notes=notes, pe=pe, block=block)


def walk_gpr_op(walker, node, env, coords) -> None:
    m = walker.machine
    pe = _pure_int(walker, node.pe, env, f"{node.path}.gpr.pe")
    idx = _pure_int(walker, node.index, env, f"{node.path}.gpr.index")
    val = walker.pure(node.value, env, f"{node.path}.gpr.value")
    walker.gprs[(m, pe, idx)] = val
    ordinal = len(walker.events)
    notes: list[str] = []
    accs = walker.loads_of(node.value, env, f"{node.path}.gpr.value", notes)
    accs.append(Access(gpr_key(m, pe), True, np.array([idx], np.int64), np.array([-(ordinal + 1)], np.int64)))
    walker.emit(node.path, coords, "gpr", accs, exact=not notes, notes=notes, pe=pe)


def _pure_int(walker, e, env, path) -> int:
    v = walker.pure(e, env, path)
    if v is DATA or isinstance(v, bool) or not isinstance(v, int):
        raise RegionError(path, f"must be a pure integer, got {v!r}")
    return v


def walk_tile_reduce(walker, node, env, coords) -> None:
    m = walker.machine
    slot = "red:" + node.path
    accs_seen: dict = {}
    keys: set = set()
    n = 0
    for c in walker.instances(node.domain, env, f"{node.path}.reduce"):
        it = env.child(c)
        cc = {**coords, **c}
        acc = (_pure_int(walker, node.into.pe, it, f"{node.path}.into.pe"),
               _pure_int(walker, node.into.tile, it, f"{node.path}.into.tile"))
        if acc not in accs_seen:        # the seed is the accumulator when the reduce starts
            accs_seen[acc] = _version(walker, m, *acc)
        if node.body is not None:
            walker.walk(node.body, it, cc)
        if node.mask is not None:
            mk = walker.pure(node.mask, it, f"{node.path}.mask")
            if mk is not DATA and not walker.truth(mk, f"{node.path}.mask"):
                continue                           # masks omit contributions
        if node.key is not None:
            k = tuple(walker.pure(e, it, f"{node.path}.key") for e in node.key)
            if k in keys:
                continue                           # replicas count once
            keys.add(k)
        pe = _pure_int(walker, node.value.pe, it, f"{node.path}.value.pe")
        tile = _pure_int(walker, node.value.tile, it, f"{node.path}.value.tile")
        d = _desc(walker, m, pe, tile)
        if d is None:
            raise RegionError(f"{node.path}.value", f"PE{pe} tile {tile}: unknown descriptor (give the initial machine)")
        sr, sc = _grid(d.ValidRow, d.ValidCol)
        accs = [Access(tile_key(m, pe, tile, _version(walker, m, pe, tile)), False, _cells(sr, sc)),
                Access(slot, True, np.array([n], np.int64))]
        n += 1
        walker.emit(node.path, cc, "contribution", accs, pe=pe,
                    extra={"group": f"PE{acc[0]} tile {acc[1]}"})
    accs = [Access(slot, False, np.arange(n, dtype=np.int64))]
    dtypes = {}
    for (pe, tile), ver in accs_seen.items():
        d = _desc(walker, m, pe, tile)
        if d is None:
            raise RegionError(f"{node.path}.into", f"PE{pe} tile {tile}: unknown descriptor (give the initial machine)")
        r, cc_ = _grid(d.Row, d.Col)
        dtypes[f"PE{pe} tile {tile}"] = None if d.dtype is None else d.datatype.name
        accs.append(Access(tile_key(m, pe, tile, ver), False, _cells(r, cc_)))
        v = None
        if walker.renamed:
            v = walker.versions.get((m, pe, tile), 0) + 1
            walker.versions[(m, pe, tile)] = v
        accs.append(Access(tile_key(m, pe, tile, v), True, _cells(r, cc_)))
    walker.emit(f"{node.path}#result", coords, "result", accs, extra={"node": node, "dtypes": dtypes})
