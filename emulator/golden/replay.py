"""Replay: rebuild each group of a golden file, run it again, compare every field.

`tile-emu verify DIR` first checks the manifest's row counts and SHA-256 digests, then
replays every row through the chosen backend.  Rows are replayed a group at a time (the
`group` column); a group whose rows do not share one block and one set of descriptors (a
hand-edited file) is replayed one row at a time instead, so the check never trusts them.
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from isa import encoding
from isa.errors import DecodeError

from ..config import MachineConfig
from ..tiles import element_dtype
from .cases import Group, TileSpec, execute
from .dataset import GoldenError, check_files, read_manifest
from .rows import SCHEMA, binary_block, descriptor_at, gprs_of, pack_rows, tiles_of, unpack_rows


@dataclass
class Mismatch:
    file: str
    case: int
    field: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.file}: case {self.case}: {self.field}: expected {self.expected}, got {self.got}"


def _runs(groups: np.ndarray) -> list[tuple[int, int]]:
    cuts = np.flatnonzero(np.diff(groups.astype(np.int64))) + 1
    edges = np.concatenate([[0], cuts, [len(groups)]])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _uniform(t: pa.Table, name: str) -> bool:
    col = t.column(name)
    return len(t) == 0 or pc.all(pc.equal(col, col[0])).as_py()


def _entries(arr: pa.Array, n: int, k: int, sl: slice) -> np.ndarray | None:
    """(n, entries of `sl`, B) bytes of list entries sl of every row (k entries per row), or
    None when their sizes differ."""
    idx = (np.arange(n)[:, None] * k + np.arange(sl.start, sl.stop)[None, :]).reshape(-1)
    return binary_block(arr.take(pa.array(idx)), n, sl.stop - sl.start)


def _rebuild(t: pa.Table) -> Group | None:
    """The group of rows t, or None when they do not share a block and descriptors."""
    n = len(t)
    for name in ("stream", "local_bytes", "matrix_bytes"):
        if not _uniform(t, name):
            return None
    try:
        blocks = encoding.decode(t.column("stream")[0].as_py())
    except DecodeError as exc:
        raise GoldenError(f"case {t.column('case')[0].as_py()}: stream does not decode ({exc})") from None
    if len(blocks) != 1:
        return None
    counts, f = tiles_of(t.column("inputs"))
    if len(counts) == 0 or not np.all(counts == counts[0]):
        return None
    k = int(counts[0])
    for name in f:
        if name in ("payload", "defined"):
            continue
        col = f[name]
        if name == "fmap_params":                     # a list per entry: compare its text
            col = pa.array([str(x) for x in col.to_pylist()], pa.string())
        col = col.to_numpy(zero_copy_only=False).reshape(n, k)
        if not np.all(col == col[:1]):
            return None
    try:
        entries = [descriptor_at(f, j) for j in range(k)]
    except ValueError as exc:
        raise GoldenError(f"case {t.column('case')[0].as_py()}: inputs: {exc}") from None
    tiles, j = [], 0
    while j < k:
        pe0, tid, desc = entries[j]
        pes = [pe0]
        while j + len(pes) < k and entries[j + len(pes)][1:] == (tid, desc):
            pes.append(entries[j + len(pes)][0])
        sl = slice(j, j + len(pes))
        payload = _entries(f["payload"], n, k, sl)
        defined = _entries(f["defined"], n, k, sl)
        if payload is None or defined is None or payload.shape[2] != desc.payload_nbytes \
                or defined.shape[2] != (desc.elements + 7) // 8:
            return None
        elems = unpack_rows(payload, desc.elements, desc.container)
        tiles.append(TileSpec(tid, desc, tuple(pes), elems.astype(element_dtype(desc)),
                              unpack_rows(defined, desc.elements, 1).astype(bool)))
        j += len(pes)
    try:
        config = MachineConfig(int(t.column("local_bytes")[0].as_py()), int(t.column("matrix_bytes")[0].as_py()))
    except ValueError as exc:
        raise GoldenError(f"case {t.column('case')[0].as_py()}: {exc}") from None
    try:
        gprs = gprs_of(t.column("gprs"), n)
    except ValueError as exc:
        raise GoldenError(f"case {t.column('case')[0].as_py()}: {exc}") from None
    if gprs is not None and np.any(gprs[:, :, 0]):
        return None                                   # r0 holds nothing: not a machine state
    return Group(None, None, None, blocks[0], config, tiles, gprs)


def _compare(file: str, t: pa.Table, g: Group, backend: str) -> list[Mismatch]:
    out = execute(g, backend)
    cases = t.column("case").to_numpy()
    bad: list[Mismatch] = []

    def check(name, want, got):
        diff = np.flatnonzero(np.any((want != got).reshape(len(cases), -1), axis=1)) if want.size else []
        for i in diff[:3]:
            bad.append(Mismatch(file, int(cases[i]), name, _show(want[i]), _show(got[i])))

    committed = (t.column("outcome").to_numpy(zero_copy_only=False) == "commit")
    check("outcome", committed, out.committed)
    for name, got in (("reason", out.reason), ("field", out.field), ("message", out.message)):
        check(name, t.column(name).to_numpy(zero_copy_only=False).astype(object), got)
    status = np.stack(t.column("status").to_numpy(zero_copy_only=False)).astype(np.uint8) if len(t) else np.zeros((0, 4))
    check("status", status, out.status)
    counts, f = tiles_of(t.column("outputs"))
    both = committed & out.committed
    if out.dest is not None and both.any():
        k = len(out.pes)
        if not np.all(counts[both] == k):
            i = np.flatnonzero(both & (counts != k))[0]
            bad.append(Mismatch(file, int(cases[i]), "outputs", f"{counts[i]} tiles", f"{k} tiles"))
            return bad
        sel = t.filter(pa.array(both))
        _, fs = tiles_of(sel.column("outputs"))
        n = len(sel)
        pay = binary_block(fs["payload"], n, k)
        dfn = binary_block(fs["defined"], n, k)
        want_pay = pack_rows(out.elems[both], out.dest.container)
        want_def = np.packbits(out.defined[both], axis=-1, bitorder="little")
        sub = cases[both]
        for name, stored, computed in (("outputs.payload", pay, want_pay), ("outputs.defined", dfn, want_def)):
            if stored is None or stored.shape != computed.shape:
                bad.append(Mismatch(file, int(sub[0]), name, "a tile image per selected PE", "another shape"))
                continue
            diff = np.flatnonzero(np.any((stored != computed).reshape(n, -1), axis=1))
            for i in diff[:3]:
                bad.append(Mismatch(file, int(sub[i]), name, stored[i].tobytes().hex(), computed[i].tobytes().hex()))
        _, _, d0 = descriptor_at(fs, 0)
        if d0 != out.dest:
            bad.append(Mismatch(file, int(sub[0]), "outputs.descriptor", d0.describe(), out.dest.describe()))
    return bad


def _show(v) -> str:
    if isinstance(v, np.ndarray):
        return "[" + " ".join(str(int(x)) if np.issubdtype(x.dtype, np.integer) else str(x) for x in v.ravel()) + "]"
    return repr(v)


def verify(folder, backend: str = "cpu", progress=None, limit: int = 20) -> tuple[int, list[Mismatch]]:
    """(rows replayed, mismatches) for the whole dataset."""
    m = read_manifest(folder)
    files = check_files(folder, m)
    rows, bad = 0, []
    for part, rec in files:
        path = pathlib.Path(folder) / rec["path"]
        try:
            t = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise GoldenError(f"{rec['path']}: cannot read ({str(exc)[:80]})") from None
        if t.schema.names != SCHEMA.names:
            raise GoldenError(f"{rec['path']}: columns differ from the golden schema")
        for lo, hi in _runs(t.column("group").to_numpy()):
            part_t = t.slice(lo, hi - lo)
            g = _rebuild(part_t)
            if g is None:                                     # replay row by row
                for i in range(len(part_t)):
                    one = part_t.slice(i, 1)
                    g1 = _rebuild(one)
                    if g1 is None:
                        bad.append(Mismatch(rec["path"], int(one.column("case")[0].as_py()), "inputs",
                                            "well-formed tiles", "a malformed row"))
                        continue
                    bad += _compare(rec["path"], one, g1, backend)
            else:
                bad += _compare(rec["path"], part_t, g, backend)
            rows += hi - lo
            if progress:
                progress(hi - lo)
            if len(bad) >= limit:
                return rows, bad[:limit]
    return rows, bad
