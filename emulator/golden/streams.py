"""Random multi-block stream goldens: constrained-random streams of K blocks over random states.

A *group* is what one batched execution runs: `group_cases` machines (one per case) that share
one stream and one architectural shape (every tile descriptor), and differ in tile payloads
and GPR offsets -- a MachineBatch cohort.  `StreamBuilder` draws the group's initial state
(vectorised: every payload of every case in one NumPy draw per tile), then chooses the blocks
one at a time against the state the engine actually produced: after each block the batch has
run it on every case, so the next choice reads real descriptors (tile ids, DataTypes, shapes
per PE), and the engine is the judge of legality.  A block the engine rejects on any case
though the generator built it legal -- or a planted illegal block it does not reject with the
planted reason on every case -- is a generator bug: `GeneratorError`, never a row.

What a stream exercises (docs/golden-format.md, "Stream goldens"): read-after-write,
write-after-read and write-after-write through tiles, a destination that is a source, both
sources one tile, destinations that rename a tile of another descriptor, fresh destinations,
PE_MASK subsets (so one tile id holds different tiles on different PEs), every PadValue,
explicit and omitted fields, TEXTRACT/TINSERT/TIMG2COL offsets from GPRs the initial state
writes, TCVT between any two DataTypes in every RMode and Sat.  An illegal stream carries one
block of a rejection class (STREAM_ILLEGAL) at a random position; the stream stops there.

`StreamRun` is the execution half (used by generation and by `verify`): it runs one block on
the batch (`MachineBatch.step`, the commit-log hook) and returns that block's commit records
(emulator.commitlog's record schema) and fault records.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from isa import encoding, fields as F, instructions as I
from isa.assembly import disassemble
from isa.block import BIor, Block, TileBinding
from isa.datatypes import DATATYPES, datatype
from isa.errors import EncodeError, IllegalBlockException
from isa.legality import resolve

from .. import commitlog as CL
from ..config import MachineConfig
from ..tiles import Descriptor, element_dtype
from . import coverage as C
from .cases import Group, TileSpec, MUTATIONS, _block, _desc, _fmap_geometry, _window_geometry
from .space import space


class GeneratorError(AssertionError):
    """The engine disagrees with what the generator built: a bug in the generator."""


# ---------------------------------------------------------------------------- shape classes

@dataclass(frozen=True)
class Shape:
    """A stream's shape class: the valid shape (ValidRow x ValidCol) and Col of its tiles."""
    name: str
    vrow: int
    vcol: int
    cols: int


# The partitions of a stream dataset.  Row = ValidRow always (destination capacities omitted);
# Col > ValidCol leaves undefined elements outside the valid rectangle.
SHAPES = (Shape("r1c8", 1, 8, 8), Shape("r4c8", 4, 8, 8), Shape("r2c3w8", 2, 3, 8), Shape("r3c1", 3, 1, 1))
SHAPE_BY_NAME = {s.name: s for s in SHAPES}

# Tile ids: regular tiles draw from REGULAR_IDS (initial tiles first, fresh destinations after);
# the others hold the fixed sources of the instructions that need one.
REGULAR_IDS = tuple(range(1, 25))
INITIAL_REGULAR = 6          # initial regular tiles: ids 1..6
PRED_TILE = 25               # the initial predicate tile (TSEL masks)
XSRC_TILE = 26               # TEXTRACT's window source
INS_TILE = 27                # TINSERT's insertion
FMAP_TILE = 28               # TIMG2COL's feature map
RESERVED_TILE = 29           # an illegal stream's planted block reads it (and only that block)
ABSENT_TILE = 30             # never written: SOURCE_MISSING
BAD_FMAP_TILE = 31           # DESCRIPTOR_INVALID: a feature map with too many channels
# The window sources: the only tiles of a stream not of its shape class's valid shape (each has
# its own, from its instruction's window or feature-map geometry); every other tile, initial or
# written, has the shape class's.
WINDOW_SOURCES = frozenset((XSRC_TILE, INS_TILE, FMAP_TILE, BAD_FMAP_TILE))
# GPR pairs (posM, posK) written by the initial state, one pair per window source
REGS = {I.EXTRACT: (1, 2), I.INSERT: (3, 4), I.IMG2COL: (5, 6)}
BEYOND_REGS = (7, 8)         # OFFSET_RANGE: one column past the edge
PLANTED_MASK = 0b0011        # the planted block's PE_MASK (room for PE_MASK_MISMATCH's flip); data
                             # faults sit on its last PE

# Instruction weights (relative): TCVT weighs more, it has the most pairs to cover.
WEIGHTS = {i.mnemonic: 4.0 if i.schema == I.CONVERT else 1.0 for i in I.INSTRUCTIONS}
# Value classes the initial tiles draw from (coverage.py's single-block value classes that need
# only the DataType; a tile whose DataType lacks the class draws `random`).
VALUE_CLASSES = ("random", "specials", "zeros", "min_subnormal", "max_subnormal", "min_normal", "max_normal",
                 "infinities", "quiet_nan", "signalling_nan", "int_bounds")
# Rejection classes a stream can carry.  STATELESS ones are decided by isa.legality alone.
STATELESS = ("BINDING_COUNT", "PE_MASK_MISMATCH", "SOURCE_CAPACITY", "DIM_MISSING", "DIM_ZERO", "DIM_RANGE",
             "FIELD_NOT_APPLICABLE", "FIELD_RESERVED", "CANONICALIZE_LAYOUT", "IOR_NOT_ALLOWED",
             "IOS_NOT_ALLOWED", "IOR_NONZERO", "UNASSIGNED_OPCODE", "DATATYPE_UNSUPPORTED")
STATEFUL = ("SOURCE_MISSING", "SOURCE_KIND", "SOURCE_DATATYPE", "SHAPE_MISMATCH", "CAPACITY", "ALLOCATION",
            "SOURCE_UNDEFINED", "INT_DIVIDE_BY_ZERO", "OFFSET_RANGE", "DESCRIPTOR_INVALID")
STREAM_ILLEGAL = STATELESS + STATEFUL
LEGAL = "legal"


def stream_class(reason: str | None) -> str:
    return LEGAL if reason is None else f"illegal_{reason.lower()}"


def reason_of(cls: str) -> str | None:
    return None if cls == LEGAL else cls[len("illegal_"):].upper()


def _applies(reason: str, op: I.Instruction, dt: str, shape: Shape) -> bool:
    """Whether the planted block (op, DataType) can carry `reason` in this shape class."""
    ctx = _ctx(op, dt)
    if reason in ("UNASSIGNED_OPCODE", "SOURCE_MISSING"):
        return True
    if reason == "DATATYPE_UNSUPPORTED":
        return len(op.dtypes) < len(DATATYPES)
    if reason == "SOURCE_DATATYPE":
        return op.schema != I.CONVERT and bool(_same_width(op, dt))
    if reason == "SHAPE_MISMATCH":
        return shape.vcol >= 2 and not ctx.movement
    if reason == "DIM_RANGE":
        return shape.vcol >= 2
    if reason == "ALLOCATION":
        return op.location == "Local"
    if reason == "SOURCE_UNDEFINED":
        return not ctx.movement
    cls = C.BY_NAME.get(f"illegal_{reason.lower()}")
    return cls is not None and cls.applies(ctx)


@lru_cache(maxsize=1024)
def _valid_mask(desc: Descriptor) -> np.ndarray:
    """(1, elements) bool, read-only: the valid rectangle of a row-major tile of `desc` (a group
    draws a few descriptors, a run a few dozen)."""
    grid = np.zeros((desc.Row, desc.Col), bool)
    grid[: desc.ValidRow, : desc.ValidCol] = True
    mask = grid.reshape(1, -1)
    mask.flags.writeable = False
    return mask


@lru_cache(maxsize=None)
def _initial_choices() -> tuple[tuple[str, ...], ...]:
    """The DataTypes the initial regular tiles draw from: elementwise (TADD's), integer (TAND's), all."""
    return tuple(sorted(I.lookup("TADD").dtypes)), tuple(sorted(I.lookup("TAND").dtypes)), \
        tuple(d.name for d in DATATYPES)


@lru_cache(maxsize=None)
def _window_ops() -> tuple:
    """((schema, the instruction of that schema, its source tile id), ...) of the window sources."""
    return tuple((schema, next(i for i in I.INSTRUCTIONS if i.schema == schema), tid)
                 for schema, tid in ((I.EXTRACT, XSRC_TILE), (I.INSERT, INS_TILE), (I.IMG2COL, FMAP_TILE)))


@lru_cache(maxsize=None)
def _value_gen(value_class: str, dt: str) -> tuple:
    """(context, generator, integer?, raw NumPy dtype) an initial tile of DataType dt draws its
    values with under `value_class` (VALUE_CLASSES x DataTypes: a pure function of the names)."""
    ctx = _ctx(I.lookup("TCVT"), dt)
    cls = C.BY_NAME[value_class]
    gen = cls.gen if cls.applies(ctx) else C.BY_NAME["random"].gen
    return ctx, gen, datatype(dt).is_int, np.dtype(datatype(dt).raw_dtype)


def _same_width(op: I.Instruction, dt: str) -> list[str]:
    c = datatype(dt).container
    return [d.name for d in DATATYPES if d.name != dt and d.container == c and d.name in op.dtypes]


def _ctx(op: I.Instruction, src: str, dst: str | None = None, rmode: str | None = None, sat: bool = False) -> C.Context:
    return _context(op.mnemonic, src, dst or src, rmode, bool(sat))


@lru_cache(maxsize=4096)
def _context(mnemonic: str, src: str, dst: str, rmode: str | None, sat: bool) -> C.Context:
    """The (immutable) Context of these names: a pure function of them (isa.memo rule 2; bound:
    the instruction x DataType pairs a run draws, TCVT's modes included, stay well under it)."""
    return C.Context(I.lookup(mnemonic), space(src), space(dst), rmode, sat)


# ---------------------------------------------------------------------------- execution

class StreamRun:
    """One group's machines on a MachineBatch, run one block at a time; each `step` returns the
    block's commit records (or fault records) in (machine, PE) order, machine = case in group."""

    def __init__(self, config: MachineConfig, n: int, tiles: dict, gprs: np.ndarray | None, backend: str = "cpu"):
        from ..batch import MachineBatch
        self.n = n
        # a stopped case stays stacked (detach_stopped=False): its stream ends there, and what a
        # row keeps of it (records, statuses, the tiles of its last commit) is read from the stacks
        self.batch = MachineBatch.from_stacks(config, n, tiles, backend, gprs=gprs, detach_stopped=False)
        self.ids = set(tid for _, tid in tiles)      # every tile id some PE holds
        self.where = {(p, tid) for p, tid in tiles}

    def step(self, block: Block, index: int, offset: int) -> tuple[np.ndarray, CL.Records]:
        """(live (n,) bool: committed every block so far, records) of `block`, block `index` of
        the stream at byte `offset`: MachineBatch.step's commit log records (emulator/commitlog.py;
        a machine that rejects a block stops there and takes no further steps)."""
        recs = self.batch.step(block, offset=offset)
        live = np.array([e is None for e in self.batch.step_errors()], bool)
        if live.any():
            dest = block.iot[-1]
            for p in F.SELECTED_PES[dest.PE_MASK]:
                self.where.add((p, dest.tile))
            self.ids.add(dest.tile)
        return live, recs

    def gather(self, p: int, tid: int):
        """(descriptor, elems (n, E), defined (n, E)) of tile `tid` on PE p of every machine, or
        None where no machine holds it; GeneratorError when machines disagree on its descriptor."""
        parts = self.batch.stacks(p, tid)
        if not parts:
            return None
        desc = parts[0][1]
        count = sum(len(ids) for ids, *_ in parts)
        if any(d != desc for _, d, _, _ in parts) or count != self.n:
            raise GeneratorError(f"PE {p} tile {tid}: the machines of a group hold different tiles")
        if len(parts) == 1 and np.array_equal(parts[0][0], np.arange(self.n)):
            return desc, np.asarray(parts[0][2]), np.asarray(parts[0][3])
        e = np.zeros((self.n, desc.elements), parts[0][2].dtype)
        d = np.zeros((self.n, desc.elements), bool)
        for ids, _, ee, dd in parts:
            e[ids], d[ids] = ee, dd
        return desc, e, d

    def final(self):
        """[(descriptor, tile id, (pe,), elems, defined)] of every tile after the stream, in
        (tile id, PE) order, and the (n, 4) statuses."""
        out = []
        for tid in sorted(self.ids):
            for p in range(F.NUM_PES):
                if (p, tid) not in self.where:
                    continue
                g = self.gather(p, tid)
                if g is not None:
                    out.append((g[0], tid, (p,), g[1], g[2]))
        return out, self.batch.statuses()


# ---------------------------------------------------------------------------- the group

@dataclass
class StreamGroup:
    """A generated group: what a row stores, for n cases sharing one stream."""
    cls: str
    value_class: str
    shape: Shape
    config: MachineConfig
    tiles: dict                        # (pe, tid) -> (desc, elems (n, E), defined (n, E))
    gprs: np.ndarray                   # (n, 4, 32) uint64
    blocks: list[Block]
    records: CL.Records
    executed: int                      # blocks committed (the fault block, if any, is `executed`)
    fault: tuple | None                # (reason, field, message) per case: arrays, or None
    status: np.ndarray                 # (n, 4) statuses at the end (the final tiles: the records)
    stream: bytes | None = None        # encoding.encode(blocks), kept from generation (None: encode)

    @property
    def n(self) -> int:
        return self.gprs.shape[0]


@lru_cache(maxsize=None)
def _regular(dt: str | None, shape: Shape) -> Descriptor:
    return _desc(dt, shape.vrow, shape.cols, shape.vrow, shape.vcol)


def _cdf(weights) -> np.ndarray:
    """The cumulative distribution of `weights` (normalised; read-only: _candidate_pairs keeps it)."""
    cdf = np.cumsum(np.asarray(weights, float))
    cdf /= cdf[-1]
    cdf.flags.writeable = False
    return cdf


def _weighted(rng, items, cdf: np.ndarray):
    """items[i] with probability weights[i] / sum (cdf = _cdf(weights)): what
    rng.choice(len(items), p=...) draws (one uniform, the cumulative distribution searched),
    without choice's per-call checks."""
    return items[int(cdf.searchsorted(rng.random(), side="right"))]


@lru_cache(maxsize=None)
def _op_dtypes() -> tuple:
    """(instruction, its DataTypes sorted, integer-divisor check per DataType) of every instruction."""
    return tuple((op, tuple(sorted(op.dtypes)), tuple(bool(op.int_zero_check and datatype(dt).is_int)
                                                       for dt in sorted(op.dtypes))) for op in I.INSTRUCTIONS)


@lru_cache(maxsize=4096)
def _candidate_pairs(have: frozenset, preds: bool, divisors: frozenset, windows: tuple) -> tuple:
    """The (instruction, DataType) pairs a state offers, in (instruction, DataType) order: `have`
    the DataTypes of the regular tiles on the selected PEs, `preds` whether a predicate tile is
    there, `divisors` the integer DataTypes of `have` with a never-zero tile, `windows` the
    DataTypes of the TEXTRACT, TINSERT and TIMG2COL sources (REGS order).  With them, the
    cumulative distribution (_cdf) _weighted draws a pair from: each instruction by its weight, shared
    evenly among its DataTypes.  A pure function of these, so memoised: a stream's blocks offer
    the same few states again and again.  None when the state offers nothing."""
    window_of = dict(zip(REGS, windows))
    out = []
    for op, dts, checks in _op_dtypes():
        if op.schema == I.SELECT and not preds:
            continue
        window = window_of.get(op.schema)
        for dt, check in zip(dts, checks):
            if window is not None:
                if dt != window or (op.schema == I.INSERT and dt not in have):
                    continue
            elif dt not in have:
                continue
            if check and dt not in divisors:
                continue
            out.append((op, dt))
    if not out:
        return None
    per_op: dict = {}
    for o, _ in out:
        per_op[o.mnemonic] = per_op.get(o.mnemonic, 0) + 1
    return tuple(out), _cdf([WEIGHTS[op.mnemonic] / per_op[op.mnemonic] for op, _ in out])


_COMMON_IDS = frozenset(REGULAR_IDS + (PRED_TILE,))     # the ids a block may read from the state
_INTEGER_NAMES = frozenset(d.name for d in DATATYPES if d.is_int)


@lru_cache(maxsize=None)
def _regular_names(shape: Shape) -> MappingProxyType:
    """Regular numeric descriptor of `shape` -> its DataType name, for every DataType."""
    return MappingProxyType({_regular(d.name, shape): d.name for d in DATATYPES})


class StreamBuilder:
    """Draws one group (see the module doc).  `reason`: the planted rejection class, or None."""

    def __init__(self, shape: Shape, blocks: int, n: int, rng: np.random.Generator, config: MachineConfig,
                 reason: str | None = None, backend: str = "cpu"):
        self.shape, self.K, self.n, self.rng, self.config = shape, blocks, n, rng, config
        self.reason, self.backend = reason, backend
        self.regular_names, self.pred_desc = _regular_names(shape), _regular(None, shape)
        self.value_class = VALUE_CLASSES[int(rng.integers(len(VALUE_CLASSES)))]
        self.plan = self._plan() if reason else None
        self.position = int(rng.integers(blocks)) if reason else blocks

    # ------------------------------------------------------------ planning
    def _plan(self) -> tuple[I.Instruction, str]:
        """The planted block's (instruction, DataType): one that can carry the reason."""
        rng = self.rng
        for _ in range(200):
            op = I.INSTRUCTIONS[int(rng.integers(len(I.INSTRUCTIONS)))]
            dts = sorted(op.dtypes)
            dt = dts[int(rng.integers(len(dts)))]
            if _applies(self.reason, op, dt, self.shape):
                return op, dt
        raise GeneratorError(f"no instruction can carry {self.reason} in shape {self.shape.name}")

    def _initial_dtypes(self) -> list[str]:
        rng = self.rng
        ew, ints, alls = _initial_choices()
        picks = [ew[int(rng.integers(len(ew)))], alls[int(rng.integers(len(alls)))]]
        picks.append(ints[int(rng.integers(len(ints)))] if rng.random() < 0.5 else ew[int(rng.integers(len(ew)))])
        return picks

    # ------------------------------------------------------------ initial state
    def _data(self, dt: str, count: int, nonzero: bool = False) -> np.ndarray:
        """(n, count) raw encodings of DataType dt drawn from the group's value class."""
        ctx, gen, is_int, raw = _value_gen(self.value_class, dt)
        with np.errstate(all="ignore"):
            x = np.asarray(gen(ctx, self.rng, self.n * count)[0], np.uint64)
        if nonzero and is_int:                       # integer divisors: never zero
            x = np.where(x == 0, np.uint64(1), x)
        return x.astype(raw).reshape(self.n, count)

    def _tile(self, desc: Descriptor, nonzero: bool = False, undefined_outside: bool = True):
        n, E = self.n, desc.elements
        if desc.kind == "predicate":
            elems = self.rng.integers(0, 2, (n, E), dtype=np.uint8)
        else:
            elems = self._data(desc.datatype.name, E, nonzero)
        if undefined_outside and desc.Layout == 0 and desc.fmap is None:
            defined = _valid_mask(desc).repeat(n, axis=0)
        else:
            defined = np.ones((n, E), bool)
        return elems.astype(element_dtype(desc), copy=False), defined

    def _initial(self):
        """The initial state: tiles on every PE, GPR offsets; the tracker starts from it."""
        rng, shape = self.rng, self.shape
        dts = self._initial_dtypes()
        if self.plan:
            dts.append(self.plan[1])
        self.dtypes = dts
        tiles, self.info = {}, {}
        pes = tuple(range(F.NUM_PES))

        def put(tid, desc, data=None, nonzero=False, undefined_outside=True):
            e, d = self._tile(desc, nonzero, undefined_outside) if data is None else data
            for p in pes:
                tiles[(p, tid)] = (desc, e, d)
            return e, d

        for j, tid in enumerate(REGULAR_IDS[:INITIAL_REGULAR]):
            dt = dts[j % len(dts)]
            put(tid, _regular(dt, shape), nonzero=j >= 3)    # ids 4..6: nonzero integer divisors
        self.nonzero_init = set(REGULAR_IDS[3:INITIAL_REGULAR])
        put(PRED_TILE, _regular(None, shape))
        gprs = np.zeros((self.n, F.NUM_PES, F.GPR_COUNT), np.uint64)
        planned = self.plan[0] if self.plan else None
        # window sources, each of a DataType some regular tile has (results chain on)
        def dtype_for(op, prefer):
            ok = [d for d in prefer if d in op.dtypes]
            return ok[int(rng.integers(len(ok)))] if ok else sorted(op.dtypes)[int(rng.integers(len(op.dtypes)))]
        win = C.Variant(rows=shape.vrow, cols=shape.cols, vrow=shape.vrow, vcol=shape.vcol,
                        src_layout=3 if rng.random() < 0.25 else 0)
        for schema, op, tid in _window_ops():
            dt = self.plan[1] if planned is op else dtype_for(op, dts)
            ctx = _ctx(op, dt)
            if schema == I.IMG2COL:
                descs, limit = _fmap_geometry(ctx, win, rng, False)
                src = descs[0]
            else:
                shapes, limit = _window_geometry(ctx, win)
                r, c, vr, vc, lay = shapes[-1]
                src = _desc(dt, r, c, vr, vc, layout=lay)
            put(tid, src, undefined_outside=False)
            self.info[schema] = (op, dt, limit)
            if planned is op and self.reason == "OFFSET_RANGE":
                self.beyond = limit
            for reg, hi in zip(REGS[schema], limit):
                vals = rng.integers(0, hi + 1, (self.n, F.NUM_PES)).astype(np.uint64)
                edge = rng.random((self.n, F.NUM_PES)) < 0.2          # the largest legal offsets too
                gprs[:, :, reg] = np.where(edge, np.uint64(hi), vals)
        self.windows = tuple(self.info[schema][1] for schema in REGS)  # each window source's DataType
        if self.plan:
            op, dt = self.plan
            desc = _regular(dt, shape)
            e, d = self._tile(desc, nonzero=True)
            last = F.SELECTED_PES[PLANTED_MASK][-1]
            if self.reason == "SOURCE_UNDEFINED":        # one element of the valid rectangle, last PE
                d_last = d.copy()
                d_last[:, 0] = False
                for p in pes:
                    tiles[(p, RESERVED_TILE)] = (desc, e, d_last if p == last else d)
            elif self.reason == "INT_DIVIDE_BY_ZERO":
                e_last = e.copy()
                e_last[:, 0] = 0
                for p in pes:
                    tiles[(p, RESERVED_TILE)] = (desc, e_last if p == last else e, d)
            else:
                put(RESERVED_TILE, desc, (e, d))
            if self.reason == "DESCRIPTOR_INVALID":
                src = tiles[(0, FMAP_TILE)][0]
                fm = replace(src.fmap, channels=src.fmap.C1 * src.fmap.C0 + 1)
                put(BAD_FMAP_TILE, replace(src, fmap=fm), undefined_outside=False)
            if self.reason == "OFFSET_RANGE":
                schema = op.schema
                hi_r, hi_c = self.info[schema][2]
                gprs[:, :, BEYOND_REGS[0]] = np.uint64(hi_r)
                gprs[:, :, BEYOND_REGS[1]] = np.uint64(hi_c + 1)
        return tiles, gprs

    # ------------------------------------------------------------ tracker
    def _pick(self, ids: list[int], pes) -> int:
        """A source: the most recently written eligible tile half of the time (read-after-write)."""
        if self.rng.random() < 0.5:
            last = [(max(self.writer.get((p, t), -1) for p in pes), t) for t in ids]
            best = max(last)
            if best[0] >= 0:
                return best[1]
        return ids[int(self.rng.integers(len(ids)))]

    def _mask(self) -> int:
        r = self.rng.random()
        if r < 0.5:
            return 0b1111
        return int(self.rng.integers(1, 16))

    def _candidates(self, mask: int):
        """(instruction, DataType) pairs buildable from the current state on the PEs of `mask`,
        and what they are built from: `have` regular DataType -> the tile ids (not reserved,
        ascending) holding that DataType's regular tile on every PE of `mask`, `preds` those
        holding the regular predicate tile."""
        pes = F.SELECTED_PES[mask]
        regular, pred = self.regular_names, self.pred_desc
        first, rest = self.state[pes[0]], [self.state[p] for p in pes[1:]]
        have: dict = {}
        preds = []
        for tid in sorted(first):                    # ascending, as REGULAR_IDS + (PRED_TILE,)
            if tid not in _COMMON_IDS:
                continue
            d = first[tid]
            for r in rest:                           # the same descriptor on every selected PE
                o = r.get(tid)
                if o is not d and o != d:
                    break
            else:
                name = regular.get(d)
                if name is not None:
                    ids = have.get(name)
                    if ids is None:
                        have[name] = [tid]
                    else:
                        ids.append(tid)
                elif d == pred:
                    preds.append(tid)
        nonzero = self.nonzero
        divisors = frozenset(dt for dt, ids in have.items() if dt in _INTEGER_NAMES
                             and any(all((p, t) in nonzero for p in pes) for t in ids))
        return _candidate_pairs(frozenset(have), bool(preds), divisors, self.windows), have, preds

    # ------------------------------------------------------------ blocks
    def _legal_block(self, index: int, plan=None) -> tuple[Block, dict]:
        """A legal block chosen from the current state (or the planted block's legal form)."""
        rng, shape = self.rng, self.shape
        if plan is not None:
            op, dt = plan
            mask = PLANTED_MASK
            pes = F.SELECTED_PES[mask]
            have = {dt: [RESERVED_TILE]}
            preds = [PRED_TILE]
        else:
            for _ in range(20):
                mask = self._mask()
                cands, have, preds = self._candidates(mask)
                if cands:
                    break
            else:
                raise GeneratorError(f"block {index}: nothing can be built from the state")
            pes = F.SELECTED_PES[mask]
            cands, cdf = cands
            op, dt = _weighted(rng, cands, cdf)
        dst, rmode, sat = dt, None, False
        if op.schema == I.CONVERT:
            dst = DATATYPES[int(rng.integers(len(DATATYPES)))].name
            rmode = F.RMODES[int(rng.integers(len(F.RMODES)))]
            sat = bool(rng.integers(2))
        ctx = _ctx(op, dt, dst, rmode, sat)
        pad = None
        if "PadValueOrByteId" in op.datr and rng.random() < 0.6:
            pad = int(rng.integers(4))
        layout = 0
        if ctx.window and plan is None and rng.random() < 0.15:
            layout = int(rng.choice([1, 2]))
        offsets = "none" if ctx.movement and rng.random() < 0.2 and plan is None else "random"
        v = C.Variant(rows=shape.vrow, cols=shape.cols, vrow=shape.vrow, vcol=shape.vcol, pe_mask=mask, pad=pad,
                      explicit=bool(rng.random() < 0.15), offsets=offsets, layout=layout)
        b = _block(ctx, v, shape.vrow if ctx.movement else _regular(dt, shape).Row)
        # sources
        srcs = []
        if op.schema == I.EXTRACT:
            srcs = [XSRC_TILE]
        elif op.schema == I.IMG2COL:
            srcs = [FMAP_TILE]
        elif op.schema == I.INSERT:
            srcs = [self._pick(have[dt], pes), INS_TILE]
        else:
            numeric = have[dt]
            for role in range(op.arity):
                if op.schema == I.SELECT and role == 0:
                    srcs.append(self._pick(preds, pes))
                    continue
                if op.int_zero_check and dt in _INTEGER_NAMES and role == 1:
                    nz = [t for t in numeric if all((p, t) in self.nonzero for p in pes)] if plan is None else numeric
                    srcs.append(self._pick(nz, pes))
                    continue
                if srcs and rng.random() < 0.25 and srcs[-1] in numeric:
                    srcs.append(srcs[-1])                        # both sources one tile
                else:
                    srcs.append(self._pick(numeric, pes))
        # destination: a source (aliasing), an existing tile (renamed or overwritten), or a fresh id
        r = rng.random()
        held = set().union(*self.state)
        used = [t for t in REGULAR_IDS if t in held]                 # REGULAR_IDS ascend
        fresh = [t for t in REGULAR_IDS if t not in held]
        alias_ok = [s for s in srcs if s in REGULAR_IDS]
        if plan is not None:
            dest = fresh[0] if fresh else REGULAR_IDS[-1]
        elif r < 0.25 and alias_ok:
            dest = alias_ok[int(rng.integers(len(alias_ok)))]
        elif r < 0.65 and used or not fresh:
            dest = used[int(rng.integers(len(used)))]
        else:
            dest = fresh[0]
        iot = tuple([TileBinding(s, mask) for s in srcs] + [TileBinding(dest, mask, b.iot[-1].capacity)])
        ior = b.ior
        if ior is not None and op.schema in REGS:
            ior = BIor(RegSrc0=REGS[op.schema][0], RegSrc1=REGS[op.schema][1])
        b = Block(b.bstart, iot, b.dim, b.datr, ior, b.ios)
        return b, {"ctx": ctx, "variant": v}

    def _plant(self, block: Block, meta: dict) -> Block:
        """The planted block: the legal form with the reason's one mutation."""
        reason, shape = self.reason, self.shape
        ctx, v = meta["ctx"], meta["variant"]
        if reason in STATELESS and reason in MUTATIONS:
            src_desc = self.state[0].get(block.iot[0].tile) if block.iot else None
            tiles = [TileSpec(block.iot[0].tile, src_desc or _regular(ctx.src.name, shape), (0, 1),
                              np.zeros((0, 2, 0)), np.zeros((0, 2, 0), bool))]
            g = Group(None, ctx, v, block, self.config, tiles)
            return MUTATIONS[reason](g, self.rng).block
        if reason == "UNASSIGNED_OPCODE":
            return replace(block, bstart=replace(block.bstart, Mode=2, Function=0))
        if reason == "DATATYPE_UNSUPPORTED":
            bad = [d for d in DATATYPES if d.name not in ctx.op.dtypes]
            return replace(block, bstart=replace(block.bstart, DataType=bad[0].code))
        if reason == "SOURCE_MISSING":
            return _rebind(block, 0, ABSENT_TILE)
        if reason == "SOURCE_KIND":
            if ctx.op.schema == I.SELECT:
                return _rebind(block, 0, RESERVED_TILE)
            return _rebind(block, 0, PRED_TILE)
        if reason == "SOURCE_DATATYPE":
            other = _same_width(ctx.op, ctx.src.name)[0]
            return replace(block, bstart=replace(block.bstart, DataType=datatype(other).code))
        if reason == "SHAPE_MISMATCH":
            return replace(block, dim=replace(block.dim, LB0=shape.vcol - 1))
        if reason == "CAPACITY":
            g = Group(None, ctx, v, block, self.config, [])
            return MUTATIONS["CAPACITY"](g, self.rng).block
        if reason == "OFFSET_RANGE":
            return replace(block, ior=BIor(RegSrc0=BEYOND_REGS[0], RegSrc1=BEYOND_REGS[1]))
        if reason == "DESCRIPTOR_INVALID":
            return _rebind(block, 0, BAD_FMAP_TILE)
        return block                                   # SOURCE_UNDEFINED, INT_DIVIDE_BY_ZERO: the data

    # ------------------------------------------------------------ the whole group
    def build(self) -> StreamGroup:
        """The group.  ALLOCATION streams are drawn twice from the same generator state: the
        first pass finds the Local store size that every block before the planted one fits in
        and the planted block's fresh destination does not (the block choices do not depend on
        the store size); the second runs on machines of that size."""
        if self.reason != "ALLOCATION":
            return self._build()
        for _ in range(50):
            saved = self.rng.bit_generator.state
            bound = self._build(probe=True)
            if bound is not None:
                self.rng.bit_generator.state = saved
                self.config = replace(self.config, local_bytes=bound)
                return self._build()
        raise GeneratorError(f"ALLOCATION: no stream of shape {self.shape.name} found a store size")

    def _used(self) -> list[int]:
        return [sum(d.capacity for d in self.state[p].values() if d.location == "Local") for p in range(F.NUM_PES)]

    def _build(self, probe: bool = False):
        tiles, gprs = self._initial()
        run = StreamRun(self.config, self.n, tiles, gprs, self.backend)
        self.state = [dict() for _ in range(F.NUM_PES)]
        for (p, tid), (desc, _, _) in tiles.items():
            self.state[p][tid] = desc
        self.writer: dict = {}
        self.nonzero = {(p, t) for p in range(F.NUM_PES) for t in self.nonzero_init
                        if self.state[p][t].datatype.is_int}
        self.used = self._used()                    # kept up to date by _track
        self.peak = max(self.used)
        blocks, words, records, fault = [], [], CL.Records(), None
        executed, offset = self.K, encoding.HEADER_BYTES
        for i in range(min(self.position + 1, self.K)):
            if i < self.position:
                block, w = _carried(self._legal_block(i)[0])
            else:
                legal, meta = self._legal_block(i, self.plan)
                if probe:
                    ctx = meta["ctx"]
                    dest = _regular(None if ctx.op.dest_kind == "predicate" else ctx.dst.name, self.shape)
                    used = self._used()
                    return self.peak if any(used[p] + dest.capacity > self.peak for p in (0, 1)) else None
                block, stateless = self._planted(legal, meta, i)
                w = encoding.block_words(block, i)
            blocks.append(block)
            words.append(w)
            if i == self.position and stateless is not None:
                committed, recs = self._stateless_fault(block, stateless, i, offset)
            else:
                committed, recs = run.step(block, i, offset)
            offset += encoding.WORD_BYTES * len(w)
            records = records + recs
            if i == self.position:
                if committed.any():
                    k = int(np.flatnonzero(committed)[0])
                    raise GeneratorError(f"block {i}: the planted {self.reason} block committed on case {k}")
                bad = [g.reason for g in recs.groups if g.reason != self.reason]
                if bad:
                    raise GeneratorError(f"block {i}: the planted {self.reason} block was rejected with {bad[0]}")
                executed, fault = i, True
                break
            if not committed.all():
                k = int(np.flatnonzero(~committed)[0])
                g = next(g for g in recs.groups if g.record == CL.FAULT)
                raise GeneratorError(f"block {i} ({CL.block_names(block)[0]}): built legal, the engine rejected it "
                                     f"on case {k} with {g.reason} ({g.message})")
            self._track(run, block, i)
        for j in range(len(blocks), self.K):           # the rest of an illegal stream: never runs
            block, w = _carried(self._legal_block(j)[0])
            blocks.append(block)
            words.append(w)
        return StreamGroup(stream_class(self.reason), self.value_class, self.shape, self.config, tiles, gprs,
                           blocks, records, executed, fault, run.batch.statuses(), encoding.stream_of_words(words))

    def _planted(self, legal: Block, meta: dict, i: int) -> tuple[Block, IllegalBlockException | None]:
        """(the planted block, the stateless rules' rejection of it: None for a stateful reason)."""
        block = self._plant(legal, meta)
        try:
            block = _roundtrip(block)
        except EncodeError as exc:
            raise GeneratorError(f"block {i}: the planted {self.reason} block cannot be encoded ({exc})") from None
        if self.reason in STATELESS:
            try:
                resolve(block)
            except IllegalBlockException as exc:
                if exc.reason != self.reason:
                    raise GeneratorError(f"block {i}: the planted {self.reason} block is rejected by the "
                                         f"stateless rules with {exc.reason}") from None
                return block, exc
            raise GeneratorError(f"block {i}: the planted {self.reason} block passes the stateless rules")
        return block, None

    def _stateless_fault(self, block: Block, exc: IllegalBlockException, i: int, offset: int):
        """What MachineBatch.step gives for a block the stateless rules reject (isa.legality.resolve,
        the batch engine's first check: every live machine stops there with that one error, its
        state untouched), without the step (the records need nothing the step would add).
        `verify` replays the block on the engine itself."""
        from ..machine import StreamError
        recs = CL.fault_records(StreamError(i, offset, exc), np.arange(self.n, dtype=np.uint32), block)
        return np.zeros(self.n, bool), recs

    def _track(self, run: StreamRun, block: Block, i: int) -> None:
        """The state after block i, as the engine holds it (descriptors of case 0's cohort), and
        the store's peak: the old destination is released only at commit (preflight)."""
        dest = block.iot[-1]
        used = self.used                             # _used() before this block
        for p in F.SELECTED_PES[dest.PE_MASK]:
            desc = run.batch.stacks(p, dest.tile)[0][1]
            old = self.state[p].get(dest.tile)
            if desc.location == "Local":
                self.peak = max(self.peak, used[p] + desc.capacity)
                used[p] += desc.capacity
            if old is not None and old.location == "Local":
                used[p] -= old.capacity
            self.state[p][dest.tile] = desc
            self.writer[(p, dest.tile)] = i
            self.nonzero.discard((p, dest.tile))


def _rebind(block: Block, index: int, tile: int) -> Block:
    iot = list(block.iot)
    iot[index] = replace(iot[index], tile=tile)
    return replace(block, iot=tuple(iot))


def _rebind_dest(block: Block, **changes) -> Block:
    iot = list(block.iot)
    iot[-1] = replace(iot[-1], **changes)
    return replace(block, iot=tuple(iot))


def _roundtrip(block: Block) -> Block:
    """Exactly what a stream carries (EncodeError for a block no stream can carry)."""
    return encoding.roundtrip(block)[0]


def _carried(block: Block) -> tuple[Block, list[int]]:
    """_roundtrip(block) and its words: encode(decode(data)) == data (tests/isa/test_properties.py),
    so the decoded block's words are the ones just packed, and the stream need not pack them again."""
    return encoding.roundtrip(block)


def build_group(shape: Shape, blocks: int, n: int, rng: np.random.Generator, config: MachineConfig,
                reason: str | None = None, backend: str = "cpu") -> StreamGroup:
    return StreamBuilder(shape, blocks, n, rng, config, reason, backend).build()


def stream_text(blocks: list[Block], data: bytes | None = None) -> tuple[bytes, str]:
    """The encoded stream (`data` when the caller has it already) and its canonical text (no
    comment lines)."""
    data = encoding.encode(blocks) if data is None else data
    text = "\n".join(line for line in disassemble(blocks).splitlines() if line and not line.startswith("#"))
    return data, text
