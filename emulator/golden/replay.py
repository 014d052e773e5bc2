"""Replay: rebuild each group of a golden file, run it again, compare every field.

`tile-emu verify DIR` opens the dataset through `dataset.open_dataset`, which checks the
manifest, the folder, the checksums and every row field that needs no replay, then replays
every row through the chosen backend under the dataset's numeric profile and compares every
other column with what the replay computes (`rows.case_columns`).  Rows are replayed a group
at a time (the `group` column); a group whose rows do not share one block and one set of
descriptors (a hand-edited file) is replayed one row at a time instead, so the check never
trusts them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa import encoding
from isa.atomicio import shown
from isa.errors import DecodeError

from ..tiles import element_dtype
from .cases import REFERENCE_CASES, Group, TileSpec, execute, execute_all, rejected_on_reference
from .dataset import GROUP_CASES, Dataset, GoldenError, open_dataset
from .rows import SCHEMA, binary_block, case_columns, descriptor_at, descriptor_of, gprs_of, groups_columns, tiles_of, unpack_rows

# Columns the dataset check covers without a replay (case numbers, class labels) or that only
# say how the generator batched the rows (group): every other column is recomputed.
NOT_REPLAYED = ("case", "class", "group")
PER_FIELD = 3        # mismatches shown per column per group


@dataclass
class Mismatch:
    file: str
    case: int
    field: str
    expected: str
    got: str
    entry: int | None = None      # the list entry (a tile of inputs/outputs, a GPR) the field is in

    def __str__(self) -> str:
        at = "" if self.entry is None else f" (entry {self.entry})"
        return f"{self.file}: case {self.case}: {self.field}{at}: expected {self.expected}, got {self.got}"


def _runs(groups: np.ndarray) -> list[tuple[int, int]]:
    cuts = np.flatnonzero(np.diff(groups.astype(np.int64))) + 1
    edges = np.concatenate([[0], cuts, [len(groups)]])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _uniform(t: pa.Table, name: str) -> bool:
    col = t.column(name)
    return len(t) == 0 or pc.all(pc.equal(col, col[0])).as_py()


def _entries(arr: pa.Array, n: int, k: int, sl: slice, first: int = 0) -> np.ndarray | None:
    """(n, entries of `sl`, B) bytes of list entries sl of every row (k entries per row, the
    first row's at index `first` of arr), or None when their sizes differ."""
    idx = (first + np.arange(n)[:, None] * k + np.arange(sl.start, sl.stop)[None, :]).reshape(-1)
    return binary_block(arr.take(pa.array(idx)), n, sl.stop - sl.start)


def shared_blocks(t: pa.Table, path: str) -> list | None:
    """The decoded blocks of rows t's one stream, or None when the rows differ in stream or
    store sizes (they do not replay together); GoldenError when the stream does not decode.
    (The stream goldens' rebuild starts the same way.)"""
    for name in ("stream", "local_bytes", "matrix_bytes"):
        if not _uniform(t, name):
            return None
    try:
        return encoding.decode(t.column("stream")[0].as_py())
    except DecodeError as exc:
        raise GoldenError(f"{shown(path)}: case {t.column('case')[0].as_py()}: stream does not decode "
                          f"({shown(str(exc), 120)})") from None


def rebuild_group(t: pa.Table, ds: Dataset, path: str, inputs=None) -> Group | None:
    """The group of rows t (of data file `path`) on the dataset's machine (store sizes of the
    rows, the dataset's numeric profile), or None when they do not share a block and
    descriptors.  GoldenError for a row no machine could hold (malformed fields).  `inputs()`,
    where given, gives the rows' input TileSpecs (FileTiles.specs: the file's column read once)."""
    n = len(t)
    if n == 0:
        return None
    blocks = shared_blocks(t, path)
    if blocks is None or len(blocks) != 1:
        return None
    tiles = tile_specs(t, path, "inputs") if inputs is None else inputs()
    if tiles is None:
        return None
    try:
        config = ds.config(int(t.column("local_bytes")[0].as_py()), int(t.column("matrix_bytes")[0].as_py()))
    except ValueError as exc:
        raise GoldenError(f"{shown(path)}: case {t.column('case')[0].as_py()}: {shown(str(exc), 160)}") from None
    try:
        gprs = gprs_of(t.column("gprs"), n)
    except ValueError as exc:
        raise GoldenError(f"{shown(path)}: case {t.column('case')[0].as_py()}: {shown(str(exc), 160)}") from None
    if gprs is not None and np.any(gprs[:, :, 0]):
        return None                                   # r0 holds nothing: not a machine state
    return Group(None, None, None, blocks[0], config, tiles, gprs)


def rebuild_file(t: pa.Table, ds: Dataset, runs: list[tuple[int, int]], inputs: "FileTiles") -> list[Group] | None:
    """rebuild_group of every run lo..hi (hi > lo) of file table t, with what each group
    shares read once a file: the stream, store-size and GPR columns converted once, each
    distinct stream decoded once and each store-size pair's machine made once (a file of
    many one-row groups paid those a group).  None where rebuild_group gives None for any
    run (or raises: the caller's run-by-run replay says what and where); the groups
    otherwise, equal to rebuild_group's."""
    lo = np.array([a for a, _ in runs], np.int64)
    sizes = np.array([b - a for a, b in runs], np.int64)
    if len(runs) == 0 or np.any(sizes <= 0):
        return None
    first = np.repeat(lo, sizes)                   # each row's run's first row
    stream = t.column("stream").combine_chunks()
    uniques = pc.unique(stream)
    index = pc.index_in(stream, uniques).to_numpy()
    local = t.column("local_bytes").to_numpy()
    matrix = t.column("matrix_bytes").to_numpy()
    for col in (index, local, matrix):             # rebuild_group's shared_blocks: None unless uniform
        if np.any(col != col[first]):
            return None
    gcol = t.column("gprs").combine_chunks()
    goffs = gcol.offsets.to_numpy()
    gall = gprs_of(gcol, len(t))                   # ValueError as gprs_of of any run holding the entry
    if not np.all(inputs.alike(runs)):           # some run's rows differ in their tiles' descriptors
        return None
    blocks, configs, groups = {}, {}, []
    for (a, b) in runs:
        u = int(index[a])
        if u not in blocks:
            blocks[u] = encoding.decode(uniques[u].as_py())
        if len(blocks[u]) != 1:
            return None
        tiles = inputs.specs(a, b, alike=True)
        if tiles is None:
            return None
        key = (int(local[a]), int(matrix[a]))
        if key not in configs:
            configs[key] = ds.config(*key)
        gprs = None if gall is None or goffs[b] == goffs[a] else gall[a:b]
        if gprs is not None and np.any(gprs[:, :, 0]):
            return None                            # r0 holds nothing: not a machine state
        groups.append(Group(None, None, None, blocks[u][0], configs[key], tiles, gprs))
    return groups


class FileTiles:
    """A file's list<tile> column read once (verify's whole-file replay, `clean`): its entries'
    fields as NumPy arrays, so each group's TileSpecs slice them (`specs`) where tile_specs
    reads the group's rows back from Arrow -- about 1 ms a group, most of what a small
    partition's verify cost beyond its replay.  Same specs, same None cases as tile_specs."""

    def __init__(self, col):
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        self.offsets = col.offsets.to_numpy()
        values = col.values                     # entries addressed by absolute index (offsets)
        self.fields = {f.name: values.field(f.name) for f in values.type}
        self.arrays, self.bytes, self.entry = {}, {}, {}
        # the descriptor fields as Python values (descriptor_of), converted once
        self.values = {name: arr.to_pylist() for name, arr in self.fields.items()
                       if name not in ("payload", "defined", "status")}
        for name, arr in self.fields.items():
            if name in ("payload", "defined"):
                arr = arr.cast(pa.large_binary())
                offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset: arr.offset + len(arr) + 1]
                data = arr.buffers()[2]
                self.bytes[name] = (offs, np.frombuffer(data, np.uint8) if data is not None
                                    else np.zeros(0, np.uint8))
                continue
            if name == "fmap_params":             # a list per entry: compare its text
                arr = pa.array([str(x) for x in arr.to_pylist()], pa.string())
            self.arrays[name] = arr.to_numpy(zero_copy_only=False)

    def alike(self, runs: list[tuple[int, int]]) -> np.ndarray:
        """For each run of rows lo..hi-1 (hi > lo; the runs cover the column in order): do its
        rows hold as many entries as its first row, each entry with the descriptor fields of
        the entry at its place in that row (what specs needs, or gives None), asked of the
        whole column at once rather than with a few NumPy calls a run."""
        sizes = np.array([hi - lo for lo, hi in runs], np.int64)
        first = np.repeat(np.array([lo for lo, _ in runs], np.int64), sizes)    # each row's run's first row
        counts = np.diff(self.offsets[first[0]: first[0] + len(first) + 1]) if len(first) else np.zeros(0, np.int64)
        base = int(first[0]) if len(first) else 0
        ok = counts == counts[first - base]
        row = np.repeat(np.arange(len(counts)), counts)               # each entry's row (from base)
        entry = self.offsets[base] + np.arange(int(counts.sum()))     # its absolute index
        at = self.offsets[first[row]] + (entry - self.offsets[base + row])   # the first row's entry there
        if entry.size:
            at = np.minimum(at, entry[-1])    # past the first row's entries: that row's count differs already
            for col in self.arrays.values():
                ok &= np.bincount(row, weights=col[entry] != col[at], minlength=len(counts)) == 0
        return np.bincount(np.repeat(np.arange(len(runs)), sizes), weights=~ok, minlength=len(runs)) == 0

    def specs(self, lo: int, hi: int, alike: bool = False) -> list[TileSpec] | None:
        """tile_specs of rows lo..hi-1 (hi > lo); ValueError for a malformed entry.  `alike`:
        the run is known to pass alike (rebuild_file asked it of all runs at once)."""
        n = hi - lo
        if not alike and not self.alike([(lo, hi)])[0]:
            return None
        k, a = int(self.offsets[lo + 1] - self.offsets[lo]), int(self.offsets[lo])
        entries = [self._entry(a + j) for j in range(k)]
        return _specs(entries, lambda name, sl: self._entries(name, n, k, sl, a), n, k)

    def _entry(self, i: int) -> tuple:
        """descriptor_of entry i, made once a distinct entry of the file (a small file's groups
        repeat a few): ValueError for a malformed one, made afresh each time it is asked."""
        key = tuple(tuple(vals[i]) if isinstance(vals[i], list) else vals[i] for vals in self.values.values())
        got = self.entry.get(key)
        if got is None:
            got = self.entry[key] = descriptor_of({name: vals[i] for name, vals in self.values.items()})
        return got

    def _entries(self, name: str, n: int, k: int, sl: slice, first: int) -> np.ndarray | None:
        """replay._entries (binary_block of the entries taken) from the column read once."""
        offs, data = self.bytes[name]
        m = sl.stop - sl.start
        if n == 1 or m == k:    # entries first + sl.start.. in a row: a slice, no index arrays
            lo = first + sl.start
            bounds = offs[lo: lo + n * m + 1]
            b = int(bounds[1] - bounds[0]) if n * m else 0
            if n * m == 0 or not np.all(bounds[1:] - bounds[:-1] == b):
                return None if n * m else np.zeros((n, m, 0), np.uint8)
            return data[int(bounds[0]): int(bounds[0]) + n * m * b].reshape(n, m, b)
        idx = (first + np.arange(n)[:, None] * k + np.arange(sl.start, sl.stop)[None, :]).reshape(-1)
        starts = offs[idx]
        sizes = offs[idx + 1] - starts
        if len(sizes) == 0 or not np.all(sizes == sizes[0]):
            return None if len(sizes) else np.zeros((n, sl.stop - sl.start, 0), np.uint8)
        b = int(sizes[0])
        return data[starts[:, None] + np.arange(b)[None, :]].reshape(n, sl.stop - sl.start, b)


def tile_specs(t: pa.Table, path: str, column: str) -> list[TileSpec] | None:
    """The tiles of a list<tile> column (`inputs`; the stream goldens' `initial`) of rows t
    as TileSpecs, or None when the rows do not share the entries' descriptors (or sizes).
    GoldenError for a malformed entry (file `path`)."""
    n = len(t)
    counts, f = tiles_of(t.column(column))
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
        raise GoldenError(f"{shown(path)}: case {t.column('case')[0].as_py()}: {column}: "
                          f"{shown(str(exc), 160)}") from None
    return _specs(entries, lambda name, sl: _entries(f[name], n, k, sl), n, k)


def _specs(entries: list, entries_of, n: int, k: int) -> list[TileSpec] | None:
    """The TileSpecs of rows whose k entries are `entries` ((pe, tile, Descriptor) each);
    entries_of(field, slice) the (n, entries, B) bytes of payload or defined."""
    tiles, j = [], 0
    while j < k:
        pe0, tid, desc = entries[j]
        pes = [pe0]
        while j + len(pes) < k and entries[j + len(pes)][1:] == (tid, desc):
            pes.append(entries[j + len(pes)][0])
        sl = slice(j, j + len(pes))
        payload = entries_of("payload", sl)
        defined = entries_of("defined", sl)
        if payload is None or defined is None or payload.shape[2] != desc.payload_nbytes \
                or defined.shape[2] != (desc.elements + 7) // 8:
            return None
        elems = unpack_rows(payload, desc.elements, desc.container)
        tiles.append(TileSpec(tid, desc, tuple(pes), elems.astype(element_dtype(desc)),
                              unpack_rows(defined, desc.elements, 1).astype(bool)))
        j += len(pes)
    return tiles


def _compare(file: str, t: pa.Table, g: Group, backend: str) -> list[Mismatch]:
    """Replay the group and compare every column but NOT_REPLAYED with the rows it gives."""
    want = case_columns(g, execute(g, backend))
    cases = t.column("case").to_numpy()
    bad: list[Mismatch] = []
    for name in SCHEMA.names:
        if name in NOT_REPLAYED:
            continue
        found = _diff(name, t.column(name).combine_chunks(), want[name], np.arange(len(t)), None)
        bad += [Mismatch(file, int(cases[r]), field, stored, got, entry) for r, field, entry, stored, got in found]
    return bad


def _diff(name: str, stored: pa.Array, want: pa.Array, rows: np.ndarray, entry: np.ndarray | None) -> list:
    """(row, field, entry, stored, recomputed) for up to PER_FIELD differing values of each
    field of `stored` against `want` (same type and length); `rows` maps each element to its
    row, `entry` to its position in the row's outermost list (None above that list)."""
    typ = stored.type
    if pa.types.is_struct(typ):
        out = []
        for i, fld in enumerate(typ):
            out += _diff(f"{name}.{fld.name}", stored.field(i), want.field(i), rows, entry)
        return out
    if pa.types.is_list(typ):
        ls = pc.list_value_length(stored).to_numpy(zero_copy_only=False)
        lw = pc.list_value_length(want).to_numpy(zero_copy_only=False)
        differ = np.flatnonzero(ls != lw)
        out = [(int(rows[i]), name, None if entry is None else int(entry[i]),
                f"{int(ls[i])} entries", f"{int(lw[i])} entries") for i in differ[:PER_FIELD]]
        same = np.flatnonzero(ls == lw)
        if same.size == 0:
            return out
        keep = pa.array(same)
        counts = ls[same].astype(np.int64)
        child_rows = np.repeat(rows[same], counts)
        if entry is None:                     # the outermost list: number its entries
            child_entry = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        else:
            child_entry = np.repeat(entry[same], counts)
        return out + _diff(name, stored.take(keep).flatten(), want.take(keep).flatten(), child_rows, child_entry)
    if pa.types.is_fixed_size_list(typ):      # status: one vector per row, shown whole
        k = typ.list_size
        s = stored.flatten().to_numpy(zero_copy_only=False).reshape(-1, k)
        w = want.flatten().to_numpy(zero_copy_only=False).reshape(-1, k)
        differ = np.flatnonzero(np.any(s != w, axis=1))
        return [(int(rows[i]), name, None if entry is None else int(entry[i]), _show(s[i]), _show(w[i]))
                for i in differ[:PER_FIELD]]
    differ = np.flatnonzero(pc.not_equal(stored, want.cast(typ)).to_numpy(zero_copy_only=False))
    return [(int(rows[i]), name, None if entry is None else int(entry[i]),
             _show(stored[int(i)].as_py()), _show(want[int(i)].as_py())) for i in differ[:PER_FIELD]]


def _show(v) -> str:
    """A value for a mismatch line: bytes in hex, vectors as [a b c], text quoted, numbers plain."""
    if isinstance(v, np.ndarray):
        return "[" + " ".join(str(x.item()) for x in v.ravel()) + "]"
    if isinstance(v, bytes):
        return v.hex() or "(empty)"
    if isinstance(v, np.generic):
        v = v.item()
    return repr(v) if isinstance(v, str) else str(v)


def verify(dataset, backend: str = "cpu", progress=None, limit: int = 20) -> tuple[int, list[Mismatch]]:
    """(rows replayed, mismatches) for the whole dataset (a folder, or an opened Dataset)."""
    ds = dataset if isinstance(dataset, Dataset) else open_dataset(dataset)

    def check(path: str, run: pa.Table) -> list[Mismatch]:
        bad = []
        for one, g in units(run, ds, path):
            if g is None:
                bad.append(Mismatch(path, int(one.column("case")[0].as_py()), "inputs",
                                    "well-formed tiles", "a malformed row"))
            else:
                bad += _compare(path, one, g, backend)
        return bad

    def clean(path: str, t: pa.Table, runs: list[tuple[int, int]]) -> bool:
        """The whole file replayed at once: every group rebuilt and run, the rows they give
        built in one pass (rows.groups_columns) and equal, column by column, to the stored
        ones.  False on anything else (a group that does not rebuild, a fault, a difference):
        the run-by-run replay then says exactly what, and where, as it always has."""
        try:
            groups = rebuild_file(t, ds, runs, FileTiles(t.column("inputs")))
            if not groups:
                return False
            want = groups_columns(list(zip(groups, replay_groups(t, runs, groups, backend))))
            return all(t.column(name).combine_chunks().equals(want[name])
                       for name in SCHEMA.names if name not in NOT_REPLAYED)
        except Exception:           # noqa: BLE001  (re-raised, with its place, by the run-by-run replay)
            return False

    return replay_runs(((f.path, ds.read(f)) for f in ds.files), check, progress, limit, clean)


def replay_groups(t: pa.Table, runs: list[tuple[int, int]], groups: list[Group], backend: str) -> list:
    """The outcomes of a file's groups (rows runs[i] of t rebuilt as groups[i]): a group of at
    most REFERENCE_CASES rows stored as rejected tries the reference Machine first (the stored
    outcome only picks the path: what the reference gives is the batch engine's outcome, and a
    group it commits runs on the batch engine); the rest run as the generator ran them, groups
    of one block and shape as one batch."""
    rejected = pc.equal(t.column("outcome").combine_chunks(), "reject").to_numpy(zero_copy_only=False)
    outs = [rejected_on_reference(g) if hi - lo <= REFERENCE_CASES and rejected[lo:hi].all() else None
            for (lo, hi), g in zip(runs, groups)]
    todo = [i for i, o in enumerate(outs) if o is None]
    for i, o in zip(todo, execute_all([groups[i] for i in todo], backend, GROUP_CASES)):
        outs[i] = o
    return outs


def replay_runs(files, check, progress=None, limit: int = 20, clean=None) -> tuple[int, list]:
    """(rows replayed, mismatches) over the (path, table) pairs of `files`, one run of rows of
    the same group at a time (`check(path, run)` gives its mismatches): `progress(rows)` after
    each run, and a stop at `limit` mismatches.  (The stream goldens verify through it too.)
    `clean(path, table, runs)`, where given, may replay a file whole first: True when every
    row matches (no mismatch to report), so its runs need no replay one by one."""
    rows, bad = 0, []
    for path, t in files:
        runs = _runs(t.column("group").to_numpy())
        if clean is not None and clean(path, t, runs):
            rows += len(t)
            if progress:
                progress(len(t))
            continue
        for lo, hi in runs:
            if hi == lo:                  # an empty file's one run
                continue
            bad += check(path, t.slice(lo, hi - lo))
            rows += hi - lo
            if progress:
                progress(hi - lo)
            if len(bad) >= limit:
                return rows, bad[:limit]
    return rows, bad


def units(t: pa.Table, ds: Dataset, path: str):
    """(rows, Group) for what the replay runs at once: the rows of one group, or, where they do
    not rebuild together, each row alone -- Group None for a row no machine state can be
    rebuilt from (verify's mismatch 'a malformed row').  GoldenError for malformed fields."""
    g = rebuild_group(t, ds, path)
    if g is not None:
        yield t, g
        return
    for i in range(len(t)):
        one = t.slice(i, 1)
        yield one, rebuild_group(one, ds, path)


def require_well_formed(t: pa.Table, ds: Dataset, path: str) -> None:
    """What a consumer other than the replay (the hex export, verify --oracle) refuses in one
    line: a row verify would report as malformed, or whose fields raise there."""
    runs = _runs(t.column("group").to_numpy())
    try:                # every group rebuilt at once (rebuild_file): then none is malformed
        if len(t) and rebuild_file(t, ds, runs, FileTiles(t.column("inputs"))) is not None:
            return
    except Exception:   # noqa: BLE001  (said, with its place, by the group-by-group check below)
        pass
    for lo, hi in runs:
        for one, g in units(t.slice(lo, hi - lo), ds, path):
            if g is None:
                raise GoldenError(f"{shown(path)}: case {one.column('case')[0].as_py()}: a malformed row; "
                                  "run `tile-emu verify`")
