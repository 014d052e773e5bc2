"""The machine: 4 PEs, each with a Local and a Matrix tile store, 32 private 64-bit GPRs and the
numeric status of its last block; atomic block execution; streams.

Execution of one block (Decision 056-081, 126-128):
  isa.legality.resolve (stateless; runs even for PE_MASK=0000)
  -> PE_MASK=0000: strict no-op, nothing read, allocated or faulted
  -> preflight.plan (descriptor rules on every selected PE)
  -> semantics.EXECUTORS[mnemonic] (snapshot of the elements read, element-data rules, compute)
  -> one commit (Machine._commit, given the block's Staged results): new destination tile on
     every selected PE (the old tile with that name released) and each selected PE's status.
Any rejection raises IllegalBlockException before the commit, so nothing changes.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from isa.block import Block
from isa.datatypes import datatype
from isa.errors import DecodeError, IllegalBlockException
from isa.fields import GPR_COUNT, NUM_PES, ZERO_GPR
from isa.legality import resolve

from . import preflight, semantics
from .backends import machine_runner, resolve_backend
from .config import MachineConfig
from .state import TILE_ID_LIMIT, MachineState, PEState, used_bytes, validate_tile  # noqa: F401  (re-exported)
from .tiles import (KINDS, Descriptor, FeatureMap, element_dtype, make_tile, pack_defined, pack_elements,
                    rows_of_one_stack, stacked_tiles, to_logical, to_physical)

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
    installs (Machine._commit, MachineBatch._commit) and a commit log records.  Arrays are
    (S, m, ...) over the group's S PEs and m machines (m = 1 on a Machine), physical order."""
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


def _commit_records(staged, block, index, offset, tile):
    from . import commitlog as CL     # not at the top: commitlog reads stateio, which reads this module
    return CL.staged_records(staged, block=index, offset=offset, names=CL.block_names(block), tile=tile)


def _fault_records(err, block, machine=0):
    from .commitlog import fault_records
    return fault_records(err, machine, block)


@dataclass
class RunResult:
    results: list[BlockResult]
    error: StreamError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def executed(self) -> int:
        return len(self.results)


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


class Machine:
    def __init__(self, config: MachineConfig | None = None, backend: str = "reference"):
        self.config = config or MachineConfig()
        self._pes = [PEState() for _ in range(NUM_PES)]
        # Optional fabric model of each PE's engines (emulator.timing.PEEngines): when set, every
        # block is admitted through its Supports check right after stateless legality.
        self.engines = None
        # Where execute/run compute (emulator/backends.py): `reference` here, block by block;
        # `cpu`/`gpu`/`auto` through the backend's one-machine runner (backends.machine_runner).
        self.backend, _, self.why = resolve_backend(backend)
        # The last block's plan over one PE group, to reuse when the same block runs again on the
        # very same source tiles (_plan): (rb, pes, config, (tile id, tiles) per role, stacked
        # sources, dest).
        self._last = None
        self._steps = 0          # blocks committed through step(): the next step's block index

    # ------------------------------------------------------------ blocks and streams
    def execute(self, block: Block) -> BlockResult:
        if self.backend != "reference":
            run = self.run([block])
            if run.error is not None:
                raise run.error.cause
            return run.results[0]
        return self._execute(block)[0]

    def _execute(self, block: Block) -> tuple[BlockResult, list[Staged]]:
        """execute on the reference: the BlockResult and the Staged results it committed (none
        for a strict no-op), which a commit log records."""
        rb = resolve(block)
        if self.engines is not None:
            self.engines.admit(rb)
        mn = rb.instr.mnemonic
        if rb.PE_MASK == 0:                     # strict no-op: after stateless legality only
            return BlockResult(mn, (), rb.dest.tile, {}), []
        staged = []
        for group in preflight.pe_groups(self, rb, rb.pes):    # one group unless TCMP/TCVT source rows differ
            plan = self._plan(rb, group)
            out = semantics.EXECUTORS[mn](plan)
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

    def _plan(self, rb, pes) -> preflight.Plan:
        """preflight.plan with the sources as _stack_sources hands them over.  When the same
        resolved block runs again over the same PEs, with the same config, no B.IOR offsets and
        the very same source tile objects (immutable: same descriptors, same bytes), every
        descriptor rule would pass as it did: only what else the plan depends on -- the store's
        room for the destination, each PE's status -- is checked afresh (preflight.replan),
        and the stacked sources are reused."""
        last = self._last
        if last is not None and last[0] is rb and last[1] == pes and last[2] is self.config:
            if _holds([self._pes[p].tiles for p in pes], last[3]):
                return preflight.replan(self, rb, pes, last[5], list(last[4]))
        plan = preflight.plan(self, rb, pes)
        self._stack_sources(rb, plan)
        if rb.offset_regs is None:
            held = tuple((b.tile, tuple(self._pes[p].tiles[b.tile] for p in pes)) for b in rb.sources)
            self._last = (rb, pes, self.config, held, tuple(plan.sources), plan.dest)
        return plan

    def _stack_sources(self, rb, plan) -> None:
        """Hand the executor each source role whose tiles share one descriptor object as one
        semantics.TileStack over (P, elements) arrays, read in place, as the batched engine
        does.  Tiles that are not rows of one stack yet (write_tile and state files make tiles
        one by one; a block over other PEs made them) are stacked once, and this machine's
        tiles re-pointed at the rows: the same descriptor and bytes, so nothing architectural
        changes (digest, read_tile and every rule see the same tile), and later blocks over
        these PEs read them without a copy.  Runs after preflight.plan passed, on the tiles it
        found; the arrays are read-only like every tile's."""
        done = {}
        P = len(plan.pes)
        for role, binding in enumerate(rb.sources):
            tid = binding.tile
            if tid in done:
                plan.sources[role] = done[tid]
                continue
            tiles = plan.sources[role]
            d0 = tiles[0].desc
            both = rows_of_one_stack(tiles)
            if both is None:
                if any(t.desc is not d0 for t in tiles):     # descriptors differ per PE: stacked per block
                    plan.sources[role] = done[tid] = semantics.stack_tiles(tiles)
                    continue
                known = all(t.__dict__.get("fully_defined", False) for t in tiles)
                new = stacked_tiles(d0, np.stack([t.elems for t in tiles]), np.stack([t.defined for t in tiles]),
                                    known)
                for p, t in zip(plan.pes, new):
                    self._pes[p].tiles[tid] = t
                tiles, both = new, (new[0].stack[0], new[0].stack[1])
            plan.sources[role] = done[tid] = semantics.TileStack(
                (d0,), P, both[0], both[1], fully_defined=all(t.fully_defined for t in tiles))

    def run(self, stream: bytes | bytearray | memoryview | Sequence[Block] | Iterable[Block],
            log=None) -> RunResult:
        """Execute blocks in order; stop at the first block that fails to decode or execute.

        `log` (optional) is anything with a `write(records)` method -- a commitlog.CommitLog
        (a file), a commitlog.Collector (memory) -- and receives commitlog.Records, plain
        arrays: after each block commits, that block's commit records (one per selected PE,
        PEs ascending; a strict no-op commits nothing and writes nothing); when the stream
        stops, the fault's record (block index, byte offset, reason code, field, message),
        and nothing after it.  The records are the same on every backend.  The log is not
        closed here."""
        items, bad_header = stream_items(stream)
        if bad_header is not None:
            if log is not None:
                log.write(_fault_records(bad_header, None))
            return RunResult([], bad_header)
        return self._run_items(items, log, 0)

    def _run_items(self, items, log, index: int) -> RunResult:
        """run over (offset, Block) pairs whose first block is block `index` of the stream."""
        runner = machine_runner(self.backend)
        on_batch = None if runner is None else runner(self)
        results: list[BlockResult] = []
        block = None
        try:
            for offset, block in items:
                try:
                    if on_batch is not None:
                        results.append(on_batch.execute(block, log, index, offset))
                    elif log is None:
                        results.append(self._execute(block)[0])
                    else:
                        res, staged = self._execute(block)
                        results.append(res)
                        if staged:
                            log.write(_commit_records(staged, block, index, offset, res.dest))
                except IllegalBlockException as exc:
                    err = StreamError(index, offset, exc)
                    if log is not None:
                        log.write(_fault_records(err, block))
                    return RunResult(results, err)
                index += 1
        except DecodeError as exc:
            err = StreamError.undecodable(index, exc)
            if log is not None:
                log.write(_fault_records(err, None))
            return RunResult(results, err)
        finally:
            if on_batch is not None:
                on_batch.adopt()
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

    def copy(self, backend: str | None = None) -> "Machine":
        """An independent machine with this state (tiles are immutable, so they are shared), on
        this machine's backend or on `backend`."""
        m = Machine(self.config, "reference" if backend is None else backend)
        m._pes = [PEState(dict(pe.tiles), pe.gprs.copy(), pe.status) for pe in self._pes]
        m.engines = self.engines
        if backend is None:
            m.backend, m.why = self.backend, self.why
        return m

    def __deepcopy__(self, memo):
        return self.copy()

    def __copy__(self):
        return self.copy()

    def save(self, path) -> None:
        from .stateio import save_state
        save_state(self, path)

    @classmethod
    def from_state(cls, state: MachineState, backend: str = "reference") -> "Machine":
        """A machine running on `state` (loaded from a file; not copied)."""
        m = cls(state.config, backend)
        m.adopt(state)
        return m

    def adopt(self, state: MachineState) -> None:
        """Run on `state` from now on (not copied; its config must be this machine's)."""
        if state.config != self.config:
            raise ValueError(f"state of configuration {state.config} on a machine of {self.config}")
        self._pes = state.pes
        self._last = None

    @classmethod
    def load(cls, path, config: MachineConfig | None = None, backend: str = "reference",
             profile: str | None = None) -> "Machine":
        """The one machine of a state file (a file of many: MachineBatch.load or load_machines);
        `profile` (a kernels.numeric.profiles name) overrides the file's numeric profile."""
        from .batchio import load_states
        from .stateio import StateFileError
        states = load_states(path, config)
        if len(states) != 1:
            raise StateFileError(f"{path}: holds {len(states)} machines; load it with MachineBatch.load "
                                 f"or emulator.machine.load_machines")
        m = cls.from_state(states[0], backend)
        if profile is not None:
            m.config = with_profile(m.config, profile)
        return m

    def _check_pe(self, pe: int) -> None:
        if not (isinstance(pe, (int, np.integer)) and 0 <= pe < NUM_PES):
            raise ValueError(f"PE {pe!r} out of range 0..{NUM_PES - 1}")


def _holds(stores, held) -> bool:
    """Whether each store (one per PE) still holds, under each tile id of `held` ((tile id,
    tiles) pairs, one per source role), the very tile object `tiles[k]`."""
    for tid, tiles in held:
        for store, t in zip(stores, tiles):
            if store.get(tid) is not t:
                return False
    return True


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


def with_profile(config: MachineConfig, profile: str) -> MachineConfig:
    """`config` under numeric profile `profile` (kernels.numeric.profiles raises UnknownProfile,
    a ValueError listing the known ones, for a name it does not have)."""
    from dataclasses import replace
    from kernels.numeric.profiles import profile as numeric_profile
    return replace(config, profile=numeric_profile(profile).name)


def load_machines(path, config: MachineConfig | None = None) -> list[Machine]:
    """Every machine of a single- or multi-machine state file, in order."""
    from .batchio import load_states
    return [Machine.from_state(st) for st in load_states(path, config)]
