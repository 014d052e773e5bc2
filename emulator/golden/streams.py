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
write-after-read and write-after-write through tiles, between consecutive and distant blocks, a
destination that is a source, both sources one tile, destinations that rename a tile of another
descriptor or overwrite one of the same, fresh destinations, PE_MASK subsets (so one tile id
holds different tiles on different PEs), every PadValue, explicit and omitted fields, tiles with
Row > ValidRow and Col > ValidCol, TEXTRACT/TINSERT/TIMG2COL offsets from GPRs the initial state
writes, TEXTRACT and TINSERT reading earlier results, TCVT between any two DataTypes in every
RMode and Sat -- all within a Constraint (the instructions and DataTypes a DUT implements), and
steered by the chunk's Aim toward what it has not shown yet.  An illegal stream carries one
block of a rejection class (STREAM_ILLEGAL) at a given position; the stream stops there.

`StreamRun` is the execution half (used by generation and by `verify`): it runs one block on
the batch (`MachineBatch.step`, the commit-log hook) and returns that block's commit records
(emulator.commitlog's record schema) and fault records.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate, chain
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
from ..tiles import Descriptor
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


# The partitions of a stream dataset.  Col > ValidCol leaves undefined elements outside the valid
# rectangle; Row > ValidRow comes from "tall" tiles (TALL_ROWS more rows than ValidRow: an explicit
# destination capacity) that some groups start with and TEXTRACT, TIMG2COL and the instructions whose
# destination keeps its source's Row carry on.
SHAPES = (Shape("r1c8", 1, 8, 8), Shape("r4c8", 4, 8, 8), Shape("r2c3w8", 2, 3, 8), Shape("r3c1", 3, 1, 1))
SHAPE_BY_NAME = {s.name: s for s in SHAPES}
TALL_ROWS = 2

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


@dataclass(frozen=True)
class Constraint:
    """What the streams may carry (`golden --streams --ops ... --dtypes ...`: a DUT's subset):
    instruction mnemonics and DataType names.  Every block of a stream -- executed, planted or
    never run -- is an instruction of `ops` whose DataTypes (BSTART's and, for TCVT, B.DATR's
    destination) are in `dtypes`; the one exception is the planted UNASSIGNED_OPCODE block,
    which names no instruction."""
    ops: frozenset
    dtypes: frozenset

    def allows(self, op: I.Instruction, dt: str) -> bool:
        return op.mnemonic in self.ops and dt in self.dtypes and dt in op.dtypes

    @property
    def instructions(self) -> tuple:
        """The instructions of `ops` with some DataType of `dtypes`, in table order."""
        return _instructions(self)


EVERY = Constraint(frozenset(i.mnemonic for i in I.INSTRUCTIONS), frozenset(d.name for d in DATATYPES))


@lru_cache(maxsize=64)
def _instructions(con: Constraint) -> tuple:
    return tuple(op for op in I.INSTRUCTIONS if any(con.allows(op, dt) for dt in op.dtypes))


DISTANCES = ("consecutive", "distant")      # the blocks of a hazard: i - j == 1, or more apart


def distance(j: int, i: int) -> str:
    """The distance class of a hazard from block j to block i > j."""
    return DISTANCES[0] if i - j == 1 else DISTANCES[1]


def later_impossible(kind: str, op: I.Instruction) -> str | None:
    """Why no block of `op` completes a `kind` hazard -- reads a tile an earlier block wrote
    (RAW), writes one an earlier block read (WAR) or wrote (WAW) -- (None: a block can)."""
    if kind == "RAW" and op.schema == I.IMG2COL:
        return "TIMG2COL reads only a feature map, which no block writes"
    return None


def aliasing_impossible(kind: str, op: I.Instruction) -> str | None:
    """Why no block of `op` shows aliasing kind `kind` (None: a block can)."""
    if kind == "sources_one_tile" and op.schema in (I.UNARY, I.CONVERT, I.EXTRACT, I.IMG2COL):
        return f"{op.mnemonic} reads one tile"
    return None


def room(dist: str, blocks: int) -> str | None:
    """Why a stream of `blocks` blocks has no hazard at distance `dist` (None: it has room)."""
    return None if blocks >= (2 if dist == DISTANCES[0] else 3) else f"{blocks}-block streams"


@lru_cache(maxsize=256)
def aimed_bins(op: I.Instruction, blocks: int) -> tuple:
    """The hazard ((kind, distance)) and aliasing kinds a block of `op` can show in streams of
    `blocks` blocks: what an Aim steers to, and streams_coverage's bins that are not n/a."""
    return tuple((k, d) for k in C.HAZARDS for d in DISTANCES
                 if not later_impossible(k, op) and not room(d, blocks)) + \
        tuple(a for a in C.ALIASING if not aliasing_impossible(a, op))


class Aim:
    """A chunk's coverage so far, which steers its next blocks to what it lacks (riscv-dv's
    coverage-directed randomness): the instructions no block of the chunk has committed yet (a
    block draws among those when the state offers one, and a group's first initial DataType is
    one such instruction's), the DataTypes no committed block carried yet (a TCVT destination
    is one of them while there are any), and per instruction the hazards (kind x distance) and
    aliasing kinds it can show (aimed_bins) and no committed block of it showed yet (its sources
    and destination are chosen to show one when the state offers it).  One per chunk, updated
    as its groups are built, so a file stays a function of (seed, partition, chunk)."""

    def __init__(self, con: Constraint, blocks: int):
        self.commits = {op.mnemonic: 0 for op in con.instructions}
        self._uncovered = frozenset(self.commits)
        self.missing_dtypes = tuple(d.name for d in DATATYPES if d.name in con.dtypes)
        # mnemonic -> the bins it lacks: (hazard kind, distance) and (aliasing kind,)
        self.lacking = {op.mnemonic: {(b if isinstance(b, tuple) else (b,)) for b in aimed_bins(op, blocks)}
                        for op in con.instructions}
        self._wanting = frozenset(m for m, bins in self.lacking.items() if bins)

    @property
    def uncovered(self) -> frozenset:
        """The mnemonics of the instructions no block of the chunk committed yet."""
        return self._uncovered

    @property
    def wanting(self) -> frozenset:
        """The mnemonics of the instructions that lack a hazard or aliasing kind they can show."""
        return self._wanting

    def committed(self, mnemonic: str, dtypes=(), shows=()) -> None:
        """A block of instruction `mnemonic` carrying DataTypes `dtypes` committed, showing
        `shows`: (hazard kind, distance) pairs and aliasing kinds."""
        self.commits[mnemonic] = self.commits.get(mnemonic, 0) + 1
        if mnemonic in self._uncovered:
            self._uncovered = self._uncovered - {mnemonic}
        if self.missing_dtypes and any(d in self.missing_dtypes for d in dtypes):
            self.missing_dtypes = tuple(d for d in self.missing_dtypes if d not in dtypes)
        lacking = self.lacking.get(mnemonic)
        if lacking:
            for x in shows:
                lacking.discard(x if isinstance(x, tuple) else (x,))
            if not lacking:
                self._wanting = self._wanting - {mnemonic}

    def lacks(self, mnemonic: str, *what) -> bool:
        """Whether `mnemonic` can show `what` (a hazard kind and distance, or an aliasing kind)
        and no committed block of it has yet."""
        return what in self.lacking.get(mnemonic, ())

    def snapshot(self) -> tuple:
        return (dict(self.commits), self._uncovered, self.missing_dtypes,
                {m: set(b) for m, b in self.lacking.items()}, self._wanting)

    def restore(self, snap: tuple) -> None:
        self.commits, self._uncovered, self.missing_dtypes = dict(snap[0]), snap[1], snap[2]
        self.lacking, self._wanting = {m: set(b) for m, b in snap[3].items()}, snap[4]


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


def _applies(reason: str, op: I.Instruction, dt: str, shape: Shape, con: Constraint = EVERY) -> bool:
    """Whether the planted block (op, DataType) can carry `reason` in this shape class, with
    every DataType it names one of `con`'s."""
    ctx = _ctx(op, dt)
    if reason in ("UNASSIGNED_OPCODE", "SOURCE_MISSING"):
        return True
    if reason == "DATATYPE_UNSUPPORTED":
        return bool(_unsupported(op, con))
    if reason == "SOURCE_DATATYPE":
        return op.schema != I.CONVERT and bool(_same_width(op, dt, con))
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


@lru_cache(maxsize=64)
def _initial_choices(con: Constraint = EVERY) -> tuple[tuple[str, ...], ...]:
    """The DataTypes the initial regular tiles draw from: elementwise (TADD's), integer (TAND's),
    all -- each of those `con` allows that some instruction it allows reads (an empty set falls
    back to the next: integer to elementwise, elementwise to all)."""
    usable = tuple(d.name for d in DATATYPES if any(con.allows(op, d.name) for op in con.instructions))
    ew = tuple(d for d in sorted(I.lookup("TADD").dtypes) if d in usable) or usable
    ints = tuple(d for d in sorted(I.lookup("TAND").dtypes) if d in usable) or ew
    return ew, ints, usable


@lru_cache(maxsize=64)
def _window_ops(con: Constraint = EVERY) -> tuple:
    """((schema, the instruction of that schema, its source tile id), ...) of the window sources
    of the instructions `con` allows."""
    return tuple((schema, op, tid) for schema, tid in ((I.EXTRACT, XSRC_TILE), (I.INSERT, INS_TILE),
                                                        (I.IMG2COL, FMAP_TILE))
                 for op in [next(i for i in I.INSTRUCTIONS if i.schema == schema)] if op in con.instructions)


@lru_cache(maxsize=None)
def _value_gen(value_class: str, dt: str) -> tuple:
    """(context, generator, integer?, raw NumPy dtype) an initial tile of DataType dt draws its
    values with under `value_class` (VALUE_CLASSES x DataTypes: a pure function of the names)."""
    ctx = _ctx(I.lookup("TCVT"), dt)
    cls = C.BY_NAME[value_class]
    gen = cls.gen if cls.applies(ctx) else C.BY_NAME["random"].gen
    return ctx, gen, datatype(dt).is_int, np.dtype(datatype(dt).raw_dtype)


def _same_width(op: I.Instruction, dt: str, con: Constraint = EVERY) -> list[str]:
    """The other DataTypes of dt's container width that op supports and `con` allows."""
    c = datatype(dt).container
    return [d.name for d in DATATYPES if d.name != dt and d.container == c and d.name in op.dtypes
            and d.name in con.dtypes]


def _unsupported(op: I.Instruction, con: Constraint) -> list[str]:
    """The DataTypes `con` allows that op does not support (DATATYPE_UNSUPPORTED's), in table order."""
    return [d.name for d in DATATYPES if d.name not in op.dtypes and d.name in con.dtypes]


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


# cases._desc of a window source or tall predicate: a pure function of its arguments, and a run
# draws a few dozen distinct ones (a Descriptor is a frozen dataclass: sharing one is safe)
_cached_desc = lru_cache(maxsize=4096)(_desc)


@lru_cache(maxsize=1024)
def _reads_besides_fmap(con: Constraint, dt: str) -> bool:
    """Whether `con` allows an instruction other than TIMG2COL with DataType dt."""
    return any(con.allows(op, dt) for op in con.instructions if op.schema != I.IMG2COL)


@lru_cache(maxsize=None)
def _regular(dt: str | None, shape: Shape) -> Descriptor:
    return _desc(dt, shape.vrow, shape.cols, shape.vrow, shape.vcol)


@lru_cache(maxsize=None)
def _tall(dt: str | None, shape: Shape) -> Descriptor:
    """A tile of the shape class with TALL_ROWS more rows than ValidRow (Row > ValidRow)."""
    return _desc(dt, shape.vrow + TALL_ROWS, shape.cols, shape.vrow, shape.vcol)


def _cdf(weights) -> tuple:
    """The cumulative distribution of `weights` (normalised), as a tuple of floats: Options.draw
    bisects it (the same float64 comparisons as np.searchsorted, without an array call a draw)."""
    cdf = list(accumulate(float(w) for w in weights))  # np.cumsum's sums, left to right
    last = cdf[-1]
    return tuple(c / last for c in cdf)


@lru_cache(maxsize=4096)
def _ops_cdf(mnemonics: tuple) -> tuple:
    """_cdf of the instructions' WEIGHTS (a pure function of the names: a state offers one of a
    few hundred instruction sets, met again by every later group)."""
    return _cdf([WEIGHTS[m] for m in mnemonics])


@lru_cache(maxsize=64)
def _op_dtypes(con: Constraint = EVERY) -> tuple:
    """(instruction, its DataTypes `con` allows sorted, integer-divisor check per DataType) of
    every instruction `con` allows."""
    out = []
    for op in con.instructions:
        dts = tuple(dt for dt in sorted(op.dtypes) if con.allows(op, dt))
        out.append((op, dts, tuple(bool(op.int_zero_check and datatype(dt).is_int) for dt in dts)))
    return tuple(out)


@lru_cache(maxsize=64)
def _ops_by_dtype(con: Constraint = EVERY) -> MappingProxyType:
    """DataType -> ((table index, instruction, integer-divisor check), ...) of the instructions
    `con` allows with that DataType, in table order."""
    out: dict = {}
    for k, (op, dts, checks) in enumerate(_op_dtypes(con)):
        for dt, check in zip(dts, checks):
            out.setdefault(dt, []).append((k, op, check))
    return MappingProxyType({dt: tuple(v) for dt, v in out.items()})


class Options:
    """The (instruction, DataType, source Row) options a state offers (_candidate_pairs), per
    instruction in table order; `draw` takes an instruction by its weight (WEIGHTS), then one of
    its options uniformly -- each instruction by its weight, shared evenly among its options --,
    among the instructions of `aim` when the state offers one.

    Built from `entries`: ((DataType, Row), ((table index, instruction), ...) reading it), in
    option order (the window sources, then the tiles' (DataType, Row)s ascending).  The
    instructions offered are the union of those, made at once; an instruction's own options
    (the entries it reads, in that order) only when a draw or `has` asks for them, and kept
    (most states a draw meets offer a dozen instructions, and one is drawn)."""
    __slots__ = ("ops", "entries", "pairs", "by_op", "cdf", "aimed")

    def __init__(self, entries: list):
        self.entries = entries
        offered = dict(chain.from_iterable(readers for _, readers in entries))    # table index -> op
        self.pairs = tuple((k, offered[k]) for k in sorted(offered))
        self.ops = tuple(op for _, op in self.pairs)
        self.by_op: dict = {}                         # mnemonic -> its options, as asked for
        self.cdf = _ops_cdf(tuple(op.mnemonic for op in self.ops))
        self.aimed: dict = {}                         # aim -> (its instructions offered, their cdf)

    def options(self, op: I.Instruction) -> tuple:
        """op's (DataType, Row) options, in option order (() when the state offers op none)."""
        m = op.mnemonic
        got = self.by_op.get(m)
        if got is None:
            pair = next((p for p in self.pairs if p[1].mnemonic == m), None)    # (table index, op)
            got = self.by_op[m] = () if pair is None else \
                tuple(key for key, readers in self.entries if pair in readers)
        return got

    def has(self, op: I.Instruction, dt: str, row) -> bool:
        return (dt, row) in self.options(op)

    def draw(self, rng, aim: frozenset = frozenset()) -> tuple:
        ops, cdf = self.ops, self.cdf
        if aim:
            got = self.aimed.get(aim)
            if got is None:
                mine = [op for op in ops if op.mnemonic in aim]
                got = self.aimed[aim] = (mine, _ops_cdf(tuple(op.mnemonic for op in mine))) \
                    if mine and len(mine) < len(ops) else (ops, cdf)
            ops, cdf = got
        op = ops[bisect_right(cdf, rng.random())]   # np.searchsorted(cdf, x, side="right")
        opts = self.options(op)
        dt, row = opts[int(rng.integers(len(opts)))] if len(opts) > 1 else opts[0]
        return op, dt, row


@lru_cache(maxsize=4096)
def _candidate_pairs(have: frozenset, preds: frozenset, divisors: frozenset, windows: tuple,
                     con: Constraint = EVERY) -> Options | None:
    """The (instruction, DataType, source Row) options a state offers (Options): `have` the
    (DataType, Row) of the regular and tall tiles on the selected PEs, `preds` the Rows of the
    predicate tiles there, `divisors` the integer (DataType, Row)s of `have` with a never-zero
    tile, `windows` the DataTypes of the TEXTRACT, TINSERT and TIMG2COL sources present there
    (REGS order; None: absent), `con` what the streams may carry.  Row is the one of the
    sources that share the destination's shape (TINSERT: the old destination's); None where
    TEXTRACT reads its window source or TIMG2COL its feature map.  A pure function of these,
    so memoised: a stream's blocks offer the same few states again and again.  None when the
    state offers nothing."""
    by_dtype = _ops_by_dtype(con)
    entries = []                                      # ((dt, row), ((table index, op), ...) reading it)
    for schema, dt in zip(REGS, windows):             # the window sources
        if dt is not None and schema in (I.EXTRACT, I.IMG2COL):
            got = tuple((k, op) for k, op, _ in by_dtype.get(dt, ()) if op.schema == schema)
            if got:
                entries.append(((dt, None), got))
    readers = _readers(con)
    for dt, row in sorted(have):
        got = readers[(dt, row in preds, (dt, row) in divisors)]
        if got:
            entries.append(((dt, row), got))
    return Options(entries) if entries else None


@lru_cache(maxsize=64)
def _readers(con: Constraint = EVERY) -> MappingProxyType:
    """(DataType, pred, divisor) -> ((table index, instruction), ...) of the instructions `con`
    allows that read a regular or tall tile of that DataType as their sources
    (_candidate_pairs): not TIMG2COL (it reads the feature map), TSEL only with a predicate of
    the tile's Row (`pred`), an integer division only with a never-zero tile (`divisor`); every
    DataType of DATATYPES (none: ())."""
    by_dtype = _ops_by_dtype(con)
    return MappingProxyType({(d.name, pred, divisor): tuple(
        (k, op) for k, op, check in by_dtype.get(d.name, ())
        if not (op.schema == I.IMG2COL or (op.schema == I.SELECT and not pred) or (check and not divisor)))
        for d in DATATYPES for pred in (False, True) for divisor in (False, True)})


_COMMON_IDS = frozenset(REGULAR_IDS + (PRED_TILE,))     # the ids a block may read from the state
# what a destination can be chosen to show (StreamBuilder._aimed_dest), as Aim.lacking holds it
_DEST_AIMS = tuple((k, d) for k in ("WAR", "WAW") for d in DISTANCES) + (("overwritten_dest",), ("dest_is_source",))
_WINDOW_TILES = (XSRC_TILE, INS_TILE, FMAP_TILE)         # the window sources, in REGS order
_INTEGER_NAMES = frozenset(d.name for d in DATATYPES if d.is_int)


@lru_cache(maxsize=None)
def _source_keys(shape: Shape) -> tuple[MappingProxyType, MappingProxyType]:
    """(numeric descriptor -> (DataType, Row), predicate descriptor -> Row) of the tiles a block
    may read as a source of the shape class's shape: the regular and tall tiles of every
    DataType, and the predicates of every Row those have (TCMP's destination keeps its
    source's Row)."""
    numeric = {}
    for d in DATATYPES:
        for desc in (_regular(d.name, shape), _tall(d.name, shape)):
            numeric[desc] = (d.name, desc.Row)
    rows = sorted({row for _, row in numeric.values()})
    preds = {_desc(None, r, shape.cols, shape.vrow, shape.vcol): r for r in rows}
    return MappingProxyType(numeric), MappingProxyType(preds)


def _source_key(desc: Descriptor, numeric: MappingProxyType, pred: MappingProxyType) -> tuple | None:
    """(0, (DataType, Row)) of a source tile of the shape class, (1, Row) of a predicate one,
    None for any other descriptor (_source_keys' maps)."""
    k = numeric.get(desc)
    if k is not None:
        return (0, k)
    row = pred.get(desc)
    return None if row is None else (1, row)


@lru_cache(maxsize=4096)
def _plannable(reason: str, shape: Shape, con: Constraint) -> tuple:
    """((instruction, (DataTypes it carries `reason` with, ...)), ...) of a planted block."""
    out = []
    for op, dts, _ in _op_dtypes(con):
        ok = tuple(dt for dt in dts if _applies(reason, op, dt, shape, con))
        if ok:
            out.append((op, ok))
    return tuple(out)


class StreamBuilder:
    """Draws one group (see the module doc).  `reason`: the planted rejection class, or None,
    and `position` the planted block's index (None: a random one); `con`: what the streams may
    carry; `aim`: the chunk's coverage so far (Aim), or None."""

    def __init__(self, shape: Shape, blocks: int, n: int, rng: np.random.Generator, config: MachineConfig,
                 reason: str | None = None, backend: str = "cpu", con: Constraint = EVERY,
                 aim: Aim | None = None, position: int | None = None):
        self.shape, self.K, self.n, self.rng, self.config = shape, blocks, n, rng, config
        self.reason, self.backend, self.con, self.aim = reason, backend, con, aim
        self.numeric_keys, self.pred_keys = _source_keys(shape)
        self.tcvt_dsts = tuple(d.name for d in DATATYPES if d.name in con.dtypes)
        self.value_class = VALUE_CLASSES[int(rng.integers(len(VALUE_CLASSES)))]
        self.plan = self._plan() if reason else None
        if not reason:
            self.position = blocks
        elif position is not None:
            self.position = position
        else:
            self.position = int(rng.integers(blocks))

    # ------------------------------------------------------------ planning
    def _plan(self) -> tuple[I.Instruction, str]:
        """The planted block's (instruction, DataType): one that can carry the reason."""
        rng = self.rng
        options = _plannable(self.reason, self.shape, self.con)
        if not options:
            raise GeneratorError(f"no instruction can carry {self.reason} in shape {self.shape.name}")
        op, dts = options[int(rng.integers(len(options)))]
        return op, dts[int(rng.integers(len(dts)))]

    def _initial_dtypes(self) -> list[str]:
        """Three DataTypes for the initial regular tiles: an elementwise one (or, while the chunk
        lacks instructions, one of a random missing instruction's), any, and an integer or
        elementwise one."""
        rng = self.rng
        ew, ints, alls = _initial_choices(self.con)
        missing = sorted(self.aim.uncovered) if self.aim is not None else ()
        if missing:
            op = I.lookup(missing[int(rng.integers(len(missing)))])
            dts = [dt for dt in sorted(op.dtypes) if dt in alls] or list(ew)
            first = dts[int(rng.integers(len(dts)))]
        else:
            first = ew[int(rng.integers(len(ew)))]
        picks = [first, alls[int(rng.integers(len(alls)))]]
        picks.append(ints[int(rng.integers(len(ints)))] if rng.random() < 0.5 else ew[int(rng.integers(len(ew)))])
        return picks

    # ------------------------------------------------------------ initial state
    def _data(self, dt: str, count: int, nonzero: bool = False) -> np.ndarray:
        """(n, count) raw encodings of DataType dt drawn from the group's value class."""
        ctx, gen, is_int, raw = _value_gen(self.value_class, dt)
        x = np.asarray(gen(ctx, self.rng, self.n * count)[0], np.uint64)      # _initial: errstate ignore
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
        return elems, defined          # already element_dtype(desc): _data's raw dtype, or uint8

    def _initial(self):
        """The initial state: tiles on every PE, GPR offsets; the tracker starts from it."""
        with np.errstate(all="ignore"):              # the value classes' arithmetic (_data), once a group
            return self._initial_state()

    def _initial_state(self):
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

        planned_schema = self.plan[0].schema if self.plan else None
        # half the groups start one DataType's two tiles tall (Row > ValidRow), with a predicate
        # of their Row in tile INITIAL_REGULAR + 1 (TSEL masks)
        tall = int(rng.integers(3)) if rng.random() < 0.5 else None
        for j, tid in enumerate(REGULAR_IDS[:INITIAL_REGULAR]):
            dt = dts[j % len(dts)]
            desc = _tall(dt, shape) if j % len(dts) == tall else _regular(dt, shape)
            put(tid, desc, nonzero=j >= 3)    # ids 4..6: nonzero integer divisors
        if tall is not None:
            row = _tall(dts[tall], shape).Row
            put(REGULAR_IDS[INITIAL_REGULAR], _cached_desc(None, row, shape.cols, shape.vrow, shape.vcol))
        # the first DataType's initial tiles (one of them a never-zero divisor) and, when they are
        # tall, the tall predicate are never a destination: every PE keeps tiles some instruction
        # of the constraint can read, so every mask can build a block whatever the earlier blocks
        # overwrote (with --ops TCMP,TSEL, say, every other numeric tile may become a predicate)
        self.reserved = {REGULAR_IDS[j] for j in range(INITIAL_REGULAR) if j % len(dts) == 0}
        if tall == 0:
            self.reserved.add(REGULAR_IDS[INITIAL_REGULAR])
        # a destination may rename the feature map only where the reserved tiles keep another
        # instruction buildable, and not before a planted TIMG2COL
        self.fmap_renamable = _reads_besides_fmap(self.con, dts[0]) and planned_schema != I.IMG2COL
        self.nonzero_init = set(REGULAR_IDS[3:INITIAL_REGULAR])
        put(PRED_TILE, _regular(None, shape))
        gprs = np.zeros((self.n, F.NUM_PES, F.GPR_COUNT), np.uint64)
        planned = self.plan[0] if self.plan else None
        # window sources, each of a DataType some regular tile has (results chain on)
        con = self.con

        def dtype_for(op, prefer):
            ok = [d for d in prefer if con.allows(op, d)] or [d for d in sorted(op.dtypes) if con.allows(op, d)]
            return ok[int(rng.integers(len(ok)))]
        win = C.Variant(rows=shape.vrow, cols=shape.cols, vrow=shape.vrow, vcol=shape.vcol,
                        src_layout=3 if rng.random() < 0.25 else 0)
        self.window_descs = {}
        for schema, op, tid in _window_ops(con):
            dt = self.plan[1] if planned is op else dtype_for(op, dts)
            ctx = _ctx(op, dt)
            if schema == I.IMG2COL:
                descs, limit = _fmap_geometry(ctx, win, rng, False)
                src = descs[0]
            else:
                shapes, limit = _window_geometry(ctx, win)
                r, c, vr, vc, lay = shapes[-1]
                src = _cached_desc(dt, r, c, vr, vc, layout=lay)
            put(tid, src, undefined_outside=False)
            self.window_descs[tid] = src
            self.info[schema] = (op, dt, limit)
            if planned is op and self.reason == "OFFSET_RANGE":
                self.beyond = limit
            for reg, hi in zip(REGS[schema], limit):
                vals = rng.integers(0, hi + 1, (self.n, F.NUM_PES)).astype(np.uint64)
                edge = rng.random((self.n, F.NUM_PES)) < 0.2          # the largest legal offsets too
                gprs[:, :, reg] = np.where(edge, np.uint64(hi), vals)
        # each window source's DataType (None: no window source, its instruction is not carried)
        self.windows = tuple(self.info[schema][1] if schema in self.info else None for schema in REGS)
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
    def _pick(self, ids: list[int], pes, want: str | None = None) -> int:
        """A source: one written by a block `want` (a distance) before this one when there is
        such a tile (the chunk lacks that read-after-write), else the most recently written
        eligible tile half of the time (read-after-write)."""
        if want is not None:
            i = self.index
            ok = [t for t in ids if any((p, t) in self.writer and distance(self.writer[(p, t)], i) == want
                                        for p in pes)]
            if ok:
                return ok[int(self.rng.integers(len(ok)))]
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
        """The (instruction, DataType, source Row) options buildable from the current state on
        the PEs of `mask` (_candidate_pairs), and what they are built from: `have` (DataType, Row) -> the tile
        ids (not reserved, ascending) holding that regular or tall tile on every PE of `mask`,
        `preds` Row -> those holding a predicate tile of that Row."""
        pes = F.SELECTED_PES[mask]
        first, rest = self.keys[pes[0]], [self.keys[p] for p in pes[1:]]
        have: dict = {}
        preds: dict = {}
        for tid in sorted(first):                    # ascending, as REGULAR_IDS + (PRED_TILE,)
            k = first[tid]
            for r in rest:                           # the same descriptor on every selected PE
                if r.get(tid) != k:                  # (a key names one descriptor: _source_key)
                    break
            else:
                (preds if k[0] else have).setdefault(k[1], []).append(tid)
        nz = self._nonzero_on(pes)
        divisors = frozenset(k for k, ids in have.items() if k[0] in _INTEGER_NAMES and not nz.isdisjoint(ids))
        windows = self.windows
        if self.gone:                                # a window source renamed on some PE
            windows = tuple(None if tid in self.gone and any(self.state[p].get(tid) is not self.window_descs[tid]
                                                             for p in pes) else w
                            for w, tid in zip(windows, _WINDOW_TILES))
        return _candidate_pairs(frozenset(have), frozenset(preds), divisors, windows, self.con), have, preds

    def _nonzero_on(self, pes) -> set:
        """The ids of the never-zero integer tiles on every PE of `pes`."""
        nz = self.nonzero
        return nz[pes[0]].intersection(*[nz[p] for p in pes[1:]]) if len(pes) > 1 else nz[pes[0]]

    def _keep_key(self, p: int, tid: int, desc: Descriptor) -> None:
        """Record tile `tid` of PE p as _candidates reads it: (0, (DataType, Row)) for a regular
        or tall tile, (1, Row) for a predicate of the shape class, nothing for any other tile or
        an id no block reads from the state.  Each key names exactly one descriptor
        (_source_keys), so equal keys on two PEs are equal descriptors."""
        keys = self.keys[p]
        k = None
        if tid in _COMMON_IDS:
            got = self.key_of.get(id(desc))          # (desc, key): desc kept, so its id stays its own
            if got is None:
                got = self.key_of[id(desc)] = (desc, _source_key(desc, self.numeric_keys, self.pred_keys))
            k = got[1]
        if k is None:
            keys.pop(tid, None)
        else:
            keys[tid] = k

    # ------------------------------------------------------------ aims
    def _want_raw(self, op: I.Instruction) -> str | None:
        """The read-after-write distance the chunk lacks for `op` (consecutive first), if any."""
        aim, i = self.aim, self.index
        lack = aim.lacking.get(op.mnemonic) if aim is not None and i else None
        if not lack:
            return None
        for d in DISTANCES:
            if ("RAW", d) in lack and (d == DISTANCES[0] or i >= 2):
                return d
        return None

    def _aimed_dest(self, op: I.Instruction, pes, used: list[int], alias_ok: list[int], me: tuple) -> int | None:
        """Three times in four, a destination that shows a hazard (WAR, WAW; consecutive or
        distant) or an aliasing kind (overwritten_dest, dest_is_source) the chunk lacks for
        `op`, when the state offers one (None: no such aim, or none offered)."""
        aim, rng, i = self.aim, self.rng, self.index
        lack = aim.lacking.get(op.mnemonic) if aim is not None and i else None
        if not lack:
            return None
        wants = [w for w in _DEST_AIMS if w in lack]
        if not wants or rng.random() >= 0.75:
            return None
        writer, readers, written_by = self.writer, self.readers, self.written_by
        for w in [wants[k] for k in rng.permutation(len(wants))]:
            if w == ("dest_is_source",):
                ok = alias_ok
            elif w == ("overwritten_dest",):
                ok = [t for t in used if all(written_by.get((p, t)) in (me, None) for p in pes)
                      and any(written_by.get((p, t)) == me for p in pes)]
            elif w[0] == "WAW":
                ok = [t for t in used if any((p, t) in writer and distance(writer[(p, t)], i) == w[1] for p in pes)]
            else:
                ok = [t for t in used if any(j != i and distance(j, i) == w[1] for p in pes
                                             for j in readers.get((p, t), ()))]
            if ok:
                return ok[int(rng.integers(len(ok)))]
        return None

    def _again(self) -> tuple | None:
        """Half the time while the chunk lacks overwritten_dest for the previous block's
        instruction: (instruction, DataType, Row, PE_MASK) of that block, to draw it again (a
        destination can then overwrite what it wrote: _aimed_dest)."""
        last, aim = self.last, self.aim
        if last is None or aim is None or not aim.lacks(last[0].mnemonic, "overwritten_dest"):
            return None
        return last if self.rng.random() < 0.5 else None

    def _aimed_tcvt_dst(self, dt: str) -> str | None:
        """A TCVT destination DataType that lets the block overwrite a tile an earlier TCVT of
        the same DataTypes wrote, while the chunk lacks overwritten_dest for TCVT."""
        if self.aim is None or not self.aim.lacks("TCVT", "overwritten_dest"):
            return None
        tcvt, code = I.lookup("TCVT"), datatype(dt).code
        dsts = sorted({w[3] for w in self.written_by.values() if w != "initial" and w[:3] ==
                       (tcvt.mode, tcvt.function, code) and w[3] is not None})
        return datatype(dsts[int(self.rng.integers(len(dsts)))]).name if dsts else None

    # ------------------------------------------------------------ blocks
    def _legal_block(self, index: int, plan=None) -> tuple[Block, dict]:
        """A legal block chosen from the current state (or the planted block's legal form)."""
        rng, shape = self.rng, self.shape
        self.index = index
        if plan is not None:
            op, dt = plan
            mask = PLANTED_MASK
            pes = F.SELECTED_PES[mask]
            row = _regular(dt, shape).Row
            have = {(dt, row): [RESERVED_TILE]}
            preds = {row: [PRED_TILE]}
            src_rows = shape.vrow if op.schema in REGS else row
            if op.schema == I.EXTRACT:               # the window source, GPR offsets (OFFSET_RANGE)
                row = None
        else:
            again = self._again()
            for _ in range(20):
                mask = self._mask() if again is None else again[3]
                cands, have, preds = self._candidates(mask)
                if cands:
                    break
                again = None
            else:
                raise GeneratorError(f"block {index}: nothing can be built from the state")
            pes = F.SELECTED_PES[mask]
            if again is not None and cands.has(*again[:3]):
                op, dt, row = again[:3]
            else:
                aim = frozenset()
                if self.aim is not None:             # the instructions the chunk lacks, else (half
                    aim = self.aim.uncovered         # the time) those that lack a hazard or aliasing
                    if not aim and rng.random() < 0.5:
                        aim = self.aim.wanting
                op, dt, row = cands.draw(rng, aim)
            src_rows = row
            if op.schema in (I.EXTRACT, I.IMG2COL):  # a new tile: tall a fifth of the time
                src_rows = shape.vrow + TALL_ROWS if rng.random() < 0.2 else shape.vrow
        dst, rmode, sat = dt, None, False
        if op.schema == I.CONVERT:
            dsts = self.aim.missing_dtypes if self.aim is not None and self.aim.missing_dtypes else self.tcvt_dsts
            dst = dsts[int(rng.integers(len(dsts)))]
            if plan is None and not (self.aim is not None and self.aim.missing_dtypes):
                dst = self._aimed_tcvt_dst(dt) or dst
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
        b = _block(ctx, v, src_rows)
        # sources; a window source that is a tile of the shape class (an earlier result, or an
        # initial regular tile) is read whole: offsets 0, B.IOR omitted or naming r0 (the zero)
        srcs = []
        window_regs = REGS.get(op.schema)
        want = self._want_raw(op) if plan is None else None
        if op.schema == I.EXTRACT:
            if row is None:
                srcs = [XSRC_TILE]
            else:
                srcs = [self._pick(have[(dt, row)], pes, want)]
                window_regs = (0, 0)
        elif op.schema == I.IMG2COL:
            srcs = [FMAP_TILE]
        elif op.schema == I.INSERT:
            srcs = [self._pick(have[(dt, row)], pes, want)]
            if plan is not None or (self.windows[1] == dt and rng.random() < 0.5):
                srcs.append(INS_TILE)
            else:
                same = sorted(t for k, ids in have.items() if k[0] == dt for t in ids)
                srcs.append(self._pick(same, pes))
                window_regs = (0, 0)
        else:
            numeric = have[(dt, row)]
            for role in range(op.arity):
                if op.schema == I.SELECT and role == 0:
                    srcs.append(self._pick(preds[row], pes))
                    continue
                if op.int_zero_check and dt in _INTEGER_NAMES and role == 1:
                    if plan is None:
                        nz = self._nonzero_on(pes)
                        nz = [t for t in numeric if t in nz]
                    else:
                        nz = numeric
                    srcs.append(self._pick(nz, pes))
                    continue
                if srcs and rng.random() < 0.25 and srcs[-1] in numeric:
                    srcs.append(srcs[-1])                        # both sources one tile
                else:
                    srcs.append(self._pick(numeric, pes, want))
                    want = None
        # destination: a source (aliasing), an existing tile (renamed or overwritten), or a fresh
        # id; once a TIMG2COL has read the feature map on every selected PE, sometimes the map
        r = rng.random()
        held = set().union(*self.state)
        reserved = self.reserved
        used = [t for t in REGULAR_IDS if t in held and t not in reserved]     # REGULAR_IDS ascend
        fresh = [t for t in REGULAR_IDS if t not in held]
        alias_ok = [s for s in srcs if s in REGULAR_IDS and s not in reserved]
        aimed = None if plan is not None else self._aimed_dest(op, pes, used, alias_ok, _writer_key(b))
        if plan is not None:
            dest = fresh[0] if fresh else REGULAR_IDS[-1]
        elif self.fmap_renamable and (self.fmap_read.issuperset(pes) or op.schema == I.IMG2COL) \
                and (rng.random() < 0.1 or op.schema == I.IMG2COL and self.aim is not None
                     and self.aim.lacks(op.mnemonic, "dest_is_source")):
            dest = FMAP_TILE
        elif aimed is not None:
            dest = aimed
        elif r < 0.25 and alias_ok:
            dest = alias_ok[int(rng.integers(len(alias_ok)))]
        elif r < 0.65 and used or not fresh:
            dest = used[int(rng.integers(len(used)))]
        else:
            dest = fresh[0]
        self.last = None if plan is not None else (op, dt, row, mask)
        iot = tuple([TileBinding(s, mask) for s in srcs] + [TileBinding(dest, mask, b.iot[-1].capacity)])
        ior = b.ior
        if ior is not None and window_regs is not None:
            ior = BIor(RegSrc0=window_regs[0], RegSrc1=window_regs[1])
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
            bad = _unsupported(ctx.op, self.con)[0]
            return replace(block, bstart=replace(block.bstart, DataType=datatype(bad).code))
        if reason == "SOURCE_MISSING":
            return _rebind(block, 0, ABSENT_TILE)
        if reason == "SOURCE_KIND":
            if ctx.op.schema == I.SELECT:
                return _rebind(block, 0, RESERVED_TILE)
            return _rebind(block, 0, PRED_TILE)
        if reason == "SOURCE_DATATYPE":
            other = _same_width(ctx.op, ctx.src.name, self.con)[0]
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
        for attempt in range(50):
            if attempt and attempt % 5 == 0:            # a small destination may never exceed the
                self.plan = self._plan()                # peak: another planted instruction
            saved = self.rng.bit_generator.state
            aim = self.aim.snapshot() if self.aim is not None else None
            bound = self._build(probe=True)
            if aim is not None:                      # the second pass draws what the first drew
                self.aim.restore(aim)
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
        self.keys = [dict() for _ in range(F.NUM_PES)]    # what _candidates reads of the state
        self.key_of: dict = {}                      # id(descriptor) -> (descriptor, _source_key)
        for (p, tid), (desc, _, _) in tiles.items():
            self.state[p][tid] = desc
            self._keep_key(p, tid, desc)
        self.last = None                            # the previous block's draw (_again)
        self.writer: dict = {}                      # (pe, tile) -> the block that last wrote it
        self.readers: dict = {}                     # (pe, tile) -> the blocks that read it since
        self.written_by: dict = {key: "initial" for key in tiles}   # (pe, tile) -> _writer_key
        # per PE, the ids of the integer tiles that hold no zero (initial divisors no block overwrote)
        self.nonzero = [{t for t in self.nonzero_init if self.state[p][t].datatype.is_int} for p in range(F.NUM_PES)]
        self.used = self._used()                    # kept up to date by _track
        self.peak = max(self.used)
        self.gone: set = set()                      # window sources some block renamed
        self.fmap_read: set = set()                 # PEs where a TIMG2COL read the feature map
        blocks, words, recorded, fault = [], [], [], None     # recorded: the blocks' record groups
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
            recorded.extend(recs.groups)
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
                           blocks, CL.Records(recorded), executed, fault, run.batch.statuses(),
                           encoding.stream_of_words(words))

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
        the store's peak: the old destination is released only at commit (preflight); the
        hazards' and aliasing's bookkeeping, and what block i showed for the chunk's Aim."""
        dest = block.iot[-1]
        pes = F.SELECTED_PES[dest.PE_MASK]
        srcs = [b.tile for b in block.iot[:-1]]
        op = I.by_carrier(block.bstart.Mode, block.bstart.Function)
        me = _writer_key(block)
        if self.aim is not None:
            self.aim.committed(op.mnemonic, self._carried_dtypes(block, op),
                               self._shows(block, i, pes, srcs, dest.tile))
        used = self.used                             # _used() before this block
        for p in pes:
            desc = run.batch.tile_arrays(p, dest.tile)[0][1]     # the descriptor only: no host copy
            old = self.state[p].get(dest.tile)
            if desc.location == "Local":
                self.peak = max(self.peak, used[p] + desc.capacity)
                used[p] += desc.capacity
            if old is not None and old.location == "Local":
                used[p] -= old.capacity
            self.state[p][dest.tile] = desc
            self._keep_key(p, dest.tile, desc)
            self.nonzero[p].discard(dest.tile)
        readers = self.readers
        for p in pes:
            for t in srcs:
                got = readers.get((p, t))
                if got is None:
                    readers[(p, t)] = {i}
                else:
                    got.add(i)
        for p in pes:
            self.writer[(p, dest.tile)] = i
            readers[(p, dest.tile)] = set()
            self.written_by[(p, dest.tile)] = me
        if dest.tile in self.window_descs:
            self.gone.add(dest.tile)
        if op.schema == I.IMG2COL:
            self.fmap_read.update(pes)

    @staticmethod
    def _carried_dtypes(block: Block, op: I.Instruction) -> tuple:
        d = block.datr
        return (datatype(block.bstart.DataType).name,) + (
            (datatype(d.DataType).name,) if op.schema == I.CONVERT and d is not None and d.DataType is not None else ())

    def _shows(self, block: Block, i: int, pes, srcs: list[int], dest: int) -> set:
        """What block i shows, as streams_coverage counts it from the decoded stream: (hazard
        kind, distance) pairs -- coverage.stream_hazards' rule, kept here a block at a time (that
        function replays a whole stream): RAW where a source's (PE, tile) was last written by
        block j, WAR where the destination's was read by j != i since its last write, WAW where
        it was last written by j -- and aliasing kinds (coverage.stream_aliasing of the block on
        the writers so far)."""
        out = set(C.stream_aliasing([block], 1, self.written_by)[0])
        writer, readers = self.writer, self.readers
        for p in pes:
            for t in srcs:
                j = writer.get((p, t))
                if j is not None:
                    out.add(("RAW", distance(j, i)))
            for j in readers.get((p, dest), ()):
                if j != i:
                    out.add(("WAR", distance(j, i)))
            j = writer.get((p, dest))
            if j is not None:
                out.add(("WAW", distance(j, i)))
        return out


def _writer_key(block: Block) -> tuple:
    """Who wrote a tile, as coverage.stream_aliasing tells writers apart: the instruction's
    carrier, the DataType and B.DATR's DataType (TCVT's destination)."""
    b = block.bstart
    return (b.Mode, b.Function, b.DataType, block.datr.DataType if block.datr else None)


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
                reason: str | None = None, backend: str = "cpu", con: Constraint = EVERY,
                aim: Aim | None = None, position: int | None = None) -> StreamGroup:
    return StreamBuilder(shape, blocks, n, rng, config, reason, backend, con, aim, position).build()


def stream_text(blocks: list[Block], data: bytes | None = None) -> tuple[bytes, str]:
    """The encoded stream (`data` when the caller has it already) and its canonical text (no
    comment lines)."""
    data = encoding.encode(blocks) if data is None else data
    text = "\n".join(line for line in disassemble(blocks).splitlines() if line and not line.startswith("#"))
    return data, text
