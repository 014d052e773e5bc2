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
from typing import Sequence

import numpy as np
import pyarrow as pa

from isa.atomicio import Shown, atomic_path, shown

from .config import MachineConfig
from .stateio import FORMAT, META_KEY, SCHEMA, VERSION, StateFileError, _read_table, _rows, load_table

MACHINE_COLUMN = "machine"
MAX_MACHINES = 1 << 20      # bounds what the metadata of an untrusted file can make the loader build
BATCH_SCHEMA = pa.schema([(MACHINE_COLUMN, pa.uint32())] + list(SCHEMA))


def _config_json(c: MachineConfig) -> dict:
    from .stateio import config_json
    return config_json(c)


def _pes_json(m) -> list:
    return [{"gprs": [f"{int(g):#018x}" for g in pe.gprs], "status": pe.status} for pe in m._pes]


def batch_table(machines: Sequence) -> pa.Table:
    """One table for N machines (one shared configuration); N == 1 gives stateio's own table."""
    if not machines:
        raise ValueError("no machines to save")
    config = machines[0].config
    for k, m in enumerate(machines):
        if m.config != config:
            raise ValueError(f"machine {k}: configuration {m.config} differs from machine 0's {config}; "
                             f"a state file holds one configuration")
    if len(machines) == 1:
        from .stateio import state_table
        return state_table(machines[0])
    cols: dict[str, list] = {f.name: [] for f in BATCH_SCHEMA}
    for k, m in enumerate(machines):
        rows = _rows(m)
        cols[MACHINE_COLUMN] += [k] * len(rows["pe"])
        for name, values in rows.items():
            cols[name] += values
    meta = {"format": FORMAT, "version": VERSION, "config": _config_json(config),
            "machines": [{"pes": _pes_json(m)} for m in machines]}
    table = pa.table(cols, schema=BATCH_SCHEMA)
    return table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})


def save_machines(machines: Sequence, path) -> None:
    """Write the machines' states to `path` atomically (a temporary file renamed when complete)."""
    table = batch_table(list(machines))
    with atomic_path(path, devices=False) as tmp:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)


def _raw_meta(path, table: pa.Table) -> dict | None:
    raw = (table.schema.metadata or {}).get(META_KEY)
    try:
        meta = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return None          # stateio's loader reports it precisely
    return meta if isinstance(meta, dict) else None


def machine_count(path) -> int:
    """How many machines the state file at `path` holds (StateFileError if it is not one)."""
    table = _read_table(path)
    meta = _raw_meta(path, table)
    if MACHINE_COLUMN not in table.column_names and not (meta and "machines" in meta):
        return 1
    return len(_machines_meta(path, table, meta))


def _machines_meta(path, table: pa.Table, meta) -> list:
    if meta is None or meta.get("format") != FORMAT:
        raise StateFileError(f"{shown(path)}: metadata {META_KEY.decode()!r} is not a {FORMAT!r} JSON object")
    if meta.get("version") != VERSION:
        raise StateFileError(f"{shown(path)}: state format version {shown(repr(meta.get('version')))} (this build reads {VERSION})")
    entries = meta.get("machines")
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_MACHINES:
        raise StateFileError(f"{shown(path)}: metadata 'machines' must list 1..{MAX_MACHINES} machines "
                             f"(a multi-machine file has a {MACHINE_COLUMN!r} column)")
    if "pes" in meta:
        raise StateFileError(f"{shown(path)}: metadata has both 'pes' (one machine) and 'machines' (many)")
    if MACHINE_COLUMN not in table.column_names:
        raise StateFileError(f"{shown(path)}: metadata lists machines but column {MACHINE_COLUMN!r} is missing")
    col = table.column(MACHINE_COLUMN)
    if col.type != pa.uint32():
        raise StateFileError(f"{shown(path)}: column {MACHINE_COLUMN!r} has type {col.type}, expected uint32")
    if col.null_count:
        raise StateFileError(f"{shown(path)}: column {MACHINE_COLUMN!r} holds nulls (the format uses none)")
    return entries


def load_states(path, config: MachineConfig | None = None) -> list:
    """Every machine state (emulator.state.MachineState) of a single- or multi-machine state
    file, in order; emulator.machine.load_machines wraps each in a Machine."""
    table = _read_table(path)
    meta = _raw_meta(path, table)
    if MACHINE_COLUMN not in table.column_names and not (meta and "machines" in meta):
        return [load_table(path, table, config)]
    entries = _machines_meta(path, table, meta)
    ids = table.column(MACHINE_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
    if ids.size and ids.max() >= len(entries):
        row = int(np.argmax(ids >= len(entries)))
        raise StateFileError(f"{shown(path)}: row {row} column {MACHINE_COLUMN!r}: machine {int(ids[row])} is not "
                             f"among the {len(entries)} the metadata lists")
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(len(entries) + 1))
    rows = table.drop_columns([MACHINE_COLUMN]).take(pa.array(order))
    machines = []
    for k, entry in enumerate(entries):
        one = {"format": FORMAT, "version": VERSION, "pes": entry.get("pes") if isinstance(entry, dict) else None}
        if "config" in meta:
            one["config"] = meta["config"]
        part = rows.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
        part = part.replace_schema_metadata({META_KEY: json.dumps(one).encode()})
        machines.append(load_table(Shown(f"{shown(path)}: machine {k}"), part, config))
    return machines
