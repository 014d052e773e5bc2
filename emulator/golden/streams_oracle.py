"""`tile-emu verify STREAMS --oracle`: the independent check (emulator/golden/oracle.py) of a
stream dataset (tile-emu golden --streams; docs/golden-format.md, "Independent check").

Every committed (block, PE) whose instruction has a reference is checked: its source tiles on
that PE are taken from the machine state before the block, which is the stored initial state
with the stored commit records of the earlier blocks applied (each record's destination
replaces that PE's tile): stored data moved, never an emulator kernel run.  The stored payload's
valid elements and the record's status are judged by oracle.judge, the single-block check's
own core, with the lanes of one instruction label gathered from every stream and file and the
reference called once per gathering (FLUSH_ELEMENTS and PENDING_ELEMENTS bound the memory).

A wrong stored result that a later block reads is reported once, at its own block: the later
block is checked against the stored (wrong) payload, as every block is, and where that block
then mismatches while one of its sources is a result that mismatches (or, for TSEL, the status
it keeps is), it is counted on the report's last line rather than reported again.

`stream_rows` is the one function that knows the stream row format; the rest is
format-independent.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa import instructions as I
from isa.atomicio import shown
from isa.datatypes import datatype
from isa.errors import IllegalBlockException
from isa.legality import resolve
from isa.fields import NUM_PES

from .. import commitlog as CL
from . import dataset as D
from . import oracle as O
from . import store
from . import streams_dataset as SD
from .dataset import GoldenError

FLUSH_ELEMENTS = 1 << 20       # gathered elements of one label before its reference runs
PENDING_ELEMENTS = 1 << 21     # gathered elements of every label before all references run
TILE_FIELDS = ("pe", "tile", "kind", "dtype", "Row", "Col", "ValidRow", "ValidCol", "payload")
# a layout entry's descriptor keys (the state file's names) -> golden tile names
_LAYOUT_NAMES = {"datatype": "dtype", "row": "Row", "col": "Col", "valid_row": "ValidRow", "valid_col": "ValidCol"}


@dataclass
class StreamRows:
    """One data file's streams in the terms of the check.  Tile entries are flat Arrow fields
    under TILE_FIELDS (golden names); a record entry is the destination of one committed
    (block, PE), or a fault (`record_commit` False, its tile fields unread)."""
    path: str
    cases: np.ndarray             # (n,) case numbers
    stream: np.ndarray            # (n,) each row's index into `blocks`
    blocks: list                  # per distinct stream: its decoded Blocks
    status: np.ndarray            # (n, NUM_PES) each PE's status before block 0
    initial_row: np.ndarray       # (I,) the row of each initial tile entry
    initial: dict                 # TILE_FIELDS -> (I,) Arrow arrays
    record_row: np.ndarray        # (R,) the row of each record
    record_block: np.ndarray      # (R,) its block index
    record_commit: np.ndarray     # (R,) bool: a commit (else a fault)
    record_status: np.ndarray     # (R,) the PE's status after the block
    records: dict                 # TILE_FIELDS -> (R,) Arrow arrays


def stream_rows(t: pa.Table, path: str) -> StreamRows:
    """The adapter from the stored row format, version 2 (emulator/golden/streams_dataset.py
    SCHEMA; docs/golden-format.md, "Stream goldens"): columns case, stream (decoded by
    dataset.distinct_streams / decoded_streams), layout (streams_dataset.layouts_of and
    parse_layout: each entry's head and descriptor and its byte offsets), initial_payload,
    record_payload and record_status, sliced at those offsets.  An initial entry is one tile
    entry per PE it lists (the same bytes); a record is one record entry.  The rows are those
    StreamDataset.read returns: each binary the length its layout gives.  A row's machines
    start with status 0 (the format stores none before block 0)."""
    where = shown(path)
    cases = t.column("case").to_numpy()
    uniques, index = D.distinct_streams(t)
    blocks = [b for _, b in D.decoded_streams(uniques, index, where, lambda m: D.case_at(cases, m))]
    n = len(t)
    texts, layout_of = SD.layouts_of(t)
    slots = [_layout_slots(text) for text in texts]           # per distinct layout (one per group)
    i_row, i_slot, initial = _entries(t, layout_of, [s[0] for s in slots], "initial_payload")
    r_row, r_slot, records = _entries(t, layout_of, [s[1] for s in slots], "record_payload")
    status = _column_bytes(t.column("record_status"), r_row, r_slot["at"])
    return StreamRows(path, cases, index, blocks, np.zeros((n, NUM_PES), np.uint8), i_row, initial,
                      r_row, r_slot["block"], r_slot["commit"], status, records)


@functools.lru_cache(maxsize=64)
def _layout_slots(text: str) -> tuple[dict, dict]:
    """(initial, records) of one layout text as arrays over its tile entries: an initial entry
    once per PE it lists, a record once; per entry its golden tile fields but the payload,
    `start` and `bytes` (its payload's place in the row's binary, from parse_layout's offsets)
    and, for records, `block`, `commit` and `at` (its index: its byte in record_status).
    A loop over the layout's entries (a few dozen per group), not over tile data."""
    lay = SD.parse_layout(text)
    out = []
    for part, offsets in (("initial", lay.initial_offsets[0]), ("records", lay.record_offsets[0])):
        entries = getattr(lay, part)
        pes = [e["pes"] if part == "initial" else [e["pe"]] for e in entries]
        each = np.repeat(np.arange(len(entries)), [len(p) for p in pes])
        s = {"pe": np.array([p for ps in pes for p in ps], np.int64),
             "start": offsets[:-1][each], "bytes": np.diff(offsets)[each], "at": each}
        for key in ("tile", "kind", "datatype", "row", "col", "valid_row", "valid_col"):
            s[_LAYOUT_NAMES.get(key, key)] = np.array([e[key] for e in entries], object if key in ("kind", "datatype")
                                                      else np.int64)[each]
        if part == "records":
            s["block"] = np.array([e["block"] for e in entries], np.int64)
            s["commit"] = np.array([e["record"] == CL.COMMIT for e in entries], bool)
        out.append(s)
    return out[0], out[1]


def _entries(t: pa.Table, layout_of: np.ndarray, per_layout: list, payload: str):
    """(row of each entry, its slot fields (NumPy), its TILE_FIELDS (Arrow)) of every row's
    entries in row order, each row's in its layout's order; payloads sliced out of column
    `payload` at the slots' offsets (one gather, no per-row step)."""
    keys = per_layout[0].keys()
    table = {k: np.concatenate([s[k] for s in per_layout]) for k in keys}
    size = np.array([len(s["pe"]) for s in per_layout], np.int64)
    base = np.r_[0, np.cumsum(size)][:-1]
    count = size[layout_of]
    row = np.repeat(np.arange(len(layout_of)), count)
    slot = base[layout_of][row] + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    fields = {k: v[slot] for k, v in table.items()}
    tiles = {k: pa.array(fields[k], pa.string() if k in ("kind", "dtype") else pa.int64())
             for k in TILE_FIELDS if k != "payload"}
    tiles["payload"] = _sliced(t.column(payload), row, fields["start"], fields["bytes"])
    return row, fields, tiles


def _flat(col) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (n + 1,), data) of a binary column."""
    arr = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).cast(pa.large_binary())
    offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    return offs, data


def _sliced(col, row: np.ndarray, start: np.ndarray, nbytes: np.ndarray) -> pa.Array:
    """A binary array of bytes [start, start + nbytes) of each entry's row of column `col`."""
    offs, data = _flat(col)
    out_offs = np.r_[0, np.cumsum(nbytes)].astype(np.int64)
    at = np.repeat(offs[row] + start - out_offs[:-1], nbytes) + np.arange(int(out_offs[-1]))
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(row), [None, pa.py_buffer(out_offs),
                                            pa.py_buffer(np.ascontiguousarray(data[at]))])


def _column_bytes(col, row: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Byte `at` of each entry's row of binary column `col` (uint8)."""
    offs, data = _flat(col)
    return data[offs[row] + at].astype(np.uint8)


# ---------------------------------------------------------------------------- the check

def check(folder, limit: int = 20, progress=None) -> O.Report:
    """Check every committed (block, PE) of every stream that has a reference; see O.Report."""
    ds = SD.open_stream_dataset(store.location(folder))
    rep = O.Report(rows_are="streams", unit="committed (block, PE)s")
    run = _Run(rep, ds.profile.name, limit)
    for part, chunk, rec in ds.files:
        t = ds.read(part, chunk, rec)
        rep.rows += len(t)
        if len(t):
            try:
                run.add_file(stream_rows(t, rec["path"]))
            except GoldenError:
                raise
            except Exception as exc:            # untrusted rows: one line, never a traceback
                raise GoldenError(f"{shown(rec['path'])}: cannot check ({type(exc).__name__}: "
                                  f"{shown(str(exc), 160)})") from None
        if progress:
            progress(len(t))
    run.finish()
    return rep


class _Run:
    """Lanes gathered per label across files, judged in batches; the mismatching lanes kept
    (a bounded number) to be reported once every result is known (see the module docstring)."""

    def __init__(self, rep: O.Report, profile: str, limit: int):
        self.rep, self.profile, self.limit = rep, profile, limit
        self.paths: list[str] = []
        self.plans: dict[str, tuple[O.Plan | None, dict]] = {}
        self.pending: dict[str, list] = {}           # label -> [(Lanes, meta)]
        self.pending_elements: dict[str, int] = {}
        self.bad: list = []                           # (label, Lanes, meta) of mismatching lanes
        self.bad_kept = 0                             # lanes in self.bad
        self.bad_total = 0                            # every mismatching lane
        self.bad_dest: list = []                      # (file, version) of every mismatching lane

    # -- one file

    def add_file(self, rows: StreamRows) -> None:
        fi = len(self.paths)
        self.paths.append(rows.path)
        for lab, lanes, meta in _file_lanes(rows, fi, self):
            self.pending.setdefault(lab, []).append((lanes, meta))
            self.pending_elements[lab] = self.pending_elements.get(lab, 0) + len(lanes.stored)
            if self.pending_elements[lab] >= FLUSH_ELEMENTS:
                self._flush(lab)
        if sum(self.pending_elements.values()) >= PENDING_ELEMENTS:     # bounded memory
            for lab in list(self.pending):
                self._flush(lab)

    def plan(self, keys: dict) -> tuple[str, O.Plan | None]:
        lab = O.label(keys)
        if lab not in self.plans:
            plan = O.plan_under(keys, self.profile)
            self.plans[lab] = (plan, keys)
            if plan is None:
                self.rep.none.append(lab)
        return lab, self.plans[lab][0]

    # -- judging

    def _flush(self, lab: str) -> None:
        pieces = self.pending.pop(lab, [])
        self.pending_elements.pop(lab, None)
        if not pieces:
            return
        plan, keys = self.plans[lab]
        meta = {k: np.concatenate([m[k] for _, m in pieces]) for k in pieces[0][1]}
        lanes = O.Lanes.joined([p for p, _ in pieces], None)
        try:
            bad = O.judge(self.rep, plan, keys, lanes, 0)
        except GoldenError:
            raise
        except Exception as exc:                # operands no legal block holds (an altered file)
            raise GoldenError(f"{lab}: the {plan.name} reference cannot take the stored operands "
                              f"({type(exc).__name__}: {shown(str(exc), 120)})") from None
        if bad.any():
            self.bad_total += int(bad.sum())
            self.bad_dest.append(np.stack([meta["file"][bad], meta["dest"][bad]], axis=1))
            if self.bad_kept < 64 * max(self.limit, 1):
                self.bad.append((lab, lanes.subset(bad, None), {k: v[bad] for k, v in meta.items()}))
                self.bad_kept += int(bad.sum())

    def finish(self) -> None:
        for lab in list(self.pending):
            self._flush(lab)
        if not self.bad:
            return
        dest = np.concatenate(self.bad_dest)
        dest_keys = np.unique(dest[:, 0] << 32 | dest[:, 1])
        followed = 0
        for lab, lanes, meta in sorted(self.bad, key=lambda b: (int(b[2]["file"][0]), int(b[2]["row"][0]))):
            src = meta["src"]
            keys = meta["file"][:, None] << 32 | np.where(src >= 0, src, 0)
            fed = ((src >= 0) & np.isin(keys, dest_keys)).any(axis=1)
            followed += int(fed.sum())
            keep = ~fed
            if keep.any() and len(self.rep.mismatches) < self.limit:
                m = {k: v[keep] for k, v in meta.items()}
                plan, keys_ = self.plans[lab]
                O.judge(O.Report(mismatches=self.rep.mismatches), plan, keys_,
                        lanes.subset(keep, self._where(m)), self.limit)
        unkept = self.bad_total - self.bad_kept
        if unkept:
            self.rep.mismatches.append(f"verify --oracle: {unkept:,} more mismatching committed (block, PE)s not "
                                       "shown")
        if followed:
            self.rep.notes.append(f"  {followed:,} committed (block, PE)s mismatch where a source holds a result "
                                  "reported above (an earlier block's stored payload): not reported again")

    def _where(self, m: dict):
        paths = self.paths
        return lambda j: (f"{paths[int(m['file'][j])]}: case {int(m['case'][j])} block {int(m['block'][j])} "
                          f"PE{int(m['pe'][j])}")


def _file_lanes(rows: StreamRows, fi: int, run: _Run):
    """(label, Lanes, meta) per instruction label of one file's committed (block, PE)s that
    have a reference; meta holds per lane file, row, case, block, pe, dest (its version index)
    and src (the version indices it reads: its sources, and for TSEL the record whose status it
    keeps; -1 for none)."""
    path = rows.path
    where = shown(path)
    n_init = len(rows.initial_row)
    commit = rows.record_commit
    r_pe = rows.records["pe"].to_numpy().astype(np.int64)
    r_tile = rows.records["tile"].to_numpy().astype(np.int64)
    r_block = rows.record_block
    sizes = np.array([len(b) for b in rows.blocks], np.int64)
    r_stream = rows.stream[rows.record_row]

    def case_of(mask) -> int:
        return int(rows.cases[rows.record_row[np.flatnonzero(mask)[0]]])
    out_of_range = commit & ((r_pe >= NUM_PES) | (r_block < 0) | (r_block >= sizes[r_stream]))
    if out_of_range.any():
        raise GoldenError(f"{where}: case {case_of(out_of_range)}: a commit record names a PE or block the "
                          "stream does not have")
    i_pe = rows.initial["pe"].to_numpy().astype(np.int64)
    if (i_pe >= NUM_PES).any():
        raise GoldenError(f"{where}: case {int(rows.cases[rows.initial_row[np.argmax(i_pe >= NUM_PES)]])}: "
                          "an initial tile names a PE out of range")

    # the blocks that commit somewhere: their keys, reference, sources and CMode
    base = np.r_[0, np.cumsum(sizes)]
    info = base[r_stream] + np.where(commit, r_block, 0)
    per_info = {}
    for b in np.unique(info[commit]).tolist():
        u = int(np.searchsorted(base, b, side="right") - 1)
        block = rows.blocks[u][b - base[u]]
        keys = D._block_keys(block)
        try:
            instr = I.lookup(keys["op"])
            lab, plan = run.plan(keys)
        except (KeyError, ValueError):
            raise GoldenError(f"{where}: case {case_of(commit & (info == b))}: block {b - base[u]} commits but "
                              f"is no instruction of a DataType ({shown(O.label(keys), 80)})") from None
        if plan is not None:
            try:
                rb = resolve(block)
            except IllegalBlockException as exc:
                raise GoldenError(f"{where}: case {case_of(commit & (info == b))}: block {b - base[u]} commits but "
                                  f"is illegal ({exc.reason})") from None
            tiles = [bd.tile for bd in block.iot[:-1][: instr.arity]]
            per_info[b] = (lab, tiles + [-1] * (3 - len(tiles)), O._cmode(block), len(tiles), rb.ValidRow,
                           rb.ValidCol)
    if not per_info:
        return
    info_ids = np.array(sorted(per_info), np.int64)
    info_tiles = np.array([per_info[b][1] for b in info_ids.tolist()], np.int64)
    info_cmode = np.array([per_info[b][2] for b in info_ids.tolist()], np.int64)
    info_label = np.array([per_info[b][0] for b in info_ids.tolist()], object)
    info_rect = np.array([per_info[b][4:6] for b in info_ids.tolist()], np.int64)

    # the state before each block: versions (initial entries, then commit records) by
    # (row, PE, tile), ordered by the block that wrote them (initial: 0, block k: k + 1)
    v_row = np.concatenate([rows.initial_row, rows.record_row])
    v_pe = np.concatenate([i_pe, r_pe])
    v_tile = np.concatenate([rows.initial["tile"].to_numpy().astype(np.int64), r_tile])
    v_ver = np.concatenate([np.zeros(n_init, np.int64), r_block + 1])
    v_ok = np.concatenate([np.ones(n_init, bool), commit])
    tiles_u = np.unique(v_tile[v_ok])
    K1 = int(sizes.max()) + 2
    T = len(tiles_u) + 1

    def prefix(row, pe, tile):
        rank = np.searchsorted(tiles_u, tile)
        known = (rank < len(tiles_u)) & (tiles_u[np.minimum(rank, len(tiles_u) - 1)] == tile)
        return (row * NUM_PES + pe) * T + np.where(known, rank, T - 1), known

    ok = np.flatnonzero(v_ok)
    _require_sizes(rows, ok, v_row, v_pe, v_tile, v_ver)
    pk, _ = prefix(v_row[ok], v_pe[ok], v_tile[ok])
    vkey = pk * K1 + v_ver[ok]
    order = np.argsort(vkey, kind="stable")
    skeys, sidx = vkey[order], ok[order]
    if np.any(np.diff(skeys) == 0):
        j = sidx[np.flatnonzero(np.diff(skeys) == 0)[0]]
        raise GoldenError(f"{where}: case {int(rows.cases[v_row[j]])}: PE {int(v_pe[j])} tile {int(v_tile[j])} is "
                          "listed twice (initial state) or committed twice by one block")
    # each PE's status after each committed block
    cr = np.flatnonzero(commit)
    skey = (rows.record_row[cr] * NUM_PES + r_pe[cr]) * K1 + r_block[cr] + 1
    sorder = np.argsort(skey, kind="stable")
    s_keys, s_idx = skey[sorder], cr[sorder]

    lane_rec = cr[np.isin(info[cr], info_ids)]
    lane_pos = np.searchsorted(info_ids, info[lane_rec])
    for lab in sorted(set(info_label.tolist())):
        sel = info_label[lane_pos] == lab
        rec, pos = lane_rec[sel], lane_pos[sel]
        row, pe, blk = rows.record_row[rec], r_pe[rec], r_block[rec]
        arity = per_info[int(info_ids[pos[0]])][3]
        src_tiles, cmodes = info_tiles[pos, :arity], info_cmode[pos]
        rect = info_rect[pos, 0], info_rect[pos, 1]
        src = np.full((len(rec), arity), -1, np.int64)
        for k in range(arity):
            p, known = prefix(row, pe, src_tiles[:, k])
            at = np.searchsorted(skeys, p * K1 + blk + 1, side="left") - 1
            hit = known & (at >= 0) & (skeys[np.maximum(at, 0)] // K1 == p)
            if not hit.all():
                j = int(np.argmax(~hit))
                raise GoldenError(f"{where}: case {int(rows.cases[row[j]])} block {int(blk[j])} PE{int(pe[j])}: source "
                                  f"tile {int(src_tiles[j, k])} is in neither the initial state nor an earlier "
                                  "block's commit")
            src[:, k] = sidx[at]
        sp = row * NUM_PES + pe
        at = np.searchsorted(s_keys, sp * K1 + blk + 1, side="left") - 1
        earlier = (at >= 0) & (s_keys[np.maximum(at, 0)] // K1 == sp)
        before = np.where(earlier, rows.record_status[s_idx[np.maximum(at, 0)]], rows.status[row, pe]).astype(np.uint8)
        cases = rows.cases[row]
        name = lambda j: f"{path}: case {int(cases[j])} block {int(blk[j])} PE{int(pe[j])}"  # noqa: E731
        fields = _versions(rows)
        shape = [fields[c].to_numpy().astype(np.int64)[n_init + rec] for c in ("ValidRow", "ValidCol")]
        off = (shape[0] != rect[0]) | (shape[1] != rect[1])
        if off.any():
            j = int(np.argmax(off))
            raise GoldenError(f"{name(j)}: the commit record's valid shape {int(shape[0][j])}x{int(shape[1][j])} is "
                              f"not the block's {int(rect[0][j])}x{int(rect[1][j])}")
        operands, stored, lane_of = O.gather_lanes(fields, src, fields, n_init + rec, path, name, rect)
        lanes = O.Lanes(operands, stored, lane_of, rows.record_status[rec], before, cmodes, name, len(rec))
        fed_by = src
        if run.plans[lab][0].keeps_status:       # TSEL's status is the earlier record's
            fed_by = np.concatenate([src, np.where(earlier, n_init + s_idx[np.maximum(at, 0)], -1)[:, None]], axis=1)
        meta = {"file": np.full(len(rec), fi, np.int64), "row": row, "case": cases.astype(np.int64), "block": blk,
                "pe": pe, "dest": n_init + rec, "src": fed_by}
        yield lab, lanes, meta


def _require_sizes(rows: StreamRows, ok: np.ndarray, v_row, v_pe, v_tile, v_ver) -> None:
    """Every tile entry the state is made of (versions `ok`) holds whole elements, Row x Col
    of them: one GoldenError line naming the first that does not (an altered file)."""
    f = _versions(rows)
    kinds = f["kind"].take(pa.array(ok)).to_numpy(zero_copy_only=False).astype(str)
    dts = f["dtype"].take(pa.array(ok)).to_numpy(zero_copy_only=False).astype(str)
    pairs, inverse = np.unique(np.stack([kinds, dts]), axis=1, return_inverse=True)
    bits = np.zeros(pairs.shape[1], np.int64)
    for j, (k, d) in enumerate(zip(*pairs)):
        try:
            bits[j] = 1 if k == "predicate" else datatype(d).container
        except ValueError:
            bits[j] = -1
    bits = bits[np.asarray(inverse).reshape(-1)]
    length = pc.binary_length(f["payload"].take(pa.array(ok))).to_numpy().astype(np.int64)
    need = f["Row"].to_numpy().astype(np.int64)[ok] * f["Col"].to_numpy().astype(np.int64)[ok] * bits
    bad = (bits < 0) | (length * 8 < need) | ((length * 8) % np.maximum(bits, 8) != 0)
    if bad.any():
        j = int(np.argmax(bad))
        v = ok[j]
        at = (f"initial PE{int(v_pe[v])} tile {int(v_tile[v])}" if v_ver[v] == 0 else
              f"block {int(v_ver[v]) - 1} PE{int(v_pe[v])}: the commit record")
        why = (f"DataType {shown(dts[j], 40)} is unknown" if bits[j] < 0 else
               f"holds {int(length[j])} payload bytes; its descriptor needs {-(-int(need[j]) // 8)}")
        raise GoldenError(f"{shown(rows.path)}: case {int(rows.cases[v_row[v]])}: {at} {why}")


def _versions(rows: StreamRows) -> dict:
    """The initial entries and the records as one list of tile entries (indices: initial
    first, record r at len(initial) + r)."""
    cache = rows.__dict__.get("_versions")
    if cache is None:
        cache = {k: pa.concat_arrays([_plain(rows.initial[k]), _plain(rows.records[k])]) for k in TILE_FIELDS}
        rows.__dict__["_versions"] = cache
    return cache


def _plain(a: pa.Array) -> pa.Array:
    return a.cast(pa.binary()) if pa.types.is_large_binary(a.type) else a
