"""Commit logs: one record per committed (block, PE) and one per fault (docs/commit-log.md).

Spike's `--log-commits` is the model: what a block made architecturally visible, in the order
it became visible, so that another implementation (RTL in lockstep, silicon traces) can be
checked record by record with `emulator.cosim.compare`.  A commit record is the destination
tile of one selected PE after the block -- the descriptor in docs/state-format.md's columns,
the payload bytes exactly as the tile store holds them, the definedness bitmap -- and that PE's
numeric status; a fault record names the block, the reason code, the field and the message.

Records are built a block at a time as plain arrays (`Records`: `commit_records`,
`block_records`, `fault_group`, `fault_records`) and written by `CommitLog` as the run goes, in
Arrow record batches of many blocks each (`Records.to_batch`): bounded memory,
atomically (isa.atomicio), as an Arrow IPC file (`.arrow`) or JSON lines (`.jsonl`, byte
strings as hex), each record batch or group of lines with its XXH3-128 checksum (chained, so
a removed or reordered batch is found too).  `read_log` reads and checks either; `check_log`
also says the format version and how many checksums matched.
"""
from __future__ import annotations

import json
import os
import pathlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from isa import instructions as I
from isa import jsontext
from isa.atomicio import OutputPathError, atomic_path, check_output_path, quote, shown, why
from isa.datatypes import BY_NAME, datatype
from isa.encoding import MAX_DESCRIPTORS, WORDS
from isa.errors import REASONS, IllegalBlockException
from isa.fields import LAYOUTS, NUM_PES, SELECTED_PES
from kernels.numeric.flags import NAMES as FLAG_NAMES

from .config import MAX_STORE_BYTES
from .stateio import SCHEMA as STATE_SCHEMA, StateFileError, _column_names, _type_text
from .tiles import KINDS, LOCATIONS, REPRESENTATIONS, Descriptor, pack_defined, pack_payloads, to_physical

FORMAT = "tile-emu commit log"
VERSION = 2                        # 2: every record batch / group of lines carries its checksum
VERSIONS = (1, VERSION)            # the versions read_log reads (1: no checksums)
META_KEY = b"tile-emu.commitlog"
COMMIT, FAULT = "commit", "fault"
DECODE_ERROR = "DECODE_ERROR"      # a fault's reason for bytes that do not decode (machine.StreamError.reason)
NO_OFFSET = -1                     # the block came from a Block sequence, not from .tbs bytes
SUFFIXES = (".arrow", ".jsonl")

# The record: where (machine, block, offset), what (mnemonic, the block's DataType), then the
# destination tile in the state file's own columns, the PE's status, and the fault's fields.
_HEAD = [("machine", pa.uint32()), ("block", pa.uint64()), ("offset", pa.int64()),
         ("record", pa.string()), ("mnemonic", pa.string()), ("block_datatype", pa.string())]
TILE_COLUMNS = tuple(f.name for f in STATE_SCHEMA)
_TAIL = [("status", pa.uint8()), ("reason", pa.string()), ("field", pa.string()), ("message", pa.string())]
SCHEMA = pa.schema(_HEAD + list(STATE_SCHEMA) + _TAIL,
                   metadata={META_KEY: json.dumps({"format": FORMAT, "version": VERSION}).encode()})
BINARY_COLUMNS = ("payload", "defined")
# Rows buffered before a record batch is written (about 1 MB of 256-byte tiles): bounded memory
BATCH_ROWS = 4096
# A many-machine log holds up to this many bytes of records in memory before it spills them
HOLD_BYTES = 256 << 20
# Machine-major reordering of a many-machine log reads the spill this many bytes at a time
REORDER_BYTES = 64 << 20


class CommitLogError(ValueError):
    """A commit log that cannot be written or read; the message names the file and the record."""


# ---------------------------------------------------------------------------- records

@dataclass(slots=True)
class Group:
    """Records of one block that share everything but the machine, PE, bytes and status: M
    commits of one destination descriptor (`desc`), or M faults (`desc` None).  Arrays are
    (M,) and (M, bytes); nothing is converted to Arrow until a log writes a batch.  A group
    made from a commit's own arrays (staged_records) holds the (M, elements) physical
    elements and definedness (`elems`, `defined_elems`) instead of `payload`/`defined` and
    is packed when a batch is built, many blocks of one descriptor at a time (`packed()`
    packs one group alone).  Never changed once made."""
    record: str
    block: int
    offset: int
    mnemonic: str
    block_datatype: str
    machine: np.ndarray          # (M,) uint32
    pe: np.ndarray               # (M,) uint8
    status: np.ndarray           # (M,) uint8
    tile: int = 0
    desc: Descriptor | None = None
    payload: np.ndarray | None = None      # (M, desc.payload_nbytes) uint8
    defined: np.ndarray | None = None      # (M, ceil(elements / 8)) uint8
    reason: str = ""
    field: str = ""
    message: str = ""
    elems: np.ndarray | None = None        # (M, desc.elements) physical elements, not yet packed
    defined_elems: np.ndarray | None = None    # (M, desc.elements) bool

    @property
    def rows(self) -> int:
        return len(self.machine)

    def packed(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(payload, defined): the tile-store images and definedness bitmaps, (M, bytes) uint8."""
        if self.payload is not None or self.elems is None:
            return self.payload, self.defined
        return _pack_rows(self.desc, [self.elems], [self.defined_elems])


def _pack_rows(desc: Descriptor, elems: list, defined: list) -> tuple[np.ndarray, np.ndarray]:
    """Rows of physical elements of one descriptor (host or device arrays) -> (payload,
    defined) uint8 images: tiles.pack_payloads and a little-endian bitmap, in one call each."""
    e = _on_host(elems[0] if len(elems) == 1 else _xp(elems[0]).concatenate(elems))
    d = _on_host(defined[0] if len(defined) == 1 else _xp(defined[0]).concatenate(defined))
    return pack_payloads(e.reshape(len(e), -1), desc.container), np.packbits(d.reshape(len(d), -1), axis=1,
                                                                               bitorder="little")


def _xp(a):
    """The array module of `a` (NumPy, or CuPy for a device array)."""
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


class Records:
    """The records of one or more blocks, in order: a sequence of Groups.  `to_batch()` gives
    the Arrow record batch of SCHEMA, `to_pylist()` one dict per record (what compare and
    read_log give), `len()` the number of records; `a + b` concatenates."""

    def __init__(self, groups=()):
        self.groups = tuple([g for g in groups if len(g.machine)])

    def __len__(self) -> int:
        return sum(g.rows for g in self.groups)

    @property
    def num_rows(self) -> int:
        return len(self)

    def __add__(self, other: "Records") -> "Records":
        return Records(self.groups + other.groups)

    def to_batch(self) -> pa.RecordBatch:
        return _batch(self.groups)

    def to_pylist(self) -> list[dict]:
        return self.to_batch().to_pylist()

    def renumbered(self, *, block: int | None = None, offset: int | None = None,
                   machine: int | None = None) -> "Records":
        """These records with every row's block index, byte offset (None: NO_OFFSET) or machine
        index replaced (a one-block run inside a longer one; machine k of a batch run alone)."""
        change = {}
        if block is not None:
            change["block"] = block
            change["offset"] = NO_OFFSET if offset is None else offset
        out = []
        for g in self.groups:
            if machine is not None:
                change["machine"] = np.full(g.rows, machine, np.uint32)
            out.append(replace(g, **change))
        return Records(out)


@runtime_checkable
class LogWriter(Protocol):
    """What a run writes its commit records to (`log=` of Machine.run, MachineBatch.run and the
    engine's runners): `write(records)` with the Records of one block, in block order -- after
    each block commits its commit records, when the stream stops the fault's records, nothing
    after them.  The run never closes it.  Writers: CommitLog (a file, Arrow IPC or JSON lines),
    Collector (memory), and the adapters that renumber records for a run inside another
    (emulator.engine's _Commits and _Machine, `tile-emu run --machine K`'s _Picked);
    tests/emulator/test_commitlog.py checks each satisfies this."""

    def write(self, records: Records) -> None: ...


class Collector:
    """A log that keeps what it is given in memory: `blocks`, the Records of each write in
    order (one per block for a Machine; see Machine.run and MachineBatch.run), and `records()`
    all of them concatenated; `table()` the Arrow table in the order a CommitLog file holds
    them, (machine, block, PE)."""

    def __init__(self):
        self.blocks: list[Records] = []

    def write(self, records: Records) -> None:
        if len(records):
            self.blocks.append(records)

    def records(self) -> Records:
        if len(self.blocks) == 1:         # Records are never changed: the one written is the answer
            return self.blocks[0]
        return Records(g for r in self.blocks for g in r.groups)

    def table(self) -> pa.Table:
        t = pa.Table.from_batches([self.records().to_batch()], SCHEMA)
        return t.take(pc.sort_indices(t, [("machine", "ascending")]))   # stable: (block, PE) order kept


def _rows(arr, n: int, dtype) -> np.ndarray:
    a = np.asarray(arr, dtype)
    return np.full(n, a, dtype) if a.ndim == 0 else a


def _pack(elems: np.ndarray, container: int) -> np.ndarray:
    """(M, elements) physical elements -> (M, bytes) tile-store images (tiles.pack_payloads)."""
    return pack_payloads(np.asarray(elems).reshape(len(elems), -1), container)


def _on_host(a) -> np.ndarray:
    """A NumPy view of an engine array (a CuPy array is copied from the device)."""
    return a if isinstance(a, np.ndarray) else (a.get() if hasattr(a, "get") else np.asarray(a))


def commit_records(*, block: int, offset: int | None, mnemonic: str, block_datatype: str, tile: int,
                   desc: Descriptor, machine, pe, status, elems=None, defined=None, payload=None,
                   defined_bits=None) -> Records:
    """The commit records of one block on M (machine, PE) pairs that committed destination
    tile `tile` with descriptor `desc`: `machine`, `pe`, `status` (M,) arrays or scalars; the
    tiles either as physical elements `elems` (M, elements) and bool `defined` (M, elements),
    as a block's stacked result holds them, or as tile-store images `payload` (M, bytes) and
    `defined_bits` (M, ceil(elements/8)).  Rows stay in the order given (machine-major, PEs
    ascending)."""
    if payload is None:
        elems = np.asarray(elems).reshape(-1, desc.elements)
        payload = _pack(elems, desc.container)
        defined_bits = np.packbits(np.asarray(defined, bool).reshape(len(elems), -1), axis=1, bitorder="little")
    payload = np.asarray(payload, np.uint8).reshape(-1, desc.payload_nbytes)
    n = len(payload)
    return Records([Group(COMMIT, block, NO_OFFSET if offset is None else offset, mnemonic, block_datatype,
                          _rows(machine, n, np.uint32), _rows(pe, n, np.uint8), _rows(status, n, np.uint8),
                          tile, desc, payload, np.asarray(defined_bits, np.uint8).reshape(n, -1))])


def staged_records(staged, *, block: int, offset: int | None, names: tuple[str, str], tile: int,
                   machines=None) -> Records:
    """The commit records of one block from what its commit installs: `staged`, the block's
    machine.Staged results (per PE group: pes, dest descriptor, (S, m, elements) bits and
    definedness, (S, m) status; NumPy or CuPy arrays), as Machine._commit and
    MachineBatch._commit take them; `machines` the (m,) machine indices of the arrays' second
    axis (default: machine 0 alone); `names` block_names(block); `tile` the destination id.
    Rows are PE-major over the machines (each machine's rows in ascending PE order), so a
    stable sort by machine gives a log's (machine, block, PE) order."""
    off = NO_OFFSET if offset is None else offset
    if machines is None and len(staged) == 1:     # one machine, one PE group: the common block
        st = staged[0]
        n = len(st.pes)
        return Records([Group(COMMIT, block, off, names[0], names[1], _zeros(n), _pe_array(st.pes, 1),
                              _on_host(st.status).reshape(n).astype(np.uint8, copy=False), tile, st.dest,
                              elems=st.bits.reshape(n, -1), defined_elems=st.defined.reshape(n, -1))])
    ids = np.zeros(1, np.uint32) if machines is None else np.asarray(machines, np.uint32)
    m = len(ids)
    pieces = [(st, slice(None)) for st in staged]
    flat = [p for st in staged for p in st.pes]
    if flat != sorted(flat):        # PE groups out of PE order: one piece per PE
        pieces = sorted(((st, slice(s, s + 1)) for st in staged for s in range(len(st.pes))),
                        key=lambda x: x[0].pes[x[1].start])
    out = []
    for st, s in pieces:        # the arrays are kept as they are (a commit never writes them again)
        pes = st.pes[s]
        n = len(pes) * m
        out.append(Group(COMMIT, block, off, names[0], names[1],
                         np.concatenate([ids] * len(pes)) if m > 1 else ids.repeat(n), _pe_array(pes, m),
                         _on_host(st.status[s]).reshape(n).astype(np.uint8, copy=False),
                         tile, st.dest, elems=st.bits[s].reshape(n, -1), defined_elems=st.defined[s].reshape(n, -1)))
    return Records(out)


_SMALL: dict = {}          # read-only per-row arrays shared by the records of many blocks


def _zeros(n: int) -> np.ndarray:
    a = _SMALL.get(n)
    if a is None:
        a = _SMALL[n] = np.zeros(n, np.uint32)
        a.flags.writeable = False
    return a


def _pe_array(pes: tuple, m: int) -> np.ndarray:
    """The pe column of PEs `pes` each over m machines (PE-major): shared and read-only up to
    _SMALL_ROWS rows (a run's cohorts have a few member counts), made afresh beyond."""
    key = (pes, m)
    a = _SMALL.get(key)
    if a is None:
        a = np.repeat(np.array(pes, np.uint8), m)
        if len(a) <= _SMALL_ROWS and len(_SMALL) < _SMALL_KEYS:
            a.flags.writeable = False
            _SMALL[key] = a
    return a


_SMALL_ROWS, _SMALL_KEYS = 4096, 1024     # bounds _SMALL's pe columns to 4 MB


def fault_group(machine, block: int, offset: int | None, reason: str, field: str, message: str,
                mnemonic: str = "", block_datatype: str = "") -> Records:
    """The fault records of one block on the machines in `machine` (one each)."""
    ids = np.atleast_1d(np.asarray(machine, np.uint32))
    n = len(ids)
    return Records([Group(FAULT, block, NO_OFFSET if offset is None else offset, mnemonic, block_datatype, ids,
                          np.zeros(n, np.uint8), np.zeros(n, np.uint8), reason=reason, field=field,
                          message=message)])


def _batch(groups) -> pa.RecordBatch:
    """One record batch of SCHEMA holding every record of `groups`, in order."""
    return next(_cuts(groups))


def _cuts(groups, order: np.ndarray | None = None, chunk: int | None = None, grid: int | None = None):
    """Record batches of SCHEMA from groups: values per group or per descriptor (a few distinct
    ones: descriptors are interned) are repeated by index, per-record arrays concatenated -- no
    Python object per record.  Without `order`: one batch of every row, in order.  With it (row
    indices, e.g. a machine-major permutation): the rows it names, `chunk` at a time, each
    batch's bytes gathered into buffers reused every other batch -- so a batch is valid only
    until the one after the next is made (write it first); no buffer as large as the whole log
    is ever touched (first-touch page faults of fresh memory cost more than the copy here).
    `grid` (M): the caller has checked that every group's machine column is 0..M-1 repeated
    (PE-major over M machines, as a batch commit makes it) and `order` is the stable sort by
    machine: a chunk's bytes are then copied group by group as strided (machines, PEs) blocks
    -- one copy, no per-row index -- where every group's rows have one width."""
    groups = list(groups)
    if not groups:
        yield pa.RecordBatch.from_pylist([], schema=SCHEMA)
        return
    counts = np.array([g.rows for g in groups], np.int64)
    starts = np.zeros(len(groups), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])

    def keyed(keys):
        """(distinct keys, per-row index into them)."""
        seen: dict = {}
        idx = np.array([seen.setdefault(k, len(seen)) for k in keys], np.int64)
        return list(seen), np.repeat(idx, counts)

    texts, text_idx = keyed([(g.record, g.mnemonic, g.block_datatype, g.reason, g.field, g.message) for g in groups])
    descs, desc_idx = keyed([g.desc for g in groups])
    rows_of = {"machine": np.concatenate([g.machine for g in groups]),
               "block": np.repeat(np.array([g.block for g in groups], np.uint64), counts),
               "offset": np.repeat(np.array([g.offset for g in groups], np.int64), counts),
               "pe": np.concatenate([g.pe for g in groups]),
               "tile": np.repeat(np.array([g.tile for g in groups], np.uint32), counts),
               "status": np.concatenate([g.status for g in groups])}
    packed, buckets = _packed(groups, counts, per_group=order is not None)
    widths = [[0 if p[k] is None else p[k].shape[1] for p in packed] for k in (0, 1)]
    text_values = [pa.array([t[k] for t in texts], pa.string()) for k in range(6)]

    def dvalues(fn, empty, typ):
        return pa.array([empty if d is None else fn(d) for d in descs], typ)

    def fvalues(fn, empty, typ):
        return dvalues(lambda d: empty if d.fmap is None else fn(d.fmap), empty, typ)

    desc_values = {
        "location": dvalues(lambda d: d.location, "", pa.string()),
        "kind": dvalues(lambda d: d.kind, "", pa.string()),
        "datatype": dvalues(lambda d: "" if d.dtype is None else d.datatype.name, "", pa.string()),
        "row": dvalues(lambda d: d.Row, 0, pa.uint32()),
        "col": dvalues(lambda d: d.Col, 0, pa.uint32()),
        "valid_row": dvalues(lambda d: d.ValidRow, 0, pa.uint32()),
        "valid_col": dvalues(lambda d: d.ValidCol, 0, pa.uint32()),
        "layout": dvalues(lambda d: d.Layout, 0, pa.uint8()),
        "representation": dvalues(lambda d: d.representation, "", pa.string()),
        "capacity": dvalues(lambda d: d.capacity, 0, pa.uint64()),
        "fmap_layout": fvalues(lambda f: f.layout, "", pa.string()),
        "fmap_params": fvalues(lambda f: list(f.params()), [], pa.list_(pa.int64())),
        "fmap_pad_bits": fvalues(lambda f: f.pad_bits, 0, pa.uint64()),
        "fmap_transposed": fvalues(lambda f: f.transposed, False, pa.bool_()),
    }
    # two sets of scratch buffers, used by alternate batches: a log's writer thread may still be
    # writing batch i from one set while batch i + 1 is gathered into the other
    ring = [[np.zeros(0, np.uint8), np.zeros(0, np.uint8)] for _ in range(2)]
    turn = [0]

    def binary_all(k):
        """Every row's bytes, in row order."""
        parts = [p[k] for p in packed]
        ws = set(widths[k])
        if len(ws) == 1 and len(buckets) == 1:       # one group or descriptor: its array as it is
            return np.full(len(rows_of["pe"]), ws.pop(), np.int64), buckets[0][1 + k]
        if len(ws) == 1:                             # one width: each bucket to its rows at once
            width = ws.pop()
            data = np.empty((len(rows_of["pe"]), width), np.uint8)
            for rows, *arrays in buckets:
                data[rows] = arrays[k]
            return np.full(len(data), width, np.int64), data
        return (np.repeat(widths[k], counts),
                np.concatenate([p.reshape(-1) for p in parts if p is not None]))

    def binary_rows(k, rows):
        """The bytes of rows `rows` (global row indices, in output order), into scratch[k]."""
        scratch = ring[turn[0]]
        gid = np.searchsorted(starts, rows, "right") - 1
        local = rows - starts[gid]
        w = np.asarray(widths[k], np.int64)[gid]
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(w, out=offsets[1:])
        if scratch[k].size < offsets[-1]:
            scratch[k] = np.empty(int(offsets[-1]), np.uint8)
        data = scratch[k][: offsets[-1]]
        by = np.argsort(gid, kind="stable")          # output positions grouped by group
        edges = np.flatnonzero(np.diff(gid[by])) + 1
        uniform = len(rows) and (w == w[0]).all()
        for pos in np.split(by, edges) if len(rows) else ():
            g = int(gid[pos[0]])
            src = packed[g][k]
            if src is None or not widths[k][g]:
                continue
            if uniform:
                data.reshape(len(rows), -1)[pos] = src[local[pos]]
            else:
                data[offsets[pos][:, None] + np.arange(widths[k][g])] = src[local[pos]]
        return w, data

    per_machine = None if grid is None else [g.rows // grid for g in groups]      # PEs per machine
    firsts = None if grid is None else np.concatenate([[0], np.cumsum(per_machine)])

    def binary_grid(k, lo, hi):
        """Rows lo..hi-1 of the machine-major order (see `grid`), into scratch[k]; None where
        the widths differ."""
        ws = set(widths[k])
        if len(ws) != 1:
            return None
        width = ws.pop()
        n = hi - lo
        scratch = ring[turn[0]]
        if scratch[k].size < n * width:
            scratch[k] = np.empty(n * width, np.uint8)
        data = scratch[k][: n * width].reshape(n, width)
        if width:
            r = int(firsts[-1])                       # rows per machine
            at = lo
            while at < hi:                            # runs of whole or partial machines
                k0, r0 = divmod(at, r)
                if r0 == 0 and hi - at >= r:
                    k1, r1 = k0 + (hi - at) // r, r
                else:
                    k1, r1 = k0 + 1, min(r, r0 + hi - at)
                dst = data[at - lo: at - lo + (k1 - k0) * (r1 - r0)].reshape(k1 - k0, r1 - r0, width)
                for g, p in enumerate(per_machine):
                    a, b = max(r0, int(firsts[g])), min(r1, int(firsts[g]) + p)
                    if a < b:
                        src = packed[g][k].reshape(p, grid, width)
                        dst[:, a - r0: b - r0] = src[a - firsts[g]: b - firsts[g], k0:k1].transpose(1, 0, 2)
                at += (k1 - k0) * (r1 - r0)
        return np.full(n, width, np.int64), data

    def build(rows, lo=0):
        def pick(a):
            return a if rows is None else a[rows]

        def binary(k):
            got = None if rows is None or grid is None else binary_grid(k, lo, lo + len(rows))
            w, data = got if got is not None else binary_all(k) if rows is None else binary_rows(k, rows)
            offsets = np.zeros(len(w) + 1, np.int64)
            np.cumsum(w, out=offsets[1:])
            data = np.ascontiguousarray(data, np.uint8).reshape(-1)
            if offsets[-1] < 1 << 31:
                return pa.BinaryArray.from_buffers(pa.binary(), len(w), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                                          pa.py_buffer(data)])
            return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(w),
                                                    [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(pa.binary())

        ti, di = pa.array(pick(text_idx)), pa.array(pick(desc_idx))
        cols = {name: pa.array(pick(a)) for name, a in rows_of.items()}
        cols.update({f"{name}": v.take(di) for name, v in desc_values.items()})
        cols.update({name: text_values[k].take(ti)
                     for k, name in enumerate(("record", "mnemonic", "block_datatype", "reason", "field", "message"))})
        cols["payload"], cols["defined"] = binary(0), binary(1)
        return pa.RecordBatch.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)

    if order is None:
        yield build(None)
        return
    step = len(order) if chunk is None else chunk
    for lo in range(0, len(order), max(step, 1)):
        yield build(np.asarray(order[lo: lo + step], np.int64), lo)
        turn[0] ^= 1


def _packed(groups, counts, per_group: bool = False) -> tuple[list[tuple], list[tuple]]:
    """(each group's (payload, defined) arrays, buckets): groups still holding elements are
    packed by descriptor, all blocks of one descriptor in one call (per-block packing costs
    more than the block's own commit on small tiles), or with `per_group` each alone (no
    concatenation: for a caller that moves every group's rows elsewhere anyway).  A bucket is
    (the rows it covers, in row order; payload; defined) of one descriptor or one group."""
    starts = np.zeros(len(groups), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    out = [None] * len(groups)
    buckets = []
    lazy: dict = {}
    for i, g in enumerate(groups):
        if g.payload is None and g.elems is not None and not per_group:
            lazy.setdefault(g.desc, []).append(i)
        else:
            out[i] = g.packed()
            if out[i][0] is not None:
                buckets.append((np.arange(starts[i], starts[i] + g.rows), *out[i]))
    for desc, idx in lazy.items():
        payload, defined = _pack_rows(desc, [groups[i].elems for i in idx], [groups[i].defined_elems for i in idx])
        a = 0
        for i in idx:
            b = a + groups[i].rows
            out[i] = (payload[a:b], defined[a:b])
            a = b
        rows = np.concatenate([np.arange(starts[i], starts[i] + groups[i].rows) for i in idx]) \
            if len(idx) > 1 else np.arange(starts[idx[0]], starts[idx[0]] + groups[idx[0]].rows)
        buckets.append((rows, payload, defined))
    return out, buckets


def block_names(block) -> tuple[str, str]:
    """(mnemonic, DataType name) a record names for a block; "" where the block names none
    (an unassigned opcode, a reserved DataType code)."""
    if block is None:
        return "", ""
    b = block.bstart
    key = (b.Mode, b.Function, b.DataType)
    got = _NAMES.get(key)
    if got is None:
        instr = I.by_carrier(b.Mode, b.Function)
        try:
            dt = datatype(b.DataType).name
        except ValueError:
            dt = ""
        got = _NAMES[key] = ("" if instr is None else instr.mnemonic), dt
    return got


_NAMES: dict = {}          # (Mode, Function, DataType) -> block_names: looked up once per block of a log


def block_records(machine, block, *, index: int, offset: int | None = None, machine_index: int = 0,
                  pes=None) -> Records:
    """The commit records of `block`, which has just committed on `machine` (read through its
    public state: read_tile, status).  The block itself names everything else: the selected
    PEs (`pes`, default the destination binding's PE_MASK; a BlockResult's `pes` when the
    caller has one) and the destination tile.  A strict no-op (PE_MASK=0000) commits nothing
    and has no record.  (A caller holding the committed tiles' arrays -- the machine's own
    commit -- calls commit_records with them and skips the reads.)"""
    mnemonic, dt = block_names(block)
    dest = block.iot[-1]
    pes = SELECTED_PES[dest.PE_MASK] if pes is None else tuple(pes)
    out, run = Records(), []

    def flush():
        if run:
            d = run[0][1].desc
            out.groups += commit_records(
                block=index, offset=offset, mnemonic=mnemonic, block_datatype=dt, tile=dest.tile, desc=d,
                machine=machine_index, pe=[p for p, _ in run], status=[machine.status(p) for p, _ in run],
                payload=np.stack([np.frombuffer(v.payload, np.uint8) for _, v in run]),
                defined_bits=np.stack([np.frombuffer(pack_defined(to_physical(d, v.defined, fill=False)), np.uint8)
                                       for _, v in run])).groups
            run.clear()

    for p in pes:                       # PEs whose destinations share a descriptor share a group
        v = machine.read_tile(p, dest.tile)
        if run and run[0][1].desc != v.desc:
            flush()
        run.append((p, v))
    flush()
    return out


def fault_records(error, machine_index: int = 0, block=None) -> Records:
    """The fault record of a StreamError (emulator.machine): its block index and byte offset,
    the reason code (DECODE_ERROR for bytes that do not decode), the field and the message;
    `block` (when it decoded) gives the mnemonic and DataType."""
    cause = error.cause
    if isinstance(cause, IllegalBlockException):
        field, message = cause.field, cause.message
    else:
        field, message = "", error.detail
    mnemonic, dt = block_names(block)
    return fault_group(machine_index, error.index, error.offset, error.reason, field, message, mnemonic, dt)


# ---------------------------------------------------------------------------- checksums

# docs/commit-log.md, "Checksums".  Each record batch (.arrow) or group of lines (.jsonl)
# carries the XXH3-128 of the checksum before it and of its own bytes; the first one's
# "checksum before" is CHAIN_START, and the log ends with a group of no records (its checksum
# is XXH3-128 of the last one alone) that also holds the number of records.  XXH3-128 (the
# xxhash library; xxhsum -H2) and not SHA-256: a log is written about as fast as a batch runs
# (tens of MB in a tenth of a second), and SHA-256 (1-2 GB/s) would cost a fifth of such a
# run, XXH3 (10+ GB/s) a few percent.  It finds damage, as SHA-256 would; neither is a
# signature (anyone can compute either again).  xxhash releases the GIL on large inputs, so the
# writer thread hashes a batch while the run goes on.
ALGORITHM = "xxh3_128"
CHECKSUM_KEY = b"tile-emu.commitlog." + ALGORITHM.encode()     # .arrow: a record batch's custom metadata
RECORDS_KEY = b"tile-emu.commitlog.records"     # .arrow: the closing batch's, the number of records
CHAIN_START = bytes(16)
_hash = xxhash.xxh3_128                          # seed 0; digest() is the canonical (big-endian) form


def batch_checksum(previous: bytes, batch: pa.RecordBatch) -> bytes:
    """The checksum of an Arrow log's record batch: XXH3-128 of `previous` (the checksum of the
    batch before; CHAIN_START for the first) and the batch's canonical bytes, column by column
    in SCHEMA order -- integers little-endian at their width, `fmap_transposed` one byte (0 or
    1) per record, strings, binaries and `fmap_params` their per-record lengths (uint64
    little-endian) followed by their values (list items as int64) -- so it depends on the
    records alone, not on how Arrow lays out or slices its buffers."""
    h = _hash(previous)
    for column in batch.columns:
        for part in _canonical(column):
            h.update(part)
    return h.digest()


def _canonical(a: pa.Array) -> tuple:
    """The canonical bytes of one column of a batch (batch_checksum), as buffers (no copy of
    the values).  Needs a column without nulls (read_log checks nulls first)."""
    n, at = len(a), a.offset
    if n == 0:
        return ()
    t = a.type
    if pa.types.is_boolean(t):
        return (a.to_numpy(zero_copy_only=False).view(np.uint8),)
    if pa.types.is_integer(t):
        width = t.bit_width // 8
        return (memoryview(a.buffers()[1])[at * width: (at + n) * width],)
    offsets = np.frombuffer(a.buffers()[1], np.int32, n + 1, at * 4)
    lengths = np.diff(offsets).astype("<u8")
    if pa.types.is_list(t):         # fmap_params: int64 items
        items = a.values
        data = memoryview(items.buffers()[1])[(items.offset + offsets[0]) * 8: (items.offset + offsets[-1]) * 8] \
            if offsets[-1] > offsets[0] else b""
    else:
        data = memoryview(a.buffers()[2])[offsets[0]: offsets[-1]] if offsets[-1] > offsets[0] else b""
    return lengths, data


def _closing_checksum(previous: bytes) -> bytes:
    """The checksum of the closing group (no records): XXH3-128 of the checksum before alone."""
    return _hash(previous).digest()


# ---------------------------------------------------------------------------- writing

def log_format(path) -> str:
    """'arrow' or 'jsonl' from the file name; CommitLogError for any other suffix."""
    suffix = pathlib.Path(os.fspath(path)).suffix.lower()
    if suffix not in SUFFIXES:
        raise CommitLogError(f"commit log {shown(path)}: the name must end in .arrow (Arrow IPC) or .jsonl "
                             f"(JSON lines)")
    return suffix[1:]


def check_log_path(path) -> pathlib.Path:
    """Everything about an output log path that can be known before a run: the suffix, an
    existing folder to write in, no folder in the way (CommitLogError, one line)."""
    log_format(path)
    try:
        return check_output_path(path)
    except ValueError as exc:
        raise CommitLogError(f"--log: {exc}") from None


def _json_row(row: dict) -> str:
    for k in BINARY_COLUMNS:
        row[k] = row[k].hex()
    return json.dumps(row, separators=(",", ":"))


def _json_line(obj: dict) -> bytes:
    """One non-record line of a JSON-lines log (the header, a checksum, the closing line)."""
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class CommitLog:
    """A commit log being written: `write(batch)` per block, `close()` at the end (or use it as
    a context manager; an exception discards the file, leaving an existing one as it was).

    Rows are written in the order (machine, block, PE).  A log of one machine is written as
    the records come, a record batch per BATCH_ROWS rows.  With `machines` > 1 the records of a
    block arrive for every machine at once, so they are held -- in memory up to HOLD_BYTES,
    beyond that in a spill file beside the log (Arrow IPC stream): bounded memory -- and
    written machine by machine at `close()`.

    An Arrow log's record batches are written by a thread of its own, one batch in flight at a
    time (the writer holds no lock Python needs), so writing the file overlaps the run's next
    blocks, or the gathering of a many-machine log's next batch; a write error is raised by the
    next `write` or by `close`.  Each batch (each group of at most BATCH_ROWS lines) is written
    with its checksum, chained from the one before (batch_checksum), and `close` ends the log
    with its closing group (docs/commit-log.md, "Checksums")."""

    def __init__(self, path, machines: int = 1):
        self.path = check_log_path(path)
        self.format = log_format(path)
        self.machines = machines
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._ctx = atomic_path(self.path, devices=self.format == "jsonl")
        self._tmp = self._ctx.__enter__()
        self._spill_path = None
        self._held: list[pa.RecordBatch] = []       # machines > 1: records not yet spilled
        self._held_bytes = 0
        self._pool: ThreadPoolExecutor | None = None    # the writer thread, made on first use
        self._writing = None                            # the future of the batch in flight
        self._chain = CHAIN_START                       # the checksum of the last batch written
        self._written = 0                               # records written to the file
        self._carry: pa.Table | None = None             # write_ordered's rows short of a batch
        try:
            self._out = self._open_sink(self._tmp)
        except BaseException as exc:
            self._abort(exc)
            raise

    def _open_sink(self, path):
        if self.format == "arrow":
            sink = pa.OSFile(path, "wb")
            return sink, pa.ipc.new_file(sink, SCHEMA)
        f = open(path, "wb")
        f.write(_json_line({"format": FORMAT, "version": VERSION}))
        return f, None

    def _emit(self, table) -> None:
        if table.num_rows == 0:
            return
        f, writer = self._out
        for b in table.to_batches(max_chunksize=BATCH_ROWS):
            if writer is None:
                text = "".join(_json_row(r) + "\n" for r in b.to_pylist()).encode()
                h = _hash(self._chain)
                h.update(text)
                self._chain = h.digest()
                f.write(text + _json_line({ALGORITHM: h.hexdigest()}))
                self._written += b.num_rows
                continue
            self._settle()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="commitlog")
            self._writing = self._pool.submit(self._write_batch, writer, b)

    def _write_batch(self, writer, b: pa.RecordBatch) -> None:
        """On the writer thread: one record batch with its checksum (batches are written one
        at a time, in order, so the chain is this thread's alone while it runs)."""
        digest = batch_checksum(self._chain, b)
        writer.write_batch(b, custom_metadata={CHECKSUM_KEY: digest.hex().encode()})
        self._chain = digest
        self._written += b.num_rows

    def _write_closing(self) -> None:
        """The closing group: no records, the checksum of the last one alone, the record count."""
        f, writer = self._out
        digest = _closing_checksum(self._chain).hex()
        if writer is None:
            f.write(_json_line({"records": self._written, ALGORITHM: digest}))
        else:
            closing = {CHECKSUM_KEY: digest.encode(), RECORDS_KEY: str(self._written).encode()}
            writer.write_batch(pa.RecordBatch.from_pylist([], schema=SCHEMA), custom_metadata=closing)

    def _settle(self) -> None:
        """Wait until the batch in flight is written (raising its write error, if any).  One
        batch in flight at most: memory stays bounded, and the buffers `_cuts` reuses every
        other batch are free again when the next but one is gathered."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def _stop_writer(self) -> None:
        """The writer thread finished and gone (errors of the batch in flight are the caller's
        to raise: close settles first, abort does not care)."""
        pool, self._pool, self._writing = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True)

    def write(self, records) -> None:
        """Append one block's records: Records (kept as arrays until a batch is written), or
        an Arrow RecordBatch / Table of SCHEMA."""
        n = records.num_rows
        if n == 0:
            return
        if not isinstance(records, Records):
            t = records if isinstance(records, pa.Table) else pa.Table.from_batches([records])
            records = t.cast(SCHEMA) if t.schema != SCHEMA else t
        self.rows += n
        self._pending.append(records)
        self._pending_rows += n
        if self._pending_rows >= BATCH_ROWS:
            self._flush()

    def write_ordered(self, table: pa.Table) -> None:
        """Append records already in the log's order -- machine by machine, a sharded run's shards
        one after the other (emulator/sharded.py) -- written in record batches of BATCH_ROWS
        rows carried across calls: the batches (and checksums) a log of all of them at once
        holds.  Not mixed with `write`."""
        if table.num_rows == 0:
            return
        self.rows += table.num_rows
        t = table if self._carry is None else pa.concat_tables([self._carry, table])
        full = t.num_rows // BATCH_ROWS * BATCH_ROWS
        for lo in range(0, full, BATCH_ROWS):
            self._emit(t.slice(lo, BATCH_ROWS).combine_chunks())
        self._carry = t.slice(full).combine_chunks() if full < t.num_rows else None

    def _flush(self) -> None:
        """The pending records as record batches (runs of Records become one batch each); a
        many-machine log holds them (as they are: plain arrays) until it spills or closes."""
        if not self._pending:
            return
        if self.machines > 1 and self._spill_path is None:
            self._held += self._pending
            self._held_bytes += sum(_nbytes(x) for x in self._pending)
            self._pending, self._pending_rows = [], 0
            if self._held_bytes > HOLD_BYTES:
                self._spill_held()
            return
        batches, groups = [], []
        for x in self._pending:
            if isinstance(x, Records):
                groups += x.groups
                continue
            if groups:
                batches.append(_batch(groups))
                groups = []
            batches += x.combine_chunks().to_batches()
        if groups:
            batches.append(_batch(groups))
        self._pending, self._pending_rows = [], 0
        table = pa.Table.from_batches(batches, SCHEMA).combine_chunks()
        if self._spill_path is None:
            self._emit(table)
        else:
            for b in table.to_batches(max_chunksize=BATCH_ROWS):
                self._spill.write_batch(b)

    def _spill_held(self) -> None:
        """From now on records go to the spill file, the held ones first (in arrival order)."""
        if self._spill_path is None:
            self._spill_path = self._tmp + ".spill"
            self._spill_sink = pa.OSFile(self._spill_path, "wb")
            self._spill = pa.ipc.new_stream(self._spill_sink, SCHEMA)
        self._pending, self._held = self._held + self._pending, []
        self._held_bytes = 0
        self._flush()

    def _write_held(self) -> None:
        """Held records (nothing spilled) -> the log, in one stable sort by machine: the rows'
        order computed on the machine column, each record batch gathered in that order."""
        held, self._held, self._held_bytes = self._held, [], 0
        if all(isinstance(x, Records) for x in held):
            groups = [g for r in held for g in r.groups]
            ids = np.concatenate([g.machine for g in groups])
            m = self.machines
            grid = m if m > 1 and all(g.rows % m == 0 for g in groups) and \
                np.array_equal(ids.reshape(-1, m), np.broadcast_to(np.arange(m, dtype=ids.dtype), (len(ids) // m, m))) \
                else None
            for b in _cuts(groups, np.argsort(ids, kind="stable"), BATCH_ROWS, grid):
                self._emit(pa.Table.from_batches([b], SCHEMA))      # before the next but one reuses its buffers
            return
        batches = []                     # some were given as Arrow tables: sort the table
        for x in held:
            batches += [_batch(x.groups)] if isinstance(x, Records) else x.combine_chunks().to_batches()
        table = pa.Table.from_batches(batches, SCHEMA)
        self._emit(table.take(pc.sort_indices(table, [("machine", "ascending")])))

    def _reorder(self) -> None:
        """Spill (block-major) -> the log, machine by machine: a stable sort by machine of
        each slice of machines keeps (block, PE) order within a machine."""
        self._spill_held()
        self._spill.close()
        self._spill_sink.close()
        with pa.memory_map(self._spill_path) as src:
            batches = list(pa.ipc.open_stream(src))
            total = sum(b.nbytes for b in batches)
            step = max(1, int(self.machines * REORDER_BYTES // max(total, 1)))
            for lo in range(0, self.machines, step):
                hi = lo + step
                if lo == 0 and hi >= self.machines:      # one slice: every record
                    parts = batches
                else:
                    parts = [b.filter(pc.and_(pc.greater_equal(b.column(0), lo), pc.less(b.column(0), hi)))
                             for b in batches]
                t = pa.Table.from_batches(parts, SCHEMA)
                if t.num_rows:
                    self._emit(t.take(pc.sort_indices(t, [("machine", "ascending")])))
        os.unlink(self._spill_path)
        self._spill_path = None

    def close(self) -> None:
        try:
            if self._carry is not None:
                self._emit(self._carry)
                self._carry = None
            self._flush()
            if self._spill_path is not None:
                self._reorder()
            elif self._held:
                self._write_held()
            self._settle()
            self._stop_writer()
            self._write_closing()
            f, writer = self._out
            if writer is not None:
                writer.close()
            f.close()
        except BaseException as exc:
            self._abort(exc)
            raise
        self._ctx.__exit__(None, None, None)

    def _abort(self, exc: BaseException) -> None:
        self._stop_writer()             # before its file is closed under it
        for closer in (getattr(self, "_spill", None), getattr(self, "_spill_sink", None)):
            try:
                closer and closer.close()
            except (OSError, pa.ArrowException):
                pass
        out = getattr(self, "_out", None)
        if out is not None:
            try:
                out[0].close()
            except (OSError, pa.ArrowException):
                pass
        if self._spill_path is not None and os.path.exists(self._spill_path):
            os.unlink(self._spill_path)
        try:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
        except BaseException:       # the context re-raises exc after deleting the temporary
            pass

    def __enter__(self) -> "CommitLog":
        return self

    def __exit__(self, typ, exc, tb) -> None:
        if exc is None:
            self.close()
        else:
            self._abort(exc)


def _nbytes(x) -> int:
    """Bytes a held Records (or Arrow table) keeps alive."""
    if not isinstance(x, Records):
        return x.nbytes
    return sum(sum(a.nbytes for a in (g.payload, g.defined, g.elems, g.defined_elems) if a is not None)
               + g.machine.nbytes * 3 for g in x.groups)


def open_log(path, machines: int = 1) -> CommitLog:
    """A CommitLog for `path` (.arrow or .jsonl); CommitLogError when it cannot be written."""
    try:
        return CommitLog(path, machines)
    except OutputPathError as exc:
        raise CommitLogError(f"--log: {exc}") from None
    except OSError as exc:
        raise CommitLogError(f"commit log {shown(path)}: cannot write ({why(exc)})") from None


def write_log(path, batches, machines: int = 1) -> int:
    """Write every batch to `path`; the number of records."""
    with open_log(path, machines) as log:
        for b in batches:
            log.write(b)
    return log.rows


# ---------------------------------------------------------------------------- reading

_CONTAINER = {name: d.container for name, d in BY_NAME.items()}


@dataclass(frozen=True)
class LogCheck:
    """What check_log found in a log: its records, its format version and how many checksums
    matched (0 for a version 1 log, which carries none)."""
    table: pa.Table
    version: int
    checksums: int


def read_log(path) -> pa.Table:
    """The records of a commit log (.arrow or .jsonl), checked (check_log): CommitLogError
    naming the file and the record for a truncated or altered file, a foreign schema, or a
    record no writer makes."""
    return check_log(path).table


def check_log(path) -> LogCheck:
    """Read and check a commit log: the file (whole, of the record schema and a format
    version this build reads), its checksums (version 2), then every column's nulls, types and
    domains and the records' order, vectorised over the columns (docs/commit-log.md, "Checks
    on reading").  CommitLogError names the file and the first record at fault."""
    fmt = log_format(path)
    table, version, checksums, lines = _read_arrow(path) if fmt == "arrow" else _read_jsonl(path)
    _check_records(path, table, lines)
    return LogCheck(table, version, checksums)


def _version(path, where: str, text) -> int:
    """The format version a log's metadata (`text`, JSON) names, refused unless it is exactly
    {"format": FORMAT, "version": V} with V one this build reads."""
    try:
        meta = jsontext.loads(text, max_depth=jsontext.MAX_DEPTH)
    except jsontext.JsonTextError as exc:
        raise CommitLogError(f"{shown(path)}: {where} is not JSON ({exc})") from None
    want = {"format": FORMAT, "version": VERSION}
    if not isinstance(meta, dict) or list(meta) != list(want) or meta["format"] != FORMAT:
        raise CommitLogError(f"{shown(path)}: {where} is not {json.dumps(want)}: not a tile-emu commit log")
    v = meta["version"]
    if type(v) is not int or v not in VERSIONS:
        raise CommitLogError(f"{shown(path)}: {where} names format version {shown(repr(v))}; this build reads "
                             f"versions {', '.join(map(str, VERSIONS))}")
    return v


def _read_arrow(path):
    try:
        with pa.memory_map(os.fspath(path), "r") as src:
            reader = pa.ipc.open_file(src)
            schema = reader.schema
            got = [reader.get_batch_with_custom_metadata(i) for i in range(reader.num_record_batches)]
    except FileNotFoundError:
        raise CommitLogError(f"{shown(path)}: no such file") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CommitLogError(f"{shown(path)}: not an Arrow IPC file, or truncated ({why(exc)})") from None
    try:
        names = _column_names(path, schema)     # UTF-8, none repeated
    except StateFileError as exc:
        raise CommitLogError(str(exc)) from None
    if names != SCHEMA.names:
        missing = [n for n in SCHEMA.names if n not in names]
        extra = [n for n in names if n not in SCHEMA.names]
        raise CommitLogError(f"{shown(path)}: not a commit log: columns differ"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; unknown {quote(', '.join(extra))}" if extra else "")
                             + ("; repeated or reordered" if not missing and not extra else ""))
    for f in SCHEMA:
        if schema.field(f.name).type != f.type:
            raise CommitLogError(f"{shown(path)}: column {f.name!r} is {_type_text(schema.field(f.name).type)}, "
                                 f"expected {f.type}")
    meta = schema.metadata or {}
    if META_KEY not in meta:
        raise CommitLogError(f"{shown(path)}: no {META_KEY.decode()!r} schema metadata: not a tile-emu commit log")
    if len(meta) != 1:
        extra = ", ".join(k.decode("utf-8", "replace") for k in meta if k != META_KEY)
        raise CommitLogError(f"{shown(path)}: schema metadata other than {META_KEY.decode()!r}: {quote(extra)}")
    version = _version(path, f"the {META_KEY.decode()!r} schema metadata", meta[META_KEY])
    batches = [g.batch for g in got]
    table = pa.Table.from_batches(batches, schema).replace_schema_metadata(SCHEMA.metadata)
    try:
        table.validate(full=True)
    except pa.ArrowException as exc:
        raise CommitLogError(f"{shown(path)}: corrupt Arrow data ({why(exc)})") from None
    _check_nulls(path, table, None)
    return table, version, _arrow_checksums(path, version, batches, [g.custom_metadata for g in got]), None


def _arrow_checksums(path, version: int, batches, metas) -> int:
    """Every record batch's checksum (a version 2 log); the number that matched."""
    if version == 1:
        if any(m for m in metas):
            raise CommitLogError(f"{shown(path)}: a version 1 log with record batch metadata (version 1 has none)")
        return 0
    if not batches or batches[-1].num_rows:
        raise CommitLogError(f"{shown(path)}: the log does not end with its closing record batch (no records, "
                             f"{RECORDS_KEY.decode()!r}): truncated, or not written by tile-emu")
    previous, first = CHAIN_START, 0
    for i, (b, m) in enumerate(zip(batches, metas)):
        closing = i == len(batches) - 1
        keys = [CHECKSUM_KEY, RECORDS_KEY] if closing else [CHECKSUM_KEY]
        meta = dict(m) if m else {}
        where = "the closing record batch" if closing else f"record batch {i}"
        if sorted(meta) != sorted(keys) or len(m or ()) != len(keys):
            raise CommitLogError(f"{shown(path)}: {where}: its metadata keys are not "
                                 f"{', '.join(k.decode() for k in keys)}")
        if not closing and b.num_rows == 0:
            raise CommitLogError(f"{shown(path)}: record batch {i} holds no records (only the closing batch is empty)")
        digest = batch_checksum(previous, b)
        if meta[CHECKSUM_KEY] != digest.hex().encode():
            if closing:
                raise CommitLogError(f"{shown(path)}: the closing record batch does not match its checksum: a record "
                                     f"batch was removed, repeated or reordered, or its checksum changed")
            raise CommitLogError(f"{shown(path)}: record {first} (the first of record batch {i}, records {first}.."
                                 f"{first + b.num_rows - 1}): the batch does not match its checksum: a record of it "
                                 f"was changed after the log was written (or a batch before it removed or reordered)")
        previous, first = digest, first + b.num_rows
    if meta[RECORDS_KEY] != str(first).encode():
        raise CommitLogError(f"{shown(path)}: the closing record batch counts "
                             f"{shown(meta[RECORDS_KEY].decode('utf-8', 'replace'))} records; the log holds {first}")
    return len(batches)


_HEAD, _SUM, _END = b'{"format":', b'{"%s":' % ALGORITHM.encode(), b'{"records":'    # .jsonl: not records


class _NotInteger(ValueError):
    """A JSON number with a fraction or exponent (no log holds one)."""


def _no_float(text):
    raise _NotInteger(text)


def _read_jsonl(path):
    try:
        text = pathlib.Path(path).read_bytes()
    except FileNotFoundError:
        raise CommitLogError(f"{shown(path)}: no such file") from None
    except OSError as exc:
        raise CommitLogError(f"{shown(path)}: cannot read ({why(exc)})") from None
    if not text:        # version 1 wrote no records as an empty file, which a truncation can make too
        raise CommitLogError(f"{shown(path)}: an empty file (a log has its header line; an empty version 1 log "
                             f"cannot be told from a truncated one)")
    ends = np.flatnonzero(np.frombuffer(text, np.uint8) == 10)        # each line's "\n"
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else ends
    if text and not text.endswith(b"\n"):
        last = len(ends)
        tail = text[ends[-1] + 1:] if last else text
        if text.startswith(_HEAD) and last:
            others = 1 + len(_marks(text, starts[1:], ends[1:]))
        else:
            others = 0
        where = f"line {last + 1}" if tail.startswith((_HEAD, _SUM, _END)) else \
            f"record {last - others} (line {last + 1})"
        raise CommitLogError(f"{shown(path)}: {where}: truncated (no final newline)")
    version, checksums, lines = 1, 0, np.arange(len(ends))
    if text.startswith(_HEAD):
        version = _version(path, "line 1", text[: ends[0]])
        if version == 1:
            raise CommitLogError(f"{shown(path)}: line 1: a version 1 log has no header line")
        lines, checksums = _jsonl_checksums(path, text, starts, ends)
    rows = []
    for i, k in enumerate(lines.tolist()):
        line = text[starts[k]: ends[k]]
        where = f"{shown(path)}: record {i} (line {k + 1})"
        try:
            row = jsontext.loads(line, max_depth=jsontext.MAX_DEPTH, parse_float=_no_float, parse_constant=_no_float)
        except jsontext.JsonTextError as exc:
            raise CommitLogError(f"{where}: not JSON ({exc})") from None
        except _NotInteger as exc:
            raise CommitLogError(f"{where}: {shown(str(exc))} is not an integer (a log's numbers are integers)") \
                from None
        if not isinstance(row, dict) or list(row) != SCHEMA.names:
            raise CommitLogError(f"{where}: keys differ from the commit-log record ({', '.join(SCHEMA.names)})")
        for c in BINARY_COLUMNS:
            v = row[c]
            try:
                row[c] = bytes.fromhex(v)
            except (TypeError, ValueError):
                raise CommitLogError(f"{where}: {c!r} is not a hex string") from None
            if len(v) != 2 * len(row[c]) or not (v.islower() or v.isdigit() or not v):    # as written: no
                raise CommitLogError(f"{where}: {c!r} is not lowercase hex, two digits a byte")  # space, no A-F
        rows.append(row)
    try:
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        bad = _first_bad_row(rows)
        raise CommitLogError(f"{shown(path)}: record {bad} (line {lines[bad] + 1}): a value has the wrong type or "
                             f"range ({why(exc, 100)})") from None
    _check_nulls(path, table, lines)
    return table, version, checksums, lines


def _jsonl_checksums(path, text: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, int]:
    """A version 2 JSON-lines log's checksum lines checked against the bytes of the lines
    they close: (the 0-based line numbers of the records, the number of checksums matched)."""
    n = len(ends)
    marks = [k + 1 for k in _marks(text, starts[1:], ends[1:])]
    if not marks or marks[-1] != n - 1 or not text.startswith(_END, starts[n - 1]):
        raise CommitLogError(f"{shown(path)}: line {n}: the log does not end with its closing line "
                             f"({{\"records\":N,\"{ALGORITHM}\":...}}): truncated, or not written by tile-emu")
    previous, first, record = CHAIN_START, 1, 0
    for k in marks:
        closing = k == n - 1
        where = f"{shown(path)}: line {k + 1}"
        try:
            obj = jsontext.loads(text[starts[k]: ends[k]], max_depth=jsontext.MAX_DEPTH)
        except jsontext.JsonTextError as exc:
            raise CommitLogError(f"{where}: a checksum line that is not JSON ({exc})") from None
        keys = ["records", ALGORITHM] if closing else [ALGORITHM]
        if not isinstance(obj, dict) or list(obj) != keys or not _is_digest(obj[ALGORITHM]) \
                or (closing and type(obj["records"]) is not int):
            raise CommitLogError(f"{where}: not a {'closing' if closing else 'checksum'} line "
                                 f"({{{', '.join(repr(x) for x in keys)}}}, 32 lowercase hex digits)")
        count = k - first
        if count == 0 and not closing:
            raise CommitLogError(f"{where}: a checksum line that closes no records")
        h = _hash(previous)
        h.update(memoryview(text)[starts[first]: starts[k]])
        if h.hexdigest() != obj[ALGORITHM]:
            if closing and count == 0:
                raise CommitLogError(f"{where}: the closing line does not match its checksum: a group of lines was "
                                     f"removed, repeated or reordered, or a checksum changed")
            raise CommitLogError(f"{shown(path)}: record {record} (line {first + 1}, the first of lines {first + 1}.."
                                 f"{k}): the lines do not match their checksum (line {k + 1}): a record of them was "
                                 f"changed after the log was written (or lines before them removed or reordered)")
        previous, first, record = h.digest(), k + 1, record + count
    if obj["records"] != record:
        raise CommitLogError(f"{shown(path)}: line {n}: the closing line counts {obj['records']} records; the log "
                             f"holds {record}")
    rec = np.ones(n, bool)
    rec[0] = False
    rec[marks] = False
    return np.flatnonzero(rec), len(marks)


def _marks(text: bytes, starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """Indices of the lines (given by their starts and ends) that are checksum or closing
    lines: candidates by the byte after '{"' (a record starts '{"machine"'), then the prefix."""
    if not len(starts):
        return []
    data = np.frombuffer(text, np.uint8)
    cand = np.flatnonzero((ends - starts > 2) & np.isin(data[np.minimum(starts + 2, len(data) - 1)],
                                                        [_SUM[2], _END[2]]))
    return [k for k in cand.tolist() if text.startswith((_SUM, _END), starts[k])]


def _is_digest(x) -> bool:
    return isinstance(x, str) and len(x) == 2 * len(CHAIN_START) and all(c in "0123456789abcdef" for c in x)


def _first_bad_row(rows) -> int:
    """The first row from_pylist refuses, by bisection (about 2n rows converted, not n tables)."""
    lo, hi = 0, len(rows)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pa.Table.from_pylist(rows[lo:mid], schema=SCHEMA)
            lo = mid
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            hi = mid
    return lo


def _fail(path, t: pa.Table, lines, i: int, what: str):
    line = "" if lines is None else f", line {int(lines[i]) + 1}"
    raise CommitLogError(f"{shown(path)}: record {i} (machine {t['machine'][i].as_py()}, block "
                         f"{t['block'][i].as_py()}{line}): {what}")


def _check_nulls(path, t: pa.Table, lines) -> None:
    """No column holds a null, nor fmap_params an item that is null (the format has none)."""
    for name in t.column_names:
        col = t[name]
        nulls = col.null_count
        if not nulls and pa.types.is_list(col.type):
            flat = pc.list_flatten(col)
            if flat.null_count:
                parents = pc.list_parent_indices(col).to_numpy()
                i = int(parents[np.argmax(pc.is_null(flat).to_numpy(zero_copy_only=False))])
                _fail(path, t, lines, i, f"{name!r} holds a null item (the format has no nulls)")
        if nulls:
            i = int(np.argmax(pc.is_null(col).to_numpy(zero_copy_only=False)))
            if name in ("machine", "block"):
                raise CommitLogError(f"{shown(path)}: record {i}: {name!r} is null (the format has no nulls)")
            _fail(path, t, lines, i, f"{name!r} is null (the format has no nulls)")


def _descriptor_fields() -> list[str]:
    """Every descriptor field a fault names (IllegalBlockException.field): a word of the
    encoding table, a field of it, a B.IOT binding by index and its fields."""
    out = []
    for w in WORDS:
        heads = [w.name] + ([f"{w.name}[{i}]" for i in range(MAX_DESCRIPTORS)] if w.repeatable else [])
        out += [h + tail for h in heads for tail in [""] + [f".{f.name}" for f in w.fields]]
    return out


_DOMAINS: dict = {}


def _domains() -> dict:
    """The value sets of the string columns, from the project's tables (made once)."""
    if not _DOMAINS:
        _DOMAINS.update(
            record=[COMMIT, FAULT],
            mnemonic=[""] + [i.mnemonic for i in I.INSTRUCTIONS],
            block_datatype=[""] + list(BY_NAME),
            datatype=list(BY_NAME),
            reason=list(REASONS) + [DECODE_ERROR],
            field=_descriptor_fields(),
            # a commit: the instruction with a DataType of its exact set, its destination's kind
            # and location, and (but for TCVT, whose destination takes B.DATR.DataType) its DataType
            commit_dtype=[f"{i.mnemonic}/{d}" for i in I.INSTRUCTIONS for d in sorted(i.dtypes)],
            commit_dest=[f"{i.mnemonic}/{i.dest_kind}/{i.location}" for i in I.INSTRUCTIONS],
            same_dtype=[i.mnemonic for i in I.INSTRUCTIONS if i.schema != I.CONVERT and i.dest_kind == "numeric"])
    return _DOMAINS


def _isin(col, values) -> np.ndarray:
    return pc.is_in(col, value_set=pa.array(values, pa.string())).to_numpy(zero_copy_only=False)


def _check_records(path, t: pa.Table, lines=None) -> None:
    """Every record's values against their domains (docs/commit-log.md, "Checks on reading"),
    vectorised over the columns: the first record at fault is named."""
    if t.num_rows == 0:
        return

    def fail_if(mask, what):
        if mask.any():
            _fail(path, t, lines, int(np.argmax(mask)), what)

    def num(name):
        return t[name].to_numpy().astype(np.int64)

    dom = _domains()
    rec = _isin(t["record"], [COMMIT])
    fail_if(~rec & ~_isin(t["record"], [FAULT]), "'record' is neither 'commit' nor 'fault'")
    commit, fault = rec, ~rec
    fail_if(num("offset") < NO_OFFSET, "'offset' is below -1 (a byte offset, or -1 for blocks not from bytes)")
    mnemonic, bdt = t["mnemonic"], t["block_datatype"]
    fail_if(~_isin(mnemonic, dom["mnemonic"]), "'mnemonic' is not an instruction of the table (or \"\")")
    fail_if(~_isin(bdt, dom["block_datatype"]), "'block_datatype' is not a DataType name (or \"\")")
    st = t["status"].to_numpy()
    fail_if(st & ~np.uint8(sum(FLAG_NAMES)) != 0, "'status' has bits above the 5 flags")

    # fault records: a reason code, its field, and every tile column at its empty value
    reason, field = t["reason"], t["field"]
    decode = _isin(reason, [DECODE_ERROR])
    fail_if(fault & ~_isin(reason, dom["reason"]), "'reason' is not a reason code (isa.errors.REASONS, DECODE_ERROR)")
    fail_if(fault & decode & ~_isin(field, [""]), "a DECODE_ERROR fault names a field")
    fail_if(fault & ~decode & ~_isin(field, dom["field"]), "'field' is not a descriptor field (BSTART, B.IOT[1], ...)")
    fail_if(fault & decode & ~(_isin(mnemonic, [""]) & _isin(bdt, [""])),
            "a DECODE_ERROR fault names an instruction or a DataType (the block did not decode)")
    unnamed = _isin(mnemonic, [""])
    fail_if(fault & (unnamed != (decode | _isin(reason, ["UNASSIGNED_OPCODE"]))),
            "'mnemonic' is \"\" exactly when the fault is DECODE_ERROR or UNASSIGNED_OPCODE")
    fail_if(fault & (st != 0), "a fault record carries a status")
    for name in TILE_COLUMNS:
        col = t[name]
        if pa.types.is_string(col.type):
            empty = _isin(col, [""])
        elif pa.types.is_list(col.type) or pa.types.is_binary(col.type):
            empty = pc.equal(pc.binary_length(col) if pa.types.is_binary(col.type) else pc.list_value_length(col),
                             0).to_numpy(zero_copy_only=False)
        else:
            empty = ~col.to_numpy().astype(bool)
        fail_if(fault & ~empty, f"a fault record carries {name!r} (a fault's tile columns hold their empty values)")

    # commit records: no fault fields; the instruction; the destination as validate_tile admits it
    for name in ("reason", "field", "message"):
        fail_if(commit & ~_isin(t[name], [""]), f"a commit record carries a fault's {name!r}")
    fail_if(commit & unnamed, "a commit record names no instruction")
    pair = pc.binary_join_element_wise(mnemonic, bdt, "/")
    fail_if(commit & ~_isin(pair, dom["commit_dtype"]), "'block_datatype' is not one of the instruction's DataTypes")
    pe = num("pe")
    fail_if(commit & (pe >= NUM_PES), "'pe' is not a PE 0..3")
    kind, location, dt, rep = t["kind"], t["location"], t["datatype"], t["representation"]
    fail_if(commit & ~_isin(location, list(LOCATIONS)), f"'location' is not one of {', '.join(LOCATIONS)}")
    fail_if(commit & ~_isin(kind, list(KINDS)), f"'kind' is not one of {', '.join(KINDS)}")
    fail_if(commit & ~_isin(rep, list(REPRESENTATIONS)),
            f"'representation' is not one of {', '.join(REPRESENTATIONS)}")
    predicate = _isin(kind, ["predicate"])
    fail_if(commit & ~predicate & ~_isin(dt, dom["datatype"]), "'datatype' is not a DataType name")
    fail_if(commit & predicate & ~_isin(dt, [""]), "a predicate tile names a DataType")
    dest = pc.binary_join_element_wise(mnemonic, kind, location, "/")
    fail_if(commit & ~_isin(dest, dom["commit_dest"]),
            "the destination's kind or location is not the instruction's (isa.instructions)")
    fail_if(commit & _isin(mnemonic, dom["same_dtype"]) & ~pc.equal(dt, bdt).to_numpy(zero_copy_only=False),
            "'datatype' is not the block's DataType (only TCVT's destination takes another)")
    layout = num("layout")
    fail_if(commit & ~np.isin(layout, list(LAYOUTS)), "'layout' is a reserved Layout code")
    fail_if(commit & predicate & (layout != 0), "a predicate tile is row-major (layout 0)")
    # an instruction's destination is standard and has no feature-map descriptor (preflight.dest_descriptor)
    fail_if(commit & ~_isin(rep, ["standard"]), "'representation' is not standard: a destination in the private "
                                                  "CUBE representation (no instruction writes one)")
    fail_if(commit & ~_isin(t["fmap_layout"], [""]), "'fmap_layout' is not \"\": a destination with a feature-map "
                                                       "descriptor (no instruction writes one)")
    fail_if(commit & (pc.list_value_length(t["fmap_params"]).to_numpy() != 0), "'fmap_params' without fmap_layout")
    fail_if(commit & (t["fmap_pad_bits"].to_numpy() != 0), "'fmap_pad_bits' without fmap_layout")
    fail_if(commit & t["fmap_transposed"].to_numpy(zero_copy_only=False), "'fmap_transposed' without fmap_layout")
    rows, cols = num("row"), num("col")
    fail_if(commit & ((rows == 0) | (cols == 0)), "zero Row or Col")
    vrow, vcol = num("valid_row"), num("valid_col")
    fail_if(commit & ((vrow == 0) | (vcol == 0) | (vrow > rows) | (vcol > cols)),
            "the valid rectangle is empty or exceeds the tile")
    fail_if(commit & (rows.astype(np.float64) * cols > MAX_STORE_BYTES * 8),
            f"Row*Col elements exceed the largest store ({MAX_STORE_BYTES} bytes)")
    elements = rows * cols          # standard tiles (checked above): Row*Col physical elements
    container = _containers(predicate, t["datatype"])
    nbytes = (elements * container + 7) // 8
    capacity = t["capacity"].to_numpy()
    fail_if(commit & ((capacity < nbytes.astype(np.uint64)) | (capacity > MAX_STORE_BYTES)),
            f"'capacity' is below the payload bytes or above the largest store ({MAX_STORE_BYTES})")
    for name, want, bits in (("payload", nbytes, elements * container), ("defined", (elements + 7) // 8, elements)):
        sizes, last = _sizes_and_last_bytes(t[name])
        fail_if(commit & (sizes != want), f"{name!r} holds a number of bytes other than its descriptor's")
        # bits of the last byte past the last element are zero (one state, one image)
        fail_if(commit & (bits % 8 != 0) & ((last >> (bits % 8)) != 0), f"{name!r} has bits set past its last element")
    _check_order(t, commit, pe, fail_if)


def _sizes_and_last_bytes(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's length and last byte (0 for an empty value) of a binary column, read from
    its offsets and data buffers chunk by chunk (no copy of the bytes)."""
    sizes, last = [], []
    for ch in col.chunks:
        if not len(ch):
            continue
        offsets = np.frombuffer(ch.buffers()[1], np.int32, len(ch) + 1, ch.offset * 4).astype(np.int64)
        buf = ch.buffers()[2]
        data = np.frombuffer(buf, np.uint8) if buf is not None and buf.size else np.zeros(1, np.uint8)
        n = np.diff(offsets)
        sizes.append(n)
        last.append(np.where(n > 0, data[np.maximum(offsets[1:] - 1, 0)], 0).astype(np.int64))
    return np.concatenate(sizes), np.concatenate(last)


def _check_order(t: pa.Table, commit: np.ndarray, pe: np.ndarray, fail_if) -> None:
    """The records' order as a log writes it: (machine, block, PE), a block's fault after its
    commits, a machine's fault its last record (the machine stops there); the records of one
    block agree on its offset, instruction, DataType and destination tile."""
    if t.num_rows < 2:
        return
    dm = np.diff(t["machine"].to_numpy().astype(np.int64))
    db = np.diff(t["block"].to_numpy().astype(np.int64))
    back = (dm < 0) | ((dm == 0) & (db < 0))
    bad_pe = (dm == 0) & (db == 0) & commit[1:] & commit[:-1] & (np.diff(pe) <= 0)   # PEs increase in a block
    after_fault = (dm == 0) & ~commit[:-1]                  # a fault ends its block and its machine
    mask = np.r_[False, back | bad_pe | after_fault]
    fail_if(mask, "out of order: a log holds its records by (machine, block, PE), a block's fault after its "
                  "commits and nothing of a machine after its fault")
    same = (dm == 0) & (db == 0)
    for name in ("offset", "mnemonic", "block_datatype", "tile"):
        col = t[name]
        differs = pc.not_equal(col.slice(1), col.slice(0, len(col) - 1)).to_numpy(zero_copy_only=False)
        if name == "tile":
            differs &= commit[1:] & commit[:-1]
        fail_if(np.r_[False, same & differs], f"the records of one block differ in {name!r}")


def _containers(predicate: np.ndarray, dt) -> np.ndarray:
    """Each record's container width in bits (1 for a predicate tile; 8 where the DataType is
    not one, already refused or a fault's empty value)."""
    names = pc.dictionary_encode(dt.combine_chunks() if isinstance(dt, pa.ChunkedArray) else dt)
    per = np.array([_CONTAINER.get(x, 8) for x in names.dictionary.to_pylist()], np.int64)
    return np.where(predicate, 1, per[names.indices.to_numpy()])
