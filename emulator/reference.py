"""The reference machine: 4 PEs, each with a Local and a Matrix tile store, 32 private 64-bit
GPRs and the numeric status of its last block; atomic block execution; streams.  It is the
oracle: it executes every block itself, simply, and everything faster (the batched engine,
emulator/engine.py, for one machine or many) is proven against it by differential tests.  It
imports nothing above it: the public Machine (emulator/machine.py) is this machine on a backend.

Execution of one block (Decision 056-081, 126-128):
  isa.legality.resolve (stateless; runs even for PE_MASK=0000)
  -> PE_MASK=0000: strict no-op, nothing read, allocated or faulted
  -> preflight.plan (descriptor rules on every selected PE; the sources stacked per role)
  -> schemas.EXECUTORS[mnemonic] (snapshot of the elements read, element-data rules, compute)
  -> one commit (ReferenceMachine._commit, given the block's Staged results): new destination
     tile on every selected PE (the old tile with that name released) and each selected PE's
     status.
Any rejection raises IllegalBlockException before the commit, so nothing changes.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import numpy as np

from isa.block import Block
from isa.datatypes import datatype
from isa.errors import DecodeError, IllegalBlockException
from isa.fields import GPR_COUNT, NUM_PES, ZERO_GPR
from isa.legality import resolve

from . import preflight, schemas, semantics
from .config import MachineConfig
from .state import MachineState, PEState, used_bytes, validate_tile
from .tiles import (KINDS, Descriptor, FeatureMap, element_dtype, make_tile, pack_defined, pack_elements,
                    stacked_tiles, to_logical, to_physical)

if TYPE_CHECKING:                 # commitlog imports Arrow (about 150 ms): loaded when a log is written
    from .commitlog import LogWriter

GPR_MASK = (1 << 64) - 1


@dataclass(frozen=True, init=False)
class BlockResult:
    mnemonic: str
    pes: tuple[int, ...]       # selected PEs (empty for PE_MASK=0000: a strict no-op)
    dest: int                  # destination tile id
    status: dict[int, int]     # PE -> numeric status flags (kernels/numeric/flags.py)

    def __init__(self, mnemonic: str, pes: tuple[int, ...], dest: int, status: dict[int, int]):
        # the generated frozen __init__ sets each field through object.__setattr__, which cost
        # a block more than its commit loop; every block returns one
        d = self.__dict__
        d["mnemonic"], d["pes"], d["dest"], d["status"] = mnemonic, pes, dest, status

    @property
    def noop(self) -> bool:
        return not self.pes


class StreamError(Exception):
    """A stream stopped at block `index` by `cause` (IllegalBlockException or isa.DecodeError).
    `offset` is the byte offset of that block's BSTART (None for a Block sequence; for a header
    fault, the header field's); a decode fault's own word offset stays in `cause.offset`, and
    `detail` names it.  State is that of the last committed block."""

    def __init__(self, index: int, offset: int | None, cause: Exception, whole_stream: bool = False):
        self.index = index
        self.offset = offset
        self.cause = cause
        self.whole_stream = whole_stream     # the header or total length is wrong: no block ran
        super().__init__(f"{self.where}: {cause}")

    @classmethod
    def undecodable(cls, index: int, exc: DecodeError) -> "StreamError":
        """Block `index` does not decode: named by its BSTART offset (the word's is in `detail`)."""
        return cls(index, exc.offset if exc.block_offset is None else exc.block_offset, exc)

    @property
    def where(self) -> str:
        """'block 3 (byte offset 136)', or 'stream header (byte offset 0)' for a whole-stream fault."""
        what = "stream header" if self.whole_stream else f"block {self.index}"
        return what + ("" if self.offset is None else f" (byte offset {self.offset})")

    @property
    def reason(self) -> str:
        """The IllegalBlockException reason code, or DECODE_ERROR for a malformed stream."""
        return self.cause.reason if isinstance(self.cause, IllegalBlockException) else "DECODE_ERROR"

    @property
    def detail(self) -> str:
        """The cause as one line to follow `where`: 'SOURCE_MISSING at B.IOT[1]: ...', or
        'DECODE_ERROR at byte offset 72: ...' naming the offending word (or header field)."""
        if isinstance(self.cause, DecodeError):
            return f"DECODE_ERROR at byte offset {self.cause.offset}: {self.cause.reason}"
        return str(self.cause)


@dataclass(frozen=True, init=False)
class Staged:
    """One PE group's results of a block, computed and not yet committed: what a commit
    installs (ReferenceMachine._commit, the batch engine's BatchEngine._commit) and a commit log
    records.  Arrays are (S, m, ...) over the group's S PEs and m machines (m = 1 on one
    machine), physical order."""
    pes: tuple[int, ...]        # the group's PEs
    dest: Descriptor            # their destination descriptor
    bits: Any                   # (S, m, elements) payload
    defined: Any                # (S, m, elements) bool
    status: Any                 # (S, m) uint8: each PE's numeric status after the block
    whole: bool = False         # every element is defined (a whole-tile NORM result): no scan

    def __init__(self, pes, dest, bits, defined, status, whole=False):
        d = self.__dict__               # as BlockResult: one per PE group of every block
        d["pes"], d["dest"], d["bits"], d["defined"], d["status"], d["whole"] = pes, dest, bits, defined, status, whole


def stream_items(stream) -> tuple[Iterator, "StreamError | None"]:
    """((byte offset or None, Block) pairs of a stream, None), or (no pairs, the StreamError) of a
    `.tbs` stream whose header or total length is wrong: then no block runs.  Bytes are a `.tbs`
    stream (a decode fault inside it is raised as the iteration reaches it); anything else is a
    sequence of Blocks."""
    if not isinstance(stream, (bytes, bytearray, memoryview)):
        return ((None, b) for b in stream), None
    from isa import encoding
    data = bytes(stream)
    try:
        encoding.check_header(data)
    except DecodeError as exc:
        return iter(()), StreamError(0, exc.offset, exc, whole_stream=True)
    return encoding.iter_blocks(data), None


def one_block(block, offset: int | None = None) -> Iterator:
    """step's argument as run's (offset, Block) pairs: a Block, or a `.tbs` stream of exactly one
    block (StreamError for a wrong header or an undecodable block; ValueError for a stream of
    another number of blocks)."""
    if isinstance(block, Block):
        return iter([(offset, block)])
    if not isinstance(block, (bytes, bytearray, memoryview)):
        raise TypeError(f"step takes an isa Block or the bytes of a one-block .tbs stream, "
                        f"not {type(block).__name__}")
    items, bad_header = stream_items(block)
    if bad_header is not None:
        raise bad_header
    from isa import encoding
    n = encoding.check_header(bytes(block))[0]
    if n != 1:
        raise ValueError(f"step executes one block; the stream holds {n}")
    try:
        (off, b), = list(items)              # the whole stream decoded, its end checked too
    except DecodeError as exc:
        raise StreamError.undecodable(0, exc) from None
    return iter([(off if offset is None else offset, b)])


def commit_records(staged, block, index, offset, tile):
    """The commit records of a block committed as `staged` (emulator/commitlog.py).  commitlog
    is imported here, on the first block logged: it imports pyarrow, which running blocks
    without a log does not need."""
    from . import commitlog as CL
    return CL.staged_records(staged, block=index, offset=offset, names=CL.block_names(block), tile=tile)


def fault_records(err, block, machine=0):
    """The fault record of a stream stopped by `err` (imported as commit_records says)."""
    from .commitlog import fault_records as records
    return records(err, machine, block)


class Here:
    """How a machine runs the blocks of one stream on its own state (the runner its run/step
    loop asks for: ReferenceMachine._runner): each block by the reference's steps
    (ReferenceMachine._execute) with the planner `planner` (machine, resolved block, PE group)
    -> preflight.Plan, the reference's own by default; the commit records to the log."""

    def __init__(self, machine: "ReferenceMachine", planner=None):
        self.machine, self.planner = machine, planner

    def execute(self, block: Block, log, index: int, offset: int | None) -> "BlockResult":
        res, staged = self.machine._execute(block, self.planner)
        if log is not None and staged:
            log.write(commit_records(staged, block, index, offset, res.dest))
        return res

    def close(self) -> None:
        """Nothing to hand back: the blocks ran on the machine's state."""


def plan_sources(machine, rb, pes) -> preflight.Plan:
    """The reference's planner: preflight.plan, each source role's tiles stacked as one
    semantics.TileStack (the rows of one committed stack read in place, anything else copied,
    block by block)."""
    plan = preflight.plan(machine, rb, pes)
    plan.sources = semantics.stack_sources(rb, plan.sources)
    return plan


@dataclass(frozen=True)
class TileView:
    """A tile as the user sees it: descriptor fields plus logical (Row, Col) raw bits/definedness."""
    pe: int
    tile: int
    desc: Descriptor
    bits: np.ndarray           # (Row, Col) raw encodings (0/1 for predicate tiles)
    defined: np.ndarray        # (Row, Col) bool
    payload: bytes             # exact tile-store byte image (physical order)

    def __getattr__(self, name):   # descriptor fields: view.Row, view.ValidCol, view.Layout ...
        if name in Descriptor.__dataclass_fields__:
            return getattr(self.desc, name)
        raise AttributeError(name)

    @property
    def dtype(self) -> str | None:
        return None if self.desc.dtype is None else self.desc.datatype.name

    @property
    def valid(self) -> np.ndarray:
        return self.bits[: self.desc.ValidRow, : self.desc.ValidCol]


@dataclass
class RunResult:
    """What a stream did on one machine: the BlockResult of every block it committed, and the
    StreamError that stopped it (None when it ran to its end)."""
    results: list[BlockResult]
    error: StreamError | None = None

    @property
    def ok(self) -> bool:
        """The stream ran to its end."""
        return self.error is None

    @property
    def executed(self) -> int:
        """Blocks committed."""
        return len(self.results)


class ReferenceMachine:
    """The reference machine (see the module doc).  `backend` and `why` say where it runs: here,
    on the reference, always."""
    backend = "reference"
    why = "reference backend"

    def __init__(self, config: MachineConfig | None = None):
        self.config = config or MachineConfig()
        self._pes = [PEState() for _ in range(NUM_PES)]
        # Optional fabric model of each PE's engines (emulator.timing.PEEngines): when set, every
        # block is admitted through its Supports check right after stateless legality.
        self.engines = None
        self._steps = 0          # blocks committed through step(): the next step's block index

    # ------------------------------------------------------------ blocks and streams
    def execute(self, block: Block) -> BlockResult:
        return self._execute(block)[0]

    def _execute(self, block: Block, planner=None) -> tuple[BlockResult, list[Staged]]:
        """execute on the reference: the BlockResult and the Staged results it committed (none
        for a strict no-op), which a commit log records.  `planner` (machine, resolved block, PE
        group) -> preflight.Plan plans each PE group (default plan_sources); whatever plans it,
        the plan passed preflight on this machine's state as it is."""
        rb = resolve(block)
        if self.engines is not None:
            self.engines.admit(rb)
        mn = rb.instr.mnemonic
        if rb.PE_MASK == 0:                     # strict no-op: after stateless legality only
            return BlockResult(mn, (), rb.dest.tile, {}), []
        plan_of = plan_sources if planner is None else planner
        staged = []
        for group in preflight.pe_groups(self, rb, rb.pes):    # one group unless TCMP/TCVT source rows differ
            plan = plan_of(self, rb, group)
            out = schemas.EXECUTORS[mn](plan)               # on NumPy, the reference's element rules
            d = plan.dest
            S = len(group)
            bits = to_physical(d, out.bits).reshape(S, 1, -1)
            # a whole-tile NORM result is defined everywhere, in physical order too (the same
            # elements): its definedness is the shared all-defined array of that shape, and its
            # tiles' definedness memo needs no scan
            whole = d.Layout == 0 and d.representation == "standard" and semantics.is_all_defined(out.defined)
            defined = (semantics.all_defined(bits.shape) if whole else
                       to_physical(d, out.defined, fill=False).reshape(S, 1, -1))
            staged.append(Staged(group, d, bits, defined, out.status.reshape(S, 1), whole))
        return self._commit(rb, staged), staged

    def _commit(self, rb, staged: list[Staged]) -> BlockResult:
        """The one point where a block changes this machine, given its results on every PE
        group: each selected PE's destination tile id names its new tile (the old one released)
        and the PE takes its new status.  Nothing here can fail."""
        dest, status = rb.dest.tile, {}
        for st in staged:
            tiles = stacked_tiles(st.dest, st.bits.reshape(len(st.pes), -1), st.defined.reshape(len(st.pes), -1),
                                  st.whole)
            for p, tile, s in zip(st.pes, tiles, st.status.reshape(-1).tolist()):
                pe = self._pes[p]
                pe.tiles[dest] = tile
                pe.status = s
                status[p] = s
        return BlockResult(rb.instr.mnemonic, rb.pes, dest,
                           status if len(staged) == 1 else dict(sorted(status.items())))

    def run(self, stream: bytes | bytearray | memoryview | Sequence[Block] | Iterable[Block],
            log: LogWriter | None = None) -> RunResult:
        """Execute blocks in order; stop at the first block that fails to decode or execute.

        `log` (optional) is a commitlog.LogWriter -- a commitlog.CommitLog (a file), a
        commitlog.Collector (memory) -- and receives commitlog.Records, plain
        arrays: after each block commits, that block's commit records (one per selected PE,
        PEs ascending; a strict no-op commits nothing and writes nothing); when the stream
        stops, the fault's record (block index, byte offset, reason code, field, message),
        and nothing after it.  The records are the same on every backend.  The log is not
        closed here."""
        items, bad_header = stream_items(stream)
        if bad_header is not None:
            if log is not None:
                log.write(fault_records(bad_header, None))
            return RunResult([], bad_header)
        return self._run_items(items, log, 0)

    def _runner(self):
        """What executes the blocks of one stream (execute(block, log, index, offset) ->
        BlockResult, its commit records written to log; close() when the stream ends): the
        reference itself, on this machine's state."""
        return Here(self)

    def _run_items(self, items, log, index: int) -> RunResult:
        """run over (offset, Block) pairs whose first block is block `index` of the stream."""
        runner = self._runner()
        results: list[BlockResult] = []
        block = None
        try:
            for offset, block in items:
                try:
                    results.append(runner.execute(block, log, index, offset))
                except IllegalBlockException as exc:
                    err = StreamError(index, offset, exc)
                    if log is not None:
                        log.write(fault_records(err, block))
                    return RunResult(results, err)
                index += 1
        except DecodeError as exc:
            err = StreamError.undecodable(index, exc)
            if log is not None:
                log.write(fault_records(err, None))
            return RunResult(results, err)
        finally:
            runner.close()
        return RunResult(results)

    def step(self, block, *, offset: int | None = None):
        """Execute one block -- an isa Block, or the bytes of a `.tbs` stream holding exactly
        one block, as `run` reads them -- and return its commit records, a commitlog.Records
        (plain arrays; `.to_batch()` an Arrow record batch, `.to_pylist()` dicts; what
        emulator.cosim.compare takes): exactly what `run(..., log=...)` writes for this block,
        with block index the number of blocks this machine has committed through `step` so far
        and byte offset `offset` (default: -1 for a Block, the BSTART's offset in the bytes).
        A rejection raises the StreamError `run` would report (its `cause` the
        IllegalBlockException or isa.DecodeError; commitlog.fault_records(error, block=block)
        is its fault record), leaves the state byte-identical and does not advance the index."""
        from .commitlog import Collector
        items = one_block(block, offset)
        log = Collector()
        result = self._run_items(items, log, self._steps)
        if result.error is not None:
            raise result.error
        self._steps += 1
        return log.records()

    # ------------------------------------------------------------ GPRs and status
    def set_gpr(self, pe: int, index: int, value: int) -> None:
        """Set GPR r<index>; r0 is the hard-wired zero (docs/assembly.md "GPR index 0")."""
        self._check_pe(pe)
        if not 0 <= index < GPR_COUNT:
            raise ValueError(f"GPR index {index} out of range 0..{GPR_COUNT - 1}")
        if not -(1 << 63) <= value <= GPR_MASK:
            raise ValueError(f"GPR value {value} does not fit 64 bits")
        if index == ZERO_GPR and value & GPR_MASK:
            raise ValueError(f"r0 is the hard-wired zero register; it cannot hold {value:#x}")
        self._pes[pe].gprs[index] = np.uint64(value & GPR_MASK)

    def gpr(self, pe: int, index: int) -> int:
        self._check_pe(pe)
        if index == ZERO_GPR:
            return 0
        return int(self._pes[pe].gprs[index])

    def status(self, pe: int) -> int:
        self._check_pe(pe)
        return self._pes[pe].status

    def statuses(self, pes) -> np.ndarray:
        """The status of each PE of `pes` (PE ids a resolved block selected: no check), uint8:
        what preflight's plan reads (preflight.MachineView)."""
        return _status_array(tuple([self._pes[pe].status for pe in pes]))

    # ------------------------------------------------------------ tiles
    def tiles(self, pe: int) -> list[int]:
        self._check_pe(pe)
        return sorted(self._pes[pe].tiles)

    @property
    def pes(self) -> list[PEState]:
        """The architectural state of each PE as plain data (emulator.state.PEState: tiles,
        GPRs, status), not a copy: what state files and batches read.  Change it only through
        write_tile, delete_tile, set_gpr and blocks."""
        return self._pes

    @property
    def state(self) -> MachineState:
        """This machine's state as plain data (config and `pes`; not a copy)."""
        return MachineState(self.config, self._pes)

    def store(self, pe: int):
        """PE `pe`'s tile store, tile id -> Tile (not a copy; see `pes`): what preflight reads."""
        return self._pes[pe].tiles

    def used_bytes(self, pe: int, location: str, exclude: int | None = None) -> int:
        """Bytes of PE `pe`'s `location` store held by its tiles (other than tile `exclude`)."""
        return used_bytes(self._pes[pe].tiles, location, exclude)

    def write_tile(self, pe: int, tile: int, dtype, data, *, valid_row=None, valid_col=None, col=None,
                   capacity=None, kind="numeric", location="Local", layout=0, defined=None,
                   representation="standard", fmap: FeatureMap | None = None) -> TileView:
        """Create (or replace) tile `tile` on PE `pe` from logical raw bits `data` (rows x Col).

        Physical rows derive from `capacity` (default: the smallest holding the data's rows);
        rows past the data are zero and undefined.  `defined` (same shape as data) defaults to
        all defined.  For a private-CUBE tile the data is the whole logical Row x Col.  Raises
        ValueError on anything a state file would be rejected for.
        """
        self._check_pe(pe)
        data = np.asarray(data)
        if data.ndim == 1:
            data = data.reshape(1, -1) if col is None else data.reshape(-1, col)
        if data.ndim != 2 or data.size == 0:
            raise ValueError("data must be a non-empty 2-D array of raw encodings (rows x Col)")
        n_rows, n_cols = data.shape
        if col is not None and col != n_cols:
            raise ValueError(f"col={col} differs from the data's {n_cols} columns")
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: one of {KINDS}")
        code = None if kind == "predicate" else datatype(dtype).code
        width = 1 if kind == "predicate" else datatype(code).container
        if representation == "cube" or kind == "predicate":   # rows are not capacity-derived
            rows = n_rows
            probe = Descriptor(location, kind, code, rows, n_cols, 0, 0, layout, representation, 0)
            capacity = probe.payload_nbytes if capacity is None else capacity
        else:
            if capacity is None:
                capacity = (n_rows * n_cols * width + 7) // 8
            rows = capacity * 8 // (n_cols * width)
        if not isinstance(capacity, (int, np.integer)) or not 0 <= capacity <= self.config.store_bytes(location):
            raise ValueError(f"capacity {capacity!r} does not fit the {location} store "
                             f"({self.config.store_bytes(location)} bytes)")
        if n_rows > rows:
            raise ValueError(f"capacity {capacity} holds {rows} rows; data has {n_rows}")
        desc = Descriptor(location, kind, code, rows, n_cols,
                          n_rows if valid_row is None else valid_row,
                          n_cols if valid_col is None else valid_col,
                          layout, representation, capacity, fmap)
        full = np.zeros((rows, n_cols), dtype=np.uint64)
        full[:n_rows] = _as_raw(data)
        dmask = np.zeros((rows, n_cols), bool)
        dmask[:n_rows] = True if defined is None else np.asarray(defined, bool).reshape(n_rows, n_cols)
        if width < 64 and np.any(full >> np.uint64(width)):
            raise ValueError(f"data holds values wider than {width} bits")
        elems = to_physical(desc, full.astype(element_dtype(desc)))
        mask = to_physical(desc, dmask, fill=False)
        t = make_tile(desc, elems, mask)
        problem = validate_tile(t, self.config, pe, tile, self.used_bytes(pe, location, exclude=tile))
        if problem:
            raise ValueError(problem)
        self._pes[pe].tiles[tile] = t
        return self.read_tile(pe, tile)

    def read_tile(self, pe: int, tile: int) -> TileView:
        self._check_pe(pe)
        try:
            t = self._pes[pe].tiles[tile]
        except KeyError:
            raise KeyError(f"PE{pe} has no tile {tile}") from None
        d = t.desc
        return TileView(pe, tile, d, to_logical(d, t.elems), to_logical(d, t.defined),
                        pack_elements(t.elems, d.container))

    def delete_tile(self, pe: int, tile: int) -> None:
        self._check_pe(pe)
        self._pes[pe].tiles.pop(tile, None)

    # ------------------------------------------------------------ whole-state operations
    def digest(self) -> bytes:
        """SHA-256 of all architectural state: every tile (descriptor, payload, definedness),
        every GPR and every PE's numeric status.  Equal digests = equal state."""
        h = hashlib.sha256()
        for p, pe in enumerate(self._pes):
            h.update(b"PE%d" % p)
            h.update(pe.gprs.astype("<u8").tobytes())
            h.update(bytes([pe.status]))
            for tid in sorted(pe.tiles):
                t = pe.tiles[tid]
                h.update(repr((tid, t.desc)).encode())
                h.update(pack_elements(t.elems, t.desc.container))
                h.update(pack_defined(t.defined))
        return h.digest()

    def copy(self) -> "ReferenceMachine":
        """An independent reference machine with this state (tiles are immutable, so they are
        shared) and engines."""
        m = ReferenceMachine(self.config)
        m._pes = self.pes_copy()
        m.engines = self.engines
        return m

    def pes_copy(self) -> list[PEState]:
        """Each PE's state as new PEStates sharing the tiles (immutable): what a copy holds."""
        return [PEState(dict(pe.tiles), pe.gprs.copy(), pe.status) for pe in self._pes]

    def __deepcopy__(self, memo):
        return self.copy()

    def __copy__(self):
        return self.copy()

    def save(self, path) -> None:
        from .stateio import save_state
        save_state(self, path)

    @classmethod
    def from_state(cls, state: MachineState) -> "ReferenceMachine":
        """A machine running on `state` (loaded from a file; not copied)."""
        m = cls(state.config)
        m.adopt(state)
        return m

    def adopt(self, state: MachineState) -> None:
        """Run on `state` from now on (not copied; its config must be this machine's)."""
        if state.config != self.config:
            raise ValueError(f"state of configuration {state.config} on a machine of {self.config}")
        self._pes = state.pes

    def _check_pe(self, pe: int) -> None:
        if not (isinstance(pe, (int, np.integer)) and 0 <= pe < NUM_PES):
            raise ValueError(f"PE {pe!r} out of range 0..{NUM_PES - 1}")


@lru_cache(maxsize=4096)      # status values x selected PEs: a stream's few
def _status_array(values: tuple) -> np.ndarray:
    """A shared read-only uint8 array of PE statuses `values` (a plan reads it; status_kept
    copies it)."""
    a = np.array(values, np.uint8)
    a.flags.writeable = False
    return a


def _as_raw(data: np.ndarray) -> np.ndarray:
    """Raw encodings as uint64: unsigned integers, or exact nonnegative integers of another type."""
    kind = data.dtype.kind
    if kind == "u":
        return data.astype(np.uint64)
    if kind in "ib":
        if data.size and data.min() < 0:
            raise ValueError("raw encodings are unsigned; got a negative value")
        return data.astype(np.uint64)
    if kind == "f":
        if not (np.isfinite(data).all() and (data == np.floor(data)).all() and data.min() >= 0
                and data.max() < 2.0 ** 53):
            raise ValueError("float data must hold exact nonnegative integers below 2^53; pass raw "
                             "encodings as unsigned integers (np.uint64 or Python ints)")
        return data.astype(np.uint64)
    if kind == "O":
        flat = [int(v) for v in data.ravel()]
        if flat and (min(flat) < 0 or max(flat) >= 1 << 64):
            raise ValueError("raw encodings must be in [0, 2^64)")
        return np.array(flat, dtype=np.uint64).reshape(data.shape)
    raise ValueError(f"cannot use {data.dtype} data as raw encodings")
