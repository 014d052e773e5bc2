"""State files holding one or many machines (docs/state-format.md, "Many machines").

A single-machine file is exactly what emulator.stateio writes (a batch of one).  A file of N > 1
machines adds a `machine` column (uint32, the machine each tile row belongs to) and, in the
metadata, `"machines": [{"pes": [...]}, ...]` (N entries) in place of `"pes"`; the `config` is
shared.  Each machine's rows and PE entry are checked by stateio's own loader, so a
multi-machine file accepts exactly what N single-machine files would, and every message names
the machine.
"""
from __future__ import annotations

import json
import re
from array import array
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from isa import jsontext
from isa.atomicio import Shown, atomic_path, shown

from .config import MachineConfig
from .state import MachineState
from .stateio import (FORMAT, META_KEY, SCHEMA, VERSION, StateFileError, config_json, load_table, open_file, pes_json,
                      read_batch, tile_rows)

MACHINE_COLUMN = "machine"
MAX_MACHINES = 1 << 20      # bounds what the metadata of an untrusted file can make the loader build
# A file of many machines is written as one record batch per MACHINES_PER_BATCH consecutive machines
# (a file of at most that many: one record batch), so that a sharded run (emulator/sharded.py), whose
# shards are whole groups, writes the bytes of the same run in one process
MACHINES_PER_BATCH = 1024
BATCH_SCHEMA = pa.schema([(MACHINE_COLUMN, pa.uint32())] + list(SCHEMA))


def batch_table(machines: Sequence, first: int | None = None) -> pa.Table:
    """One table for N machines (one shared configuration); N == 1 gives stateio's own table.
    `first`: the machines are machines first, first + 1, ... of a larger batch (its `machine`
    column numbers them so, always in the many-machine layout)."""
    if not machines:
        raise ValueError("no machines to save")
    config = machines[0].config
    for k, m in enumerate(machines):
        if m.config != config:
            raise ValueError(f"machine {k}: configuration {m.config} differs from machine 0's {config}; "
                             f"a state file holds one configuration")
    if len(machines) == 1 and first is None:
        from .stateio import state_table
        return state_table(machines[0])
    cols: dict[str, list] = {f.name: [] for f in BATCH_SCHEMA}
    for k, m in enumerate(machines):
        rows = tile_rows(m)
        cols[MACHINE_COLUMN] += [(first or 0) + k] * len(rows["pe"])
        for name, values in rows.items():
            cols[name] += values
    meta = {"format": FORMAT, "version": VERSION, "config": config_json(config),
            "machines": [{"pes": pes_json(m)} for m in machines]}
    table = pa.table(cols, schema=BATCH_SCHEMA)
    return table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})


def group_batches(machines: Sequence, first: int = 0, group: int | None = None) -> Iterator[pa.RecordBatch]:
    """The record batches a state file of many machines holds for `machines`, machines first,
    first + 1, ... of the file (first a multiple of the group, MACHINES_PER_BATCH unless `group`
    says): one per group of machines, each built on its own (never a slice of a larger table,
    whose buffers the IPC writer would lay out otherwise), so a group's bytes do not depend on
    what else is written with it."""
    group = group or MACHINES_PER_BATCH
    for a in range(0, len(machines), group):
        t = batch_table(machines[a:a + group], first=first + a)
        yield t.to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist([], BATCH_SCHEMA)


def save_machines(machines: Sequence, path) -> None:
    """Write the machines' states to `path` atomically (a temporary file renamed when complete):
    a file of many machines holds one record batch per MACHINES_PER_BATCH machines."""
    machines = list(machines)
    table = batch_table(machines)
    with atomic_path(path, devices=False) as tmp:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            if len(machines) == 1:
                writer.write_table(table)
                return
            for b in group_batches(machines, 0, MACHINES_PER_BATCH):
                writer.write_batch(b)


# ---------------------------------------------------------------- reading, one machine at a time

_SPACE = re.compile(r"[ \t\n\r]*")        # JSON's insignificant whitespace


class _Entries:
    """The `machines` list of a batch file's metadata, indexed but not parsed: entry k is parsed
    when machine k is read, so the metadata of N machines costs its text, not N object trees."""

    def __init__(self, text: str, starts: array, ends: array):
        self._text, self._starts, self._ends = text, starts, ends

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, k: int):
        return json.loads(self._text[self._starts[k]:self._ends[k]])   # parsed once already: it loads


def _index_meta(raw: bytes | None) -> dict | None:
    """The metadata JSON object with its `machines` array indexed (`_Entries`), or None when it is
    not a JSON object or nests deeper than isa.jsontext.MAX_DEPTH (stateio's loader then says
    precisely why).  The stdlib parser has no lazy
    mode, so this walks the two outer levels itself and hands every value to json's raw_decode:
    it accepts exactly what json.loads accepts (a later duplicate key wins) while holding one
    machine's entry at a time."""
    if raw is None:
        return None
    try:
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        decode = json.JSONDecoder().raw_decode          # json.loads's own parser and limits
        i = _SPACE.match(text, 0).end()
        if text[i] != "{":
            return None
        meta: dict = {}
        i = _SPACE.match(text, i + 1).end()
        while text[i] != "}":
            if text[i] != '"':
                return None
            key, i = decode(text, i)
            i = _SPACE.match(text, i).end()
            if text[i] != ":":
                return None
            i = _SPACE.match(text, i + 1).end()
            if key == "machines" and text[i] == "[":
                meta[key], i = _index_list(text, i, decode)
            else:
                meta[key], i = decode(text, i)
                jsontext.check_depth(meta[key])      # later json.dumps of it must not recurse past the limit
            i = _SPACE.match(text, i).end()
            if text[i] == ",":
                i = _SPACE.match(text, i + 1).end()
                if text[i] == "}":
                    return None                        # a trailing comma
            elif text[i] != "}":
                return None
        if _SPACE.match(text, i + 1).end() != len(text):
            return None                                # data after the object
        return meta
    except (ValueError, RecursionError, IndexError):   # IndexError: the text ends early
        return None


def _index_list(text: str, i: int, decode) -> tuple[_Entries, int]:
    """The array starting at text[i] ('['), each element parsed and dropped, its span kept (at most
    MAX_MACHINES + 1 of them: more is refused by the count check anyway)."""
    starts, ends = array("q"), array("q")
    count = 0
    i = _SPACE.match(text, i + 1).end()
    while text[i] != "]":
        if count:
            if text[i] != ",":
                raise ValueError("expected ','")
            i = _SPACE.match(text, i + 1).end()
        start = i
        entry, i = decode(text, i)
        if text.count("[", start, i) + text.count("{", start, i) > jsontext.MAX_DEPTH:
            jsontext.check_depth(entry)              # (fewer brackets than that: shallow enough)
        count += 1
        if count <= MAX_MACHINES + 1:
            starts.append(start)
            ends.append(i)
        i = _SPACE.match(text, i).end()
    return _Entries(text, starts, ends), i + 1


def _machines_meta(path, schema: pa.Schema, meta, nulls: int) -> _Entries:
    if meta is None or meta.get("format") != FORMAT:
        raise StateFileError(f"{shown(path)}: metadata {META_KEY.decode()!r} is not a {FORMAT!r} JSON object")
    if meta.get("version") != VERSION:
        raise StateFileError(f"{shown(path)}: state format version {shown(repr(meta.get('version')))} (this build reads {VERSION})")
    entries = meta.get("machines")
    if not isinstance(entries, _Entries) or not 1 <= len(entries) <= MAX_MACHINES:
        raise StateFileError(f"{shown(path)}: metadata 'machines' must list 1..{MAX_MACHINES} machines "
                             f"(a multi-machine file has a {MACHINE_COLUMN!r} column)")
    if "pes" in meta:
        raise StateFileError(f"{shown(path)}: metadata has both 'pes' (one machine) and 'machines' (many)")
    if MACHINE_COLUMN not in schema.names:
        raise StateFileError(f"{shown(path)}: metadata lists machines but column {MACHINE_COLUMN!r} is missing")
    kind = schema.field(MACHINE_COLUMN).type
    if kind != pa.uint32():
        raise StateFileError(f"{shown(path)}: column {MACHINE_COLUMN!r} has type {kind}, expected uint32")
    if nulls:
        raise StateFileError(f"{shown(path)}: column {MACHINE_COLUMN!r} holds nulls (the format uses none)")
    return entries


class StateFile:
    """A state file of one or many machines, open for reading one machine at a time.

    Opening reads every record batch once (validated in full, one batch in memory at a time:
    each is read into memory of its own and freed with it, so the file's pages do not stay with
    the process), keeps the `machine` column (4 bytes a row) and indexes the metadata;
    `state(k)` then reads machine k's rows and PE entry alone, through stateio's single-machine
    loader, and `rows(a, b)` the rows of machines [a, b) (emulator.batchscan).  So `show`,
    `diff` and `--machine K` need memory for one machine (or one block) plus the metadata's
    text, whatever the count.  `mapped=True` memory-maps the file instead (no copy of a batch,
    but its pages count as the process's memory while the file is open)."""

    def __init__(self, path, mapped: bool = False):
        self.path = path
        self._reader = reader = open_file(path, mapped)
        schema = reader.schema
        names = schema.names                      # open_file checked them
        typed = MACHINE_COLUMN in names and schema.field(MACHINE_COLUMN).type == pa.uint32()
        offsets, ids, nulls = [0], [], 0
        for i in range(reader.num_record_batches):
            batch = read_batch(path, reader, i)
            offsets.append(offsets[-1] + batch.num_rows)
            if typed:
                col = batch.column(MACHINE_COLUMN)
                nulls += col.null_count
                if not nulls:
                    ids.append(np.array(col.to_numpy(), np.uint32))
        self._offsets = np.array(offsets, np.int64)
        self._order = None
        self._batch: tuple[int, pa.RecordBatch] | None = None
        self._schema = schema.remove_metadata()
        meta = _index_meta((schema.metadata or {}).get(META_KEY))
        if MACHINE_COLUMN not in names and not (meta and "machines" in meta):
            self._entries = None                  # one machine, as stateio reads it
            return
        self._entries = _machines_meta(path, schema, meta, nulls)
        self._config = meta.get("config", None)
        self._has_config = "config" in meta
        n = len(self._entries)
        ids = np.concatenate(ids) if ids else np.zeros(0, np.uint32)
        if ids.size and int(ids.max()) >= n:
            row = int(np.argmax(ids >= n))
            raise StateFileError(f"{shown(path)}: row {row} column {MACHINE_COLUMN!r}: machine {int(ids[row])} is not "
                                 f"among the {n} the metadata lists")
        # rows are written sorted by machine; any order loads (then 8 more bytes a row)
        self._order = None if (ids[1:] >= ids[:-1]).all() else np.argsort(ids, kind="stable")
        self._bounds = np.searchsorted(ids if self._order is None else ids[self._order], np.arange(n + 1))

    def __len__(self) -> int:
        return 1 if self._entries is None else len(self._entries)

    def _get_batch(self, i: int) -> pa.RecordBatch:
        if self._batch is None or self._batch[0] != i:   # validated when the file was opened
            self._batch = (i, read_batch(self.path, self._reader, i, validate=False))
        return self._batch[1]

    def _rows(self, lo: int, hi: int) -> pa.Table:
        """Rows [lo, hi) in machine order (the file's rows, or the stable sort of them)."""
        pieces = []
        if self._order is None:
            first = int(np.searchsorted(self._offsets, lo, "right")) - 1
            for b in range(max(first, 0), len(self._offsets) - 1):
                start, stop = self._offsets[b], self._offsets[b + 1]
                if start >= hi:
                    break
                if stop > lo:
                    pieces.append(self._get_batch(b).slice(max(lo, start) - start, min(hi, stop) - max(lo, start)))
        else:
            rows = self._order[lo:hi]                   # ascending: a stable sort keeps file order
            which = np.searchsorted(self._offsets, rows, "right") - 1
            for b in np.unique(which):
                local = rows[which == b] - self._offsets[b]
                pieces.append(self._get_batch(int(b)).take(pa.array(local)))
        return pa.Table.from_batches(pieces, self._schema)

    def rows(self, first: int, stop: int) -> pa.Table:
        """The tile rows of machines [first, stop) in machine order, with the `machine` column
        of a multi-machine file (emulator.batchscan reads many machines so)."""
        if self._entries is None:
            return self._rows(0, int(self._offsets[-1]))
        return self._rows(int(self._bounds[first]), int(self._bounds[stop]))

    def table(self, k: int) -> pa.Table:
        """Machine k's rows and PE entry as a single-machine state table: what `state(k)` loads
        (two equal tables load as the same state, or fail alike)."""
        if not 0 <= k < len(self):
            raise IndexError(f"machine {k} of {len(self)}")
        if self._entries is None:
            return self._rows(0, int(self._offsets[-1])).replace_schema_metadata(self._reader.schema.metadata)
        entry = self._entries[k]
        one = {"format": FORMAT, "version": VERSION, "pes": entry.get("pes") if isinstance(entry, dict) else None}
        if self._has_config:
            one["config"] = self._config
        part = self._rows(int(self._bounds[k]), int(self._bounds[k + 1])).drop_columns([MACHINE_COLUMN])
        return part.replace_schema_metadata({META_KEY: json.dumps(one).encode()})

    def state(self, k: int, config: MachineConfig | None = None, table: pa.Table | None = None) -> MachineState:
        """Machine k's state (0 <= k < len(self)); `table`: `self.table(k)` when already read."""
        table = self.table(k) if table is None else table
        label = self.path if self._entries is None else Shown(f"{shown(self.path)}: machine {k}")
        return load_table(label, table, config)

    def states(self, config: MachineConfig | None = None) -> Iterator[MachineState]:
        """Every machine's state, in order, one at a time."""
        for k in range(len(self)):
            yield self.state(k, config)


def machine_count(path) -> int:
    """How many machines the state file at `path` holds (StateFileError if it is not one)."""
    return len(StateFile(path))


def load_states(path, config: MachineConfig | None = None) -> list:
    """Every machine state (emulator.state.MachineState) of a single- or multi-machine state
    file, in order; emulator.machine.load_machines wraps each in a Machine."""
    return list(StateFile(path).states(config))
