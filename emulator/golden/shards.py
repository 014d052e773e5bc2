"""Golden shards for job arrays (docs/golden-format.md, "Shards and merge").

    tile-emu golden ... --shard I/N --out part-I        # on node I of a job array, 0 <= I < N
    tile-emu golden merge part-* --out D                # D: the dataset the command without --shard writes

A data file's content depends only on (seed, partition, chunk index, profile) (dataset._rng:
each chunk's generator is seeded from those alone), so any subset of a dataset's files can be
written anywhere, at any time, and joined.  Shard I of N holds the files j of the dataset's
file plan (partition by partition, chunk by chunk, as the manifest lists them) with
j mod N = I: round robin, so every shard gets a similar mix of partitions (a TCVT file costs
more than a TADD one) and the shares differ by one file at most.  A shard's folder holds its
data files under the dataset's paths, `generation.json` (the dataset's parameters, as an
unsharded run writes them) and `shard.json`: written when the run starts with `files` null, and
rewritten last with the records of its files -- the shard's manifest.  `merge` checks every
shard before it writes anything, then copies the files into D, writes `generation.json` and the
manifest last: D's files and manifest are byte for byte those of the unsharded run.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
from dataclasses import dataclass
from typing import Callable

from isa import jsontext
from isa.atomicio import quote, shown, why

from . import dataset as D
from . import store
from .dataset import GoldenError

SHARD = "shard.json"
FORMAT = "tile-emu golden shard"
FORMAT_VERSION = 1
MAX_SHARD_BYTES = D.MAX_MANIFEST_BYTES


@dataclass(frozen=True)
class Kind:
    """What a shard needs of a dataset kind (single-block goldens, stream goldens)."""
    dataset_format: str
    dataset_version: int
    params_cls: type
    chunks: Callable            # parameters -> ChunkPlan
    manifest: Callable          # (parameters, file records) -> the dataset's manifest
    read_params: Callable       # generation.json -> parameters


def kinds() -> dict[str, Kind]:
    """Every dataset kind (emulator/golden/kinds), by its manifest's format."""
    from .kinds import KINDS
    return {k.FORMAT: Kind(k.FORMAT, k.FORMAT_VERSION, k.Params, k.chunks, k.manifest, k.read_params) for k in KINDS}


def kind_of(p) -> Kind:
    from .kinds import of_params
    return kinds()[of_params(p).FORMAT]


SHARD_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["format", "format_version", "tile_emu_version", "dataset", "profile", "shard", "files"],
    "properties": {
        **D.header_properties(FORMAT, FORMAT_VERSION),
        "dataset": {"type": "object", "additionalProperties": False, "required": ["format", "format_version"],
                    "properties": {"format": {"type": "string", "maxLength": 200},
                                   "format_version": {"type": "integer"}}},
        "profile": D.MANIFEST_SCHEMA["properties"]["profile"],
        "shard": {"type": "object", "additionalProperties": False, "required": ["index", "count"],
                  "properties": {"index": {"type": "integer", "minimum": 0, "maximum": D.MAX_FILES - 1},
                                 "count": {"type": "integer", "minimum": 1, "maximum": D.MAX_FILES}}},
        # null while the shard runs; then its files' records, as a manifest lists them
        "files": {"type": ["array", "null"], "maxItems": D.MAX_FILES},
    },
}


# ---------------------------------------------------------------------------- --shard I/N

def parse(text: str) -> tuple[int, int]:
    """`I/N` -> (I, N): 0 <= I < N <= MAX_FILES (a dataset's files at most); ValueError naming
    the rule otherwise."""
    left, slash, right = str(text).partition("/")
    if not slash or not left.strip().isdigit() or not right.strip().isdigit() \
            or len(left.strip()) > 6 or len(right.strip()) > 6:
        raise ValueError(f"--shard {quote(text)}: I/N, shard I of N (0 <= I < N), e.g. 0/4")
    i, n = int(left), int(right)
    if n < 1 or n > D.MAX_FILES:
        raise ValueError(f"--shard {quote(text)}: N from 1 to {D.MAX_FILES:,} (a dataset's files at most)")
    if i >= n:
        raise ValueError(f"--shard {quote(text)}: I from 0 to N - 1 = {n - 1} (shards are numbered from 0)")
    return i, n


def select(plan, index: int, count: int) -> list[tuple]:
    """The (partition, chunk, cases) of shard `index` of `count`: file j of the plan when
    j mod count = index.  GoldenError when the plan has fewer files than shards (a shard would
    hold nothing)."""
    if count > len(plan):
        raise GoldenError(f"--shard {index}/{count}: the dataset has {len(plan):,} data file(s); a shard holds "
                          f"one at least, so N is at most {len(plan):,}")
    return [task for j, task in enumerate(plan) if j % count == index]


def doc(p, index: int, count: int, records: list[dict] | None) -> dict:
    """shard.json: the shard's place, the dataset kind, versions, and its files' records (None
    while it runs)."""
    k = kind_of(p)
    prof = D.numeric_profile(p.profile)
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "tile_emu_version": D.tile_emu_version(),
            "dataset": {"format": k.dataset_format, "format_version": k.dataset_version},
            "profile": {"name": prof.name, "version": prof.version},
            "shard": {"index": index, "count": count},
            "files": None if records is None else sorted(records, key=lambda r: r["path"])}


def check_resume(out, shard: tuple[int, int] | None, resume: bool) -> None:
    """Before --out is touched: a run resumes as what it was.  With --resume, a folder holding a
    shard resumes only with its own --shard, and a folder of an unsharded run (no shard.json,
    other files) only without --shard."""
    if not resume or not out.is_dir():
        return
    path = out / SHARD
    try:
        entries = any(out.iterdir())
    except OSError:
        return                      # params_match_or_fail says why
    if not path.exists() and not path.is_symlink():
        if shard is not None and entries:
            raise GoldenError(f"--resume: {shown(out)} holds a run without --shard (no {SHARD}); resume it without "
                              "--shard, or give each shard an empty --out")
        return
    got = read(out)["shard"]
    have = (got["index"], got["count"])
    if shard is None:
        raise GoldenError(f"--resume: {shown(out)} holds shard {have[0]}/{have[1]}; resume it with --shard "
                          f"{have[0]}/{have[1]}")
    if have != shard:
        raise GoldenError(f"--resume: {shown(out)} holds shard {have[0]}/{have[1]}, not {shard[0]}/{shard[1]}; "
                          f"resume it with --shard {have[0]}/{have[1]}")


def read(folder) -> dict:
    """A shard's shard.json, parsed and checked against SHARD_SCHEMA (its file records too)."""
    path = store.location(folder) / SHARD
    where = shown(path)
    try:
        size = path.stat().st_size
        if size > MAX_SHARD_BYTES:
            raise GoldenError(f"{where}: {size:,} bytes; a shard.json holds at most {MAX_SHARD_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GoldenError(f"{shown(folder)}: no {SHARD}: not a golden shard (tile-emu golden ... --shard I/N "
                          f"--out FOLDER writes one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenError(f"{where}: cannot read ({why(exc)})") from None
    try:
        s = jsontext.loads(text, max_depth=jsontext.MAX_DEPTH)
    except jsontext.JsonTextError as exc:
        raise GoldenError(f"{where}: not valid JSON ({exc})") from None
    D._validate(s, SHARD_SCHEMA, where)
    if s["shard"]["index"] >= s["shard"]["count"]:
        raise GoldenError(f"{where}: shard {s['shard']['index']}/{s['shard']['count']}: the index is not below "
                          "the count")
    for j, rec in enumerate(s["files"] or []):
        D._check_record(rec, f"{where}: files[{j}]")
    return s


# ---------------------------------------------------------------------------- merge

@dataclass(frozen=True)
class _Shard:
    folder: "pathlib.Path | store.RemotePath"
    index: int
    count: int
    records: list


def merge(folders: list[str], out: str, progress: Callable[[int], None] | None = None):
    """Join shards `folders` into the dataset `out`: every shard checked first (one GoldenError
    line naming the shard, nothing written), then the files copied (each checked against its
    record again as it is copied), generation.json, and the manifest last.  Returns (parameters,
    file records of out)."""
    if not folders:
        raise GoldenError("merge needs the shard folders: golden merge part-* --out D")
    kind, p, shards = _check_shards([store.location(f) for f in folders])
    dest = store.location(out)
    _check_out(dest, shards)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GoldenError(f"--out {shown(dest)}: cannot create the folder ({why(exc)})") from None
    D.write_json(dest / D.PARAMS, p.to_json())
    records = []
    for sh in shards:
        for rec in sh.records:
            records.append(_copy(sh.folder / rec["path"], dest / rec["path"], rec, sh))
            if progress:
                progress(rec["rows"])
    D.write_json(dest / D.MANIFEST, kind.manifest(p, records))
    return p, records


def _label(sh_folder, index: int | None = None, count: int | None = None) -> str:
    return shown(sh_folder) + (f" (shard {index}/{count})" if index is not None else "")


def _check_shards(folders: list):
    """(kind, parameters, the shards in index order), every shard complete, of one run, of this
    tile-emu, each index once and none missing, each holding exactly its files undamaged."""
    version, table = D.tile_emu_version(), kinds()
    first, kind, params, count, by_index = None, None, None, None, {}
    for folder in folders:
        s = read(folder)
        i, n = s["shard"]["index"], s["shard"]["count"]
        here = _label(folder, i, n)
        if s["files"] is None:
            raise GoldenError(f"{here}: unfinished (shard.json lists no files yet): finish it with the command that "
                              "started it and --resume")
        if s["tile_emu_version"] != version:
            raise GoldenError(f"{here}: written by tile-emu {quote(s['tile_emu_version'], 40)}; this is tile-emu "
                              f"{version}: merge with the version that generated the shards")
        ds = s["dataset"]
        k = table.get(ds["format"])
        if k is None or ds["format_version"] != k.dataset_version:
            raise GoldenError(f"{here}: a shard of a {quote(ds['format'], 60)} version {ds['format_version']}; this "
                              f"tile-emu merges " + ", ".join(f"{f} version {x.dataset_version}" for f, x in table.items()))
        try:
            p = k.read_params(folder / D.PARAMS)
        except GoldenError as exc:
            raise GoldenError(f"{here}: {exc}") from None
        prof = D.dataset_profile(s["profile"])
        if p.profile != prof.name:
            raise GoldenError(f"{here}: generation.json names profile {quote(p.profile)}; shard.json records "
                              f"{prof.name}")
        if first is None:
            first, kind, params, count = folder, k, p, n
        elif k is not kind:
            raise GoldenError(f"{here}: a shard of a {k.dataset_format}; {shown(first)} is one of a "
                              f"{kind.dataset_format}")
        elif p != params:
            raise GoldenError(f"{here}: generated with other parameters than {shown(first)} ({D.PARAMS})")
        elif n != count:
            raise GoldenError(f"{here}: one of {n} shards; {shown(first)} is one of {count}")
        if i in by_index:
            raise GoldenError(f"{here}: shard {i}/{n} again (also {shown(by_index[i].folder)}): shards overlap")
        by_index[i] = _Shard(folder, i, n, s["files"])
    missing = [i for i in range(count) if i not in by_index]
    if missing:
        raise GoldenError(f"shard {missing[0]}/{count} missing" + (f" (and {len(missing) - 1} more)" if len(missing) > 1
                                                                    else "")
                          + f": {len(by_index)} of {count} shards given")
    plan = kind.chunks(params)
    shards = [by_index[i] for i in range(count)]
    for sh in shards:
        _check_files(sh, select(plan, sh.index, count), kind)
    return kind, params, shards


def _check_files(sh: _Shard, tasks: list[tuple], kind: Kind) -> None:
    """The shard's records are exactly its files of the plan, in order, with their rows; its
    folder holds exactly those, generation.json and shard.json; each file has its recorded
    size and SHA-256."""
    here = _label(sh.folder, sh.index, sh.count)
    want = [f"{part.path}/{D.file_name(chunk)}" for part, chunk, _ in tasks]
    got = [r["path"] for r in sh.records]
    if got != want:
        lack = [w for w in want if w not in got]
        extra = [g for g in got if g not in want]
        raise GoldenError(f"{here}: shard.json "
                          + (f"lacks {quote(lack[0])}" if lack else f"lists {quote(extra[0])}, which is not"
                             if extra else "lists its files out of order; they are not")
                          + f" {'one ' if extra and not lack else ''}of this shard's {len(want)} file(s)")
    for (part, chunk, rows), rec in zip(tasks, sh.records):
        if rec["rows"] != rows or sum(rec["classes"].values()) != rows:
            raise GoldenError(f"{here}: {shown(rec['path'])}: shard.json records {rec['rows']} rows "
                              f"(classes adding up to {sum(rec['classes'].values())}); the parameters give {rows}")
    listed = set(want) | {D.PARAMS, SHARD}
    extra = [rel for rel in store.files(sh.folder) if rel not in listed]
    if extra:
        raise GoldenError(f"{here}: {shown(extra[0])} is not one of its files (a stray or temporary file: "
                          "remove it, or --resume the shard)")
    for rec in sh.records:
        path = sh.folder / rec["path"]
        if not path.is_file():
            raise GoldenError(f"{here}: {shown(rec['path'])}: listed in shard.json but missing")
        size = path.stat().st_size
        if size != rec["bytes"]:
            raise GoldenError(f"{here}: {shown(rec['path'])}: {size:,} bytes, shard.json says {rec['bytes']:,}")
        if D.sha256(path) != rec["sha256"]:
            raise GoldenError(f"{here}: {shown(rec['path'])}: SHA-256 differs from shard.json (file changed or "
                              "damaged): regenerate the shard")


def _where(folder) -> str:
    return str(folder).rstrip("/") if store.is_remote(folder) else os.path.realpath(folder)


def _check_out(dest, shards: list[_Shard]) -> None:
    """--out is empty or absent, and neither a shard nor inside one (nor holding one)."""
    target = _where(dest)
    for sh in shards:
        folder = _where(sh.folder)
        if folder == target or target.startswith(folder.rstrip("/") + "/") \
                or folder.startswith(target.rstrip("/") + "/"):
            raise GoldenError(f"--out {shown(dest)} and the shard {shown(sh.folder)} overlap: merge into a folder "
                              "of its own")
    try:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise GoldenError(f"--out {shown(dest)} is not an empty folder")
    except OSError as exc:
        raise GoldenError(f"--out {shown(dest)}: cannot read ({why(exc)})") from None


def _copy(src, target, rec: dict, sh: _Shard) -> dict:
    """Copy one data file atomically, its SHA-256 checked again on the bytes copied (a shard
    changed since the check is refused; the file is not published); the copy's record."""
    h = hashlib.sha256()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with store.local_copy(src) as local, store.staged(target) as tmp:
            with open(local, "rb") as fin, open(tmp, "wb") as fout:
                for block in iter(lambda: fin.read(1 << 20), b""):
                    h.update(block)
                    fout.write(block)
            if h.hexdigest() != rec["sha256"]:
                raise GoldenError(f"{_label(sh.folder, sh.index, sh.count)}: {shown(rec['path'])}: changed while "
                                  "it was merged (SHA-256 differs from shard.json)")
            return D.local_record(tmp, rec["path"], target)
    except OSError as exc:
        raise GoldenError(f"{shown(target)}: cannot write ({why(exc)})") from None

