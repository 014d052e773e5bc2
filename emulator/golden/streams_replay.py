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
from .replay import _diff, replay_runs, shared_blocks
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
    a layout.  GoldenError for a row no machine could hold."""
    n = len(t)
    blocks = shared_blocks(t, path)
    if blocks is None:
        return None
    texts, _ = SD.layouts_of(t)
    if len(texts) != 1:
        return None
    try:
        layout = SD.parse_layout(texts[0])
        payload = SD.binary_rows(t.column("initial_payload"), layout.width("initial_payload"))
        defined = SD.binary_rows(t.column("initial_defined"), layout.width("initial_defined"))
        g = SD.binary_rows(t.column("gprs"), SD.GPR_BYTES)
        if payload is None or defined is None or g is None:
            raise ValueError("initial_payload, initial_defined or gprs: not the lengths the layout gives")
        tiles = SD.initial_tiles(layout, payload, defined)
        config = ds.config(int(t.column("local_bytes")[0].as_py()), int(t.column("matrix_bytes")[0].as_py()))
    except ValueError as exc:
        raise _malformed(path, t, str(exc)) from None
    gprs = np.ascontiguousarray(g).view("<u8").astype(np.uint64).reshape(n, F.NUM_PES, F.GPR_COUNT)
    if np.any(gprs[:, :, 0]):
        raise _malformed(path, t, "gprs: r0 is the hard-wired zero and holds nothing")
    return config, n, tiles, gprs, blocks


def replay(config, n, tiles, gprs, blocks, backend: str = "cpu") -> dict | None:
    """The replayed columns of n machines running `blocks` (None when the machines stop at
    different blocks or disagree on a record's head: the caller replays them one by one).
    The engine's final tiles must be the initial ones overlaid with the commit records (the
    format stores no final state): `final` is the first (PE, tile) where they are not."""
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
    try:
        cols = SD.replay_columns(config, n, tiles, gprs, blocks, records, executed, run.batch.statuses())
    except SD.Ragged:
        return None
    cols["final"] = _final_difference(run, cols)
    return cols


def _final_difference(run: S.StreamRun, cols: dict) -> str | None:
    """Where the engine's final state differs from the overlay of its own records, or None."""
    layout = SD.parse_layout(cols["layout"])
    get = lambda name: SD.binary_rows(cols[name], layout.width(name))
    want = SD.final_tiles(layout, get("initial_payload"), get("initial_defined"), get("record_payload"),
                          get("record_defined"))
    entries, _ = run.final()
    got = {(pes[0], tid): (d, e, f) for d, tid, pes, e, f in entries}
    for key in sorted(set(want) | set(got), key=lambda k: (k[1], k[0])):
        a, b = want.get(key), got.get(key)
        if a is None or b is None or a[0] != b[0] or not np.array_equal(a[1], b[1]) or not np.array_equal(a[2], b[2]):
            return f"PE {key[0]} tile {key[1]}"
    return None


BINARY_FIELDS = {"initial_payload": ("initial", "payload"), "initial_defined": ("initial", "defined"),
                 "record_payload": ("records", "payload"), "record_defined": ("records", "defined"),
                 "record_status": ("records", "status")}


def _compare(path: str, t: pa.Table, want: dict) -> list[StreamMismatch]:
    cases = t.column("case").to_numpy()
    bad = []
    if want.get("final"):
        bad.append(StreamMismatch(path, int(cases[0]), None, "final", "the initial state overlaid with the records",
                                  f"the engine's final state differs at {want['final']}"))
    texts, index = SD.layouts_of(t)
    stored_layout = texts[0] if len(texts) == 1 else None
    if stored_layout != want["layout"]:
        r = 0 if stored_layout is not None else int(np.flatnonzero(index != index[0])[0])
        bad.append(_layout_mismatch(path, int(cases[r]), texts[index[r]], want["layout"]))
        return bad                          # the binaries are laid out by it: their bytes cannot be compared
    layout = SD.parse_layout(stored_layout)
    for name in SD.SCHEMA.names:
        if name in NOT_REPLAYED or name == "layout":
            continue
        stored = t.column(name).combine_chunks()
        if name in BINARY_FIELDS:
            bad += _binary_mismatches(path, cases, name, layout, stored, want[name])
            continue
        for r, fld, entry, s, g in _diff(name, stored, want[name], np.arange(len(t)), None):
            bad.append(StreamMismatch(path, int(cases[r]), None, fld, s, g))
    return bad


def _binary_mismatches(path: str, cases, name: str, layout: SD.Layout, stored, want) -> list[StreamMismatch]:
    """The first differing entry of each differing row (up to PER_FIELD rows) of a per-stream
    binary, named by the layout: `records.payload (record 5)` with its block, or `initial.defined
    (PE 2 tile 7)`; both values that entry's bytes in hex."""
    from .replay import PER_FIELD, _show
    width = layout.width(name)
    s, w = SD.binary_rows(stored, width), SD.binary_rows(want, width)
    part, kind = BINARY_FIELDS[name]
    entries = layout.initial if part == "initial" else layout.records
    if kind == "status":
        offsets = np.arange(len(entries) + 1)
    else:
        offsets = (layout.initial_offsets if part == "initial" else layout.record_offsets)[kind == "defined"]
    differ = s != w
    out = []
    for r in np.flatnonzero(differ.any(axis=1))[:PER_FIELD]:
        byte = int(np.flatnonzero(differ[r])[0])
        k = int(np.searchsorted(offsets, byte, side="right") - 1)
        lo, hi = int(offsets[k]), int(offsets[k + 1])
        e = entries[k]
        if part == "initial":
            at, block = f"{part}.{kind} (PE {e['pe']} tile {e['tile']})", None
        else:
            at, block = f"{part}.{kind} (record {k})", int(e["block"])
        out.append(StreamMismatch(path, int(cases[r]), block, at, _show(bytes(s[r, lo:hi])), _show(bytes(w[r, lo:hi]))))
    return out


def _layout_mismatch(path: str, case: int, stored: str, want: str) -> StreamMismatch:
    """The first layout entry and key where the stored layout differs from the replay's."""
    try:
        a = SD.parse_layout(stored)
    except ValueError as exc:
        return StreamMismatch(path, case, None, "layout", "the replay's layout", str(exc))
    b = SD.parse_layout(want)
    for part in ("initial", "records"):
        x, y = getattr(a, part), getattr(b, part)
        for k in range(min(len(x), len(y))):
            for key in y[k]:
                if x[k].get(key) != y[k][key]:
                    block = int(y[k]["block"]) if part == "records" else None
                    return StreamMismatch(path, case, block, f"layout.{part}[{k}].{key}", repr(x[k].get(key)),
                                          repr(y[k][key]))
        if len(x) != len(y):
            return StreamMismatch(path, case, None, f"layout.{part}", f"{len(x)} entries", f"{len(y)} entries")
    return StreamMismatch(path, case, None, "layout", shown(stored, 80), shown(want, 80))


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
