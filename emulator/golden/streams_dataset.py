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
import pathlib
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa.atomicio import quote, shown
from kernels.numeric.profiles import DEFAULT_PROFILE, PROFILES, Profile, profile as numeric_profile

from .. import commitlog as CL
from ..config import MachineConfig
from ..tiles import pack_payloads
from . import dataset as D
from . import streams as S
from .dataset import GoldenError
from .rows import GPR, TILE, _binary, _tiles_array, gprs_array

FORMAT = "tile-emu stream golden dataset"
FORMAT_VERSION = 1
CHUNK_CASES = 1 << 12          # streams per data file (a row holds K blocks' records, the states: ~40 KB)
GROUP_CASES = 256              # streams per group: one stream, one MachineBatch cohort
ILLEGAL_FRACTION = 0.1
MAX_BLOCKS = 1 << 10

RECORD = pa.struct(list(CL.SCHEMA)[1:])          # a commit-log record without `machine` (the row is one)
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
    ("gprs", pa.list_(GPR)),
    ("initial", pa.list_(TILE)),
    ("records", pa.list_(RECORD)),
    ("executed", pa.uint32()),
    ("outcome", pa.string()),
    ("fault_block", pa.int32()),
    ("reason", pa.string()),
    ("field", pa.string()),
    ("message", pa.string()),
    ("final", pa.list_(TILE)),
    ("status", pa.list_(pa.uint8(), 4)),
])

GENERATOR_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["streams", "blocks", "cases", "seed", "shapes", "illegal_fraction", "group_cases", "profile",
                 "chunk_cases"],
    "properties": {
        "streams": {"const": True},
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

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d, where: str = "generator parameters") -> "StreamParams":
        D._validate(d, GENERATOR_SCHEMA, where)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


read_params = functools.partial(D.read_params, cls=StreamParams)


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


def chunks(p: StreamParams) -> D.ChunkPlan:
    if not 1 <= p.cases <= D.MAX_CASES:
        raise GoldenError(f"--cases {p.cases}: from 1 to {D.MAX_CASES:,} (2^32) streams per partition")
    if not 1 <= p.chunk_cases <= CHUNK_CASES:
        raise GoldenError(f"chunk_cases {p.chunk_cases}: from 1 to {CHUNK_CASES:,}")
    plan = D.ChunkPlan(tuple(partitions(p)), p.cases, p.chunk_cases)
    if len(plan) > D.MAX_FILES:
        raise GoldenError(f"{len(plan.parts):,} partition(s) x {p.cases:,} streams need {len(plan):,} data files; "
                          f"a dataset holds at most {D.MAX_FILES:,} files")
    return plan


@functools.lru_cache(maxsize=None)
def classes_for(shape: str) -> tuple[list[str], list[str]]:
    """(stream classes a shape class can have, those it cannot), in STREAM_ILLEGAL order."""
    sh = S.SHAPE_BY_NAME[shape]
    ok, na = [S.LEGAL], []
    for reason in S.STREAM_ILLEGAL:
        if any(S._applies(reason, op, dt, sh) for op in S.I.INSTRUCTIONS for dt in op.dtypes):
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


def group_plan(p: StreamParams, part: StreamPartition, chunk: int, n: int, rng) -> list[tuple[int, str | None]]:
    """(cases, planted reason or None) of each group of a chunk, in a random order: round(n x
    illegal_fraction) illegal streams in groups of at most ILLEGAL_GROUP, the reasons taken in
    turn from a random start (so every applicable class appears as n allows), the rest legal
    in groups of group_cases."""
    illegal = [S.reason_of(c) for c in classes_for(part.shape)[0] if c != S.LEGAL]
    bad = int(round(n * p.illegal_fraction)) if illegal else 0
    start = int(rng.integers(len(illegal))) if illegal else 0
    per_class = min(ILLEGAL_GROUP, p.group_cases)
    out, k, left = [], 0, bad
    while left > 0:
        m = min(per_class, left)
        out.append((m, illegal[(start + k) % len(illegal)]))
        k += 1
        left -= m
    rest = n - bad
    for lo in range(0, rest, p.group_cases):
        out.append((min(p.group_cases, rest - lo), None))
    return [out[i] for i in rng.permutation(len(out))]


# ---------------------------------------------------------------------------- rows

def _records_column(recs: CL.Records, n: int) -> pa.Array:
    """list<RECORD> per case from the group's records (block-major; PEs ascending within a
    block): stably reordered by machine, so each case's list is (block, PE) ordered."""
    batch = recs.to_batch()
    machine = batch.column(0).to_numpy()
    order = np.argsort(machine, kind="stable")
    batch = batch.take(pa.array(order))
    flat = pa.StructArray.from_arrays(batch.columns[1:], fields=list(RECORD))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(machine, minlength=n), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), flat)


def _tiles_column(n: int, entries) -> pa.Array:
    """list<TILE> per case of [(desc, tid, (pe,), elems (n, E), defined (n, E))] in (tile, PE)
    order.  The descriptor fields are the same for every case: one case's entries are built
    (rows._tiles_array) and taken n times; the payloads and definedness are every case's."""
    if not entries:
        return pa.array([[]] * n, pa.list_(TILE))
    runs = []
    for d, tid, pes, e, f in entries:
        if runs and runs[-1][0] == d and runs[-1][1] == tid:
            runs[-1][2].extend(pes)
            runs[-1][3].append(e)
            runs[-1][4].append(f)
        else:
            runs.append((d, tid, list(pes), [e], [f]))
    descs = [(d, tid, tuple(pes)) for d, tid, pes, _, _ in runs]
    payloads = [pack_payloads(np.stack(es, axis=1), d.container) for d, _, _, es, _ in runs]
    defineds = [np.packbits(np.stack(fs, axis=1), axis=-1, bitorder="little") for *_, fs in runs]
    one = _tiles_array(1, descs, [p[:1] for p in payloads], [d[:1] for d in defineds]).values
    k = len(one)
    taken = one.take(pa.array(np.tile(np.arange(k), n)))
    real = {"payload": _binary(payloads), "defined": _binary(defineds)}
    cols = [real.get(f.name, taken.field(i)) for i, f in enumerate(TILE)]
    flat = pa.StructArray.from_arrays(cols, fields=list(TILE))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * k), flat)


def initial_entries(tiles: dict) -> list:
    return [(desc, tid, (p,), e, d) for (p, tid), (desc, e, d) in sorted(tiles.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


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


def replay_columns(config: MachineConfig, n: int, tiles: dict, gprs, blocks, records: CL.Records, executed: int,
                   final, status) -> dict[str, pa.Array]:
    """Every column a replay recomputes (all but case, class, group, value_class)."""
    data, text = S.stream_text(blocks)
    faulted, reason, fld, message = _fault_columns(records, n)
    return {
        "stream": D_repeat(data, n, pa.binary()),
        "asm": D_repeat(text, n, pa.string()),
        "blocks": pa.array(np.full(n, len(blocks), np.uint32)),
        "local_bytes": pa.array(np.full(n, config.local_bytes, np.uint32)),
        "matrix_bytes": pa.array(np.full(n, config.matrix_bytes, np.uint32)),
        "gprs": gprs_array(gprs, n),
        "initial": _tiles_column(n, initial_entries(tiles)),
        "records": _records_column(records, n),
        "executed": pa.array(np.full(n, executed, np.uint32)),
        "outcome": pa.array(np.where(faulted, "fault", "commit").astype(object), pa.string()),
        "fault_block": pa.array(np.where(faulted, executed, -1).astype(np.int32)),
        "reason": pa.array(reason, pa.string()),
        "field": pa.array(fld, pa.string()),
        "message": pa.array(message, pa.string()),
        "final": _tiles_column(n, final),
        "status": pa.FixedSizeListArray.from_arrays(pa.array(np.asarray(status, np.uint8).reshape(-1)), 4),
    }


def D_repeat(value, n: int, typ) -> pa.Array:
    from .rows import _repeat
    return _repeat(value, n, typ)


def group_table(g: S.StreamGroup, first_case: int, group_index: int) -> pa.Table:
    n = g.n
    cols = {
        "case": pa.array(np.arange(first_case, first_case + n, dtype=np.uint64)),
        "class": D_repeat(g.cls, n, pa.string()),
        "group": pa.array(np.full(n, group_index, np.uint32)),
        "value_class": D_repeat(g.value_class, n, pa.string()),
        **replay_columns(g.config, n, g.tiles, g.gprs, g.blocks, g.records, g.executed, g.final, g.status),
    }
    return pa.Table.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)


def chunk_table(p: StreamParams, part: StreamPartition, chunk: int, n: int, backend: str = "cpu") -> pa.Table:
    rng = D._rng(p.seed, part, chunk)
    config = machine_config(p)
    shape = S.SHAPE_BY_NAME[part.shape]
    tables, first = [], chunk * p.chunk_cases
    for gi, (m, reason) in enumerate(group_plan(p, part, chunk, n, rng)):
        g = S.build_group(shape, p.blocks, m, rng, config, reason, backend)
        tables.append(group_table(g, first, gi))
        first += m
    return pa.concat_tables(tables)


def write_chunk(out_dir: str, params: dict, part: dict, chunk: int, n: int, backend: str = "cpu") -> dict:
    """Generate and write one file (a Dask task: plain arguments, plain result)."""
    p = StreamParams.from_json(params)
    pt = StreamPartition(**part)
    return D.write_data_file(out_dir, pt.path, chunk, chunk_table(p, pt, chunk, n, backend))


def manifest(p: StreamParams, records: list[dict]) -> dict:
    return D.manifest_of(FORMAT, FORMAT_VERSION, p, {part.path: {**part.keys(), "not_applicable":
                                                                 classes_for(part.shape)[1]} for part in partitions(p)},
                         records)


def is_stream_dataset(folder) -> bool:
    """Whether `folder`'s manifest (or generation.json) names a stream dataset (cheap: no checks)."""
    import json
    for name in (D.MANIFEST, D.PARAMS):
        path = pathlib.Path(folder) / name
        try:
            if path.stat().st_size > 1 << 20 and name == D.PARAMS:
                return False
            with open(path, "rb") as f:
                head = f.read(1 << 16)
        except OSError:
            continue
        if name == D.MANIFEST:
            return FORMAT.encode() in head
        try:
            return json.loads(head).get("streams") is True
        except (ValueError, AttributeError):
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
    """The manifest, parsed, checked against MANIFEST_SCHEMA (file records by dataset.py's check)."""
    return D.read_manifest(folder, FORMAT, FORMAT_VERSION, MANIFEST_SCHEMA)


def open_stream_dataset(folder, progress=None) -> StreamDataset:
    """Open a stream dataset and check everything that needs no replay (one GoldenError line
    naming the file, the case and the field for the first fault): the manifest, its profile,
    its parameters and the partitions and files they imply, the folder, each file's size,
    SHA-256, row count and schema, and each row (`_check_rows`)."""
    folder = pathlib.Path(folder)
    m = read_manifest(folder)
    prof, params, plan, sizes = D.manifest_plan(m, StreamParams, chunks)
    files = []
    for i, (entry, part) in enumerate(zip(m["partitions"], plan.parts)):
        keys = {k: v for k, v in entry.items() if k not in ("not_applicable", "files")}
        if keys != part.keys():
            raise GoldenError(f"manifest: partitions[{i}] has keys {shown(str(keys), 120)}; the generator "
                              f"parameters give {part.path}")
        na = classes_for(part.shape)[1]
        if sorted(entry["not_applicable"]) != sorted(na):
            raise GoldenError(f"manifest: {part.path}: not_applicable differs from this tile-emu's stream classes "
                              f"({', '.join(sorted(set(entry['not_applicable']) ^ set(na))[:5])})")
        D.check_file_records(entry, part, sizes)
        files += [(part, k, rec) for k, rec in enumerate(entry["files"])]
    D._check_folder(folder, params, {rec["path"] for _, _, rec in files}, read=read_params)
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
    asm = []
    for rows, blocks in D.decoded_streams(uniques, index, where, case):
        if len(blocks) != part.blocks:
            raise GoldenError(f"{where}: case {case(rows)}: the stream holds {len(blocks)} blocks; the partition's "
                              f"streams hold {part.blocks}")
        asm.append(S.stream_text(blocks)[1])
    bad = pc.not_equal(t.column("asm").combine_chunks(), pa.array(asm, pa.string()).take(pa.array(index)))
    if pc.any(bad).as_py():
        raise GoldenError(f"{where}: case {case(bad)}: asm is not the stream's canonical text")
    counts = D.class_counts(t, where, rec)
    ok = set(classes_for(part.shape)[0])
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
