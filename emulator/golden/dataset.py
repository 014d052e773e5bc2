"""Golden datasets: partitions, deterministic chunks, Parquet files, the manifest, the checked open.

A dataset is a folder:  manifest.json  and  <partition path>/part-NNNNN.parquet  where the
partition path is  op=TADD/dtype=FP16  (TCVT adds dst=, rmode=, sat=).  Each file holds one
chunk of at most CHUNK_CASES cases; its content depends only on (seed, partition, chunk
index, profile), so any number of workers, in-process or on a Dask cluster, writes the same
bytes.  Files are written to a temporary name and renamed when complete; `--resume` keeps
every file already under its final name.

`open_dataset` is the one reader every consumer goes through (`verify`, `golden --coverage`,
`golden export`): it checks the manifest against the folder and every stored field of every
row that can be recomputed without replaying the block (docs/golden-format.md, "What verify
checks"), so a consumer never sees a dataset that `verify` would refuse before replaying it.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import stat
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import jsonschema
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from isa import encoding, fields as F, instructions as I
from isa import jsontext, legality
from isa.atomicio import atomic_open, quote, shown, why
from isa.datatypes import datatype
from isa.errors import DecodeError, EncodeError, IllegalBlockException
from kernels.numeric.profiles import DEFAULT_PROFILE, PROFILES, Profile, profile as numeric_profile

from ..config import MachineConfig
from . import closure, store
from . import coverage as C
from .errors import GoldenError  # noqa: F401  (re-exported: golden modules raise it as dataset.GoldenError)
from .cases import build_group, execute_all, rejected_on_reference, stream_of
from .rows import SCHEMA, groups_table, pe_mask_of, tiles_of
from .space import space

FORMAT = "tile-emu golden dataset"
FORMAT_VERSION = 2          # 2: coverage closure (allocation, per_class, holes, the boundary classes)
CHUNK_CASES = 1 << 16
GROUP_CASES = 4096
MANIFEST = "manifest.json"
PARAMS = "generation.json"
RMODE_NAMES = tuple(F.RMODES.values())
# Bounds (docs/golden-format.md, "Limits"): checked before any work, on the command line and
# on every manifest read, so neither a typo nor a hostile manifest plans an unbounded run.
MAX_CASES = 1 << 32            # cases per partition
MAX_FILES = 1 << 16            # data files per dataset (the manifest holds one record each)
MAX_FILE_DATA_BYTES = 1 << 31  # uncompressed column data of one data file (its Parquet metadata)
MAX_MANIFEST_BYTES = 1 << 28   # MAX_FILES records of about 2 KB each fit many times over
KEPT_BYTES = 1 << 26           # checked tables open_dataset keeps for the first read (small files' second read)
SEED_RANGE = (-(1 << 63), 1 << 64)
# how every data file is written (golden --plan prices its sample with the same)
PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": False}
# A data file (or, written, a table) of at most this many bytes goes through memory whole: the
# writer writes it to a buffer, hashed there and written out in one go; verify reads it once,
# hashes and parses the same bytes, its footer parsed once (a small partition's file cost about
# 1 ms more each way through paths: issue 32 target 6).  A larger one streams through its path,
# so memory holds its table alone.
ONE_READ_BYTES = 16 << 20
# atomicio's temporary names: ".part-00000.parquet.1a2b3c4d.tmp"
_TEMPORARY = re.compile(r"\.part-\d{5}\.parquet\.[0-9a-f]{8}\.tmp")




@dataclass(frozen=True)
class Partition:
    op: str
    dtype: str
    dst: str | None = None
    rmode: str | None = None
    sat: bool | None = None

    @property
    def path(self) -> str:
        p = f"op={self.op}/dtype={self.dtype}"
        if self.dst is not None:
            p += f"/dst={self.dst}/rmode={self.rmode}/sat={int(self.sat)}"
        return p

    def keys(self) -> dict:
        """The partition's keys as the manifest records them."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def context(self) -> C.Context:
        op = I.lookup(self.op)
        return C.Context(op, space(self.dtype), space(self.dst or self.dtype), self.rmode, bool(self.sat))

_NAMES = {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 1024}
# generation.json and the manifest's `generator`: every Params field, nothing else.
GENERATOR_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["ops", "dtypes", "cases", "per_class", "seed", "dst_dtypes", "rmodes", "sat", "profile",
                 "chunk_cases"],
    "properties": {
        "ops": {**_NAMES, "minItems": 1}, "dtypes": {**_NAMES, "minItems": 1}, "dst_dtypes": _NAMES,
        "rmodes": {**_NAMES, "minItems": 1},
        "sat": {"type": "array", "items": {"enum": [0, 1]}, "minItems": 1, "maxItems": 2},
        # exactly one of the two: cases per partition, or cases per coverage point
        "cases": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_CASES},
        "per_class": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_CASES},
        "seed": {"type": "integer", "minimum": SEED_RANGE[0], "exclusiveMaximum": SEED_RANGE[1]},
        "profile": {"type": "string", "maxLength": 64},
        "chunk_cases": {"type": "integer", "minimum": 1, "maximum": CHUNK_CASES},
    },
}


def header_properties(fmt: str, version: int) -> dict:
    """The properties a tile-emu JSON record opens with (a dataset manifest, a shard record):
    its format, this build's version of it, and the tile-emu version that wrote it."""
    return {"format": {"const": fmt},
            "format_version": {"type": "integer", "const": version},
            "tile_emu_version": {"type": "string", "maxLength": 200}}


MANIFEST_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["format", "format_version", "tile_emu_version", "profile", "generator", "partitions"],
    "properties": {
        **header_properties(FORMAT, FORMAT_VERSION),
        "profile": {"type": "object", "additionalProperties": False, "required": ["name", "version"],
                    "properties": {"name": {"type": "string", "maxLength": 64},
                                   "version": {"type": "string", "maxLength": 64}}},
        "generator": GENERATOR_SCHEMA,
        "partitions": {"type": "array", "maxItems": MAX_FILES, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["op", "dtype", "not_applicable", "holes", "files"],
            "properties": {
                "op": {"type": "string"}, "dtype": {"type": "string"}, "dst": {"type": "string"},
                "rmode": {"type": "string"}, "sat": {"type": "boolean"},
                "not_applicable": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                # applicable classes and cross cells without a case (closure.holes)
                "holes": {"type": "array", "items": {"type": "string", "maxLength": 200}, "uniqueItems": True},
                # the records: _check_record (jsonschema's ~25 us a node would spend about a
                # minute on a manifest of MAX_FILES records of some 45 nodes each)
                "files": {"type": "array", "maxItems": MAX_FILES},
            }}},
    },
}


# JSON Schema's "integer" holds 20.0 too; a dataset's counts, sizes and keys are integer literals
# (a float would reach range() and the folder names), as its format_version is (not true)
_VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=(
    jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", lambda _, v: type(v) is int)))


def parse_manifest(parse, path: pathlib.Path, fmt: str, version: int, schema: dict) -> dict:
    """`parse()`'s manifest of `path` (a golden dataset's or an export's); GoldenError unless it is
    JSON that names format `fmt` version `version` and has the structure and types of `schema`."""
    try:
        m = parse()
    except jsontext.JsonTextError as exc:
        raise GoldenError(f"{shown(path)}: not valid JSON ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != fmt or type(m.get("format_version")) is not int \
            or m.get("format_version") != version:
        raise GoldenError(f"{shown(path)}: not a {fmt} version {version} manifest")
    _validate(m, schema, shown(path))
    return m


_VALIDATORS: dict[int, tuple] = {}


def _validator(schema: dict):
    """The validator of `schema`, built once per schema object (not once per document: every
    chunk a golden run writes validates its parameters; the schema object is kept alive with
    its validator, so its id cannot be reused)."""
    got = _VALIDATORS.get(id(schema))
    if got is None or got[0] is not schema:
        got = _VALIDATORS[id(schema)] = (schema, _VALIDATOR(schema))
    return got[1]


def _validate(doc, schema: dict, where: str) -> None:
    """GoldenError naming the first place `doc` breaks `schema` (one line, the value cut short);
    an "integer" is an integer literal (type int: not 20.0, not true)."""
    err = jsonschema.exceptions.best_match(_validator(schema).iter_errors(doc))
    if err is None:
        return
    at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
    raise GoldenError(f"{where}{': ' + at if at else ''}: {shown(err.message, 160)}")


@dataclass(frozen=True)
class Params:
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    cases: int | None             # per partition; None with per_class
    seed: int
    dst_dtypes: tuple[str, ...] = ()
    rmodes: tuple[str, ...] = RMODE_NAMES
    sat: tuple[int, ...] = (0, 1)
    profile: str = DEFAULT_PROFILE
    chunk_cases: int = CHUNK_CASES
    per_class: int | None = None  # cases per coverage point instead of a total (closure.py)

    def to_json(self) -> dict:
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_json(cls, d, where: str = "generator parameters") -> "Params":
        _validate(d, GENERATOR_SCHEMA, where)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


# ---------------------------------------------------------------------------- planning

def parse_list(text: str, what: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise GoldenError(f"--{what}: empty list")
    return items


def _once(names, what: str) -> None:
    """Each name once: a repeated --ops/--dtypes/... entry would plan (and count) a partition twice."""
    seen = set()
    for n in names:
        if n in seen:
            raise GoldenError(f"--{what}: {quote(str(n))} is listed more than once")
        seen.add(n)


def partitions(p: Params) -> list[Partition]:
    """Every partition the parameters ask for, validated: unknown names, repeated names and
    unsupported (op, DataType) pairs are errors that name the supported set."""
    ops = []
    for op_name in p.ops:
        try:
            ops.append(I.lookup(op_name))
        except KeyError:
            raise GoldenError(f"unknown op {quote(op_name)}; ops: "
                              + ", ".join(i.mnemonic for i in I.INSTRUCTIONS)) from None
    dtypes = [_dtype(d) for d in p.dtypes]
    dsts = [_dtype(d) for d in p.dst_dtypes] or dtypes
    for rm in p.rmodes:
        if rm.upper() not in RMODE_NAMES:
            raise GoldenError(f"unknown rounding mode {quote(rm)}; modes: {', '.join(RMODE_NAMES)}")
    rmodes = [rm.upper() for rm in p.rmodes]
    for names, what in (([o.mnemonic for o in ops], "ops"), (dtypes, "dtypes"), (p.dst_dtypes and dsts, "dst-dtypes"),
                        (rmodes, "rmodes"), ([int(s) for s in p.sat], "sat")):
        _once(names or (), what)
    try:
        numeric_profile(p.profile)
    except ValueError:
        raise GoldenError(f"unknown numeric profile {quote(p.profile)}; profiles: {', '.join(PROFILES)}") from None
    out = []
    for op in ops:
        for dt in dtypes:
            if dt not in op.dtypes:
                raise GoldenError(f"{op.mnemonic} does not support {dt}; supported: {', '.join(sorted(op.dtypes))}")
            if op.schema != I.CONVERT:
                out.append(Partition(op.mnemonic, dt))
                continue
            for dst in dsts:
                for rm in rmodes:
                    for s in p.sat:
                        out.append(Partition(op.mnemonic, dt, dst, rm, bool(int(s))))
    return out


def _dtype(name: str) -> str:
    try:
        return datatype(name).name
    except ValueError:
        from isa.datatypes import DATATYPES
        raise GoldenError(f"unknown DataType {quote(name)}; DataTypes: {', '.join(d.name for d in DATATYPES)}") from None


@dataclass(frozen=True)
class ChunkPlan:
    """(partition, chunk index, cases in the chunk) of every file, produced lazily: the plan of
    a large run is never built as a list (docs/golden-format.md, "Limits").  `sizes`: each
    partition's cases where they differ (`--per-class`), else None and `cases` each."""
    parts: tuple[Partition, ...]
    cases: int | None
    chunk_cases: int
    sizes: tuple[int, ...] | None = None

    @property
    def per_partition(self) -> int:
        return -(-self.cases // self.chunk_cases)

    def cases_of(self, i: int) -> int:
        return self.cases if self.sizes is None else self.sizes[i]

    def file_rows(self, i: int) -> list[int]:
        """The row count of each data file of partition i."""
        n = self.cases_of(i)
        return [min(self.chunk_cases, n - k * self.chunk_cases) for k in range(-(-n // self.chunk_cases))]

    def __len__(self) -> int:
        if self.sizes is None:
            return len(self.parts) * self.per_partition
        return sum(-(-n // self.chunk_cases) for n in self.sizes)

    def __iter__(self):
        for i, part in enumerate(self.parts):
            for k, n in enumerate(self.file_rows(i)):
                yield part, k, n


def chunks(p: Params, limit_files: bool = True) -> ChunkPlan:
    """Every file of the dataset, after checking the run is within MAX_CASES and MAX_FILES (not
    limit_files: chunks streamed to standard output, with no manifest to hold them)."""
    if (p.cases is None) == (p.per_class is None):
        raise GoldenError("--cases and --per-class exclude each other; give one")
    if p.per_class is not None and not 1 <= p.per_class <= MAX_CASES:
        raise GoldenError(f"--per-class {p.per_class}: from 1 to {MAX_CASES:,} (2^32)")
    if p.cases is not None and not 1 <= p.cases <= MAX_CASES:
        raise GoldenError(f"--cases {p.cases}: from 1 to {MAX_CASES:,} (2^32) cases per partition")
    if not 1 <= p.chunk_cases <= CHUNK_CASES:
        raise GoldenError(f"chunk_cases {p.chunk_cases}: from 1 to {CHUNK_CASES:,}")
    parts = tuple(partitions(p))
    sizes = None
    if p.per_class is not None:
        sizes = tuple(p.per_class * len(points_for(part)) for part in parts)
        for part, n in zip(parts, sizes):
            if n > MAX_CASES:
                raise GoldenError(f"--per-class {p.per_class}: {part.path} has {len(points_for(part))} coverage "
                                  f"points, {n:,} cases; a partition holds at most {MAX_CASES:,} (2^32)")
    plan = ChunkPlan(parts, p.cases, p.chunk_cases, sizes)
    if limit_files and len(plan) > MAX_FILES:
        what = f"{p.cases:,} cases" if p.cases is not None else f"--per-class {p.per_class:,}"
        raise GoldenError(f"{len(plan.parts):,} partition(s) x {what} need {len(plan):,} data files of at "
                          f"most {p.chunk_cases:,} cases; a dataset holds at most {MAX_FILES:,} files")
    return plan


def _rng(seed: int, part: Partition, chunk: int) -> np.random.Generator:
    key = int.from_bytes(hashlib.sha256(part.path.encode()).digest()[:8], "little")
    return np.random.default_rng([seed & (2**63 - 1), key, chunk])


# ---------------------------------------------------------------------------- one chunk

def probe(cls: C.CoverageClass, ctx: C.Context) -> bool:
    """An illegal class applies where its mutation is rejected for the reason it names.
    (Legality does not depend on the numeric profile, so the probe runs under the default.)"""
    if cls.kind != "illegal":
        return True
    try:
        g = build_group(cls, ctx, 1, np.random.default_rng(0))
    except EncodeError:                 # the mutation cannot be carried by a stream
        return False
    out = rejected_on_reference(g)          # (the reference's verdict: no MachineBatch set-up)
    return out is not None and out.reason[0] == cls.reason


@lru_cache(maxsize=4096)
def classes_for(part: Partition) -> tuple[list[C.CoverageClass], list[str]]:
    """(classes generated for the partition, names of those it cannot have), in table order."""
    ctx = part.context()
    ok = [cls for cls in C.CLASSES if cls.applies(ctx) and probe(cls, ctx)]
    names = {cls.name for cls in ok}
    return ok, [cls.name for cls in C.CLASSES if cls.name not in names]


def points_for(part: Partition) -> list[closure.Point]:
    """The partition's coverage points (closure.points of its generated classes)."""
    return closure.points(classes_for(part)[0])


def partition_cases(p: Params, part: Partition) -> int:
    """Cases of a partition: --cases, or --per-class times its coverage points."""
    return p.cases if p.per_class is None else p.per_class * len(points_for(part))


def holes_of(p: Params, part: Partition) -> list[str]:
    """What the partition's cases leave without a case (closure.holes; the manifest's `holes`)."""
    return closure.holes(points_for(part), partition_cases(p, part), p.per_class is not None)


def machine_config(p: Params) -> MachineConfig:
    """The machine every case of the dataset runs on: its numeric profile is the one
    kernels.numeric.profiles resolves for the parameters (and the manifest records)."""
    return MachineConfig(profile=numeric_profile(p.profile).name)


def chunk_table(p: Params, part: Partition, chunk: int, n: int, backend: str = "cpu",
                one_chunk: bool = False) -> pa.Table:
    """The rows of data file `chunk` of the partition: a chunk a group, or with `one_chunk` a
    small file as one chunk (rows.groups_table; what the Parquet writer is given)."""
    ctx = part.context()
    pts = points_for(part)
    rng = _rng(p.seed, part, chunk)
    config = machine_config(p)
    groups, firsts, first = [], [], chunk * p.chunk_cases
    for pt, count in zip(pts, closure.counts(pts, first, first + n, p.per_class is not None).tolist()):
        for start in range(0, count, GROUP_CASES):
            m = min(GROUP_CASES, count - start)
            groups.append(build_group(pt.cls, ctx, m, rng, config, pt.bin))
            firsts.append(first)
            first += m
    outcomes = execute_all(groups, backend, GROUP_CASES)    # groups of one block and shape: one batch
    # the file's rows built at once: no per-group Arrow cost
    return groups_table([(g, o, f, gi) for gi, (g, o, f) in enumerate(zip(groups, outcomes, firsts))], one_chunk)


def file_name(chunk: int) -> str:
    return f"part-{chunk:05d}.parquet"


def write_chunk(out_dir: str, params: dict, part: dict, chunk: int, n: int, backend: str = "cpu") -> dict:
    """Generate and write one file (a Dask task: plain arguments, plain result).  A failed
    write (a full disk, a file-size limit) is one GoldenError; the temporary file is removed."""
    p = Params.from_json(params)
    pt = Partition(**part)
    return write_data_file(out_dir, pt.path, chunk, chunk_table(p, pt, chunk, n, backend, one_chunk=True))


def write_data_file(out_dir, part_path: str, chunk: int, table: pa.Table) -> dict:
    """Write data file `chunk` of partition folder `part_path` atomically (the stream goldens'
    files too) and return its record.  A failed write (a full disk, a file-size limit) is one
    GoldenError; the temporary file is removed."""
    folder = store.location(out_dir) / part_path
    path = folder / file_name(chunk)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with store.staged(path) as tmp:           # renamed (or, in an object store, moved) onto path
            rec = local_record(tmp, f"{part_path}/{file_name(chunk)}", path, table, _write_parquet(table, tmp))
    except (OSError, pa.ArrowException) as exc:
        raise GoldenError(f"{shown(path)}: cannot write ({why(exc)}); fix that and rerun with --resume") from None
    return rec


def _write_parquet(table: pa.Table, tmp: str) -> bytes | None:
    """Write `table` to the local file `tmp` as a data file; a table of at most ONE_READ_BYTES is
    written in memory first and its bytes returned (the same bytes: the writer writes one
    stream either way), so its record hashes them without reading the file back and the
    writer opens no file system path (about 1 ms of a small file, issue 32 target 6)."""
    if table.nbytes > ONE_READ_BYTES:
        pq.write_table(table, tmp, **PARQUET_OPTIONS)
        return None
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **PARQUET_OPTIONS)
    data = sink.getvalue().to_pybytes()
    with open(tmp, "wb") as f:
        f.write(data)
    return data


def file_record(out_dir, path) -> dict:
    """The manifest record of data file `path` of the dataset in `out_dir` (local or remote)."""
    path = store.location(path)
    rel = path.relative_to(store.location(out_dir)).as_posix()
    try:
        with store.local_copy(path) as local:
            return local_record(local, rel, path)
    except OSError as exc:
        raise GoldenError(f"{shown(path)}: not a readable data file ({why(exc, 80)}); remove it and rerun "
                          "with --resume") from None


def local_record(local, rel: str, shown_as=None, table: pa.Table | None = None, data: bytes | None = None) -> dict:
    """The record of a data file (its bytes in the local file `local`) listed as `rel`; its
    rows and class counts read back from the file, or taken from `table` when the caller
    has just written the file from it (no second read); `data`, where given, the file's
    bytes as just written (hashed without reading the file)."""
    try:
        if table is None:
            rows = pq.read_metadata(local).num_rows
            table = pq.read_table(local, columns=["class"])
        else:
            rows = len(table)
        classes = table.column("class").value_counts().to_pylist()
    except (OSError, pa.ArrowException, KeyError) as exc:
        raise GoldenError(f"{shown(shown_as or local)}: not a readable data file ({why(exc, 80)}); remove it and "
                          "rerun with --resume") from None
    return {"path": rel, "rows": rows, "sha256": sha256(local) if data is None else hashlib.sha256(data).hexdigest(),
            "bytes": os.stat(local).st_size if data is None else len(data), "classes": {c["values"]: c["counts"] for c in classes}}


def sha256(path) -> str:
    h = hashlib.sha256()
    with (path.open("rb") if store.is_remote(path) else open(path, "rb")) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------- manifest

def manifest(p: Params, records: list[dict]) -> dict:
    return manifest_of(FORMAT, FORMAT_VERSION, p, {part.path: {**part.keys(), "not_applicable": classes_for(part)[1],
                                                               "holes": holes_of(p, part)}
                                                   for part in partitions(p)}, records)


def manifest_of(fmt: str, fmt_version: int, p, entries: dict, records: list[dict]) -> dict:
    """A manifest of format `fmt` (golden, and the stream goldens' own): this build's version,
    the profile of parameters `p`, and each partition's entry (`entries`: path -> keys and
    not_applicable, in order) with the file records below its path."""
    version = tile_emu_version()
    prof = numeric_profile(p.profile)
    parts = {path: {**entry, "files": []} for path, entry in entries.items()}
    for r in sorted(records, key=lambda r: r["path"]):
        parts[r["path"].rsplit("/", 1)[0]]["files"].append(r)
    return {"format": fmt, "format_version": fmt_version, "tile_emu_version": version,
            "profile": {"name": prof.name, "version": prof.version}, "generator": p.to_json(),
            "partitions": list(parts.values())}


def tile_emu_version() -> str:
    """The installed tile-emu's version, as manifests record it ("unknown" without one)."""
    from importlib import metadata
    try:
        return metadata.version("tile-emu")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_json(path, obj) -> None:
    try:
        if store.is_remote(path):
            with store.staged(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=1, sort_keys=True)
                f.write("\n")
            return
        with atomic_open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.write("\n")
    except OSError as exc:
        raise GoldenError(f"{shown(path)}: cannot write ({why(exc)})") from None


def read_manifest(folder, fmt: str = FORMAT, version: int = FORMAT_VERSION, schema=None) -> dict:
    """The manifest, parsed and checked against MANIFEST_SCHEMA (types and structure only;
    open_dataset checks what it says).  The stream goldens read theirs through it, with their
    format, version and `schema`."""
    schema = MANIFEST_SCHEMA if schema is None else schema
    path = store.location(folder) / MANIFEST
    try:
        text = read_small(path, shown(path), MAX_MANIFEST_BYTES, "a manifest")
    except GoldenError:
        if not (path.exists() or path.is_symlink()) and (store.location(folder) / "shard.json").is_file():
            raise GoldenError(f"{shown(folder)}: a shard of a golden dataset (shard.json, no manifest): join the "
                              "shards with tile-emu golden merge first (docs/golden-format.md, 'Shards and "
                              "merge')") from None
        raise
    m = parse_manifest(lambda: jsontext.loads(text, max_depth=jsontext.MAX_DEPTH),   # a manifest nests 6 levels
                       path, fmt, version, schema)
    for i, part in enumerate(m["partitions"]):
        for j, rec in enumerate(part["files"]):
            _check_record(rec, f"{shown(path)}: partitions[{i}].files[{j}]")
    return m


_RECORD = {"path": str, "rows": int, "sha256": str, "bytes": int, "classes": dict}
_SHA256 = re.compile("[0-9a-f]{64}")


def _check_record(rec, where: str) -> None:
    """A manifest file record: exactly path, rows, sha256, bytes, classes, of their types
    (counts non-negative integers, never booleans)."""
    def count(v) -> bool:
        return type(v) is int and v >= 0
    if not isinstance(rec, dict):
        raise GoldenError(f"{where}: {shown(repr(rec), 60)} is not of type 'object'")
    for key, typ in _RECORD.items():
        if key not in rec:
            raise GoldenError(f"{where}: {key!r} is a required property")
        if not isinstance(rec[key], typ) or (typ is int and not count(rec[key])):
            what = "a non-negative integer" if typ is int else f"of type {typ.__name__!r}"
            raise GoldenError(f"{where}.{key}: {shown(repr(rec[key]), 60)} is not {what}")
    if len(rec) != len(_RECORD):
        extra = sorted(set(rec) - set(_RECORD))[0]
        raise GoldenError(f"{where}: Additional properties are not allowed ({shown(repr(extra), 60)} was unexpected)")
    if not _SHA256.fullmatch(rec["sha256"]):
        raise GoldenError(f"{where}.sha256: {shown(repr(rec['sha256']), 80)} is not 64 lower-case hex digits")
    for name, k in rec["classes"].items():
        if not count(k):
            raise GoldenError(f"{where}.classes.{shown(name, 40)}: {shown(repr(k), 40)} is not a non-negative integer")


def dataset_profile(recorded: dict) -> Profile:
    """The numeric profile a manifest names, as kernels.numeric.profiles resolves it; a name
    or version this tile-emu does not have is refused (replaying under another profile would
    compare against other rules)."""
    try:
        prof = numeric_profile(recorded["name"])
    except ValueError:
        raise GoldenError(f"manifest: unknown numeric profile {quote(recorded['name'])}; "
                          f"profiles: {', '.join(PROFILES)}") from None
    if prof.version != recorded["version"]:
        raise GoldenError(f"manifest: profile {prof.name} version {quote(recorded['version'])}; this tile-emu "
                          f"has version {prof.version} (replay it with the tile-emu that wrote it)")
    return prof


# ---------------------------------------------------------------------------- the checked open

@dataclass(frozen=True)
class DataFile:
    partition: Partition
    chunk: int
    record: dict                  # the manifest's record: path, rows, sha256, bytes, classes

    @property
    def path(self) -> str:
        return self.record["path"]


@dataclass(frozen=True)
class Dataset:
    """A golden dataset that open_dataset has checked (see there).  `read(f)` reads one data
    file again, with its rows checked again, for consumers that go through the rows."""
    folder: pathlib.Path
    manifest: dict
    profile: Profile
    params: Params
    partitions: tuple[Partition, ...]
    not_applicable: dict          # Partition -> tuple of class names
    files: tuple[DataFile, ...]
    # Partition -> {(cross, cell): committed cases}, counted from the rows by open_dataset
    crosses: dict = field(default_factory=dict)
    # path -> the table open_dataset checked, kept (up to KEPT_BYTES in all) for the first read
    kept: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def rows(self) -> int:
        return sum(f.record["rows"] for f in self.files)

    def config(self, local_bytes: int, matrix_bytes: int) -> MachineConfig:
        """A replay's machine: the row's store sizes under the dataset's profile."""
        return MachineConfig(local_bytes, matrix_bytes, profile=self.profile.name)

    def read(self, f: DataFile) -> pa.Table:
        kept = self.kept.pop(f.path, None)      # checked by open_dataset just now: not read twice
        return kept if kept is not None else _read_checked(self, f)

    def listed(self) -> list[tuple[dict, DataFile]]:
        """(manifest partition entry, data file) for every checked data file, in manifest
        order: for consumers that read the manifest's own words (hex export, --oracle)."""
        entry = dict(zip(self.partitions, self.manifest["partitions"]))
        return [(entry[f.partition], f) for f in self.files]


def manifest_plan(m: dict, params_cls, chunks) -> tuple:
    """(profile, parameters, chunk plan, rows of each file of a partition) a manifest records:
    its profile known, its generator parameters (as `params_cls` parses them) of that profile
    and valid (`chunks` plans them), and as many partitions as they give.  (The stream
    goldens open their manifests through it too.)"""
    prof = dataset_profile(m["profile"])
    params = params_cls.from_json(m["generator"], "manifest: generator")
    if params.profile != prof.name:         # (an unknown name is not the recorded one either)
        raise GoldenError(f"manifest: generator profile {quote(params.profile)} is not the recorded "
                          f"profile {prof.name}")
    try:
        plan = chunks(params)
    except GoldenError as exc:
        raise GoldenError(f"manifest: generator: {exc}") from None
    if len(m["partitions"]) != len(plan.parts):
        raise GoldenError(f"manifest: {len(m['partitions'])} partition(s); its generator parameters give "
                          f"{len(plan.parts)}")
    sizes = plan.file_rows(0) if plan.sizes is None else None      # (per partition otherwise: file_rows)
    return prof, params, plan, sizes


def check_file_records(entry: dict, part, sizes: list[int], note=lambda n: "") -> None:
    """A partition entry's file records: exactly the files its generator parameters give, in
    order (the message ends with `note(number of files)`), each of the rows they give
    and with class counts adding up to them."""
    want = [f"{part.path}/{file_name(k)}" for k in range(len(sizes))]
    got = [rec["path"] for rec in entry["files"]]
    if got != want:
        missing = [w for w in want if w not in got]
        raise GoldenError(f"manifest: {part.path}: files "
                          + (f"lack {quote(missing[0])}" if missing else f"are {quote(', '.join(got), 160)}; "
                             f"expected {quote(', '.join(want), 160)}")
                          + note(len(want)))
    for k, rec in enumerate(entry["files"]):
        if rec["rows"] != sizes[k]:
            raise GoldenError(f"{shown(rec['path'])}: the generator parameters give {sizes[k]} rows, "
                              f"the manifest says {rec['rows']}")
        if sum(rec["classes"].values()) != rec["rows"]:
            raise GoldenError(f"{shown(rec['path'])}: the manifest's class counts add up to "
                              f"{sum(rec['classes'].values())}, not its {rec['rows']} rows")


def open_dataset(folder, progress=None) -> Dataset:
    """Open a golden dataset and check everything that needs no replay; GoldenError (one line
    naming the file, case and field) for the first fault.  In order: the manifest's structure
    and types; its profile (known, same version); its generator parameters (valid, within the
    limits) and the partitions and files they imply, with each partition's not_applicable
    classes recomputed from the class table; the folder holding exactly the listed files
    (plus generation.json, which must hold the same parameters); each file's size, SHA-256,
    row count and schema; and each row (`_check_rows`).  `progress(rows)` after each file."""
    folder = store.location(folder)
    m = read_manifest(folder)
    prof, params, plan, sizes = manifest_plan(m, Params, chunks)
    files, na = [], {}
    for i, (entry, part) in enumerate(zip(m["partitions"], plan.parts)):
        keys = {k: v for k, v in entry.items() if k not in ("not_applicable", "holes", "files")}
        if keys != part.keys():
            raise GoldenError(f"manifest: partitions[{i}] has keys {shown(json.dumps(keys, sort_keys=True), 120)}; "
                              f"the generator parameters give {part.path}")
        _, inapplicable = classes_for(part)
        if sorted(entry["not_applicable"]) != sorted(inapplicable):
            extra = sorted(set(entry["not_applicable"]) - set(inapplicable))
            lacking = sorted(set(inapplicable) - set(entry["not_applicable"]))
            raise GoldenError(f"manifest: {part.path}: not_applicable "
                              + (f"lists {', '.join(extra[:5])}, which the class table applies"
                                 if extra else f"omits {', '.join(lacking[:5])}, which cannot occur there"))
        na[part] = tuple(inapplicable)
        check_file_records(entry, part, plan.file_rows(i), lambda n: f" ({n} file(s) of the generator parameters)")
        files += [DataFile(part, k, rec) for k, rec in enumerate(entry["files"])]
    _check_folder(folder, params, {f.path for f in files})
    ds = Dataset(folder, m, prof, params, plan.parts, na, tuple(files))
    kept = 0
    for f in files:
        counts = ds.crosses.setdefault(f.partition, {})
        t, crosses = _read_checked(ds, f, with_crosses=True)
        for key, k in crosses.items():
            counts[key] = counts.get(key, 0) + k
        if kept + t.nbytes <= KEPT_BYTES:
            ds.kept[f.path] = t
            kept += t.nbytes
        if progress:
            progress(f.record["rows"])
    for entry, part in zip(m["partitions"], plan.parts):
        _check_holes(ds, entry, part)
    return ds


def data_holes(ds: "Dataset", part: Partition) -> list[str]:
    """The applicable classes without a row and the cross cells the partition's points aim at
    without a committed case in its rows, as the manifest's `holes` orders them."""
    pts = points_for(part)
    rows: dict[str, int] = {}
    for f in ds.files:
        if f.partition == part:
            for c, k in f.record["classes"].items():
                rows[c] = rows.get(c, 0) + k
    seen = ds.crosses.get(part, {})
    return (list(dict.fromkeys(p.cls.name for p in pts if not rows.get(p.cls.name)))
            + [f"{x}:{y}" for x, y in closure.cells(pts) if not seen.get((x, y))])


def _check_holes(ds: "Dataset", entry: dict, part: Partition) -> None:
    """The manifest's holes of a partition are exactly what its rows leave without a case."""
    want = data_holes(ds, part)
    if entry["holes"] != want:
        extra = [h for h in entry["holes"] if h not in want]
        lacking = [h for h in want if h not in entry["holes"]]
        raise GoldenError(f"manifest: {part.path}: holes "
                          + (f"lists {', '.join(extra[:5])}, which the rows cover" if extra else
                             f"omits {', '.join(lacking[:5])}, which no row covers" if lacking else
                             "are not in the class table's order"))


def _check_folder(folder: pathlib.Path, params: Params, listed: set[str], read=None) -> None:
    """The folder holds exactly the listed data files, the manifest and (optionally) a
    generation.json of the same parameters (read by `read`, default read_params); anything
    else is named."""
    check_listed(folder, listed, (MANIFEST, PARAMS), "dataset")
    gen = folder / PARAMS
    if gen.exists() or gen.is_symlink():
        prev = (read or read_params)(gen)
        if prev != params:
            raise GoldenError(f"{PARAMS}: other parameters than the manifest's generator")


MAX_UNLISTED = 1000     # a folder walk stops after this many unlisted entries (one is named)


def check_listed(folder: pathlib.Path, listed: set[str], allowed: tuple[str, ...], what: str) -> None:
    """The folder (of a `what`: dataset, hex export) holds exactly the `listed` files, each a
    regular file (after links) inside the folder, and any of `allowed`; the first that is
    missing, of another kind, outside or unlisted is one GoldenError line.  Links to folders are
    not followed (an entry of their own)."""
    root = None if store.is_remote(folder) else os.path.realpath(folder)
    extra, seen = [], set()
    if store.is_remote(folder):     # an object store's listing: objects only, no links, no kinds
        names = store.files(folder)
        seen = {p for p in names if p in listed}
        extra = [p for p in names if p not in listed and p not in allowed][:MAX_UNLISTED + 1]
    for top, dirs, names in ([] if store.is_remote(folder) else os.walk(folder)):
        rel = pathlib.Path(top).relative_to(folder)
        for d in list(dirs):
            if os.path.islink(os.path.join(top, d)) or (rel / d).as_posix() in listed:
                names.append(d)                 # not followed: an entry of its own
                dirs.remove(d)
        for name in names:
            p = (rel / name).as_posix()
            if p in listed:
                _listed_file(os.path.join(top, name), p, root, what)
                seen.add(p)
            elif p not in allowed:
                extra.append(p)
                if len(extra) > MAX_UNLISTED:
                    break
        if len(extra) > MAX_UNLISTED:
            break
    missing = sorted(listed - seen)
    if missing and len(extra) <= MAX_UNLISTED:
        raise GoldenError(f"{shown(missing[0])}: listed in the manifest but missing"
                          + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    if extra:
        extra.sort()
        more = "" if len(extra) == 1 else f" (and {len(extra) - 1} more)" if len(extra) <= MAX_UNLISTED else \
            " (and many more)"
        raise GoldenError(f"{shown(extra[0])}: in the {what} folder but not listed in the manifest{more}")


def file_kind(mode: int) -> str:
    """What a file of st_mode `mode` is, for a message."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _listed_file(path: str, rel: str, root: str, what: str) -> None:
    """A listed file is a regular file (after links) inside the folder `root` (resolved)."""
    try:
        st = os.stat(path)
    except OSError as exc:                      # a link to nothing, a loop of links
        raise GoldenError(f"{shown(rel)}: listed in the manifest but cannot be read ({why(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise GoldenError(f"{shown(rel)}: listed in the manifest but {file_kind(st.st_mode)}, not a regular file")
    real = os.path.realpath(path)
    if os.path.commonpath([real, root]) != root:
        raise GoldenError(f"{shown(rel)}: a link out of the {what} folder (to {shown(real)})")


def open_regular(path, label: str):
    """`path` opened for binary reading if it is a regular file (after links), else GoldenError
    naming `label`.  Never blocks (a FIFO is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        raise GoldenError(f"{label}: cannot read ({why(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GoldenError(f"{label}: {file_kind(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(path: pathlib.Path, label: str, limit: int, what: str) -> str:
    """The UTF-8 text of `what` (a manifest, generation.json) at `path`: a regular file of at most
    `limit` bytes, else GoldenError naming `label`; a FIFO or device is refused, never waited on.
    (An object of an object store, store.RemotePath, is read whole once its size is known.)"""
    if store.is_remote(path):
        try:
            size = path.stat().st_size
            if size > limit:
                raise GoldenError(f"{label}: {size:,} bytes; {what} holds at most {limit:,}")
            return path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GoldenError(f"{label}: cannot read {what} ({why(exc)})") from None
    with open_regular(path, label) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise GoldenError(f"{label}: {size:,} bytes; {what} holds at most {limit:,}")
        try:
            return f.read(limit).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GoldenError(f"{label}: cannot read {what} ({why(exc)})") from None


def read_params(path: pathlib.Path, cls=None) -> Params:
    """The parameters a generation.json holds (a small file: at most 1 MiB), as `cls` (default
    Params; the stream goldens pass theirs) parses them."""
    text = read_small(path, PARAMS, 1 << 20, "the generation parameters")
    try:
        doc = jsontext.loads(text, max_depth=jsontext.MAX_DEPTH)
    except jsontext.JsonTextError as exc:
        raise GoldenError(f"{PARAMS}: cannot read ({why(exc)})") from None
    return (cls or Params).from_json(doc, PARAMS)


def _read_checked(ds: Dataset, f: DataFile, with_crosses: bool = False):
    """One data file: its size, SHA-256, row count, schema and data size as the manifest and
    the format say, then its rows (`_check_rows`); with_crosses: (table, its cross counts)."""
    t = read_file_checked(ds.folder, f.record, SCHEMA, "the golden schema (docs/golden-format.md, 'One row per case')")
    crosses = _check_rows(ds, f, t)
    return (t, crosses) if with_crosses else t


def read_file_checked(folder: pathlib.Path, rec: dict, schema: pa.Schema, schema_name: str) -> pa.Table:
    """A data file of a manifest record: its size, SHA-256, row count, schema (`schema`, named
    `schema_name` in the error) and data size as the record and the format say; GoldenError
    naming the file otherwise.  (The stream goldens read their files through it too.)"""
    path = folder / rec["path"]
    where = shown(rec["path"])
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise GoldenError(f"{where}: cannot read ({why(exc)})") from None
    if size != rec["bytes"]:
        raise GoldenError(f"{where}: {size:,} bytes, the manifest says {rec['bytes']:,}")
    try:
        with store.local_copy(path) as local:       # a file of an object store: downloaded, then checked
            return _checked_table(local, rec, where, schema, schema_name)
    except OSError as exc:
        raise GoldenError(f"{where}: cannot read ({why(exc)})") from None


def _checked_table(path, rec: dict, where: str, schema: pa.Schema, schema_name: str) -> pa.Table:
    try:
        raw = pathlib.Path(path).read_bytes() if rec["bytes"] <= ONE_READ_BYTES else None
        digest = sha256(path) if raw is None else hashlib.sha256(raw).hexdigest()
        if digest != rec["sha256"]:
            raise GoldenError(f"{where}: SHA-256 differs from the manifest (file changed or damaged)")
        source = pq.ParquetFile(path if raw is None else pa.BufferReader(raw))   # the bytes hashed
        meta = source.metadata
        rows = meta.num_rows
        if rows != rec["rows"]:
            raise GoldenError(f"{where}: {rows} rows, the manifest says {rec['rows']}")
        if not meta.schema.to_arrow_schema().equals(schema):
            raise GoldenError(f"{where}: columns or column types differ from {schema_name}")
        data = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if data > MAX_FILE_DATA_BYTES:
            raise GoldenError(f"{where}: {data:,} bytes of column data; a data file holds at most "
                              f"{MAX_FILE_DATA_BYTES:,}")
        t = source.read()
    except GoldenError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise GoldenError(f"{where}: not a readable Parquet file ({why(exc, 80)})") from None
    if len(t) != rows or not t.schema.equals(schema):
        raise GoldenError(f"{where}: the data does not match its own Parquet metadata")
    return t


def check_cases(t: pa.Table, where: str, first: int) -> np.ndarray:
    """The case numbers of a data file's rows (data file `where`, its first case `first`):
    GoldenError unless no column holds a null and the rows hold first, first + 1, ... in order.
    (The stream goldens' files follow the same rule.)"""
    for name in t.column_names:
        hit = _first_null(t.column(name), name)
        if hit:
            raise GoldenError(f"{where}: column {hit} holds a null (the format has none)")
    cases = t.column("case").to_numpy()
    n = len(t)
    wrong = np.flatnonzero(cases != np.arange(first, first + n, dtype=np.uint64))
    if wrong.size:
        i = int(wrong[0])
        raise GoldenError(f"{where}: row {i} holds case {int(cases[i])}; this file holds cases {first} to "
                          f"{first + n - 1} in order")
    return cases


def distinct_streams(t: pa.Table) -> tuple[pa.Array, np.ndarray]:
    """(the rows' distinct streams, each row's index among them)."""
    stream = t.column("stream").combine_chunks()
    uniques = pc.unique(stream)
    return uniques, pc.index_in(stream, uniques).to_numpy()


def decoded_streams(uniques: pa.Array, index: np.ndarray, where: str, case):
    """(rows of that stream, its blocks) for each distinct stream in order, decoded when
    reached; one that does not decode is one GoldenError line naming its first case
    (`case(mask)`).  (The stream goldens check their rows through it too.)"""
    for u in range(len(uniques)):
        rows = index == u
        try:
            blocks = encoding.decode(uniques[u].as_py())
        except DecodeError as exc:
            raise GoldenError(f"{where}: case {case(rows)}: stream does not decode ({shown(str(exc), 120)})") from None
        yield rows, blocks


def class_counts(t: pa.Table, where: str, rec: dict) -> dict:
    """The rows' class counts, which must be the manifest record's."""
    counts = {c["values"]: c["counts"] for c in t.column("class").value_counts().to_pylist()}
    if counts != rec["classes"]:
        diff = sorted(set(counts.items()) ^ set(rec["classes"].items()))[0][0]
        raise GoldenError(f"{where}: class {quote(diff)}: {counts.get(diff, 0)} rows, the manifest says "
                          f"{rec['classes'].get(diff, 0)}")
    return counts


def case_at(cases: np.ndarray, mask) -> int:
    """The case number of the first row `mask` (a boolean NumPy or Arrow array) selects."""
    mask = mask.to_numpy(zero_copy_only=False) if isinstance(mask, (pa.Array, pa.ChunkedArray)) else mask
    return int(cases[np.flatnonzero(mask)[0]])


def _first_null(arr, path: str) -> str | None:
    """The column path of the first null anywhere in arr (the format has none)."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for a in chunks:
        if a.null_count:
            return path
        t = a.type
        if pa.types.is_struct(t):
            for child, fld in zip(a.flatten(), t):
                hit = _first_null(child, f"{path}.{fld.name}")
                if hit:
                    return hit
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            hit = _first_null(a.flatten(), path)
            if hit:
                return hit
    return None


def _check_sources(t: pa.Table, where: str, case, uniques: pa.Array, index: np.ndarray) -> None:
    """A committed case's block resolves (isa.legality: the stateless rules) and its inputs hold
    the tile each source binding names on each selected PE -- what the replay's first checks
    (legality.resolve, then preflight's SOURCE_MISSING) ask of the stored state before anything
    runs.  So every consumer that reads a committed case's sources (the TestFloat and hex
    exports, the oracle) finds them, and refuses with verify what the replay would reject.
    `uniques[u]` is distinct stream u (decoded already: it decodes), `index` each row's u."""
    committed = (t.column("outcome").to_numpy(zero_copy_only=False) == "commit")
    if not committed.any():
        return
    need, slot = [np.zeros(0, np.int64)] * len(uniques), [np.zeros(0, np.int64)] * len(uniques)
    for u in np.unique(index[committed]).tolist():
        try:
            rb = legality.resolve(encoding.decode(uniques[u].as_py())[0])
        except IllegalBlockException as exc:
            raise GoldenError(f"{where}: case {case(committed & (index == u))}: outcome commit, but the block is "
                              f"illegal ({shown(str(exc), 160)})") from None
        pairs = [(i, pe, b.tile) for i, b in enumerate(rb.sources) for pe in rb.pes]
        need[u] = np.array([(pe << 32) | tile for _, pe, tile in pairs], np.int64)
        slot[u] = np.array([i for i, _, _ in pairs], np.int64)
    # every (row, pe, tile) a committed row's block reads against every (row, pe, tile) it holds
    rows = np.flatnonzero(committed)
    lens = np.array([len(x) for x in need], np.int64)
    sizes = lens[index[rows]]
    at = np.repeat((np.cumsum(lens) - lens)[index[rows]], sizes) \
        + np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    flat_need, flat_slot = np.concatenate(need)[at], np.concatenate(slot)[at]
    want_row = np.repeat(rows, sizes)
    want = (want_row << 40) | flat_need
    counts, fields = tiles_of(t.column("inputs"))
    held = (np.repeat(np.arange(len(t), dtype=np.int64), counts) << 40) \
        | (fields["pe"].to_numpy().astype(np.int64) << 32) | fields["tile"].to_numpy().astype(np.int64)
    missing = np.flatnonzero(~np.isin(want, held))
    if missing.size:
        j = int(missing[0])
        key = int(flat_need[j])
        raise GoldenError(f"{where}: case {case(np.arange(len(t)) == want_row[j])}: outcome commit, but inputs "
                          f"lack tile {key & 0xFFFFFFFF} on PE{key >> 32}, which the block reads "
                          f"(B.IOT[{int(flat_slot[j])}])")


def _check_rows(ds: Dataset, f: DataFile, t: pa.Table) -> None:
    """Every stored field of the rows that needs no replay (docs/golden-format.md, "What verify
    checks"): no nulls; case numbers the chunk's, contiguous; each stream one block of the
    partition's op, DataType (and TCVT destination, RMode, Sat); asm its canonical text;
    pe_mask its destination binding's; the class counts the manifest's; each class one the
    partition can have, an illegal class rejected with its reason code, a legal one committed;
    a committed case's inputs holding what its block reads (`_check_sources`)."""
    where, part, n = shown(f.path), f.partition, len(t)
    cases = check_cases(t, where, f.chunk * ds.params.chunk_cases)

    def case(mask) -> int:
        return case_at(cases, mask)

    uniques, index = distinct_streams(t)
    if len(uniques) > n:
        raise GoldenError(f"{where}: more distinct streams than rows")
    asm, masks = [], np.zeros(len(uniques), np.uint8)
    pads, aliased = np.full(len(uniques), -1, np.int8), np.zeros(len(uniques), bool)
    for u, (rows, blocks) in enumerate(decoded_streams(uniques, index, where, case)):
        if len(blocks) != 1:
            raise GoldenError(f"{where}: case {case(rows)}: the stream holds {len(blocks)} blocks; a case holds one")
        keys = _block_keys(blocks[0])
        if keys != part.keys():
            raise GoldenError(f"{where}: case {case(rows)}: the block is "
                              f"{' '.join(f'{k}={v}' for k, v in keys.items())}; the partition is {part.path}")
        asm.append(stream_of(blocks[0])[1])
        masks[u] = pe_mask_of(blocks[0])
        b = blocks[0]
        if b.datr is not None and b.datr.PadValueOrByteId is not None:
            pads[u] = b.datr.PadValueOrByteId
        aliased[u] = bool(b.iot) and b.iot[-1].tile in [x.tile for x in b.iot[:-1]]
    bad = pc.not_equal(t.column("asm").combine_chunks(), pa.array(asm, pa.string()).take(pa.array(index)))
    if pc.any(bad).as_py():
        raise GoldenError(f"{where}: case {case(bad)}: asm is not the stream's canonical text")
    bad = t.column("pe_mask").to_numpy() != masks[index]
    if bad.any():
        raise GoldenError(f"{where}: case {case(bad)}: pe_mask is not the destination binding's PE_MASK")
    _check_sources(t, where, case, uniques, index)
    counts = class_counts(t, where, f.record)
    applicable = {c.name: c for c in classes_for(part)[0]}
    # every row against what its class expects in one pass (a few Arrow calls a class cost
    # several ms a small file); the first class in `counts` order that is not the partition's
    # or has a row against it is the one named, at its first such row
    names = list(counts)
    code = pc.index_in(t.column("class").combine_chunks(), pa.array(names, pa.string())).to_numpy()
    expect = [applicable.get(name) for name in names]
    illegal = np.array([c is not None and c.kind == "illegal" for c in expect], bool)
    want_outcome = np.where(illegal, "reject", "commit").astype(object)
    want_reason = np.array([c.reason if c is not None else "" for c in expect], object)
    outcome = t.column("outcome").to_numpy(zero_copy_only=False)
    reason = t.column("reason").to_numpy(zero_copy_only=False)
    bad = (outcome != want_outcome[code]) | (illegal[code] & (reason != want_reason[code]))
    against = set(np.unique(code[bad]).tolist())
    for i, name in enumerate(names):
        if name not in applicable:
            raise GoldenError(f"{where}: case {case(code == i)}: class {quote(name)} "
                              + ("is not one the partition can have" if name in C.BY_NAME else "is unknown"))
        cls = applicable[name]
        if i in against:
            raise GoldenError(f"{where}: case {case(bad & (code == i))}: class {name} expects "
                              + (f"reject with {cls.reason}" if cls.kind == "illegal" else "commit"))
    return row_crosses(t, pads[index], aliased[index])


_PATTERNS = np.array([C.PATTERN_OF.get(m, "") for m in range(16)], object)


def row_crosses(t: pa.Table, pad: np.ndarray, aliased: np.ndarray) -> dict:
    """{(cross, cell): committed cases} of rows t (coverage.CROSSES, and pad_x_dtype): from each
    row's pe_mask, its block's PadValue (`pad`, -1 omitted) and aliasing (`aliased`, per row),
    and the geometry and DataType of its first output tile -- the stored data, not the class."""
    outs = t.column("outputs").combine_chunks()
    has = pc.list_value_length(outs).to_numpy(zero_copy_only=False) > 0
    committed = (t.column("outcome").to_numpy(zero_copy_only=False) == "commit") & has
    out: dict = {}
    if not committed.any():
        return out
    first = outs.offsets.to_numpy()[:-1][committed]
    tiles = outs.flatten().take(pa.array(first))
    get = {k: tiles.field(k).to_numpy(zero_copy_only=False) for k in ("Row", "Col", "ValidRow", "ValidCol", "dtype", "kind")}
    row_pad, col_pad = get["Row"] > get["ValidRow"], get["Col"] > get["ValidCol"]
    geom = np.where(row_pad & col_pad, "row_col", np.where(row_pad, "row", np.where(col_pad, "col", "")))
    pattern = _PATTERNS[t.column("pe_mask").to_numpy()[committed]]
    dtype = np.where(get["kind"] == "predicate", "predicate", get["dtype"])
    pad, aliased = pad[committed], aliased[committed]
    padded = (pad >= 0) & (geom != "")
    codes = np.array([C.PAD_CODES.get(int(c), "") for c in range(-1, 4)], object)[pad + 1]
    for cross, a, b, sel in (("pe_mask_x_pad", pattern, codes, padded), ("geometry_x_pad", geom, codes, padded),
                             ("pad_x_dtype", codes, dtype, padded),
                             ("pe_mask_x_alias", pattern, np.full(len(pad), "dest_aliases_source", object), aliased)):
        if sel.any():
            keys, k = np.unique(np.char.add(np.char.add(a[sel].astype(str), "/"), b[sel].astype(str)), return_counts=True)
            for key, c in zip(keys.tolist(), k.tolist()):
                out[(cross, key)] = out.get((cross, key), 0) + c
    return out


def _block_keys(block) -> dict:
    """The partition keys a decoded block belongs to: its instruction and DataType, and for
    TCVT the destination DataType, RMode and Sat as B.DATR states them (omitted: inherited, 0)."""
    b = block.bstart
    row = I.by_carrier(b.Mode, b.Function)
    try:
        dtype = datatype(b.DataType).name
    except ValueError:
        dtype = f"code {b.DataType}"
    keys = {"op": row.mnemonic if row else f"Mode={b.Mode},Function={b.Function}", "dtype": dtype}
    if row is not None and row.schema == I.CONVERT:
        d = block.datr
        try:
            keys["dst"] = dtype if d is None or d.DataType is None else datatype(d.DataType).name
        except ValueError:
            keys["dst"] = f"code {d.DataType}"
        keys["rmode"] = F.RMODES.get(0 if d is None or d.RMode is None else d.RMode, "reserved")
        keys["sat"] = bool(d is not None and d.Sat)
    return keys


# ---------------------------------------------------------------------------- the output folder

def params_match_or_fail(folder: pathlib.Path, p: Params, resume: bool, read=None, manifest=None) -> None:
    """--out must be empty (or hold this same generation, with --resume; generation.json read
    by `read`, default read_params, and a finished run's manifest by `manifest`, default
    read_manifest: the stream goldens pass their own readers)."""
    try:
        if folder.exists() and not folder.is_dir():
            raise GoldenError(f"--out {shown(folder)} is not a folder")
        entries = [e for e in folder.iterdir()] if folder.exists() else []
    except OSError as exc:
        raise GoldenError(f"--out {shown(folder)}: cannot read ({why(exc)})") from None
    if entries and not resume:
        raise GoldenError(f"--out {shown(folder)} is not empty; use --resume to continue an interrupted run "
                          "or choose an empty folder")
    if entries and resume:
        try:
            prev = (read or read_params)(folder / PARAMS)
        except GoldenError as exc:
            raise GoldenError(f"--resume: {shown(folder)} holds no readable {PARAMS} of an earlier run "
                              f"({exc})") from None
        if prev != p:
            raise GoldenError(f"--resume: {shown(folder)} was generated with other parameters "
                              f"({PARAMS}); resume with the same command")
        if (folder / MANIFEST).exists():   # a finished run of another profile version is not relabelled
            dataset_profile((manifest or read_manifest)(folder)["profile"])
        _remove_temporaries(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GoldenError(f"--out {shown(folder)}: cannot create the folder ({why(exc)})") from None
    if not store.is_remote(folder) and not os.access(folder, os.W_OK):
        raise GoldenError(f"--out {shown(folder)} is not writable")
    write_json(folder / PARAMS, p.to_json())


def _remove_temporaries(folder: pathlib.Path) -> None:
    """--resume: the temporary data files an interrupted run left (killed before its cleanup
    ran) go, so the finished dataset holds only listed files."""
    if store.is_remote(folder):
        for rel in store.files(folder):
            if _TEMPORARY.fullmatch(rel.rsplit("/", 1)[-1]):
                (folder / rel).unlink()
        return
    for root, _, names in os.walk(folder):
        for name in names:
            if _TEMPORARY.fullmatch(name):
                try:
                    os.unlink(os.path.join(root, name))
                except OSError as exc:
                    raise GoldenError(f"--resume: cannot remove the temporary file {shown(name)} "
                                      f"({why(exc)})") from None

