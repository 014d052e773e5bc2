"""Golden datasets: partitions, deterministic chunks, Parquet files, the manifest, replay.

A dataset is a folder:  manifest.json  and  <partition path>/part-NNNNN.parquet  where the
partition path is  op=TADD/dtype=FP16  (TCVT adds dst=, rmode=, sat=).  Each file holds one
chunk of at most CHUNK_CASES cases; its content depends only on (seed, partition, chunk
index), so any number of workers, in-process or on a Dask cluster, writes the same bytes.
Files are written to a temporary name and renamed when complete; `--resume` keeps every file
already under its final name.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from isa import fields as F, instructions as I
from isa import jsontext
from isa.atomicio import atomic_open, atomic_path, quote, shown, why
from isa.datatypes import datatype
from isa.errors import EncodeError
from kernels.numeric.profiles import profile as numeric_profile

from . import coverage as C
from .cases import build_group, execute
from .rows import SCHEMA, group_table
from .space import space

FORMAT = "tile-emu golden dataset"
FORMAT_VERSION = 1
CHUNK_CASES = 1 << 16
GROUP_CASES = 4096
MANIFEST = "manifest.json"
PARAMS = "generation.json"
RMODE_NAMES = tuple(F.RMODES.values())
# Class shares of each chunk: value classes carry most cases; every applicable class gets >= 1.
KIND_SHARE = {"value": 0.75, "shape": 0.20, "illegal": 0.05}


class GoldenError(Exception):
    """A one-line user-facing error (bad parameters, damaged dataset)."""


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

    def context(self) -> C.Context:
        op = I.lookup(self.op)
        return C.Context(op, space(self.dtype), space(self.dst or self.dtype), self.rmode, bool(self.sat))


@dataclass(frozen=True)
class Params:
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    cases: int
    seed: int
    dst_dtypes: tuple[str, ...] = ()
    rmodes: tuple[str, ...] = RMODE_NAMES
    sat: tuple[int, ...] = (0, 1)
    profile: str = "ieee"
    chunk_cases: int = CHUNK_CASES

    def to_json(self) -> dict:
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_json(cls, d: dict) -> "Params":
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as exc:
            raise GoldenError(f"generator parameters: {exc}") from None


# ---------------------------------------------------------------------------- planning

def parse_list(text: str, what: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise GoldenError(f"--{what}: empty list")
    return items


def partitions(p: Params) -> list[Partition]:
    """Every partition the parameters ask for, validated: unknown names and unsupported
    (op, DataType) pairs are errors that name the supported set."""
    out = []
    for op_name in p.ops:
        try:
            op = I.lookup(op_name)
        except KeyError:
            raise GoldenError(f"unknown op {quote(op_name)}; ops: "
                              + ", ".join(i.mnemonic for i in I.INSTRUCTIONS)) from None
        for dt_name in p.dtypes:
            dt = _dtype(dt_name)
            if dt not in op.dtypes:
                raise GoldenError(f"{op.mnemonic} does not support {dt}; supported: {', '.join(sorted(op.dtypes))}")
            if op.schema != I.CONVERT:
                out.append(Partition(op.mnemonic, dt))
                continue
            for dst in (p.dst_dtypes or p.dtypes):
                dst = _dtype(dst)
                for rm in p.rmodes:
                    if rm.upper() not in RMODE_NAMES:
                        raise GoldenError(f"unknown rounding mode {quote(rm)}; modes: {', '.join(RMODE_NAMES)}")
                    for s in p.sat:
                        out.append(Partition(op.mnemonic, dt, dst, rm.upper(), bool(int(s))))
    return out


def _dtype(name: str) -> str:
    try:
        return datatype(name).name
    except ValueError:
        from isa.datatypes import DATATYPES
        raise GoldenError(f"unknown DataType {quote(name)}; DataTypes: {', '.join(d.name for d in DATATYPES)}") from None


def chunks(p: Params) -> list[tuple[Partition, int, int]]:
    """(partition, chunk index, cases in the chunk) for every file of the dataset."""
    out = []
    for part in partitions(p):
        for k in range(0, p.cases, p.chunk_cases):
            out.append((part, k // p.chunk_cases, min(p.chunk_cases, p.cases - k)))
    return out


def _rng(seed: int, part: Partition, chunk: int) -> np.random.Generator:
    key = int.from_bytes(hashlib.sha256(part.path.encode()).digest()[:8], "little")
    return np.random.default_rng([seed & (2**63 - 1), key, chunk])


def _allocate(classes: list[C.CoverageClass], n: int) -> list[int]:
    """Cases per class: KIND_SHARE split evenly within each kind, at least one each (while n
    allows), largest remainders for the rest.  Pure arithmetic, so it is deterministic."""
    if not classes:
        return []
    weights = np.array([KIND_SHARE[c.kind] / sum(1 for d in classes if d.kind == c.kind) for c in classes])
    base = np.minimum(1, n // len(classes)) * np.ones(len(classes), np.int64)
    rest = n - int(base.sum())
    share = weights / weights.sum() * rest
    counts = base + np.floor(share).astype(np.int64)
    left = n - int(counts.sum())
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    counts[order[:left]] += 1
    return counts.tolist()


# ---------------------------------------------------------------------------- one chunk

def probe(cls: C.CoverageClass, ctx: C.Context) -> bool:
    """An illegal class applies where its mutation is rejected for the reason it names."""
    if cls.kind != "illegal":
        return True
    try:
        g = build_group(cls, ctx, 1, np.random.default_rng(0))
    except EncodeError:                 # the mutation cannot be carried by a stream
        return False
    return execute(g).reason[0] == cls.reason


def classes_for(part: Partition) -> tuple[list[C.CoverageClass], list[str]]:
    """(classes generated for the partition, names of those it cannot have)."""
    ctx = part.context()
    ok, na = [], []
    for cls in C.CLASSES:
        (ok if cls.applies(ctx) and probe(cls, ctx) else na).append(cls if cls.applies(ctx) else cls.name)
    return [c for c in ok if isinstance(c, C.CoverageClass)], [c if isinstance(c, str) else c.name for c in na]


def chunk_table(p: Params, part: Partition, chunk: int, n: int, backend: str = "cpu") -> pa.Table:
    ctx = part.context()
    classes, _ = classes_for(part)
    rng = _rng(p.seed, part, chunk)
    tables, first, gi = [], chunk * p.chunk_cases, 0
    for cls, count in zip(classes, _allocate(classes, n)):
        for start in range(0, count, GROUP_CASES):
            m = min(GROUP_CASES, count - start)
            g = build_group(cls, ctx, m, rng)
            tables.append(group_table(g, execute(g, backend), first, gi))
            first += m
            gi += 1
    return pa.concat_tables(tables)


def file_name(chunk: int) -> str:
    return f"part-{chunk:05d}.parquet"


def write_chunk(out_dir: str, params: dict, part: dict, chunk: int, n: int, backend: str = "cpu") -> dict:
    """Generate and write one file (a Dask task: plain arguments, plain result)."""
    p = Params.from_json(params)
    pt = Partition(**part)
    folder = pathlib.Path(out_dir) / pt.path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(chunk)
    table = chunk_table(p, pt, chunk, n, backend)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", write_statistics=False)
    return file_record(out_dir, path)


def file_record(out_dir, path) -> dict:
    path = pathlib.Path(path)
    meta = pq.read_metadata(path)
    classes = pq.read_table(path, columns=["class"]).column("class").value_counts().to_pylist()
    return {"path": path.relative_to(out_dir).as_posix(), "rows": meta.num_rows, "sha256": sha256(path),
            "bytes": path.stat().st_size, "classes": {c["values"]: c["counts"] for c in classes}}


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------- manifest

def manifest(p: Params, records: list[dict]) -> dict:
    from importlib import metadata
    try:
        version = metadata.version("tile-emu")
    except metadata.PackageNotFoundError:
        version = "unknown"
    prof = numeric_profile(p.profile)
    parts = {}
    for part in partitions(p):
        _, na = classes_for(part)
        parts[part.path] = {**{k: v for k, v in asdict(part).items() if v is not None},
                            "not_applicable": na, "files": []}
    for r in sorted(records, key=lambda r: r["path"]):
        parts[r["path"].rsplit("/", 1)[0]]["files"].append(r)
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "tile_emu_version": version,
            "profile": {"name": prof.name, "version": prof.version}, "generator": p.to_json(),
            "partitions": list(parts.values())}


def write_json(path, obj) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def read_manifest(folder) -> dict:
    path = pathlib.Path(folder) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenError(f"{shown(path)}: cannot read the manifest ({why(exc)})") from None
    try:
        m = jsontext.loads(text)
    except jsontext.JsonTextError as exc:
        raise GoldenError(f"{shown(path)}: not valid JSON ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT or m.get("format_version") != FORMAT_VERSION:
        raise GoldenError(f"{shown(path)}: not a {FORMAT} version {FORMAT_VERSION} manifest")
    return m


def check_files(folder, m: dict) -> list[tuple[dict, dict]]:
    """Every data file the manifest lists exists with its row count and SHA-256; returns
    (partition, file record) pairs.  Raises GoldenError naming the first damaged file."""
    folder = pathlib.Path(folder)
    out = []
    try:
        parts = list(m["partitions"])
        for part in parts:
            for rec in part["files"]:
                path = folder / rec["path"]
                if not path.is_file():
                    raise GoldenError(f"{quote(rec['path'])}: listed in the manifest but missing")
                if sha256(path) != rec["sha256"]:
                    raise GoldenError(f"{quote(rec['path'])}: SHA-256 differs from the manifest (file changed or damaged)")
                try:
                    rows = pq.read_metadata(path).num_rows
                except (OSError, pa.ArrowException) as exc:
                    raise GoldenError(f"{quote(rec['path'])}: not a readable Parquet file ({str(exc)[:80]})") from None
                if rows != rec["rows"]:
                    raise GoldenError(f"{quote(rec['path'])}: {rows} rows, the manifest says {rec['rows']}")
                out.append((part, rec))
    except (KeyError, TypeError) as exc:
        raise GoldenError(f"manifest: malformed partition or file entry ({exc!r:.80})") from None
    return out


def params_match_or_fail(folder: pathlib.Path, p: Params, resume: bool) -> None:
    """--out must be empty (or hold this same generation, with --resume)."""
    if folder.exists() and not folder.is_dir():
        raise GoldenError(f"--out {shown(folder)} is not a folder")
    entries = [e for e in folder.iterdir()] if folder.exists() else []
    if entries and not resume:
        raise GoldenError(f"--out {shown(folder)} is not empty; use --resume to continue an interrupted run "
                          "or choose an empty folder")
    if entries and resume:
        try:
            prev = Params.from_json(jsontext.loads((folder / PARAMS).read_text()))
        except (OSError, ValueError, GoldenError):
            raise GoldenError(f"--resume: {shown(folder)} holds no readable {PARAMS} of an earlier run") from None
        if prev != p:
            raise GoldenError(f"--resume: {shown(folder)} was generated with other parameters "
                              f"({PARAMS}); resume with the same command")
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK):
        raise GoldenError(f"--out {shown(folder)} is not writable")
    write_json(folder / PARAMS, p.to_json())
