"""Groups of golden cases: one block and one geometry, many machines' worth of tile data.

A group is what one batched execution runs: every case of it holds the same block (so the same
`.tbs` bytes) and the same tile descriptors, and differs only in tile payloads and
definedness.  `build_group` draws a group of one coverage class; `execute` runs it and returns
each case's outcome; `cases_table` lays inputs and outcomes out as the Arrow rows of
docs/golden-format.md.  Every step is vectorised over the cases.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from isa import encoding, fields as F, instructions as I, legality
from isa.assembly import disassemble
from isa.block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.datatypes import DATATYPES, datatype
from isa.errors import IllegalBlockException
from isa.memo import memo

from ..config import MachineConfig
from ..preflight import fmap_extents
from ..tiles import Descriptor, FeatureMap, index_grid
from .coverage import CoverageClass, Context, Variant, _random

DEST_TILE = 9          # the destination's tile id (sources are 1, 2, 3)
OFFSET_REGS = (1, 2)   # TEXTRACT/TINSERT/TIMG2COL: row offset (posM) in r1, column offset (posK) in r2
                       # (r0 is the zero register)
FMAP_BYTES_C0 = 32     # TIMG2COL: C0 spans 32 bytes of the DataType (16 FP16, 8 FP32, 32 S8)
MIN_FMAP_M = 4         # TIMG2COL: N*D*outH*outW covers the tallest variant (ValidRow <= 4)


@dataclass
class TileSpec:
    """One source role's tile on each PE that holds it, for all cases of a group."""
    tile: int
    desc: Descriptor
    pes: tuple[int, ...]
    elems: np.ndarray       # (n, len(pes), desc.elements) raw encodings (element dtype)
    defined: np.ndarray     # (n, len(pes), desc.elements) bool


@dataclass
class Group:
    cls: CoverageClass
    ctx: Context
    variant: Variant
    block: Block
    config: MachineConfig
    tiles: list[TileSpec]
    gprs: np.ndarray | None = None     # (n, 4, 32) uint64 (TEXTRACT/TINSERT offsets); None: all zero

    @property
    def n(self) -> int:
        return self.tiles[0].elems.shape[0] if self.tiles else 0


@dataclass
class Outcome:
    committed: np.ndarray        # (n,) bool
    reason: np.ndarray           # (n,) object: reason code, "" when committed
    field: np.ndarray
    message: np.ndarray
    dest: Descriptor | None      # the destination descriptor of the committed cases
    pes: tuple[int, ...]         # selected PEs (the destination exists on each)
    elems: np.ndarray            # (n, len(pes), dest.elements); meaningful where committed
    defined: np.ndarray
    status: np.ndarray           # (n, 4) uint8: every PE's numeric status after the block


# ---------------------------------------------------------------------------- geometry

def _capacity(kind: str, width: int, rows: int, cols: int) -> int:
    return (rows * cols * (1 if kind == "predicate" else width) + 7) // 8


def _desc(dtype_name: str | None, rows: int, cols: int, vrow: int, vcol: int, location="Local",
          layout: int = 0) -> Descriptor:
    if dtype_name is None:
        return Descriptor(location, "predicate", None, rows, cols, vrow, vcol, 0, "standard",
                          _capacity("predicate", 1, rows, cols))
    d = datatype(dtype_name)
    cap = _capacity("numeric", d.container, rows, cols)
    phys = cap * 8 // (cols * d.container)      # 4-bit types: the rows the capacity derives
    return Descriptor(location, "numeric", d.code, phys, cols, vrow, vcol, layout, "standard", cap)


def _roles(ctx: Context) -> list[str | None]:
    """Each source role's DataType name (None = predicate)."""
    if ctx.op.schema == I.SELECT:
        return [None, ctx.src.name, ctx.src.name]
    return [ctx.src.name] * ctx.op.arity


def _other_dtype(name: str) -> str:
    """Another DataType of the same container width (SOURCE_DATATYPE)."""
    c = datatype(name).container
    return next(d.name for d in DATATYPES if d.name != name and d.container == c)


# ---------------------------------------------------------------------------- blocks

def _block(ctx: Context, v: Variant, src_rows: int) -> Block:
    op = ctx.op
    pe = v.pe_mask
    srcs = tuple(TileBinding(i + 1, pe) for i in range(op.arity))
    dest_kind = op.dest_kind
    width = datatype(ctx.dst.name).container
    cap = None
    if v.dest_capacity is not None or src_rows != v.vrow or v.explicit:
        cap = _capacity(dest_kind, width, src_rows, v.cols)
    dest = TileBinding(1 if v.alias else DEST_TILE, pe, cap)
    dim = BDim(LB0=v.vcol,
               LB1=v.vrow if (v.vrow != 1 or v.explicit) else None,
               LB2=v.cols if (v.cols != v.vcol or v.explicit) else None)
    datr = {}
    if "PadValueOrByteId" in op.datr and (v.pad is not None or v.explicit):
        datr["PadValueOrByteId"] = 0b11 if v.pad is None else v.pad
    if op.schema == I.CONVERT:
        datr["DataType"] = datatype(ctx.dst.name).code
        datr["RMode"] = {name: code for code, name in F.RMODES.items()}[ctx.rmode or "DEFAULT"]
        datr["Sat"] = int(ctx.sat)
        if v.explicit:
            datr.update(Canonicalize=0, Layout=0)
    if op.schema == I.COMPARE and v.explicit:
        datr["CMode"] = 0
    if ctx.window and (v.layout or v.explicit):
        datr["Layout"] = v.layout
    bdatr = BDatr(**datr) if datr else None
    ior = BIor(RegSrc0=OFFSET_REGS[0], RegSrc1=OFFSET_REGS[1]) if ctx.movement and v.offsets != "none" else None
    return Block(BStart(op.mode, op.function, datatype(ctx.src.name).code, op.engine),
                 srcs + (dest,), dim, bdatr, ior, None)


# ---------------------------------------------------------------------------- mutations

def _m_block(**changes):
    def apply(g: Group, rng) -> Group:
        return replace(g, block=replace(g.block, **changes))
    return apply


def _binding(g: Group, index: int, **changes) -> Block:
    iot = list(g.block.iot)
    iot[index] = replace(iot[index], **changes)
    return replace(g.block, iot=tuple(iot))


def _datr(g: Group, **changes) -> Block:
    base = g.block.datr or BDatr()
    return replace(g.block, datr=replace(base, **changes))


def _tile(g: Group, role: int, **changes) -> Group:
    tiles = list(g.tiles)
    tiles[role] = replace(tiles[role], **changes)
    return replace(g, tiles=tiles)


def _undefine_one(g: Group, rng) -> Group:
    """One element the block reads, undefined on the last selected PE: inside the valid
    rectangle, for TEXTRACT/TINSERT the first element of the window source's window, for
    TIMG2COL the whole feature map (its illegal groups read the map in every window)."""
    t = g.tiles[-1]
    d = t.defined.copy()
    if g.ctx.img2col:      # the whole map on that PE: some element of the window is inside it
        d[:, -1] = False
        return _tile(g, 0, defined=d)
    if g.ctx.movement:
        r = c = 0
        if g.ctx.op.schema == I.EXTRACT and g.gprs is not None:
            r, c = (int(x) for x in g.gprs[0, t.pes[-1], list(OFFSET_REGS)])
        d[:, -1, index_grid(t.desc)[r, c]] = False
        return _tile(g, len(g.tiles) - 1, defined=d)
    r, c = rng.integers(0, t.desc.ValidRow), rng.integers(0, t.desc.ValidCol)
    d[:, -1, r * t.desc.Col + c] = False
    return _tile(g, len(g.tiles) - 1, defined=d)


def _zero_divisor(g: Group, rng) -> Group:
    t = g.tiles[1]
    e = t.elems.copy()
    e[:, -1, rng.integers(0, t.desc.ValidCol)] = 0
    return _tile(g, 1, elems=e)


def _missing(g: Group, rng) -> Group:
    t = g.tiles[0]
    return _tile(g, 0, pes=t.pes[:-1], elems=t.elems[:, :-1], defined=t.defined[:, :-1])


def _wrong_dtype(g: Group, rng) -> Group:
    t = g.tiles[-1]
    other = datatype(_other_dtype(t.desc.datatype.name)).code
    return _tile(g, len(g.tiles) - 1, desc=replace(t.desc, dtype=other))


def _allocation(g: Group, rng) -> Group:
    """The destination's store (Local, or Matrix for TIMG2COL) holds exactly the sources."""
    store = g.ctx.op.location
    used = sum(t.desc.capacity for t in g.tiles if t.desc.location == store)
    return replace(g, config=replace(g.config, **{f"{store.lower()}_bytes": used}))


def _capacity_short(g: Group, rng) -> Group:
    d = g.block.iot[-1]
    need = _capacity(g.ctx.op.dest_kind, datatype(g.ctx.dst.name).container, g.variant.vrow, g.variant.cols)
    return replace(g, block=_binding(g, len(g.block.iot) - 1, capacity=max(need - 1, 0)))


def _reserved_field(g: Group, rng) -> Group:
    if "CMode" in g.ctx.op.datr:
        return replace(g, block=_datr(g, CMode=max(F.CMODES) + 1))
    return replace(g, block=_datr(g, Layout=max(F.LAYOUTS) + 1))


def _not_applicable(g: Group, rng) -> Group:
    return replace(g, block=_datr(g, CMode=1) if "CMode" not in g.ctx.op.datr else _datr(g, RMode=1))


MUTATIONS = {
    "BINDING_COUNT": lambda g, rng: replace(g, block=replace(g.block, iot=g.block.iot[1:])),
    "PE_MASK_MISMATCH": lambda g, rng: replace(g, block=_binding(g, 0, PE_MASK=g.block.iot[0].PE_MASK ^ 0b0010)),
    "SOURCE_CAPACITY": lambda g, rng: replace(g, block=_binding(g, 0, capacity=g.tiles[0].desc.capacity)),
    "DIM_MISSING": _m_block(dim=None),
    "DIM_ZERO": lambda g, rng: replace(g, block=replace(g.block, dim=replace(g.block.dim, LB0=0))),
    "DIM_RANGE": lambda g, rng: replace(g, block=replace(g.block, dim=replace(g.block.dim, LB2=g.variant.vcol - 1))),
    "FIELD_NOT_APPLICABLE": _not_applicable,
    "FIELD_RESERVED": _reserved_field,
    "CANONICALIZE_LAYOUT": lambda g, rng: replace(g, block=_datr(g, Canonicalize=1, Layout=1)),
    "IOR_NOT_ALLOWED": _m_block(ior=BIor()),
    "IOS_NOT_ALLOWED": _m_block(ios=BIos(0)),
    "SOURCE_MISSING": _missing,
    "SOURCE_KIND": lambda g, rng: _tile(g, len(g.tiles) - 1, desc=replace(
        g.tiles[-1].desc, location="Local" if g.tiles[-1].desc.location == "Matrix" else "Matrix")),
    "SOURCE_DATATYPE": _wrong_dtype,
    "SHAPE_MISMATCH": lambda g, rng: _tile(g, len(g.tiles) - 1, desc=replace(
        g.tiles[-1].desc, ValidCol=g.tiles[-1].desc.ValidCol - 1)),
    "CAPACITY": _capacity_short,
    "ALLOCATION": _allocation,
    "SOURCE_UNDEFINED": _undefine_one,
    "INT_DIVIDE_BY_ZERO": _zero_divisor,
    "OFFSET_RANGE": lambda g, rng: g,            # build_group places the window one past the edge
    "IOR_NONZERO": lambda g, rng: replace(g, block=replace(g.block, ior=replace(g.block.ior or BIor(), RegSrc2=3))),
    "DESCRIPTOR_INVALID": lambda g, rng: _tile(g, 0, desc=replace(g.tiles[0].desc, fmap=replace(
        g.tiles[0].desc.fmap, channels=g.tiles[0].desc.fmap.C1 * g.tiles[0].desc.fmap.C0 + 1))),
}


# ---------------------------------------------------------------------------- building

def _window_geometry(ctx: Context, v: Variant) -> tuple[list[tuple], tuple[int, int]]:
    """TEXTRACT/TINSERT: each source role's (rows, cols, valid rows, valid cols, layout) and the
    largest legal (row, column) offsets.  TEXTRACT reads a vrow x vcol window of a bigger source;
    TINSERT writes a smaller insertion into the old destination's valid rectangle."""
    if ctx.op.schema == I.EXTRACT:
        sr, sc = v.vrow + 3, v.vcol + 4
        return [(sr, sc, sr, sc, v.src_layout)], (sr - v.vrow, sc - v.vcol)
    ir, ic = max(1, v.vrow - 1), max(1, v.vcol - 3)
    return [(v.rows, v.cols, v.vrow, v.vcol, 0), (ir, ic, ir, ic, v.src_layout)], (v.vrow - ir, v.vcol - ic)


# TIMG2COL feature-map parameters drawn uniformly from [lo, hi]; _FMAP_DRAWS follow C1, N and D
_FMAP_BOUNDS = {"padLeft": (0, 1), "padRight": (0, 1), "padTop": (0, 1), "padBottom": (0, 1), "C1": (1, 2),
                "N": (1, 2), "D": (1, 2), "H": (3, 6), "W": (3, 6), "filterH": (2, 3), "filterW": (2, 3),
                "strideH": (1, 2), "strideW": (1, 2), "dilationH": (1, 2), "dilationW": (1, 2)}
_FMAP_DRAWS = ("H", "W", "filterH", "filterW", "strideH", "strideW", "dilationH", "dilationW")


def _feature_map(ctx: Context, rng, dense: bool) -> FeatureMap:
    """TIMG2COL: a small random feature map (scalar draws, once per group) whose output covers
    at least MIN_FMAP_M rows.  Illegal groups (`dense`) get no padding and every channel, so
    every window reads the map (SOURCE_UNDEFINED then always finds an undefined element)."""
    c0 = FMAP_BYTES_C0 * 8 // datatype(ctx.src.name).container
    while True:
        layout = "NDC1HWC0" if rng.random() < 0.25 else "NC1HWC0"
        # the parameters' uniform draws, in this order: [padLeft, padRight, padTop, padBottom] (not
        # dense), C1, N, [D] (NDC1HWC0), H, W, filterH, filterW, strideH, strideW, dilationH, dilationW
        # -- one rng.integers over their bounds, which draws them as one scalar call each would
        names = ([] if dense else ["padLeft", "padRight", "padTop", "padBottom"]) + ["C1", "N"] + \
            (["D"] if layout == "NDC1HWC0" else []) + list(_FMAP_DRAWS)
        lo, hi = zip(*(_FMAP_BOUNDS[k] for k in names))
        kw = dict(zip(names, rng.integers(lo, np.add(hi, 1)).tolist()))
        c1 = kw["C1"]
        fm = FeatureMap(layout, N=kw["N"], D=kw.get("D", 1), C1=c1, H=kw["H"], W=kw["W"], C0=c0,
                        filterH=kw["filterH"], filterW=kw["filterW"], strideH=kw["strideH"], strideW=kw["strideW"],
                        dilationH=kw["dilationH"], dilationW=kw["dilationW"], padLeft=kw.get("padLeft", 0),
                        padRight=kw.get("padRight", 0), padTop=kw.get("padTop", 0), padBottom=kw.get("padBottom", 0),
                        channels=c1 * c0 if dense else int(rng.integers(1, c1 * c0 + 1)),
                        pad_bits=int(ctx.src.random(rng, 1)[0]))
        out_h, out_w, m, _ = fmap_extents(fm)
        if out_h > 0 and out_w > 0 and m >= MIN_FMAP_M:
            return fm


def _fmap_geometry(ctx: Context, v: Variant, rng, dense: bool) -> tuple[list[Descriptor], tuple[int, int]]:
    """TIMG2COL: the feature-map source (a Matrix NORM (N*D*C1*H*W) x C0 tile, whole rectangle
    valid) and the largest legal (posM, posK)."""
    fm = _feature_map(ctx, rng, dense)
    desc = _desc(ctx.src.name, fm.N * fm.D * fm.C1 * fm.H * fm.W, fm.C0, fm.N * fm.D * fm.C1 * fm.H * fm.W,
                 fm.C0, location="Matrix")
    _, _, m, k = fmap_extents(fm)
    return [replace(desc, fmap=fm)], (m - v.vrow, k - v.vcol)


def _offset_gprs(v: Variant, n: int, pes, limit: tuple[int, int], rng) -> np.ndarray | None:
    """(n, 4, 32) GPRs holding each selected PE's window offsets in OFFSET_REGS."""
    if v.offsets == "none":
        return None
    g = np.zeros((n, 4, 32), np.uint64)
    for reg, hi in zip(OFFSET_REGS, limit):
        if v.offsets == "edge":
            vals = np.full((n, len(pes)), hi, np.uint64)
        else:
            vals = rng.integers(0, hi + 1, (n, len(pes))).astype(np.uint64)
        g[:, list(pes), reg] = vals
    if v.offsets == "beyond":                      # one past the edge on the last selected PE
        g[:, pes[-1], OFFSET_REGS[1]] = limit[1] + 1
    return g


def build_group(cls: CoverageClass, ctx: Context, n: int, rng: np.random.Generator,
                config: MachineConfig | None = None, bin: int | None = None) -> Group:
    """n cases of class `cls` (its cross bin `bin`, coverage.CoverageClass.bins) for the
    partition `ctx`, on machines of `config` (the dataset's numeric profile; default
    MachineConfig())."""
    v = cls.variant(ctx, rng, bin) if cls.variant else Variant()
    if cls.kind == "illegal":                       # mutate a case with room for every rule
        v = replace(v, vcol=8, cols=8, pe_mask=0b0011)
    if cls.kind == "illegal" and cls.reason == "OFFSET_RANGE":
        v = replace(v, offsets="beyond")
    pes = F.SELECTED_PES[v.pe_mask]
    roles = _roles(ctx)
    gprs = None
    if ctx.img2col:
        descs, limit = _fmap_geometry(ctx, v, rng, cls.kind == "illegal")
        gprs = _offset_gprs(v, n, pes, limit, rng)
    elif ctx.movement:
        shapes, limit = _window_geometry(ctx, v)
        descs = [_desc(name, *shape[:4], layout=shape[4]) for name, shape in zip(roles, shapes)]
        gprs = _offset_gprs(v, n, pes, limit, rng)
    else:
        descs = [_desc(name, v.rows, v.cols, v.vrow, v.vcol) for name in roles]
    elements = max(d.elements for d in descs)
    gen = cls.gen if cls.gen is not None else _random
    m = n * len(pes) * elements
    with np.errstate(all="ignore"):                 # edge values overflow on purpose (FP64 max + ulp)
        operands = gen(ctx, rng, m)
    tiles = []
    numeric_roles = iter(operands)
    for i, (name, desc) in enumerate(zip(roles, descs)):
        if name is None:
            elems = rng.integers(0, 2, (n, len(pes), desc.elements), dtype=np.uint8)
        else:
            raw = np.dtype(datatype(name).raw_dtype)
            elems = np.asarray(next(numeric_roles)).astype(raw).reshape(n, len(pes), -1)[:, :, :desc.elements]
            if elems.shape[2] < desc.elements:     # 4-bit types: capacity-derived spare rows
                elems = np.pad(elems, ((0, 0), (0, 0), (0, desc.elements - elems.shape[2])))
        defined = np.ones(elems.shape, bool)
        if v.undefined_outside and desc.Layout == 0:
            grid = np.zeros((desc.Row, desc.Col), bool)
            grid[: desc.ValidRow, : desc.ValidCol] = True
            defined &= grid.reshape(-1)[None, None, :]
        tiles.append(TileSpec(i + 1, desc, pes, elems, defined))
    src_rows = v.rows if ctx.movement else descs[0].Row
    if v.mutation is None:
        return Group(cls, ctx, v, _canonical_block(ctx, v, src_rows), config or MachineConfig(), tiles, gprs)
    g = MUTATIONS[v.mutation](Group(cls, ctx, v, _block(ctx, v, src_rows), config or MachineConfig(), tiles, gprs), rng)
    # run exactly what the stream says (raises EncodeError for a block a stream cannot carry)
    return replace(g, block=encoding.roundtrip(g.block)[0])


@lru_cache(maxsize=4096)
def _canonical_block(ctx: Context, v: Variant, src_rows: int) -> Block:
    """The unmutated block of a group exactly as a stream carries it (EncodeError for one a
    stream cannot carry; not kept): made and round-tripped once a distinct (partition, variant,
    rows), not once a group (isa.memo rule 2: a pure function of small immutable values; equal
    arguments give the same words, whatever the integer types, and decoding interns the Block)."""
    return encoding.roundtrip(_block(ctx, v, src_rows))[0]


# ---------------------------------------------------------------------------- execution

def execute(g: Group, backend: str = "cpu") -> Outcome:
    """Run the group's block on every case through the batch engine: each case is one machine
    of a MachineBatch holding exactly the group's tiles, so its outcome is the one the
    reference Machine defines (the batch is differential-tested against it)."""
    from ..batch import MachineBatch
    n = g.n
    tiles = {(pe, t.tile): (t.desc, t.elems[:, j], t.defined[:, j]) for t in g.tiles for j, pe in enumerate(t.pes)}
    # a rejected case's state is never read back but for the destination it did not write and
    # its status (both the same stacked or detached): kept stacked, not a Machine a case
    batch = MachineBatch.from_stacks(g.config, n, tiles, backend, gprs=g.gprs, detach_stopped=False)
    result = batch.run([g.block])
    committed = np.array([e is None for e in result.errors], bool)
    reason = np.full(n, "", object)
    field = np.full(n, "", object)
    message = np.full(n, "", object)
    for k in np.flatnonzero(~committed):
        cause = result.errors[k].cause
        reason[k], field[k], message[k] = cause.reason, cause.field, cause.message
    dest, pes = None, ()
    elems = np.zeros((n, 0, 0), np.uint8)
    defined = np.zeros((n, 0, 0), bool)
    if committed.any():
        dest_binding = g.block.iot[-1]
        pes = F.SELECTED_PES[dest_binding.PE_MASK]
        for j, pe in enumerate(pes):
            for ids, desc, e, d in batch.stacks(pe, dest_binding.tile):
                keep = committed[ids]
                if not keep.any():
                    continue
                if dest is None:
                    dest = desc
                    elems = np.zeros((n, len(pes), desc.elements), e.dtype)
                    defined = np.zeros((n, len(pes), desc.elements), bool)
                elems[ids[keep], j] = e[keep]
                defined[ids[keep], j] = d[keep]
    return Outcome(committed, reason, field, message, dest, pes, elems, defined, batch.statuses())


REFERENCE_CASES = 4     # an illegal class's group of at most this many cases tries the reference first


def rejected_on_reference(g: Group) -> Outcome | None:
    """The outcome of a group whose every case the reference Machine rejects (None as soon as
    one commits): what execute gives such a group -- the same reason, field and message
    (the batch engine's rejection is the reference's exception), nothing committed, every
    PE's status as it started (zero) -- without a MachineBatch's fixed cost, which a one-case
    group of an illegal class pays in full (issue 32 target 6)."""
    from ..reference import ReferenceMachine
    from ..state import MachineState, PEState
    from ..tiles import make_tile
    n = g.n
    reason, field, message = (np.full(n, "", object) for _ in range(3))
    try:
        legality.resolve(g.block)           # the first thing ReferenceMachine.execute does
    except IllegalBlockException as exc:    # stateless: every case rejects alike, no state to build
        reason[:], field[:], message[:] = exc.reason, exc.field, exc.message
        return _rejected(n, reason, field, message)
    for k in range(n):
        pes = [PEState() for _ in range(F.NUM_PES)]
        for t in g.tiles:
            for j, pe in enumerate(t.pes):
                pes[pe].tiles[t.tile] = make_tile(t.desc, t.elems[k, j], t.defined[k, j])
        if g.gprs is not None:
            for pe, state in enumerate(pes):
                state.gprs = np.array(g.gprs[k, pe], np.uint64)
        try:
            ReferenceMachine.from_state(MachineState(g.config, pes)).execute(g.block)
        except IllegalBlockException as exc:
            reason[k], field[k], message[k] = exc.reason, exc.field, exc.message
            continue
        return None
    return _rejected(n, reason, field, message)


def _rejected(n: int, reason, field, message) -> Outcome:
    """The outcome of n cases that all rejected: nothing committed, every PE's status as it
    started (zero)."""
    return Outcome(np.zeros(n, bool), reason, field, message, None, (), np.zeros((n, 0, 0), np.uint8),
                   np.zeros((n, 0, 0), bool), np.zeros((n, F.NUM_PES), np.uint8))


def execute_all(groups: list[Group], backend: str = "cpu", limit: int = 4096) -> list[Outcome]:
    """execute of each group, groups that run the same block on tiles of the same shapes run
    as one batch of at most `limit` cases (their cases are independent machines of one
    MachineBatch, so each case's outcome is what its own group's run gives; a file of many
    one-case groups pays the engine's fixed cost once a distinct block, not once a group).
    `limit` (the generator's group size) keeps a batch no larger than one group may be."""
    out: list[Outcome | None] = [None] * len(groups)
    for i, g in enumerate(groups):          # a small illegal-class group the reference rejects whole
        if g.cls is not None and g.cls.kind == "illegal" and g.n <= REFERENCE_CASES:
            out[i] = rejected_on_reference(g)
    # each key's batches and the cases in its last one: one dict lookup a group (a key hashes
    # a Block and descriptors, tens of microseconds, and a small file has a group a case)
    alike: dict[tuple, tuple[list[list[int]], list[int]]] = {}
    for i, g in enumerate(groups):
        if out[i] is not None:
            continue
        key = _batch_key(g)
        runs, cases = alike.get(key) or alike.setdefault(key, ([[]], [0]))
        if runs[-1] and cases[0] + g.n > limit:
            runs.append([])
            cases[0] = 0
        runs[-1].append(i)
        cases[0] += g.n
    for members in (run for runs, _ in alike.values() for run in runs):
        if len(members) == 1:
            out[members[0]] = execute(groups[members[0]], backend)
            continue
        parts = [groups[i] for i in members]
        first = parts[0]
        tiles = [replace(t, elems=np.concatenate([g.tiles[j].elems for g in parts]),
                         defined=np.concatenate([g.tiles[j].defined for g in parts]))
                 for j, t in enumerate(first.tiles)]
        gprs = None if first.gprs is None else np.concatenate([g.gprs for g in parts])
        whole = execute(replace(first, tiles=tiles, gprs=gprs), backend)
        lo = 0
        for i, g in zip(members, parts):
            out[i] = _cases(whole, lo, lo + g.n)
            lo += g.n
    return out


def _batch_key(g: Group) -> tuple:
    """Groups with equal keys run as one batch: the same block and machine configuration,
    tiles of the same descriptors, dtypes and PEs, GPRs given or not."""
    return (g.block, g.config, g.gprs is None,
            tuple((t.tile, t.desc, t.pes, t.elems.dtype, t.elems.shape[1:]) for t in g.tiles))


def _cases(out: Outcome, lo: int, hi: int) -> Outcome:
    """Cases lo..hi of an outcome as their own group's execute gives them (no destination
    where none of them committed)."""
    committed = out.committed[lo:hi]
    if not committed.any():
        n = hi - lo
        return Outcome(committed, out.reason[lo:hi], out.field[lo:hi], out.message[lo:hi], None, (),
                       np.zeros((n, 0, 0), np.uint8), np.zeros((n, 0, 0), bool), out.status[lo:hi])
    return Outcome(committed, out.reason[lo:hi], out.field[lo:hi], out.message[lo:hi], out.dest, out.pes,
                   out.elems[lo:hi], out.defined[lo:hi], out.status[lo:hi])


STREAM_MEMO = "golden.stream_of"


def stream_of(block: Block) -> tuple[bytes, str]:
    """The encoded one-block stream and its canonical text (no comment lines).  Kept on the
    Block (isa.memo rule 1): decoding interns one Block a distinct block, so a file of many
    one-case groups of a few distinct blocks encodes and disassembles each once (issue 32
    target 6: generation and verify both lay out every row's stream and asm)."""
    m = memo(block)
    got = m.get(STREAM_MEMO)
    if got is None:
        data = encoding.encode([block])
        text = "\n".join(line for line in disassemble([block]).splitlines() if line and not line.startswith("#"))
        got = m[STREAM_MEMO] = (data, text)
    return got
