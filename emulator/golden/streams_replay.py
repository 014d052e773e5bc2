"""Replay of stream goldens: rebuild each group's initial machines, run the stream block by
block through the batch engine, and compare every replayed column with the stored one.

A group's rows (the `group` column) are replayed together when they share the stream, the
store sizes and every initial descriptor, and every row stops at the same block; otherwise (a
hand-edited file) each row is replayed alone, so the check never trusts them.  A mismatch
names the file, the case, the block (for a commit record, the record's block), the field and
both values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from isa import encoding, fields as F
from isa.atomicio import shown

from .dataset import GoldenError
from .replay import _diff, replay_runs, shared_blocks, tile_specs
from .rows import gprs_of
from . import streams as S
from . import streams_dataset as SD

NOT_REPLAYED = ("case", "class", "group", "value_class")


@dataclass
class StreamMismatch:
    file: str
    case: int
    block: int | None
    field: str
    expected: str
    got: str

    def __str__(self) -> str:
        at = "" if self.block is None else f" block {self.block}:"
        return f"{self.file}: case {self.case}:{at} {self.field}: expected {self.expected}, got {self.got}"


def _malformed(path: str, t: pa.Table, what: str) -> GoldenError:
    return GoldenError(f"{shown(path)}: case {t.column('case')[0].as_py()}: {shown(what, 160)}")


def rebuild(t: pa.Table, ds: SD.StreamDataset, path: str):
    """(config, n, tiles, gprs, blocks) of rows t, or None when they do not share a stream and
    initial descriptors.  GoldenError for a row no machine could hold."""
    n = len(t)
    blocks = shared_blocks(t, path)
    if blocks is None:
        return None
    specs = tile_specs(t, path, "initial")
    if specs is None:
        return None
    tiles = {}
    for s in specs:
        for j, p in enumerate(s.pes):
            if not 0 <= p < F.NUM_PES or (p, s.tile) in tiles:
                raise _malformed(path, t, f"initial: PE {p} tile {s.tile} is out of range or listed twice")
            tiles[(p, s.tile)] = (s.desc, s.elems[:, j], s.defined[:, j])
    try:
        config = ds.config(int(t.column("local_bytes")[0].as_py()), int(t.column("matrix_bytes")[0].as_py()))
        gprs = gprs_of(t.column("gprs"), n)
    except ValueError as exc:
        raise _malformed(path, t, str(exc)) from None
    if gprs is None:
        gprs = np.zeros((n, F.NUM_PES, F.GPR_COUNT), np.uint64)
    if np.any(gprs[:, :, 0]):
        raise _malformed(path, t, "gprs: r0 is the hard-wired zero and holds nothing")
    return config, n, tiles, gprs, blocks


def replay(config, n, tiles, gprs, blocks, backend: str = "cpu") -> dict | None:
    """The replayed columns of n machines running `blocks` (None when the machines stop at
    different blocks: the caller replays them one by one)."""
    run = S.StreamRun(config, n, tiles, gprs, backend)
    records = S.CL.Records()
    executed, offset = len(blocks), encoding.HEADER_BYTES
    for i, block in enumerate(blocks):
        committed, recs = run.step(block, i, offset)
        records = records + recs
        offset += len(encoding.encode([block])) - encoding.HEADER_BYTES
        if not committed.all():
            if committed.any():
                return None
            executed = i
            break
    final, status = run.final()
    return SD.replay_columns(config, n, tiles, gprs, blocks, records, executed, final, status)


def _compare(path: str, t: pa.Table, want: dict) -> list[StreamMismatch]:
    cases = t.column("case").to_numpy()
    bad = []
    for name in SD.SCHEMA.names:
        if name in NOT_REPLAYED:
            continue
        stored = t.column(name).combine_chunks()
        for r, fld, entry, s, g in _diff(name, stored, want[name], np.arange(len(t)), None):
            block = None
            if name == "records" and entry is not None:
                recs = stored[r].values
                if entry < len(recs):
                    block = int(recs[entry]["block"].as_py())
                else:
                    block = None
            elif name == "records":
                block = _first_block_difference(stored[r], want[name][r])
            bad.append(StreamMismatch(path, int(cases[r]), block, fld + ("" if entry is None else f" (record {entry})"),
                                      s, g))
    return bad


def _first_block_difference(stored, want) -> int | None:
    """The first block whose records differ between two record lists of one case."""
    s, w = stored.values.to_pylist(), want.values.to_pylist()
    for a, b in zip(s, w):
        if a != b:
            return int(min(a["block"], b["block"]))
    longer = s if len(s) > len(w) else w
    return int(longer[min(len(s), len(w))]["block"]) if longer and len(s) != len(w) else None


def _replay_checked(path: str, t: pa.Table, got, backend: str):
    """replay(), with a row whose state no machine can hold (a hand-edited descriptor the
    engine refuses) as one GoldenError line naming the file and the case."""
    try:
        return replay(*got, backend=backend)
    except GoldenError:
        raise
    except Exception as exc:       # untrusted rows: never a traceback
        raise _malformed(path, t, f"cannot replay ({type(exc).__name__}: {exc})") from None


def verify(ds: SD.StreamDataset, backend: str = "cpu", progress=None, limit: int = 20):
    """(rows replayed, mismatches) of a checked stream dataset."""

    def check(path: str, sub: pa.Table) -> list[StreamMismatch]:
        got = rebuild(sub, ds, path)
        want = _replay_checked(path, sub, got, backend) if got is not None else None
        if want is not None:
            return _compare(path, sub, want)
        bad = []
        for i in range(len(sub)):
            one = sub.slice(i, 1)
            g1 = rebuild(one, ds, path)
            if g1 is None:
                bad.append(StreamMismatch(path, int(one.column("case")[0].as_py()), None, "initial",
                                          "well-formed tiles", "a malformed row"))
                continue
            w1 = _replay_checked(path, one, g1, backend)
            bad += _compare(path, one, w1) if w1 is not None else []
        return bad

    return replay_runs(((rec["path"], ds.read(part, chunk, rec)) for part, chunk, rec in ds.files),
                       check, progress, limit)
