"""Stream golden datasets: partitions by shape class, deterministic chunks, rows, the checked open.

    streams/  generation.json  manifest.json  blocks=8/shape=r4c8/part-00000.parquet ...

The machinery is the single-block datasets' (emulator/golden/dataset.py): the chunk plan,
the per-(seed, partition, chunk) generator, atomic writes, file records with SHA-256, the
manifest written last, the folder check, `--resume`; what differs is the row (one stream per
row: initial state, stream, per-block commit records, final state or fault) and what the open
checks of it (docs/golden-format.md, "Stream goldens").
"""
from __future__ import annotations

import functools
import itertools
import json
import pathlib
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa import fields as F, jsontext, legality
from isa.atomicio import quote, shown
from isa.errors import IllegalBlockException
from kernels.numeric.profiles import DEFAULT_PROFILE, PROFILES, Profile, profile as numeric_profile

from .. import commitlog as CL
from ..config import MachineConfig
from ..tiles import Descriptor, pack_payloads
from . import dataset as D
from . import rows as R
from . import streams as S
from .dataset import GoldenError

FORMAT = "tile-emu stream golden dataset"
FORMAT_VERSION = 3
# Version 2 stored the same rows; its generator drew other streams from the same parameters
# (groups of 256 streams, every instruction and DataType) and recorded no `ops`/`dtypes`.  This
# tile-emu still opens (verify, --coverage, export) a version 2 dataset, as unconstrained.
READ_VERSIONS = (2, 3)
CHUNK_CASES = 1 << 12          # streams per data file
GROUP_CASES = 16               # streams per group by default: at least one distinct program per 16 streams
ILLEGAL_FRACTION = 0.1
MAX_BLOCKS = 1 << 10

SCHEMA = pa.schema([
    ("case", pa.uint64()),
    ("class", pa.string()),
    ("group", pa.uint32()),
    ("value_class", pa.string()),
    ("stream", pa.binary()),
    ("asm", pa.string()),
    ("blocks", pa.uint32()),
    ("local_bytes", pa.uint32()),
    ("matrix_bytes", pa.uint32()),
    ("gprs", pa.binary()),
    ("layout", pa.dictionary(pa.int32(), pa.string())),
    ("initial_payload", pa.binary()),
    ("initial_defined", pa.binary()),
    ("record_payload", pa.binary()),
    ("record_defined", pa.binary()),
    ("record_status", pa.binary()),
    ("executed", pa.uint32()),
    ("outcome", pa.string()),
    ("fault_block", pa.int32()),
    ("reason", pa.string()),
    ("field", pa.string()),
    ("message", pa.string()),
    ("status", pa.list_(pa.uint8(), 4)),
])

_NAMES = {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 64, "uniqueItems": True}
GENERATOR_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["streams", "blocks", "cases", "seed", "shapes", "illegal_fraction", "group_cases", "profile",
                 "chunk_cases", "ops", "dtypes"],
    "properties": {
        "streams": {"const": True},
        "ops": _NAMES,
        "dtypes": _NAMES,
        "blocks": {"type": "integer", "minimum": 1, "maximum": MAX_BLOCKS},
        "cases": {"type": "integer", "minimum": 1, "maximum": D.MAX_CASES},
        "seed": {"type": "integer", "minimum": D.SEED_RANGE[0], "exclusiveMaximum": D.SEED_RANGE[1]},
        "shapes": {"type": "array", "items": {"type": "string", "maxLength": 64}, "minItems": 1, "maxItems": 64},
        "illegal_fraction": {"type": "number", "minimum": 0, "maximum": 1},
        "group_cases": {"type": "integer", "minimum": 1, "maximum": CHUNK_CASES},
        "profile": {"type": "string", "maxLength": 64},
        "chunk_cases": {"type": "integer", "minimum": 1, "maximum": CHUNK_CASES},
    },
}
# a version 2 manifest's generator: no ops, no dtypes (every instruction and DataType)
GENERATOR_SCHEMA_V2 = {**GENERATOR_SCHEMA, "required": [k for k in GENERATOR_SCHEMA["required"]
                                                         if k not in ("ops", "dtypes")],
                       "properties": {k: v for k, v in GENERATOR_SCHEMA["properties"].items()
                                      if k not in ("ops", "dtypes")}}
MANIFEST_SCHEMA = {
    **D.MANIFEST_SCHEMA,
    "properties": {
        **D.MANIFEST_SCHEMA["properties"],
        "format": {"const": FORMAT},
        "format_version": {"type": "integer", "const": FORMAT_VERSION},
        "generator": GENERATOR_SCHEMA,
        "partitions": {"type": "array", "maxItems": D.MAX_FILES, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["blocks", "shape", "not_applicable", "files"],
            "properties": {
                "blocks": {"type": "integer"}, "shape": {"type": "string"},
                "not_applicable": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "files": {"type": "array", "maxItems": D.MAX_FILES},
            }}},
    },
}
MANIFEST_SCHEMA_V2 = {**MANIFEST_SCHEMA, "properties": {**MANIFEST_SCHEMA["properties"],
                                                       "format_version": {"type": "integer", "const": 2},
                                                       "generator": GENERATOR_SCHEMA_V2}}


@dataclass(frozen=True)
class StreamParams:
    blocks: int
    cases: int
    seed: int
    shapes: tuple[str, ...] = tuple(s.name for s in S.SHAPES)
    illegal_fraction: float = ILLEGAL_FRACTION
    group_cases: int = GROUP_CASES
    profile: str = DEFAULT_PROFILE
    chunk_cases: int = CHUNK_CASES
    streams: bool = True
    ops: tuple[str, ...] = ()          # the instructions streams may carry (empty: every one)
    dtypes: tuple[str, ...] = ()       # the DataTypes (empty: every one)
    version: int = FORMAT_VERSION      # the format whose generator drew the streams (not stored)

    def to_json(self) -> dict:
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if k != "version"}
        if self.version < 3:
            del d["ops"], d["dtypes"]
        return d

    @classmethod
    def from_json(cls, d, where: str = "generator parameters", version: int = FORMAT_VERSION) -> "StreamParams":
        D._validate(d, GENERATOR_SCHEMA if version >= 3 else GENERATOR_SCHEMA_V2, where)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}, version=version)

    @property
    def constraint(self) -> S.Constraint:
        """What the streams may carry (GoldenError naming a name or a set no stream can carry)."""
        return constraint_of(self.ops, self.dtypes)


def _versioned(version: int):
    """StreamParams with from_json of one format version (for dataset.read_params, manifest_plan)."""
    class Versioned:
        from_json = staticmethod(lambda d, where="generator parameters": StreamParams.from_json(d, where, version))
    return Versioned


def read_params(path: pathlib.Path, cls=None, version: int = FORMAT_VERSION) -> StreamParams:
    """A stream generation.json: of this format's generator, or (version 2) of the earlier one.
    One of the earlier generator where this format's is asked for (a --resume of an older run)
    is a GoldenError saying so."""
    try:
        return D.read_params(path, cls=_versioned(version))
    except GoldenError:
        if version == FORMAT_VERSION:
            try:
                D.read_params(path, cls=_versioned(2))
            except GoldenError:
                pass
            else:
                raise GoldenError(f"{D.PARAMS}: the parameters of an earlier tile-emu's stream generator (format "
                                  f"version 2, which drew other streams from them); generate into an empty "
                                  f"--out") from None
        raise


@functools.lru_cache(maxsize=64)
def constraint_of(ops: tuple[str, ...], dtypes: tuple[str, ...]) -> S.Constraint:
    """The Constraint of --ops/--dtypes (empty: every instruction, every DataType), checked: each
    name known and given once, each instruction one with some DataType of `dtypes`, each DataType
    one some instruction of `ops` carries (as its DataType, or as TCVT's destination).
    GoldenError otherwise, naming the first that fails; a set where no instruction has a
    DataType is "no legal block"."""
    names = []
    for o in ops:
        try:
            names.append(S.I.lookup(o.upper()).mnemonic)
        except KeyError:
            raise GoldenError(f"unknown op {quote(o)}; ops: "
                              + ", ".join(i.mnemonic for i in S.I.INSTRUCTIONS)) from None
    dts = [D._dtype(d) for d in dtypes]
    D._once(names, "ops")
    D._once(dts, "dtypes")
    con = S.Constraint(frozenset(names) if names else S.EVERY.ops, frozenset(dts) if dts else S.EVERY.dtypes)
    named = [i for i in S.I.INSTRUCTIONS if i.mnemonic in names]
    ok = con.instructions
    if not ok:
        raise GoldenError(f"--ops {','.join(names)} --dtypes {','.join(dts)}: no legal block: none of these "
                          f"instructions supports any of these DataTypes")
    for op in named:                    # (without --ops, the instructions of some DataType of --dtypes)
        if op not in ok:
            raise GoldenError(f"--ops {op.mnemonic}: no stream can carry it: it supports none of --dtypes "
                              f"{','.join(dts)} (it supports {', '.join(sorted(op.dtypes))})")
    tcvt = any(op.schema == S.I.CONVERT for op in ok)
    for dt in dts:
        if not tcvt and not any(con.allows(op, dt) for op in ok):
            raise GoldenError(f"--dtypes {dt}: no stream can carry it: no instruction of --ops "
                              f"{','.join(names)} supports it")
    return con


@dataclass(frozen=True)
class StreamPartition:
    """The files of one shape class (and stream length)."""
    blocks: int
    shape: str

    @property
    def path(self) -> str:
        return f"blocks={self.blocks}/shape={self.shape}"

    def keys(self) -> dict:
        return {"blocks": self.blocks, "shape": self.shape}


def partitions(p: StreamParams) -> list[StreamPartition]:
    p.constraint                        # the names and the set checked
    D._once(p.shapes, "shapes")
    for name in p.shapes:
        if name not in S.SHAPE_BY_NAME:
            raise GoldenError(f"unknown stream shape class {quote(name)}; shapes: {', '.join(S.SHAPE_BY_NAME)}")
    if not 1 <= p.blocks <= MAX_BLOCKS:
        raise GoldenError(f"--blocks {p.blocks}: from 1 to {MAX_BLOCKS}")
    if not 0 <= p.illegal_fraction <= 1:
        raise GoldenError(f"--illegal-fraction {p.illegal_fraction}: from 0 to 1")
    if not 1 <= p.group_cases <= CHUNK_CASES:
        raise GoldenError(f"--group-cases {p.group_cases}: from 1 to {CHUNK_CASES:,}")
    try:
        numeric_profile(p.profile)
    except ValueError:
        raise GoldenError(f"unknown numeric profile {quote(p.profile)}; profiles: {', '.join(PROFILES)}") from None
    return [StreamPartition(p.blocks, name) for name in p.shapes]


def chunks(p: StreamParams, limit_files: bool = True) -> D.ChunkPlan:
    if not 1 <= p.cases <= D.MAX_CASES:
        raise GoldenError(f"--cases {p.cases}: from 1 to {D.MAX_CASES:,} (2^32) streams per partition")
    if not 1 <= p.chunk_cases <= CHUNK_CASES:
        raise GoldenError(f"chunk_cases {p.chunk_cases}: from 1 to {CHUNK_CASES:,}")
    plan = D.ChunkPlan(tuple(partitions(p)), p.cases, p.chunk_cases)
    if limit_files and len(plan) > D.MAX_FILES:
        raise GoldenError(f"{len(plan.parts):,} partition(s) x {p.cases:,} streams need {len(plan):,} data files; "
                          f"a dataset holds at most {D.MAX_FILES:,} files")
    return plan


@functools.lru_cache(maxsize=256)
def classes_for(shape: str, con: S.Constraint = S.EVERY) -> tuple[list[str], list[str]]:
    """(stream classes a shape class can have under `con`, those it cannot), in STREAM_ILLEGAL
    order."""
    sh = S.SHAPE_BY_NAME[shape]
    ok, na = [S.LEGAL], []
    for reason in S.STREAM_ILLEGAL:
        if S._plannable(reason, sh, con):
            ok.append(S.stream_class(reason))
        else:
            na.append(S.stream_class(reason))
    return ok, na


def machine_config(p: StreamParams) -> MachineConfig:
    return MachineConfig(profile=numeric_profile(p.profile).name)


# An illegal group holds at most this many streams: a fault of the data, of the GPR offsets or of
# a window block's state rejects machine by machine on the batch engine's rare path (each member
# on the reference engine), so big illegal groups would cost what a whole chunk costs.
ILLEGAL_GROUP = 16


def group_plan(p: StreamParams, part: StreamPartition, chunk: int, n: int,
               rng) -> list[tuple[int, str | None, int | None]]:
    """(cases, planted reason or None, planted block or None) of each group of a chunk, in a
    random order: round(n x illegal_fraction) illegal streams in groups of illegal_group_size,
    group k with the reason R[(c + k) mod len(R)] and the planted block (b + k mod len(R) +
    k div len(R)) mod blocks from random starts c and b -- every applicable class, and every
    block position, has a stream before any has a second, and each class meets every position
    in turn --, the rest legal in groups of group_cases."""
    illegal = [S.reason_of(c) for c in classes_for(part.shape, p.constraint)[0] if c != S.LEGAL]
    bad = int(round(n * p.illegal_fraction)) if illegal else 0
    start = int(rng.integers(len(illegal))) if illegal else 0
    at = int(rng.integers(p.blocks))
    per_class = illegal_group_size(p, bad, len(illegal))
    out, k, left = [], 0, bad
    while left > 0:
        m = min(per_class, left)
        out.append((m, illegal[(start + k) % len(illegal)], (at + k % len(illegal) + k // len(illegal)) % p.blocks))
        k += 1
        left -= m
    rest = n - bad
    for lo in range(0, rest, p.group_cases):
        out.append((min(p.group_cases, rest - lo), None, None))
    return [out[i] for i in rng.permutation(len(out))]


def illegal_group_size(p: StreamParams, bad: int, classes: int) -> int:
    """Streams per illegal group: as few as give every applicable rejection class and every
    block position a group of its own (bad // max(classes, blocks)), at least 1, at most
    ILLEGAL_GROUP and group_cases."""
    return max(1, min(ILLEGAL_GROUP, p.group_cases, bad // max(classes, p.blocks, 1)))


# ---------------------------------------------------------------------------- rows
# Format version 2: what every stream of a group shares (the initial descriptors, the records'
# heads: block, offset, mnemonic, PE, destination tile and descriptor) is the row's `layout`, one
# JSON text per group stored once per file (a dictionary column); what each stream has of its own
# is a few flat binaries (payloads, definedness, statuses, GPRs) in the layout's order.  The final
# state is not stored: it is the initial state overlaid with each (PE, tile)'s last commit record
# (`final_tiles`).  Version 1 stored every tile of both states per row: ~100 list entries a row,
# whose building and writing cost as much as generating the streams.

DESC_KEYS = tuple(n for n in CL.TILE_COLUMNS if n not in ("pe", "tile", "payload", "defined"))
HEAD_KEYS = ("block", "offset", "record", "mnemonic", "block_datatype", "pe", "tile")
SIZE_KEYS = ("payload_bytes", "defined_bytes")
GPR_BYTES = F.NUM_PES * F.GPR_COUNT * 8


class Ragged(ValueError):
    """The streams of a group disagree on a record's head (they cannot share one layout)."""


def _desc_json(d: Descriptor | None) -> dict:
    """A descriptor under the state file's column names (docs/state-format.md); every field
    empty for a fault record (as commitlog does)."""
    fm = None if d is None else d.fmap
    return {"location": "" if d is None else d.location, "kind": "" if d is None else d.kind,
            "datatype": "" if d is None or d.dtype is None else d.datatype.name,
            "row": 0 if d is None else d.Row, "col": 0 if d is None else d.Col,
            "valid_row": 0 if d is None else d.ValidRow, "valid_col": 0 if d is None else d.ValidCol,
            "layout": 0 if d is None else d.Layout, "representation": "" if d is None else d.representation,
            "capacity": 0 if d is None else d.capacity,
            "fmap_layout": "" if fm is None else fm.layout, "fmap_params": [] if fm is None else list(fm.params()),
            "fmap_pad_bits": 0 if fm is None else fm.pad_bits, "fmap_transposed": False if fm is None else fm.transposed}


@functools.lru_cache(maxsize=4096)
def _desc_entry(d: Descriptor | None) -> tuple:
    """(key, value) pairs of _desc_json and _sizes of one descriptor (a stream reuses a few)."""
    return tuple({**_desc_json(d), **_sizes(d)}.items())


def _sizes(d: Descriptor | None) -> dict:
    return {"payload_bytes": 0 if d is None else d.payload_nbytes,
            "defined_bytes": 0 if d is None else (d.elements + 7) // 8}


def initial_entries(tiles: dict) -> list:
    """[(desc, tile id, pe, elems (n, E), defined (n, E))] of the initial tiles, in (tile, PE) order."""
    return [(desc, tid, p, e, d) for (p, tid), (desc, e, d) in sorted(tiles.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def _initial_columns(tiles: dict, n: int):
    """(layout entries as JSON texts, payload (n, L), defined (n, D)) of the initial state:
    consecutive PEs of one tile with one descriptor and the same values on every machine are one
    entry, stored once (the generator puts each tile on every PE)."""
    heads, pays, defs = [], [], []          # heads: (pes, tile id, descriptor)
    last = None
    for desc, tid, p, e, d in initial_entries(tiles):
        if last is not None and last[:2] == (tid, desc) and last[2] is e and last[3] is d:
            heads[-1][0].append(p)              # the same arrays: the same values
            continue
        pay = pack_payloads(np.asarray(e).reshape(n, -1), desc.container)
        dfn = np.packbits(np.asarray(d, bool).reshape(n, -1), axis=1, bitorder="little")
        same = last is not None and last[:2] == (tid, desc)
        last = (tid, desc, e, d)
        if same and np.array_equal(pays[-1], pay) and np.array_equal(defs[-1], dfn):
            heads[-1][0].append(p)
            continue
        heads.append(([p], tid, desc))
        pays.append(pay)
        defs.append(dfn)
    texts = [_initial_text(pes, tid, _desc_members(desc)[0]) for pes, tid, desc in heads]
    return texts, _cat(pays, n), _cat(defs, n)


def _cat(parts: list, n: int) -> np.ndarray:
    """The (n, bytes) parts side by side (n x 0 when there are none)."""
    return np.concatenate(parts, axis=1) if parts else np.zeros((n, 0), np.uint8)


_PE_CUTS = np.arange(F.NUM_PES + 1)


def _pe_slices(pes: np.ndarray) -> list | None:
    """[(pe, slice)] of a record group's PE-major rows (PEs ascending), one slice per PE; None
    when the rows are not PE-major."""
    if len(pes) == 1:                                            # one machine on one PE (a host run)
        return [(int(pes[0]), slice(0, 1))]
    if not (pes[1:] >= pes[:-1]).all():
        return None
    cut = np.searchsorted(pes, _PE_CUTS).tolist()                # PE p's rows: cut[p] .. cut[p + 1]
    return [(pe, slice(a, b)) for pe, (a, b) in enumerate(zip(cut, cut[1:])) if b > a]


def _record_columns(recs: CL.Records, n: int):
    """(record heads as JSON texts, payload (n, L), defined (n, D), status (n, R)) of a group's
    records: one slot per (block, PE, head), each covering every machine once, in (block, PE)
    order (the fault record after a block's commits).  Ragged when the machines' heads differ."""
    whole = _whole_record_columns(recs, n)
    if whole is not None:
        return whole
    slots: dict = {}
    every = np.arange(n)
    for g in recs.groups:
        payload, defined = g.packed()
        pes, machine, status = np.asarray(g.pe), np.asarray(g.machine), np.asarray(g.status)
        sels = _pe_slices(pes)
        if sels is None:
            sels = [(int(pe), pes == pe) for pe in np.unique(pes)]
        fault = g.record != CL.COMMIT
        # a cohort's commit of every machine in order on each PE (the common case): the slices as
        # they are, marked in order once here
        whole = all(isinstance(sel, slice) and sel.stop - sel.start == n for _, sel in sels) \
            and len(machine) == len(sels) * n and bool((machine.reshape(len(sels), n) == every).all())
        for pe, sel in sels:
            key = (g.block, fault, pe, g.offset, g.record, g.mnemonic, g.block_datatype, g.tile, g.desc)
            part = (machine[sel], None if payload is None else payload[sel],
                    None if defined is None else defined[sel], status[sel], whole)
            got = slots.get(key)
            if got is None:
                slots[key] = [part]
            else:
                got.append(part)
    heads, pays, defs, stats = [], [], [], []
    blocks_pes = set()
    for key in sorted(slots, key=lambda k: k[:3]):
        block, _, pe, offset, record, mnemonic, bdt, tile, desc = key
        if (block, pe, record) in blocks_pes:
            raise Ragged(f"block {block} PE {pe}: the machines hold different records")
        blocks_pes.add((block, pe, record))
        parts = slots[key]
        first = parts[0][0]
        in_order = len(parts) == 1 and (parts[0][4] or len(first) == n and bool((first == every).all()))
        if not in_order:
            machine = np.concatenate([m for m, *_ in parts]).astype(np.int64)
            if len(machine) != n or not np.array_equal(np.sort(machine), every):
                raise Ragged(f"block {block} PE {pe}: a record some machines do not have")
        members, payload_bytes, defined_bytes = _desc_members(desc)
        heads.append(_record_text(int(block), int(offset), record, mnemonic, bdt, pe, int(tile), members))
        for out, k, width in ((pays, 1, payload_bytes), (defs, 2, defined_bytes), (stats, 3, 1)):
            if in_order and parts[0][k] is not None:        # one part, machines 0..n-1: as it is
                out.append(np.asarray(parts[0][k], np.uint8).reshape(n, width))
                continue
            a = np.zeros((n, width), np.uint8)
            for part in parts:
                if part[k] is not None:
                    a[part[0]] = np.asarray(part[k], np.uint8).reshape(len(part[0]), width)
            out.append(a)
    return heads, _cat(pays, n), _cat(defs, n), _cat(stats, n)


def _whole_record_columns(recs: CL.Records, n: int):
    """_record_columns of records whose every group holds every machine in order on each of its
    PEs, PEs ascending ((M,) = PE-major: PE p's rows machines 0..n-1), the groups in strictly
    increasing (block, fault) order -- a stream's common case: one commit group a block, then
    perhaps the faults --, each group's PE slots side by side in one reshape; None otherwise
    (_record_columns then takes its slot-by-slot path)."""
    groups = recs.groups
    keys = [(g.block, g.record != CL.COMMIT) for g in groups]
    if any(b <= a for a, b in zip(keys, keys[1:])):
        return None
    every = np.arange(n)
    heads, pays, defs, stats = [], [], [], []
    for g in groups:
        m = len(g.machine)
        if m == 0 or m % n:
            return None
        k = m // n
        pes = np.asarray(g.pe).reshape(k, n)
        if not ((pes == pes[:, :1]).all() and (pes[1:, 0] > pes[:-1, 0]).all()
                and (np.asarray(g.machine).reshape(k, n) == every).all()):
            return None
        members, payload_bytes, defined_bytes = _desc_members(g.desc)
        block, offset, tile = int(g.block), int(g.offset), int(g.tile)
        for pe in pes[:, 0].tolist():
            heads.append(_record_text(block, offset, g.record, g.mnemonic, g.block_datatype, pe, tile, members))
        payload, defined = g.packed()
        for out, a, width in ((pays, payload, payload_bytes), (defs, defined, defined_bytes), (stats, g.status, 1)):
            if a is None:
                out.append(np.zeros((n, k * width), np.uint8))
            else:                                     # (k, n, width) -> (n, k x width): PE slots side by side
                out.append(np.asarray(a, np.uint8).reshape(k, n, width).transpose(1, 0, 2).reshape(n, k * width))
    return heads, _cat(pays, n), _cat(defs, n), _cat(stats, n)


# json.dumps(obj, separators=(",", ":")) is this encoder's encode(obj); one encoder, made once
_JSON = json.JSONEncoder(separators=(",", ":"))


def _desc_members(d: Descriptor | None) -> tuple[str, int, int]:
    """(the JSON members, no braces, of a descriptor's layout fields -- _desc_json and _sizes --,
    payload_bytes, defined_bytes); looked up by the descriptor's identity first (a row's
    descriptors are a few objects met again and again: hashing one is a Python-level call)."""
    got = _MEMBERS_BY_ID.get(id(d))
    if got is not None and got[0] is d:
        return got[1]
    if len(_MEMBERS_BY_ID) >= 4096:
        _MEMBERS_BY_ID.clear()
    out = _MEMBERS_BY_ID[id(d)] = (d, _members_of(d))      # d kept: its id stays its own
    return out[1]


_MEMBERS_BY_ID: dict = {}


@functools.lru_cache(maxsize=4096)
def _members_of(d: Descriptor | None) -> tuple[str, int, int]:
    entry = dict(_desc_entry(d))
    return _JSON.encode(entry)[1:-1], entry[SIZE_KEYS[0]], entry[SIZE_KEYS[1]]


# A layout entry's JSON text is json.dumps({**head, **_desc_json(d), **_sizes(d)}, separators=(",", ":"))
# (the head's keys, pes and tile or HEAD_KEYS, are none of the descriptor's): the head's members,
# then the descriptor's (_desc_members).  Ints print as json prints them (int.__repr__).

def _initial_text(pes, tile: int, members: str) -> str:
    """An initial entry's JSON text (PEs: any sequence of ints)."""
    return _initial_text_of(tuple(pes), tile, members)


@functools.lru_cache(maxsize=4096)
def _initial_text_of(pes: tuple[int, ...], tile: int, members: str) -> str:
    """_initial_text, memoised: a run's initial entries are a few hundred distinct (PEs, tile id,
    descriptor) triples, met again in every group."""
    return f'{{"pes":[{",".join(map(str, pes))}],"tile":{tile},{members}}}'


def _record_text(block: int, offset: int, record: str, mnemonic: str, block_datatype: str, pe: int, tile: int,
                 members: str) -> str:
    """A record head's JSON text (its strings as json.dumps writes them, kept per value)."""
    return (f'{{"block":{block},"offset":{offset},"record":{_json_text(record)},"mnemonic":{_json_text(mnemonic)},'
            f'"block_datatype":{_json_text(block_datatype)},"pe":{pe},"tile":{tile},{members}}}')


@functools.lru_cache(maxsize=4096)
def _json_text(value) -> str:
    """json.dumps(value) of a head's string (a few dozen distinct ones: record kinds, mnemonics,
    DataType names)."""
    return _JSON.encode(value)


def layout_text(initial: list[str], records: list[str]) -> str:
    """The `layout` JSON text (canonical: one text per layout, so equal layouts compare equal) of
    the entries' JSON texts: json.dumps({"initial": [...], "records": [...]}, separators=(",", ":"))."""
    return '{"initial":[' + ",".join(initial) + '],"records":[' + ",".join(records) + "]}"


def _fault_columns(recs: CL.Records, n: int):
    """(faulted, reason, field, message) per case from the fault records."""
    reason = np.full(n, "", object)
    fld = np.full(n, "", object)
    message = np.full(n, "", object)
    faulted = np.zeros(n, bool)
    for g in recs.groups:
        if g.record == CL.FAULT:
            reason[g.machine], fld[g.machine], message[g.machine] = g.reason, g.field, g.message
            faulted[g.machine] = True
    return faulted, reason, fld, message


class GroupRows(NamedTuple):
    """One group's rows before Arrow (replay_parts): what every column of its n rows holds, as
    NumPy pieces, so a chunk's columns are built once for all its groups (chunk_columns)."""
    n: int
    stream: bytes
    asm: str
    blocks: int
    local_bytes: int
    matrix_bytes: int
    gprs: np.ndarray                   # (n, GPR_BYTES) uint8
    layout: str
    initial_payload: np.ndarray        # (n, bytes) uint8, each a width of its own
    initial_defined: np.ndarray
    record_payload: np.ndarray
    record_defined: np.ndarray
    record_status: np.ndarray
    executed: int
    faulted: np.ndarray                # (n,) bool
    faults: tuple | None               # (reason, field, message) (n,) object arrays; None: none faulted
    status: np.ndarray                 # (n, 4) uint8


_BINARY_PARTS = ("gprs", "initial_payload", "initial_defined", "record_payload", "record_defined", "record_status")


def replay_parts(config: MachineConfig, n: int, tiles: dict, gprs, blocks, records: CL.Records, executed: int,
                 status, stream: bytes | None = None) -> GroupRows:
    """The GroupRows of a replay; Ragged when the machines' records differ in a head."""
    data, text = S.stream_text(blocks, stream)
    faults = None
    if any(g.record == CL.FAULT for g in records.groups):
        faulted, *faults = _fault_columns(records, n)
        faults = tuple(faults)
    else:
        faulted = np.zeros(n, bool)
    init_heads, init_pay, init_def = _initial_columns(tiles, n)
    rec_heads, rec_pay, rec_def, rec_stat = _record_columns(records, n)
    g = np.ascontiguousarray(np.asarray(gprs, np.uint64).reshape(n, -1), "<u8").view(np.uint8)
    return GroupRows(n, data, text, len(blocks), config.local_bytes, config.matrix_bytes, g,
                     layout_text(init_heads, rec_heads), init_pay, init_def, rec_pay, rec_def, rec_stat,
                     executed, faulted, faults, np.asarray(status, np.uint8))


def _binary_column(parts: list, typ=None) -> pa.Array:
    """One binary column of the groups' (n, width) uint8 pieces, rows in order (each group its
    own width); `typ` pa.binary() or pa.string() for (values, counts) of repeated values."""
    if typ is not None:                                  # (value, n) per group: n copies
        return R.repeat_runs([v for v, _ in parts], [n for _, n in parts], typ)
    typ = pa.binary()
    widths = np.concatenate([np.full(len(a), a.shape[1], np.int64) for a in parts]) if parts \
        else np.zeros(0, np.int64)
    data = b"".join(np.ascontiguousarray(a).tobytes() for a in parts)
    n = len(widths)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(widths, out=offsets[1:])
    if offsets[-1] < 1 << 31:                 # binary's own int32 offsets: no cast from large_binary
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(typ)


def chunk_columns(parts: list[GroupRows]) -> dict[str, pa.Array]:
    """Every column replay_parts gives, of several groups' rows in order, one array per column
    (built once from the groups' NumPy pieces); `layout` the groups' texts, one per group."""
    ns = [r.n for r in parts]
    faulted = np.concatenate([r.faulted for r in parts])
    texts = {}
    if any(r.faults is not None for r in parts):
        for k, name in enumerate(("reason", "field", "message")):
            texts[name] = pa.array(np.concatenate([r.faults[k] if r.faults is not None else np.full(r.n, "", object)
                                                   for r in parts]), pa.string())
        texts = {"outcome": pa.array(np.where(faulted, "fault", "commit").astype(object), pa.string()), **texts}
    else:
        empty = _binary_column([("", n) for n in ns], pa.string())
        texts = {"outcome": _binary_column([("commit", n) for n in ns], pa.string()), "reason": empty,
                 "field": empty, "message": empty}

    def each(name: str, dtype) -> pa.Array:
        return pa.array(np.repeat(np.array([getattr(r, name) for r in parts], dtype), ns))
    cols = {
        "stream": _binary_column([(r.stream, r.n) for r in parts], pa.binary()),
        "asm": _binary_column([(r.asm, r.n) for r in parts], pa.string()),
        "blocks": each("blocks", np.uint32),
        "local_bytes": each("local_bytes", np.uint32),
        "matrix_bytes": each("matrix_bytes", np.uint32),
        "layout": [r.layout for r in parts],
        **{name: _binary_column([getattr(r, name) for r in parts]) for name in _BINARY_PARTS},
        "executed": each("executed", np.uint32),
        **texts,
        "fault_block": pa.array(np.concatenate([np.where(r.faulted, r.executed, -1).astype(np.int32) for r in parts])),
        "status": pa.FixedSizeListArray.from_arrays(
            pa.array(np.concatenate([r.status.reshape(-1) for r in parts])), 4),
    }
    return cols


def replay_columns(config: MachineConfig, n: int, tiles: dict, gprs, blocks, records: CL.Records, executed: int,
                   status, stream: bytes | None = None) -> dict[str, pa.Array]:
    """Every column a replay recomputes (all but case, class, group, value_class); `layout` as a
    plain string column (group_table makes it a dictionary column).  Ragged when the machines'
    records differ in a head."""
    rows = replay_parts(config, n, tiles, gprs, blocks, records, executed, status, stream)
    return {**chunk_columns([rows]), "layout": rows.layout}


def D_repeat(value, n: int, typ) -> pa.Array:
    """n copies of one bytes (pa.binary()) or str (pa.string()) value, laid out directly: the
    value's bytes n times, offsets a multiple of its length."""
    raw = value.encode() if isinstance(value, str) else bytes(value)
    if len(raw) * n >= 1 << 31:
        from .rows import _repeat
        return _repeat(value, n, typ)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(raw))
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


# ---------------------------------------------------------------------------- reading rows

_ENTRY = {"type": "object", "additionalProperties": False,
          "required": ["pes", "tile", *DESC_KEYS, *SIZE_KEYS],
          "properties": {"pes": {"type": "array", "minItems": 1, "maxItems": F.NUM_PES, "uniqueItems": True,
                                 "items": {"type": "integer", "minimum": 0, "maximum": F.NUM_PES - 1}},
                         **{k: {"type": "integer", "minimum": 0, "maximum": 1 << 40}
                            for k in ("pe", "tile", "row", "col", "valid_row", "valid_col", "layout", "capacity",
                                      "fmap_pad_bits", *SIZE_KEYS)},
                         **{k: {"type": "string", "maxLength": 64}
                            for k in ("location", "kind", "datatype", "representation", "fmap_layout")},
                         "fmap_params": {"type": "array", "maxItems": 64, "items": {"type": "integer"}},
                         "fmap_transposed": {"type": "boolean"}}}
_RECORD = {**_ENTRY, "required": [*HEAD_KEYS, *DESC_KEYS, *SIZE_KEYS],
           "properties": {**{k: v for k, v in _ENTRY["properties"].items() if k != "pes"}, "block": {"type": "integer", "minimum": 0, "maximum": MAX_BLOCKS},
                          "offset": {"type": "integer", "minimum": -1, "maximum": 1 << 40},
                          "record": {"enum": [CL.COMMIT, CL.FAULT]},
                          **{k: {"type": "string", "maxLength": 64} for k in ("mnemonic", "block_datatype")}}}
LAYOUT_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["initial", "records"],
                 "properties": {"initial": {"type": "array", "maxItems": 1 << 12, "items": _ENTRY},
                                "records": {"type": "array", "maxItems": 4 * (MAX_BLOCKS + 1), "items": _RECORD}}}


@dataclass(frozen=True)
class Layout:
    """A parsed `layout`: the initial entries and record heads, each with its descriptor
    (None for a fault record) and the byte offsets of its values in the row's binaries."""
    initial: tuple[dict, ...]
    records: tuple[dict, ...]
    initial_descs: tuple[Descriptor, ...]
    record_descs: tuple[Descriptor | None, ...]
    initial_offsets: tuple[np.ndarray, np.ndarray]      # payload, defined: (entries + 1,) byte offsets
    record_offsets: tuple[np.ndarray, np.ndarray]

    def width(self, column: str) -> int:
        """The byte length every row of this layout has in a per-stream binary column."""
        if column == "gprs":
            return GPR_BYTES
        if column == "record_status":
            return len(self.records)
        part, kind = column.split("_")
        return int((self.initial_offsets if part == "initial" else self.record_offsets)[kind == "defined"][-1])


def _offsets(entries, key: str) -> np.ndarray:
    out = np.zeros(len(entries) + 1, np.int64)
    np.cumsum([e[key] for e in entries], out=out[1:])
    return out


@functools.lru_cache(maxsize=64)
def parse_layout(text: str) -> Layout:
    """The Layout of a `layout` text; ValueError (one line) when it is malformed: not JSON, not
    of LAYOUT_SCHEMA, a descriptor no tile can have, or sizes that are not its descriptor's."""
    try:
        v = jsontext.loads(text, max_depth=jsontext.MAX_DEPTH)     # a layout nests 4 levels
    except jsontext.JsonTextError as exc:
        raise ValueError(f"layout is not JSON ({exc})") from None
    try:
        D._validate(v, LAYOUT_SCHEMA, "layout")
    except GoldenError as exc:
        raise ValueError(str(exc)) from None
    from ..cosim import _descriptor
    descs = []
    for part in ("initial", "records"):
        out = []
        for i, e in enumerate(v[part]):
            if part == "records" and e["record"] == CL.FAULT:
                d = None
            else:
                try:
                    d = _descriptor(e)
                except Exception as exc:       # untrusted text: every refusal is one line
                    raise ValueError(f"layout {part}[{i}]: not a descriptor ({type(exc).__name__}: {exc})") from None
            if _sizes(d) != {k: e[k] for k in SIZE_KEYS}:
                raise ValueError(f"layout {part}[{i}]: payload_bytes/defined_bytes are not its descriptor's")
            if part == "records" and not 0 <= e["pe"] < F.NUM_PES:
                raise ValueError(f"layout {part}[{i}]: PE {e['pe']} out of range")
            out.append(d)
        descs.append(tuple(out))
    seen = [(p, e["tile"]) for e in v["initial"] for p in e["pes"]]
    if len(set(seen)) != len(seen):
        raise ValueError("layout initial: a (PE, tile) listed twice")
    ini, rec = v["initial"], v["records"]
    return Layout(tuple(ini), tuple(rec), descs[0], descs[1], (_offsets(ini, "payload_bytes"),
                  _offsets(ini, "defined_bytes")), (_offsets(rec, "payload_bytes"), _offsets(rec, "defined_bytes")))


def layouts_of(t: pa.Table) -> tuple[list[str], np.ndarray]:
    """(the distinct layout texts of rows t, each row's index among them)."""
    col = t.column("layout").combine_chunks()
    if isinstance(col, pa.DictionaryArray):
        idx = col.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        used = np.unique(idx)
        texts = [col.dictionary[int(u)].as_py() for u in used]
        inv = np.searchsorted(used, idx)
    else:
        uniq = pc.unique(col)
        texts, inv = uniq.to_pylist(), pc.index_in(col, uniq).to_numpy()
    # equal texts under two dictionary entries are one layout
    first = {}
    remap = np.array([first.setdefault(x, len(first)) for x in texts], np.int64)
    return list(first), remap[inv]


def binary_rows(col, width: int) -> np.ndarray | None:
    """(n, width) uint8 of a binary column whose every value is `width` bytes (else None)."""
    arr = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).cast(pa.large_binary())
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset: arr.offset + n + 1]
    if not np.all(np.diff(offs) == width):
        return None
    if width == 0:
        return np.zeros((n, 0), np.uint8)
    return np.frombuffer(arr.buffers()[2], np.uint8)[offs[0]: offs[-1]].reshape(n, width)


def _values(desc: Descriptor, payload: np.ndarray, defined: np.ndarray):
    """(elems (n, E), defined (n, E)) of a tile's payload and definedness bytes."""
    from ..tiles import element_dtype, unpack_payloads
    elems = unpack_payloads(np.ascontiguousarray(payload), desc.elements, desc.container).astype(element_dtype(desc))
    return elems, np.unpackbits(np.ascontiguousarray(defined), axis=-1, bitorder="little",
                                count=desc.elements).astype(bool)


def initial_tiles(layout: Layout, payload: np.ndarray, defined: np.ndarray) -> dict:
    """(pe, tile) -> (descriptor, elems (n, E), defined (n, E)) of the initial state of n rows
    of one layout (payload, defined: their (n, bytes) `initial_*` values)."""
    po, do = layout.initial_offsets
    out = {}
    for i, (e, d) in enumerate(zip(layout.initial, layout.initial_descs)):
        values = (d, *_values(d, payload[:, po[i]:po[i + 1]], defined[:, do[i]:do[i + 1]]))
        for p in e["pes"]:
            out[(p, e["tile"])] = values
    return out


def final_tiles(layout: Layout, initial_payload, initial_defined, record_payload, record_defined) -> dict:
    """(pe, tile) -> (descriptor, elems (n, E), defined (n, E)) after the stream: the initial
    state overlaid with each (PE, tile)'s last commit record."""
    out = initial_tiles(layout, initial_payload, initial_defined)
    po, do = layout.record_offsets
    for i, (e, d) in enumerate(zip(layout.records, layout.record_descs)):
        if e["record"] == CL.COMMIT:
            out[(e["pe"], e["tile"])] = (d, *_values(d, record_payload[:, po[i]:po[i + 1]],
                                                     record_defined[:, do[i]:do[i + 1]]))
    return dict(sorted(out.items(), key=lambda kv: (kv[0][1], kv[0][0])))


def group_parts(g: S.StreamGroup, group_index: int) -> GroupRows:
    """The group's GroupRows; GeneratorError when its machines' records cannot share one
    layout (the generator's groups always can)."""
    try:
        return replay_parts(g.config, g.n, g.tiles, g.gprs, g.blocks, g.records, g.executed, g.status, g.stream)
    except Ragged as exc:
        raise S.GeneratorError(f"group {group_index}: {exc}") from None


def group_columns(g: S.StreamGroup, first_case: int, group_index: int) -> dict:
    """The group's columns (`layout` its one JSON text); GeneratorError when its machines'
    records cannot share one layout (the generator's groups always can)."""
    rows = group_parts(g, group_index)
    n = rows.n
    return {"case": pa.array(np.arange(first_case, first_case + n, dtype=np.uint64)),
            "class": D_repeat(g.cls, n, pa.string()),
            "group": pa.array(np.full(n, group_index, np.uint32)),
            "value_class": D_repeat(g.value_class, n, pa.string()),
            **chunk_columns([rows]), "layout": rows.layout}


def layout_column(texts: list[str], at: np.ndarray) -> pa.DictionaryArray:
    """The `layout` column of rows whose k-th group has layout texts[k] (at: each row's group):
    one dictionary entry per DISTINCT text, in order of first use.  Two groups often share a
    layout; a dictionary holding a text twice makes Parquet's writer leave dictionary encoding
    for plain, and the dictionary page it has already laid out then ends in bytes it never
    wrote (measured with pyarrow 26: the file's bytes followed the memory pool's history, so
    the same run wrote different files).  Texts listed once keep the file's bytes as before."""
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(t, len(first)) for t in texts], np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(remap[at]), pa.array(list(first), pa.string()))


def rows_table(groups: list[dict]) -> pa.Table:
    """One table of the groups' columns: `layout` one dictionary column (a value per group,
    each row its group's index), so Parquet stores each layout once."""
    sizes = [len(c["case"]) for c in groups]
    layout = layout_column([c["layout"] for c in groups], np.repeat(np.arange(len(groups), dtype=np.int32), sizes))
    arrays = [layout if f.name == "layout" else pa.concat_arrays([c[f.name] for c in groups]) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def chunk_rows(groups: list[tuple[str, str, GroupRows]], first_case: int) -> pa.Table:
    """rows_table of the groups' group_columns ((class, value class, rows) of group k the k-th,
    cases from first_case on), each column built once for the whole chunk from the groups'
    NumPy pieces."""
    ns = np.array([r.n for *_, r in groups], np.int64)
    cols = chunk_columns([r for *_, r in groups])
    at = np.repeat(np.arange(len(groups), dtype=np.int32), ns)
    cols.update({
        "case": pa.array(np.arange(first_case, first_case + int(ns.sum()), dtype=np.uint64)),
        "class": _binary_column([(cls, r.n) for cls, _, r in groups], pa.string()),
        "group": pa.array(at.astype(np.uint32)),
        "value_class": _binary_column([(vc, r.n) for _, vc, r in groups], pa.string()),
        "layout": layout_column(cols["layout"], at),
    })
    return pa.Table.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)


def chunk_table(p: StreamParams, part: StreamPartition, chunk: int, n: int, backend: str = "cpu") -> pa.Table:
    rng = D._rng(p.seed, part, chunk)
    config = machine_config(p)
    shape = S.SHAPE_BY_NAME[part.shape]
    con = p.constraint
    groups = []
    aim = S.Aim(con, p.blocks)
    for gi, (m, reason, position) in enumerate(group_plan(p, part, chunk, n, rng)):
        g = S.build_group(shape, p.blocks, m, rng, config, reason, backend, con, aim, position)
        groups.append((g.cls, g.value_class, group_parts(g, gi)))     # not g: its tiles and records
    return chunk_rows(groups, chunk * p.chunk_cases)


def write_chunk(out_dir: str, params: dict, part: dict, chunk: int, n: int, backend: str = "cpu") -> dict:
    """Generate and write one file (a Dask task: plain arguments, plain result)."""
    p = StreamParams.from_json(params)
    pt = StreamPartition(**part)
    return D.write_data_file(out_dir, pt.path, chunk, chunk_table(p, pt, chunk, n, backend))


def instruction_lines(out, p: StreamParams, records: list[dict]) -> list[str]:
    """What `golden --streams` says on stderr about the instructions: those --dtypes leaves
    without a DataType (without --ops: no stream can carry them), and those of the constraint
    that no written stream commits (the dataset is too small to reach them) -- read back from the
    `stream` and `executed` columns of the dataset's files (`records`; None for a shard, which
    holds a share and cannot say; a file of an object store is read through its local copy),
    decoded."""
    import pyarrow.parquet as pq
    from isa import encoding
    con = p.constraint
    lines = []
    left_out = [op.mnemonic for op in S.I.INSTRUCTIONS if op.mnemonic in con.ops and op not in con.instructions]
    if left_out:
        lines.append(f"golden: {len(left_out)} of {len(con.ops)} instructions support none of --dtypes "
                     f"{','.join(p.dtypes)}: no stream carries them: {', '.join(left_out)}")
    if records is None:
        return lines
    committed = set()
    for rec in records:
        with D.store.local_copy(D.store.location(out) / rec["path"]) as local:
            t = pq.read_table(local, columns=["stream", "executed"])
        stream, executed = t.column("stream").combine_chunks(), t.column("executed").to_numpy()
        most: dict = {}
        for data, k in zip(stream.to_pylist(), executed.tolist()):
            most[data] = max(most.get(data, 0), k)
        for data, k in most.items():
            for b in encoding.decode(data)[:k]:
                committed.add(S.I.by_carrier(b.bstart.Mode, b.bstart.Function).mnemonic)
    missing = [op.mnemonic for op in con.instructions if op.mnemonic not in committed]
    if missing:
        lines.append(f"golden: {len(missing)} of {len(con.instructions)} instructions commit in no stream of the "
                     f"dataset (--cases {p.cases} x {len(p.shapes)} shape class(es) is too small to reach them): "
                     + ", ".join(missing))
    return lines


def check_resumable(out, plan: D.ChunkPlan) -> None:
    """--resume keeps the data files it finds: each must hold this format's rows (a file an
    earlier tile-emu wrote in another stream-row format would make a dataset no reader opens).
    GoldenError naming the first that does not; its schema is read, not its rows."""
    import pyarrow.parquet as pq
    for part, chunk, _ in plan:
        rel = f"{part.path}/{D.file_name(chunk)}"
        path = D.store.location(out) / rel
        if not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                same = pq.read_schema(f).equals(SCHEMA)
        except (OSError, pa.ArrowException) as exc:
            raise GoldenError(f"--resume: {shown(rel)}: not a readable Parquet file ({D.why(exc, 80)}); remove it "
                              f"and resume") from None
        if not same:
            raise GoldenError(f"--resume: {shown(rel)} does not hold stream rows of format version {FORMAT_VERSION} "
                              f"(an earlier tile-emu's?); generate into an empty --out")


def manifest(p: StreamParams, records: list[dict]) -> dict:
    return D.manifest_of(FORMAT, FORMAT_VERSION, p, {part.path: {**part.keys(), "not_applicable":
                                                                 classes_for(part.shape, p.constraint)[1]}
                                                   for part in partitions(p)},
                         records)


def is_stream_dataset(folder) -> bool:
    """Whether `folder`'s manifest (or generation.json) names a stream dataset (cheap: no checks)."""
    for name in (D.MANIFEST, D.PARAMS):
        path = D.store.location(folder) / name
        try:
            if path.stat().st_size > 1 << 20 and name == D.PARAMS:
                return False
            if D.store.is_remote(path):
                head = D.store.head(path, 1 << 16)
            else:
                with D.open_regular(path, name) as f:       # a FIFO is not waited on
                    head = f.read(1 << 16)
        except (OSError, D.GoldenError):
            continue
        if name == D.MANIFEST:
            return FORMAT.encode() in head
        try:
            return jsontext.loads(head, max_depth=jsontext.MAX_DEPTH).get("streams") is True
        except (jsontext.JsonTextError, AttributeError):
            return False
    return False


# ---------------------------------------------------------------------------- the checked open

@dataclass(frozen=True)
class StreamDataset:
    folder: pathlib.Path
    manifest: dict
    profile: Profile
    params: StreamParams
    partitions: tuple[StreamPartition, ...]
    files: tuple[tuple[StreamPartition, int, dict], ...]      # (partition, chunk, record)

    @property
    def rows(self) -> int:
        return sum(rec["rows"] for _, _, rec in self.files)

    def config(self, local_bytes: int, matrix_bytes: int) -> MachineConfig:
        return MachineConfig(local_bytes, matrix_bytes, profile=self.profile.name)

    def read(self, part: StreamPartition, chunk: int, rec: dict) -> pa.Table:
        t = D.read_file_checked(self.folder, rec, SCHEMA, "the stream golden schema (docs/golden-format.md, "
                                "'Stream goldens')")
        _check_rows(self, part, chunk, rec, t)
        return t


def read_manifest(folder) -> dict:
    """The manifest, parsed, checked against MANIFEST_SCHEMA (file records by dataset.py's check);
    a version 2 manifest against its own schema (READ_VERSIONS)."""
    stated = _stated_version(folder)
    if stated == 2:
        return D.read_manifest(folder, FORMAT, 2, MANIFEST_SCHEMA_V2)
    try:
        return D.read_manifest(folder, FORMAT, FORMAT_VERSION, MANIFEST_SCHEMA)
    except GoldenError:
        if stated is not None and stated not in READ_VERSIONS:
            raise GoldenError(f"{shown(D.store.location(folder) / D.MANIFEST)}: a {FORMAT} of format version {stated}; "
                              f"this tile-emu reads versions {' and '.join(map(str, READ_VERSIONS))} "
                              f"(docs/golden-format.md, 'Stream goldens'): regenerate it with golden "
                              f"--streams") from None
        raise


def _stated_version(folder) -> int | None:
    """The format_version an old stream manifest states (None: not one, or unreadable)."""
    path = D.store.location(folder) / D.MANIFEST
    try:
        m = jsontext.loads(D.read_small(path, D.MANIFEST, D.MAX_MANIFEST_BYTES, "a manifest"),
                           max_depth=jsontext.MAX_DEPTH)
    except (GoldenError, ValueError):      # JsonTextError is a ValueError
        return None
    v = m.get("format_version") if isinstance(m, dict) and m.get("format") == FORMAT else None
    return v if type(v) is int else None


def open_stream_dataset(folder, progress=None) -> StreamDataset:
    """Open a stream dataset and check everything that needs no replay (one GoldenError line
    naming the file, the case and the field for the first fault): the manifest, its profile,
    its parameters and the partitions and files they imply, the folder, each file's size,
    SHA-256, row count and schema, and each row (`_check_rows`)."""
    folder = D.store.location(folder)
    m = read_manifest(folder)
    prof, params, plan, sizes = D.manifest_plan(m, _versioned(m["format_version"]), chunks)
    files = []
    for i, (entry, part) in enumerate(zip(m["partitions"], plan.parts)):
        keys = {k: v for k, v in entry.items() if k not in ("not_applicable", "files")}
        if keys != part.keys():
            raise GoldenError(f"manifest: partitions[{i}] has keys {shown(str(keys), 120)}; the generator "
                              f"parameters give {part.path}")
        na = classes_for(part.shape, params.constraint)[1]
        if sorted(entry["not_applicable"]) != sorted(na):
            raise GoldenError(f"manifest: {part.path}: not_applicable differs from this tile-emu's stream classes "
                              f"({', '.join(sorted(set(entry['not_applicable']) ^ set(na))[:5])})")
        D.check_file_records(entry, part, sizes)
        files += [(part, k, rec) for k, rec in enumerate(entry["files"])]
    D._check_folder(folder, params, {rec["path"] for _, _, rec in files},
                    read=functools.partial(read_params, version=m["format_version"]))
    ds = StreamDataset(folder, m, prof, params, plan.parts, tuple(files))
    for part, k, rec in files:
        ds.read(part, k, rec)
        if progress:
            progress(rec["rows"])
    return ds


def _check_rows(ds: StreamDataset, part: StreamPartition, chunk: int, rec: dict, t: pa.Table) -> None:
    """Every field that needs no replay: no nulls; case numbers contiguous from the chunk's
    first; each stream decodes to `blocks` blocks (the partition's); asm its canonical text;
    the class one the shape class can have and its outcome (legal: commit; illegal_<reason>:
    fault with that reason at fault_block = executed < blocks); the class counts the manifest's."""
    where = shown(rec["path"])
    cases = D.check_cases(t, where, chunk * ds.params.chunk_cases)

    def case(mask) -> int:
        return D.case_at(cases, mask)

    blocks_col = t.column("blocks").to_numpy()
    if (blocks_col != part.blocks).any():
        raise GoldenError(f"{where}: case {case(blocks_col != part.blocks)}: blocks is not the partition's {part.blocks}")
    uniques, index = D.distinct_streams(t)
    asm, decoded = [], []
    for rows, blocks in D.decoded_streams(uniques, index, where, case):
        if len(blocks) != part.blocks:
            raise GoldenError(f"{where}: case {case(rows)}: the stream holds {len(blocks)} blocks; the partition's "
                              f"streams hold {part.blocks}")
        asm.append(S.stream_text(blocks)[1])
        decoded.append(blocks)
    bad = pc.not_equal(t.column("asm").combine_chunks(), pa.array(asm, pa.string()).take(pa.array(index)))
    if pc.any(bad).as_py():
        raise GoldenError(f"{where}: case {case(bad)}: asm is not the stream's canonical text")
    con = ds.params.constraint
    if con != S.EVERY:
        unassigned = pc.equal(t.column("class"), S.stream_class("UNASSIGNED_OPCODE")).to_numpy(zero_copy_only=False)
        fault_at = t.column("fault_block").to_numpy()
        for u, blocks in enumerate(decoded):
            _check_carried(blocks, con, index == u, unassigned, fault_at, where, case)
    counts = D.class_counts(t, where, rec)
    ok = set(classes_for(part.shape, ds.params.constraint)[0])
    cls = t.column("class").combine_chunks()
    outcome, reason = t.column("outcome").combine_chunks(), t.column("reason").combine_chunks()
    executed = t.column("executed").to_numpy()
    fault_block = t.column("fault_block").to_numpy()
    for name in counts:
        rows = pc.equal(cls, name).to_numpy(zero_copy_only=False)
        if name not in ok:
            raise GoldenError(f"{where}: case {case(rows)}: class {quote(name)} is not one shape {part.shape} can have")
        r = S.reason_of(name)
        if r is None:
            bad = rows & ((outcome.to_numpy(zero_copy_only=False) != "commit") | (executed != part.blocks)
                          | (fault_block != -1))
            want = f"commit of all {part.blocks} blocks"
        else:
            bad = rows & ((outcome.to_numpy(zero_copy_only=False) != "fault")
                          | (reason.to_numpy(zero_copy_only=False) != r) | (fault_block != executed.astype(np.int64))
                          | (executed >= part.blocks))
            want = f"a fault with {r} at block fault_block = executed"
        if bad.any():
            raise GoldenError(f"{where}: case {case(bad)}: class {name} expects {want}")
    _check_layouts(t, where, case, outcome.to_numpy(zero_copy_only=False) == "fault", executed,
                   S.SHAPE_BY_NAME[part.shape], decoded, index)


def _check_carried(blocks: list, con: S.Constraint, rows: np.ndarray, unassigned: np.ndarray,
                   fault_at: np.ndarray, where: str, case) -> None:
    """Every block of a stream (its `rows`) is an instruction of the dataset's --ops whose
    DataTypes (BSTART's, TCVT's B.DATR destination) are of its --dtypes -- all but the planted
    block of an illegal_unassigned_opcode stream, which names no instruction."""
    from isa.datatypes import BY_CODE
    for i, b in enumerate(blocks):
        op = S.I.by_carrier(b.bstart.Mode, b.bstart.Function)
        if op is None:
            if (rows & ~(unassigned & (fault_at == i))).any():
                raise GoldenError(f"{where}: case {case(rows & ~(unassigned & (fault_at == i)))}: block {i} names no "
                                  f"instruction (Mode {b.bstart.Mode}, Function {b.bstart.Function}); the dataset's "
                                  f"streams carry only --ops {','.join(sorted(con.ops))}")
            continue
        names = [b.bstart.DataType] + ([b.datr.DataType] if op.schema == S.I.CONVERT and b.datr is not None
                                       and b.datr.DataType is not None else [])
        for code in names:
            dt = BY_CODE.get(code)
            if op.mnemonic not in con.ops or dt is None or dt.name not in con.dtypes:
                raise GoldenError(f"{where}: case {case(rows)}: block {i} is {op.mnemonic} of DataType "
                                  f"{dt.name if dt else f'code {code}'}; the dataset's streams carry only --ops "
                                  f"{','.join(sorted(con.ops))} --dtypes {','.join(sorted(con.dtypes))}")


BINARY_COLUMNS = ("gprs", "initial_payload", "initial_defined", "record_payload", "record_defined", "record_status")


def _check_layouts(t: pa.Table, where: str, case, faulted: np.ndarray, executed: np.ndarray, shape: S.Shape,
                   streams: list, stream_index: np.ndarray) -> None:
    """Each row's layout parses, every tile it describes has the partition's valid shape (the
    window sources their own: `_check_shape`), its per-stream binaries have the lengths it
    gives, its records are those of its outcome: commits of blocks before `executed` in
    (block, PE) order, then, on a fault, one fault record of block `executed`, and each
    committed block reads tiles that are there (`_check_sources`; `streams[u]`: the decoded
    blocks of distinct stream u, `stream_index` each row's u)."""
    texts, index = layouts_of(t)
    lengths = {name: pc.binary_length(t.column(name).combine_chunks()).to_numpy(zero_copy_only=False)
               for name in BINARY_COLUMNS}
    for u, text in enumerate(texts):
        rows = index == u
        try:
            lay = parse_layout(text)
        except ValueError as exc:
            raise GoldenError(f"{where}: case {case(rows)}: {shown(str(exc), 160)}") from None
        _check_shape(lay, shape, lambda: f"{where}: case {case(rows)}")
        for name in BINARY_COLUMNS:
            bad = rows & (lengths[name] != lay.width(name))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise GoldenError(f"{where}: case {case(bad)}: {name} holds {int(lengths[name][i]):,} bytes; its "
                                  f"layout gives {lay.width(name):,}")
        heads = [(r["block"], r["record"] != CL.COMMIT, r["pe"]) for r in lay.records]
        commits = [b for b, f, _ in heads if not f]
        fault = [b for b, f, _ in heads if f]
        order_ok = heads == sorted(heads) and len(set(heads)) == len(heads) and (not fault or heads[-1][1])
        for is_fault in (False, True):
            sel = rows & (faulted == is_fault)
            if not sel.any():
                continue
            ex = executed[sel]
            ok = order_ok and np.all(ex == ex[0]) and all(b < ex[0] for b in commits) and \
                (fault == [int(ex[0])] if is_fault else not fault)
            if not ok:
                raise GoldenError(f"{where}: case {case(sel)}: layout: the records are not commits of the blocks before "
                                  f"`executed`{' then its fault' if is_fault else ''}, in (block, PE) order")
        for u in np.unique(stream_index[rows]).tolist():
            _check_sources(lay, streams[u], lambda: f"{where}: case {case(rows & (stream_index == u))}")


def _check_shape(lay: Layout, shape: S.Shape, where) -> None:
    """The partition's `shape=` key against its rows: every initial tile but the window sources
    (S.WINDOW_SOURCES) and every committed destination has the shape class's valid shape
    (ValidRow x ValidCol; docs/golden-format.md, 'Layout').  `where()` names the case."""
    for part, entries in (("initial", lay.initial), ("records", lay.records)):
        for i, e in enumerate(entries):
            if (part == "initial" and e["tile"] in S.WINDOW_SOURCES) or e.get("record") == CL.FAULT:
                continue
            if (e["valid_row"], e["valid_col"]) != (shape.vrow, shape.vcol):
                key = "valid_row" if e["valid_row"] != shape.vrow else "valid_col"
                raise GoldenError(f"{where()}: layout.{part}[{i}].{key}: tile {e['tile']} has valid shape "
                                  f"{e['valid_row']} x {e['valid_col']}; the partition's shape class {shape.name} is "
                                  f"{shape.vrow} x {shape.vcol}")


def _check_sources(lay: Layout, blocks: list, where) -> None:
    """Each committed block of a stream (`blocks`, decoded) with layout `lay` resolves
    (isa.legality: the stateless rules) and, on each PE its records name, finds every tile a
    source binding names in the state before it: the initial state with the earlier blocks'
    commits applied.  What the replay's first checks ask of the stored state, checked before any
    consumer reads a source (the single-block open's `dataset._check_sources`, block by block).
    `where()` names the case."""
    held = {(p, e["tile"]) for e in lay.initial for p in e["pes"]}
    commits = [r for r in lay.records if r["record"] == CL.COMMIT]      # in (block, PE) order (checked)
    for b, mine in itertools.groupby(commits, key=lambda r: r["block"]):
        mine = list(mine)
        try:
            rb = legality.resolve(blocks[b])
        except IllegalBlockException as exc:
            raise GoldenError(f"{where()}: block {b} commits, but it is illegal ({shown(str(exc), 160)})") from None
        for r in mine:
            for i, src in enumerate(rb.sources):
                if (r["pe"], src.tile) not in held:
                    raise GoldenError(f"{where()}: block {b} PE{r['pe']} commits, but its source tile {src.tile} "
                                      f"(B.IOT[{i}]) is in neither the initial state nor an earlier block's commit")
        held.update((r["pe"], r["tile"]) for r in mine)
