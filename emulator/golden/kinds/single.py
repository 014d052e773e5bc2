"""The single-block golden dataset (docs/golden-format.md, "One row per case"): one row per
case of one block, replayed group by group (replay.py), checked by independent references
(oracle.py), exported for HDL testbenches (hexport.py).  A dataset kind (kinds/__init__.py)."""
from __future__ import annotations

from .. import dataset as D

NAME = "golden"
TITLE = "single-block golden"
FORMAT, FORMAT_VERSION = D.FORMAT, D.FORMAT_VERSION
Params, chunks, manifest, read_params = D.Params, D.chunks, D.manifest, D.read_params
read_manifest = D.read_manifest
open_dataset = D.open_dataset


def detect(folder) -> bool:
    """Any folder: the fallback kind (its checked open refuses what is not one)."""
    return True


def replay(ds, backend: str, progress=None, limit: int = 20):
    from ..replay import verify
    return verify(ds, backend, progress=progress, limit=limit)


def verdict(ds, rows: int, backend: str) -> tuple[str, str]:
    return f"{rows:,} cases", f"{rows:,} cases match ({backend}, profile {ds.profile.name} {ds.profile.version})"


def oracle(folder, limit: int, progress=None):
    from ..oracle import check
    return check(folder, limit=limit, progress=progress)


def hex_export(folder) -> str | None:
    from .. import hexport
    if not hexport.is_export(folder):
        return None
    return f"hex export intact ({hexport.check(folder):,} case x PE lanes)"


def write_hex(folder, out, op, dtype, dst, rmode) -> str:
    from ..hexport import write_hex
    m = write_hex(folder, out, op, dtype)
    lanes = sum(p["files"]["cases.txt"]["lines"] for p in m["partitions"])
    return (f"{sum(p['cases'] for p in m['partitions']):,} cases ({lanes:,} case x PE lanes) in "
            f"{len(m['partitions'])} partition(s) -> {out}")


def coverage_model(folder) -> dict:
    from ..coverage_report import golden_model
    return golden_model(folder)


def coverage_text(folder) -> None:
    return None                   # coverage_report.text of coverage_model
