"""The stream golden dataset (docs/golden-format.md, "Stream goldens"): one row per stream of
several blocks, replayed block by block (streams_replay.py), checked by independent
references (streams_oracle.py), exported for HDL testbenches (streams_hexport.py).  A dataset
kind (kinds/__init__.py)."""
from __future__ import annotations

from .. import streams_dataset as SD
from . import Usage

NAME = "streams"
TITLE = "stream"
FORMAT, FORMAT_VERSION = SD.FORMAT, SD.FORMAT_VERSION
Params, chunks, manifest, read_params = SD.StreamParams, SD.chunks, SD.manifest, SD.read_params
detect = SD.is_stream_dataset
read_manifest = SD.read_manifest
open_dataset = SD.open_stream_dataset


def replay(ds, backend: str, progress=None, limit: int = 20):
    from ..streams_replay import verify
    return verify(ds, backend, progress=progress, limit=limit)


def verdict(ds, rows: int, backend: str) -> tuple[str, str]:
    return (f"{rows:,} streams", f"{rows:,} streams of {ds.params.blocks} blocks match, block by block "
            f"({backend}, profile {ds.profile.name} {ds.profile.version})")


def oracle(folder, limit: int, progress=None):
    from ..streams_oracle import check
    return check(folder, limit=limit, progress=progress)


def hex_export(folder) -> str | None:
    from .. import streams_hexport
    if not streams_hexport.is_export(folder):
        return None
    return f"stream hex export intact ({streams_hexport.check(folder):,} streams)"


def write_hex(folder, out, op, dtype, dst, rmode) -> str:
    from ..streams_hexport import write_hex
    if op or dtype or dst or rmode:
        raise Usage("--op/--dtype/--dst/--rmode select single-block partitions; a stream dataset is "
                    "exported whole")
    m = write_hex(folder, out)
    records = sum(p["files"]["records.txt"]["lines"] for p in m["partitions"])
    return (f"{sum(p['cases'] for p in m['partitions']):,} streams ({records:,} records) in "
            f"{len(m['partitions'])} partition(s) -> {out}")


def coverage_model(folder) -> dict:
    from ..coverage_report import stream_model
    return stream_model(folder)


def coverage_text(folder) -> str:
    from ..streams_coverage import stream_coverage_table
    return stream_coverage_table(folder)
