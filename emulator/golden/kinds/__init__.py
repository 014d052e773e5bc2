"""Dataset kinds: what `tile-emu verify`, `golden --coverage`, `golden export --format hex` and
`golden merge` do with a dataset folder depends on its kind, and each kind is one module of
this package with the same small interface, registered in KINDS (docs/extending.md, "A new
dataset kind"):

    NAME, TITLE                 the kind's label in a coverage document; its name in messages
    FORMAT, FORMAT_VERSION      the manifest's `format` and the version this build writes
    Params, chunks, manifest, read_params
                                generator parameters, their chunk plan, the manifest of file
                                records, generation.json read back (golden merge, shards.py)
    detect(folder)              whether the folder holds a dataset of this kind (cheap, no checks)
    read_manifest(folder)       the manifest, checked
    open_dataset(folder)        the checked open: everything that needs no replay
    replay(ds, backend, progress, limit)   (rows replayed, mismatches): tile-emu verify
    verdict(ds, rows, backend)  (what was replayed, what matched): verify's last line
    oracle(folder, limit, progress)        verify --oracle's report
    hex_export(folder)          verify's line for a hex export of this kind, None if not one
    write_hex(folder, out, op, dtype, dst, rmode)   golden export --format hex: its summary line
    coverage_model(folder)      the coverage document (golden --coverage --format json/ucis)
    coverage_text(folder)       the kind's own text table, or None for coverage_report.text

The kind of a folder is the first of KINDS after the first whose detect() accepts it, else the
first (single-block goldens, FALLBACK), so that whatever is no dataset is refused by the
single-block checked open with the messages it has always given.
A kind module imports its replay, oracle, export and coverage modules where a function needs
them: together they take seconds to import (ml_dtypes for the oracles), which a command that
uses one of them should not pay for all.
"""
from __future__ import annotations



class Usage(Exception):
    """A request a kind does not take (a usage error, exit status 2)."""


from . import single, stream      # noqa: E402  (after Usage, which they raise)

KINDS = (single, stream)          # the first one is the fallback
FALLBACK = KINDS[0]


def detect(folder):
    """The kind module of the dataset in `folder` (FALLBACK when no other kind claims it)."""
    return next((k for k in KINDS[1:] if k.detect(folder)), FALLBACK)


def of_params(p):
    """The kind module whose generator parameters `p` are."""
    return next(k for k in KINDS if isinstance(p, k.Params))
