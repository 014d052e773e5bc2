"""Commit logs: one record per committed (block, PE) and one per fault (docs/commit-log.md).

Spike's `--log-commits` is the model: what a block made architecturally visible, in the order
it became visible, so that another implementation (RTL in lockstep, silicon traces) can be
checked record by record with `emulator.cosim.compare`.  A commit record is the destination
tile of one selected PE after the block -- the descriptor in docs/state-format.md's columns,
the payload bytes exactly as the tile store holds them, the definedness bitmap -- and that PE's
numeric status; a fault record names the block, the reason code, the field and the message.

Records are built a block at a time as Arrow record batches (`commit_batch`, `block_records`,
`fault_batch`, `fault_records`) and written by `CommitLog` as the run goes: bounded memory,
atomically (isa.atomicio), as an Arrow IPC file (`.arrow`) or JSON lines (`.jsonl`, byte
strings as hex).  `read_log` reads and checks either.
"""
from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa import instructions as I
from isa import jsontext
from isa.atomicio import OutputPathError, atomic_path, check_output_path, quote, shown, why
from isa.datatypes import BY_NAME, datatype
from isa.errors import IllegalBlockException
from isa.fields import NUM_PES

from .stateio import SCHEMA as STATE_SCHEMA
from .tiles import Descriptor, pack_defined, to_physical

FORMAT = "tile-emu commit log"
VERSION = 1
META_KEY = b"tile-emu.commitlog"
COMMIT, FAULT = "commit", "fault"
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
# Machine-major reordering of a many-machine log reads the spill this many bytes at a time
REORDER_BYTES = 64 << 20


class CommitLogError(ValueError):
    """A commit log that cannot be written or read; the message names the file and the record."""


# ---------------------------------------------------------------------------- records

def _strings(value: str, n: int) -> pa.Array:
    return pa.array([value], pa.string()).take(pa.array(np.zeros(n, np.int64)))


def _binary_rows(rows: np.ndarray) -> pa.Array:
    """A binary array of the rows of a (n, B) uint8 array, without a Python object per row."""
    n, width = rows.shape
    offsets = np.arange(n + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(np.ascontiguousarray(rows).reshape(-1))])


def _full(value, n: int, typ) -> pa.Array:
    return pa.array(np.full(n, value), typ)


def commit_batch(machine, block: int, offset: int | None, mnemonic: str, block_datatype: str, pe, tile: int,
                 desc: Descriptor, payload: np.ndarray, defined: np.ndarray, status) -> pa.RecordBatch:
    """The commit records of one block on M (machine, PE) pairs that committed the same
    destination descriptor: `machine`, `pe`, `status` are (M,) arrays (or scalars),
    `payload` (M, desc.payload_nbytes) and `defined` (M, ceil(elements/8)) uint8 tile-store
    images.  Rows stay in the order given (callers pass machine-major, PEs ascending)."""
    payload = np.asarray(payload, np.uint8)
    defined = np.asarray(defined, np.uint8)
    n = payload.shape[0]
    fm = desc.fmap
    cols = {
        "machine": pa.array(np.broadcast_to(np.asarray(machine, np.uint32), (n,))),
        "block": _full(block, n, pa.uint64()),
        "offset": _full(NO_OFFSET if offset is None else offset, n, pa.int64()),
        "record": _strings(COMMIT, n),
        "mnemonic": _strings(mnemonic, n),
        "block_datatype": _strings(block_datatype, n),
        "pe": pa.array(np.broadcast_to(np.asarray(pe, np.uint8), (n,))),
        "tile": _full(tile, n, pa.uint32()),
        "location": _strings(desc.location, n),
        "kind": _strings(desc.kind, n),
        "datatype": _strings("" if desc.dtype is None else desc.datatype.name, n),
        "row": _full(desc.Row, n, pa.uint32()),
        "col": _full(desc.Col, n, pa.uint32()),
        "valid_row": _full(desc.ValidRow, n, pa.uint32()),
        "valid_col": _full(desc.ValidCol, n, pa.uint32()),
        "layout": _full(desc.Layout, n, pa.uint8()),
        "representation": _strings(desc.representation, n),
        "capacity": _full(desc.capacity, n, pa.uint64()),
        "payload": _binary_rows(payload),
        "defined": _binary_rows(defined),
        "fmap_layout": _strings("" if fm is None else fm.layout, n),
        "fmap_params": pa.array([[] if fm is None else list(fm.params())] * n, pa.list_(pa.int64())),
        "fmap_pad_bits": _full(0 if fm is None else fm.pad_bits, n, pa.uint64()),
        "fmap_transposed": _full(False if fm is None else fm.transposed, n, pa.bool_()),
        "status": pa.array(np.broadcast_to(np.asarray(status, np.uint8), (n,))),
        "reason": _strings("", n), "field": _strings("", n), "message": _strings("", n),
    }
    return pa.RecordBatch.from_arrays(list(cols.values()), schema=SCHEMA)


def fault_batch(machine, block: int, offset: int | None, reason: str, field: str, message: str,
                mnemonic: str = "", block_datatype: str = "") -> pa.RecordBatch:
    """The fault records of one block on the (M,) machines in `machine` (one each): the
    tile columns hold their empty values (pe 0, tile 0, "" strings, empty bytes)."""
    ids = np.atleast_1d(np.asarray(machine, np.uint32))
    n = len(ids)
    cols = {}
    for f in SCHEMA:
        if f.type == pa.string():
            cols[f.name] = _strings("", n)
        elif f.type == pa.binary():
            cols[f.name] = pa.array([b""] * n, pa.binary())
        elif f.type == pa.bool_():
            cols[f.name] = _full(False, n, pa.bool_())
        elif isinstance(f.type, pa.ListType):
            cols[f.name] = pa.array([[]] * n, f.type)
        else:
            cols[f.name] = _full(0, n, f.type)
    cols.update(machine=pa.array(ids), block=_full(block, n, pa.uint64()),
                offset=_full(NO_OFFSET if offset is None else offset, n, pa.int64()),
                record=_strings(FAULT, n), mnemonic=_strings(mnemonic, n),
                block_datatype=_strings(block_datatype, n), reason=_strings(reason, n),
                field=_strings(field, n), message=_strings(message, n))
    return pa.RecordBatch.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)


def block_names(block) -> tuple[str, str]:
    """(mnemonic, DataType name) a record names for a block; "" where the block names none
    (an unassigned opcode, a reserved DataType code)."""
    if block is None:
        return "", ""
    instr = I.by_carrier(block.bstart.Mode, block.bstart.Function)
    try:
        dt = datatype(block.bstart.DataType).name
    except ValueError:
        dt = ""
    return ("" if instr is None else instr.mnemonic), dt


def block_records(machine, block, *, index: int, offset: int | None = None, machine_index: int = 0,
                  pes=None) -> pa.RecordBatch:
    """The commit records of `block`, which has just committed on `machine` (read through its
    public state: read_tile, status).  The block itself names everything else: the selected
    PEs (`pes`, default the destination binding's PE_MASK; a BlockResult's `pes` when the
    caller has one) and the destination tile.  A strict no-op (PE_MASK=0000) commits nothing
    and has no record."""
    mnemonic, dt = block_names(block)
    dest = block.iot[-1]
    pes = tuple(p for p in range(NUM_PES) if dest.PE_MASK >> p & 1) if pes is None else tuple(pes)
    batches, run = [], []

    def flush():
        if run:
            d = run[0][1].desc
            batches.append(commit_batch(
                machine_index, index, offset, mnemonic, dt, [p for p, _ in run], dest.tile, d,
                np.stack([np.frombuffer(v.payload, np.uint8) for _, v in run]),
                np.stack([np.frombuffer(pack_defined(to_physical(d, v.defined, fill=False)), np.uint8)
                          for _, v in run]),
                [machine.status(p) for p, _ in run]))
            run.clear()

    for p in pes:                       # PEs whose destinations share a descriptor share a batch
        v = machine.read_tile(p, dest.tile)
        if run and run[0][1].desc != v.desc:
            flush()
        run.append((p, v))
    flush()
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=SCHEMA)
    return batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def fault_records(error, machine_index: int = 0, block=None) -> pa.RecordBatch:
    """The fault record of a StreamError (emulator.machine): its block index and byte offset,
    the reason code (DECODE_ERROR for bytes that do not decode), the field and the message;
    `block` (when it decoded) gives the mnemonic and DataType."""
    cause = error.cause
    if isinstance(cause, IllegalBlockException):
        field, message = cause.field, cause.message
    else:
        field, message = "", error.detail
    mnemonic, dt = block_names(block)
    return fault_batch(machine_index, error.index, error.offset, error.reason, field, message, mnemonic, dt)


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


class CommitLog:
    """A commit log being written: `write(batch)` per block, `close()` at the end (or use it as
    a context manager; an exception discards the file, leaving an existing one as it was).

    Rows are written in the order (machine, block, PE).  A log of one machine is written as
    the records come, a record batch per BATCH_ROWS rows.  With `machines` > 1 the records of a
    block arrive for every machine at once, so they go to a spill file beside the log (Arrow
    IPC stream, bounded memory) and are written machine by machine at `close()`."""

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
        try:
            self._out = self._open_sink(self._tmp)
            if machines > 1:
                self._spill_path = self._tmp + ".spill"
                self._spill_sink = pa.OSFile(self._spill_path, "wb")
                self._spill = pa.ipc.new_stream(self._spill_sink, SCHEMA)
        except BaseException as exc:
            self._abort(exc)
            raise

    def _open_sink(self, path):
        if self.format == "arrow":
            sink = pa.OSFile(path, "wb")
            return sink, pa.ipc.new_file(sink, SCHEMA)
        return open(path, "w", encoding="utf-8"), None

    def _emit(self, table) -> None:
        if table.num_rows == 0:
            return
        f, writer = self._out
        if writer is not None:
            for b in table.to_batches(max_chunksize=BATCH_ROWS):
                writer.write_batch(b)
        else:
            f.write("".join(_json_row(r) + "\n" for r in table.to_pylist()))

    def write(self, batch) -> None:
        """Append one block's records (a RecordBatch or Table of SCHEMA)."""
        if batch.num_rows == 0:
            return
        if batch.schema != SCHEMA:
            batch = batch.cast(SCHEMA) if isinstance(batch, pa.Table) else pa.Table.from_batches([batch]).cast(SCHEMA)
        self.rows += batch.num_rows
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches([b for x in self._pending for b in
                                       (x.to_batches() if isinstance(x, pa.Table) else [x])], SCHEMA)
        self._pending, self._pending_rows = [], 0
        if self._spill_path is not None:
            for b in table.combine_chunks().to_batches(max_chunksize=BATCH_ROWS):
                self._spill.write_batch(b)
        else:
            self._emit(table.combine_chunks())

    def _reorder(self) -> None:
        """Spill (block-major) -> the log, machine by machine: a stable sort by machine of
        each slice of machines keeps (block, PE) order within a machine."""
        self._spill.close()
        self._spill_sink.close()
        with pa.memory_map(self._spill_path) as src:
            batches = list(pa.ipc.open_stream(src))
            total = sum(b.nbytes for b in batches)
            step = max(1, int(self.machines * REORDER_BYTES // max(total, 1)))
            for lo in range(0, self.machines, step):
                hi = lo + step
                parts = []
                for b in batches:
                    ids = b.column(0)
                    parts.append(b.filter(pc.and_(pc.greater_equal(ids, lo), pc.less(ids, hi))))
                t = pa.Table.from_batches(parts, SCHEMA)
                if t.num_rows:
                    self._emit(t.take(pc.sort_indices(t, [("machine", "ascending")])))
        os.unlink(self._spill_path)
        self._spill_path = None

    def close(self) -> None:
        try:
            self._flush()
            if self._spill_path is not None:
                self._reorder()
            f, writer = self._out
            if writer is not None:
                writer.close()
            f.close()
        except BaseException as exc:
            self._abort(exc)
            raise
        self._ctx.__exit__(None, None, None)

    def _abort(self, exc: BaseException) -> None:
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


def read_log(path) -> pa.Table:
    """The records of a commit log (.arrow or .jsonl), checked: CommitLogError naming the file
    and the record for a truncated or altered file, a foreign schema, or a record whose bytes
    do not fit its descriptor."""
    fmt = log_format(path)
    table = _read_arrow(path) if fmt == "arrow" else _read_jsonl(path)
    _check_records(path, table)
    return table


def _read_arrow(path) -> pa.Table:
    try:
        with pa.memory_map(os.fspath(path), "r") as src:
            table = pa.ipc.open_file(src).read_all()
    except FileNotFoundError:
        raise CommitLogError(f"{shown(path)}: no such file") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CommitLogError(f"{shown(path)}: not an Arrow IPC file, or truncated ({why(exc)})") from None
    names = [f.name for f in table.schema]
    if names != SCHEMA.names:
        missing = [n for n in SCHEMA.names if n not in names]
        extra = [n for n in names if n not in SCHEMA.names]
        raise CommitLogError(f"{shown(path)}: not a commit log: columns differ"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; unknown {quote(', '.join(extra))}" if extra else ""))
    for f in SCHEMA:
        if table.schema.field(f.name).type != f.type:
            raise CommitLogError(f"{shown(path)}: column {f.name!r} is {table.schema.field(f.name).type}, "
                                 f"expected {f.type}")
    try:
        table.validate(full=True)
    except pa.ArrowException as exc:
        raise CommitLogError(f"{shown(path)}: corrupt Arrow data ({why(exc)})") from None
    return table.replace_schema_metadata(SCHEMA.metadata)


def _read_jsonl(path) -> pa.Table:
    try:
        text = pathlib.Path(path).read_bytes()
    except FileNotFoundError:
        raise CommitLogError(f"{shown(path)}: no such file") from None
    except OSError as exc:
        raise CommitLogError(f"{shown(path)}: cannot read ({why(exc)})") from None
    if text and not text.endswith(b"\n"):
        last = text.count(b"\n")
        raise CommitLogError(f"{shown(path)}: record {last} (line {last + 1}): truncated (no final newline)")
    rows = []
    for i, line in enumerate(text.splitlines()):
        where = f"{shown(path)}: record {i} (line {i + 1})"
        try:
            row = jsontext.loads(line)
        except jsontext.JsonTextError as exc:
            raise CommitLogError(f"{where}: not JSON ({exc})") from None
        if not isinstance(row, dict) or list(row) != SCHEMA.names:
            raise CommitLogError(f"{where}: keys differ from the commit-log record ({', '.join(SCHEMA.names)})")
        for k in BINARY_COLUMNS:
            try:
                row[k] = bytes.fromhex(row[k])
            except (TypeError, ValueError):
                raise CommitLogError(f"{where}: {k!r} is not a hex string") from None
        rows.append(row)
    try:
        return pa.Table.from_pylist(rows, schema=SCHEMA)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        bad = _first_bad_row(rows)
        raise CommitLogError(f"{shown(path)}: record {bad}: a value has the wrong type or range "
                             f"({why(exc, 100)})") from None


def _first_bad_row(rows) -> int:
    for i, r in enumerate(rows):
        try:
            pa.Table.from_pylist([r], schema=SCHEMA)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return i
    return 0


def _check_records(path, t: pa.Table) -> None:
    """Every record's values: a known record kind, PE, DataType and representation; payload
    and definedness exactly as long as the descriptor says (vectorised over the records)."""
    n = t.num_rows
    if n == 0:
        return

    def fail(mask, what):
        i = int(np.argmax(mask))
        raise CommitLogError(f"{shown(path)}: record {i} (machine {t['machine'][i].as_py()}, block "
                             f"{t['block'][i].as_py()}): {what}")

    rec = t["record"].to_numpy(zero_copy_only=False)
    fail_if = lambda m, w: fail(m, w) if m.any() else None   # noqa: E731
    fail_if(~np.isin(rec, [COMMIT, FAULT]), "'record' is neither 'commit' nor 'fault'")
    commit = rec == COMMIT
    pe = t["pe"].to_numpy().astype(np.int64)
    fail_if(commit & (pe >= 4), "'pe' is not a PE 0..3")
    kind = t["kind"].to_numpy(zero_copy_only=False)
    dt = t["datatype"].to_numpy(zero_copy_only=False)
    fail_if(commit & ~np.isin(kind, ["numeric", "predicate"]), "'kind' is neither numeric nor predicate")
    fail_if(commit & (kind == "numeric") & ~np.isin(dt, list(_CONTAINER)), "'datatype' is not a DataType name")
    fail_if(commit & (kind == "predicate") & (dt != ""), "a predicate tile names a DataType")
    rep = t["representation"].to_numpy(zero_copy_only=False)
    fail_if(commit & ~np.isin(rep, ["standard", "cube"]), "'representation' is neither standard nor cube")
    rows = t["row"].to_numpy().astype(np.int64)
    cols = t["col"].to_numpy().astype(np.int64)
    fail_if(commit & ((rows == 0) | (cols == 0)), "zero Row or Col")
    fail_if(commit & ((t["valid_row"].to_numpy() > rows) | (t["valid_col"].to_numpy() > cols)),
            "the valid rectangle exceeds the tile")
    cube = rep == "cube"
    elements = np.where(cube, -(-rows // 16) * 16 * (-(-cols // 16) * 16), rows * cols)
    container = _containers(kind, dt)
    nbytes = (elements * container + 7) // 8
    for name, want in (("payload", nbytes), ("defined", (elements + 7) // 8)):
        col = t[name].combine_chunks().cast(pa.large_binary())
        sizes = np.diff(np.frombuffer(col.buffers()[1], np.int64)[col.offset: col.offset + n + 1])
        fail_if(commit & (sizes != want), f"{name!r} holds a number of bytes other than its descriptor's")
        fail_if(~commit & (sizes != 0), f"a fault record carries {name!r} bytes")
    st = t["status"].to_numpy()
    fail_if(st >= 32, "'status' has bits above the 5 flags")
    reason = t["reason"].to_numpy(zero_copy_only=False)
    fail_if(~commit & (reason == ""), "a fault record without a reason code")


def _containers(kind, dt) -> np.ndarray:
    names, inv = np.unique(dt, return_inverse=True)
    per = np.array([_CONTAINER.get(x, 8) for x in names], np.int64)[inv]
    return np.where(kind == "predicate", 1, per)
