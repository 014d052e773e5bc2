"""Golden rows <-> groups: the Arrow layout of docs/golden-format.md, built and read back
with array operations over whole groups (no per-element Python)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from isa.datatypes import datatype

from ..stateio import SCHEMA as STATE_SCHEMA
from ..tiles import Descriptor, FeatureMap
from ..tiles import pack_payloads as pack_rows, unpack_payloads as unpack_rows  # noqa: F401  (tile-store images)
from .cases import Group, Outcome, stream_of

# A golden tile entry is a state-file tile row (docs/state-format.md, feature map included) under
# the golden names, without the representation (golden tiles are standard).
_GOLDEN_NAMES = {"datatype": "dtype", "row": "Row", "col": "Col", "valid_row": "ValidRow",
                 "valid_col": "ValidCol", "layout": "Layout"}
DESC_FIELDS = [(_GOLDEN_NAMES.get(f.name, f.name), f.type) for f in STATE_SCHEMA if f.name != "representation"]
TILE = pa.struct(DESC_FIELDS)
OUT_TILE = pa.struct(DESC_FIELDS + [("status", pa.uint8())])
GPR = pa.struct([("pe", pa.uint8()), ("index", pa.uint8()), ("value", pa.uint64())])

SCHEMA = pa.schema([
    ("case", pa.uint64()),
    ("class", pa.string()),
    ("group", pa.uint32()),
    ("stream", pa.binary()),
    ("asm", pa.string()),
    ("local_bytes", pa.uint32()),
    ("matrix_bytes", pa.uint32()),
    ("pe_mask", pa.uint8()),
    ("gprs", pa.list_(GPR)),
    ("inputs", pa.list_(TILE)),
    ("outcome", pa.string()),
    ("reason", pa.string()),
    ("field", pa.string()),
    ("message", pa.string()),
    ("outputs", pa.list_(OUT_TILE)),
    ("status", pa.list_(pa.uint8(), 4)),
])


def _binary(groups: list[tuple[int, list[np.ndarray]]]) -> pa.Array:
    """A binary array from per-entry byte blocks of several groups, in order: for each group
    (n, chunks), chunks[s] is (n, k_s, B_s); a group's entries are ordered case-major, then
    s, then k."""
    pieces, data, ones = [], [], []     # ones: sizes of one-case groups not yet made an array
    for n, chunks in groups:
        if n == 1:      # one case (a small file's usual group): its chunks in order, no NumPy call a group
            for c in chunks:
                ones += [c.shape[2]] * c.shape[1]
                data.append(c.reshape(-1))
            continue
        if not chunks:
            continue
        if ones:
            pieces.append(np.array(ones, np.int64))
            ones = []
        one = np.concatenate([np.full(c.shape[1], c.shape[2], np.int64) for c in chunks])
        pieces.append(np.tile(one, n))
        data.append(np.concatenate([c.reshape(n, -1) for c in chunks], axis=1).reshape(-1))
    if ones:
        pieces.append(np.array(ones, np.int64))
    per_case = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
    offsets = np.zeros(len(per_case) + 1, np.int64)
    np.cumsum(per_case, out=offsets[1:])
    flat = np.concatenate(data) if data else np.zeros(0, np.uint8)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(per_case),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(flat)]).cast(pa.binary())


def repeat_runs(values: list, counts, typ: pa.DataType = pa.string()) -> pa.Array:
    """A string or binary column of values[i] repeated counts[i] times, in order (each
    group's one value on its rows): the bytes repeated per run, the offsets from the sizes
    (single-block rows here, stream rows in streams_dataset)."""
    raw = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
    counts = np.asarray(counts, np.int64)
    sizes = np.repeat(np.array([len(v) for v in raw], np.int64), counts)
    if int(sizes.sum()) >= 2 ** 31:                     # beyond int32 offsets: Arrow's own take
        return pa.array(raw, typ).take(pa.array(np.repeat(np.arange(len(raw)), counts)))
    data = b"".join(v * int(c) for v, c in zip(raw, counts))
    return pa.Array.from_buffers(typ, len(sizes), [None, pa.py_buffer(_offsets(sizes, np.int32)), pa.py_buffer(data)])


def _offsets(sizes: np.ndarray, dtype) -> np.ndarray:
    """Arrow offsets (0, then the running sums) of entry sizes: summed in int64 and converted,
    which is twice as fast as np.cumsum into an int32 `out`."""
    offsets = np.empty(len(sizes) + 1, dtype)
    offsets[0] = 0
    offsets[1:] = np.cumsum(sizes, dtype=np.int64)
    return offsets


# Below this many entries Arrow's own take (or conversion) is cheaper than the NumPy builders'
# fixed cost of a few calls (a small file of one-case groups: the per-file cost, issue 32 target 6)
SMALL = 4096


def _take_values(values: list, index: np.ndarray, typ: pa.DataType = pa.string()) -> pa.Array:
    """values[index] as a string or binary column (what pa.array(values, typ).take(index)
    gives), gathered in NumPy: the values' bytes padded into one row each, the rows taken,
    the padding dropped.  Arrow's take of strings costs about 15 ns an entry; this about 2."""
    if len(index) < SMALL:
        return pa.array(values, typ).take(pa.array(index, pa.int64()))
    if len(set(values)) == 1:                           # one value (the usual case)
        return _repeat(values[0], len(index), typ)
    raw = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
    lens = np.array([len(v) for v in raw], np.int64)
    width = int(lens.max()) if len(raw) else 0
    table = np.zeros((len(raw), max(width, 1)), np.uint8)
    for i, v in enumerate(raw):                         # a few distinct values, not per row
        table[i, :len(v)] = np.frombuffer(v, np.uint8)
    index = np.asarray(index, np.int64)
    per = lens[index]
    total = int(per.sum())
    if total >= 2 ** 31:                                # beyond int32 offsets: Arrow's own take
        return pa.array(raw, typ).take(pa.array(index))
    offsets = _offsets(per, np.int32)
    rows = np.take(table[:, :width], index, axis=0)     # (np.take: 4x fancy indexing's speed)
    data = rows.reshape(-1) if np.all(lens == width) else rows[np.arange(width) < per[:, None]]
    return pa.Array.from_buffers(typ, len(index), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def pack_defined(defined: np.ndarray) -> np.ndarray:
    """Definedness bits packed little-endian along the last axis (np.packbits(..., axis=-1,
    bitorder="little")).  Rows of whole bytes are packed as one flat run: the same bytes, but
    packbits along a short last axis costs about 100 us a group (a per-row loop)."""
    if defined.shape[-1] % 8 == 0:
        flat = np.packbits(np.ascontiguousarray(defined).reshape(-1), bitorder="little")
        return flat.reshape(defined.shape[:-1] + (defined.shape[-1] // 8,))
    return np.packbits(defined, axis=-1, bitorder="little")


@dataclass
class _TileList:
    """One group's list<tile> cells: the same k entries (descriptors `descs`) per case, or none
    where `present` is False; payloads, definedness and (outputs) status per case."""
    n: int
    descs: list[tuple[Descriptor, int, tuple[int, ...]]]
    payloads: list[np.ndarray]
    defineds: list[np.ndarray]
    status: np.ndarray | None = None
    present: np.ndarray | None = None


def _tiles_array(groups: list[_TileList], typ: pa.DataType = TILE) -> pa.Array:
    """list<tile struct> of the cells of several groups, in order (typ OUT_TILE: with status).
    The descriptor fields are each group's one-case entries, built once and repeated by one
    take for all the groups (no per-case Python objects); payloads, definedness and status
    are per case."""
    entries, ks = [], []
    for g in groups:
        one = [(pe, tid, x) for x, tid, pes in g.descs for pe in pes]
        ks.append(len(one))
        entries += one
    # group i's cases each take its k_i entries base_i .. base_i + k_i - 1 (all groups at once)
    ks = np.array(ks, np.int64)
    ns = np.array([g.n for g in groups], np.int64)
    sizes = ns * ks
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    index = np.repeat(np.cumsum(ks) - ks, sizes) + within % np.maximum(np.repeat(ks, sizes), 1)
    present = np.concatenate([np.ones(g.n, bool) if g.present is None else np.asarray(g.present, bool)
                              for g in groups]) if groups else np.zeros(0, bool)
    per_case = np.repeat(ks, ns)
    counts = np.where(present, per_case, 0)
    keep = np.repeat(present, per_case)
    fms = [x.fmap for _, _, x in entries]
    one = {
        "pe": pa.array([pe for pe, _, _ in entries], pa.uint8()),
        "tile": pa.array([tid for _, tid, _ in entries], pa.uint32()),
        "location": pa.array([x.location for _, _, x in entries], pa.string()),
        "kind": pa.array([x.kind for _, _, x in entries], pa.string()),
        "dtype": pa.array(["" if x.dtype is None else x.datatype.name for _, _, x in entries], pa.string()),
        "Row": pa.array([x.Row for _, _, x in entries], pa.uint32()),
        "Col": pa.array([x.Col for _, _, x in entries], pa.uint32()),
        "ValidRow": pa.array([x.ValidRow for _, _, x in entries], pa.uint32()),
        "ValidCol": pa.array([x.ValidCol for _, _, x in entries], pa.uint32()),
        "Layout": pa.array([x.Layout for _, _, x in entries], pa.uint8()),
        "capacity": pa.array([x.capacity for _, _, x in entries], pa.uint64()),
        "fmap_layout": pa.array(["" if f is None else f.layout for f in fms], pa.string()),
        "fmap_params": pa.array([[] if f is None else list(f.params()) for f in fms], pa.list_(pa.int64())),
        "fmap_pad_bits": pa.array([0 if f is None else f.pad_bits for f in fms], pa.uint64()),
        "fmap_transposed": pa.array([False if f is None else f.transposed for f in fms], pa.bool_()),
    }
    take, fmap = pa.array(index), any(f is not None for f in fms)
    if len(index) < SMALL:
        # a small file: the descriptor fields repeated by one take of them as a struct (one
        # compute call, not one a field: a small file's two list<tile> columns paid about 30)
        fields = dict(zip(one, pa.StructArray.from_arrays(list(one.values()), names=list(one)).take(take).flatten()))
    else:
        fields = {name: _take_column(arr, index, take) for name, arr in one.items() if name != "fmap_params"}
        if fmap:
            fields["fmap_params"] = one["fmap_params"].take(take)
    if not fmap:                               # no feature map (every op but TIMG2COL): each entry's
        fields["fmap_params"] = _empty_lists(len(index), pa.int64())       # empty list, from offsets alone
    fields["payload"] = _binary([(g.n, g.payloads) for g in groups])
    fields["defined"] = _binary([(g.n, g.defineds) for g in groups])
    if typ == OUT_TILE:
        fields["status"] = pa.array(np.concatenate([np.zeros(0, np.uint8)] + [
            g.status.reshape(-1) for g in groups if g.status is not None]).astype(np.uint8), pa.uint8())
    flat = pa.StructArray.from_arrays([fields[f.name] for f in typ], fields=list(typ))
    offsets = _offsets(counts, np.int32)
    if not keep.all():                                # drop the entries of absent cases
        flat = flat.filter(pa.array(keep))
    return pa.ListArray.from_arrays(pa.array(offsets), flat)


def _take_column(arr: pa.Array, index: np.ndarray, take: pa.Array) -> pa.Array:
    """arr.take(index) of a few per-entry descriptor values: strings gathered in NumPy, one
    repeated value without a take, other columns by Arrow's take."""
    if len(index) < SMALL:
        return arr.take(take)
    if arr.type == pa.string():
        return _take_values(arr.to_pylist(), index)
    if len(arr) and len(set(arr.to_pylist())) == 1:
        return _repeat(arr[0].as_py(), len(index), arr.type)
    return arr.take(take)


def _empty_lists(n: int, item: pa.DataType) -> pa.Array:
    """n empty list<item> entries (what pa.array([[]] * n) gives, built from offsets alone)."""
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], item))


def gprs_array(gprs: np.ndarray | None, n: int) -> pa.Array:
    """list<struct<pe, index, value>> of every nonzero GPR of each case (none: an empty list)."""
    if gprs is None:                    # n empty lists: zero offsets, no Python list a case
        return _empty_lists(n, GPR)
    case, pe, index = np.nonzero(gprs)
    flat = pa.StructArray.from_arrays(
        [pa.array(pe.astype(np.uint8)), pa.array(index.astype(np.uint8)), pa.array(gprs[case, pe, index])],
        fields=list(GPR))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(case, minlength=n), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), flat)


def gprs_of(col, n: int) -> np.ndarray | None:
    """(n, 4, 32) uint64 GPRs from a gprs column (None when every list is empty)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    offsets = col.offsets.to_numpy()
    if offsets[-1] == offsets[0]:
        return None
    flat = col.values.slice(offsets[0], offsets[-1] - offsets[0])
    case = np.repeat(np.arange(n), np.diff(offsets))
    g = np.zeros((n, 4, 32), np.uint64)
    pe = flat.field("pe").to_numpy().astype(np.int64)
    index = flat.field("index").to_numpy().astype(np.int64)
    if pe.size and (pe.max() >= 4 or index.max() >= 32):
        raise ValueError("a GPR entry names a PE or register out of range")
    g[case, pe, index] = flat.field("value").to_numpy()
    return g


def _repeat(value, n: int, typ) -> pa.Array:
    """n copies of one value: a string or binary value's bytes repeated under evenly spaced
    offsets (numpy would strip a bytes value's trailing NUL bytes), any other by pa.repeat --
    a few times cheaper than taking one value n times."""
    if typ in (pa.string(), pa.binary()):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        if len(raw) * n < 2 ** 31:
            offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
            return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(raw * n)])
    return pa.repeat(pa.scalar(value, typ), n)


def _strings(values: np.ndarray, empty: np.ndarray) -> pa.Array:
    """A string column of per-case values that are "" wherever `empty` (the committed cases):
    only the rejected cases' values are converted, their bytes used as they are and the
    empty entries spliced in through the offsets (no Python object a committed case)."""
    if empty.all():                     # every case committed: n empty strings
        return _repeat("", len(values), pa.string())
    if len(values) < SMALL:
        return pa.array(values, pa.string())
    rejected = ~np.asarray(empty, bool)
    sub = pa.array(values[rejected], pa.string())
    if sub.null_count:                  # not a golden outcome; keep Arrow's own conversion
        return pa.array(values, pa.string())
    sizes = np.zeros(len(values), np.int64)
    sizes[rejected] = np.diff(np.frombuffer(sub.buffers()[1], np.int32)[: len(sub) + 1])
    data = sub.buffers()[2] or pa.py_buffer(b"")
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(_offsets(sizes, np.int32)), data])


def pe_mask_of(block) -> int:
    """The row's pe_mask: the destination binding's PE_MASK (0 for a block without bindings)."""
    return (block.iot[-1].PE_MASK & 0xFF) if block.iot else 0


def case_columns(g: Group, out: Outcome) -> dict[str, pa.Array]:
    """Every column of the group's rows but case, class and group: what a replay recomputes."""
    return groups_columns([(g, out)])


def groups_columns(pairs: list[tuple[Group, Outcome]]) -> dict[str, pa.Array]:
    """case_columns of several groups, their rows in order, as one array per column: each
    column is built once for all the groups from per-group NumPy pieces, so a file of many
    small groups costs about what one group of as many rows does."""
    ns = np.array([g.n for g, _ in pairs], np.int64)
    texts = [stream_of(g.block) for g, _ in pairs]
    ins = _tiles_array([_TileList(g.n, [(t.desc, t.tile, t.pes) for t in g.tiles],
                                  [pack_rows(t.elems, t.desc.container) for t in g.tiles],
                                  [pack_defined(t.defined) for t in g.tiles])
                        for g, _ in pairs])
    outs = []
    for g, out in pairs:
        if out.dest is None:                          # no case committed: every list empty
            outs.append(_TileList(g.n, [], [], [], np.zeros(0, np.uint8), np.zeros(g.n, bool)))
            continue
        outs.append(_TileList(g.n, [(out.dest, g.block.iot[-1].tile, out.pes)],
                              [pack_rows(out.elems, out.dest.container)],
                              [pack_defined(out.defined)],
                              out.status[:, list(out.pes)], out.committed))
    committed = np.concatenate([out.committed for _, out in pairs])
    status = np.concatenate([out.status for _, out in pairs])
    gprs = None
    if any(g.gprs is not None for g, _ in pairs):
        gprs = np.concatenate([np.zeros((g.n, 4, 32), np.uint64) if g.gprs is None else g.gprs for g, _ in pairs])

    def per_group(values, typ) -> pa.Array:
        return pa.array(np.repeat(np.array(values), ns).astype(typ.to_pandas_dtype()), typ)

    def strings(name: str) -> pa.Array:
        return _strings(np.concatenate([getattr(out, name) for _, out in pairs]), committed)

    return {
        "stream": repeat_runs([data for data, _ in texts], ns, pa.binary()),
        "asm": repeat_runs([text for _, text in texts], ns),
        "local_bytes": per_group([g.config.local_bytes for g, _ in pairs], pa.uint32()),
        "matrix_bytes": per_group([g.config.matrix_bytes for g, _ in pairs], pa.uint32()),
        "pe_mask": per_group([pe_mask_of(g.block) for g, _ in pairs], pa.uint8()),
        "gprs": gprs_array(gprs, len(committed)),
        "inputs": ins,
        "outcome": _take_values(["reject", "commit"], committed.astype(np.int64)),
        "reason": strings("reason"),
        "field": strings("field"),
        "message": strings("message"),
        "outputs": _tiles_array(outs, OUT_TILE),
        "status": pa.FixedSizeListArray.from_arrays(pa.array(status.reshape(-1), pa.uint8()), 4),
    }


# A small file's rows go to the Parquet writer as one chunk (groups_table's one_chunk): its bytes equal those
# of the chunk per group layout, since the writer splits pages only at its write batches (1,024
# rows) once a column's page outgrows the data page size (1 MiB), and its dictionaries fall
# back to plain only past the dictionary page limit (1 MiB): below both bounds there is one
# page a column either way and nothing else depends on how the rows were chunked.  One chunk
# halves the writer's cost of a file of many one-case groups (issue 32 target 6).  The table
# itself keeps a chunk a group: the Arrow IPC export writes one record batch a chunk.
ONE_CHUNK_ROWS = 1024
ONE_CHUNK_BYTES = 256 << 10


def groups_table(items: list[tuple[Group, Outcome, int, int]], one_chunk: bool = False) -> pa.Table:
    """The rows of groups (group, outcome, first case, group index), in order: columns built
    once for all of them (groups_columns), laid out one Arrow chunk per group as
    concatenating each group's own table would (the Arrow export writes a record batch a
    chunk); with `one_chunk`, a small file as one chunk (for the Parquet writer: the same bytes)."""
    ns = np.array([g.n for g, *_ in items], np.int64)
    starts = np.cumsum(ns) - ns                      # each group's first row
    cols = {
        "case": pa.array((np.repeat(np.array([first for *_, first, _ in items], np.int64) - starts, ns)
                          + np.arange(int(ns.sum()), dtype=np.int64)).astype(np.uint64)),
        "class": repeat_runs([g.cls.name for g, *_ in items], ns),
        "group": pa.array(np.repeat(np.array([gi for *_, gi in items], np.uint32), ns)),
        **groups_columns([(g, out) for g, out, _, _ in items]),
    }
    whole = pa.RecordBatch.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)
    if one_chunk and len(whole) <= ONE_CHUNK_ROWS and whole.nbytes <= ONE_CHUNK_BYTES:
        return pa.Table.from_batches([whole], schema=SCHEMA)
    return pa.Table.from_batches([whole.slice(lo, n) for lo, n in zip(starts.tolist(), ns.tolist())], schema=SCHEMA)


# ---------------------------------------------------------------------------- reading back

def tiles_of(col: pa.ListArray):
    """(counts per row, dict of flat numpy/Arrow field arrays) of a list<tile> column."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    offsets = col.offsets.to_numpy()
    flat = col.values.slice(offsets[0], offsets[-1] - offsets[0]) if len(col) else col.values
    fields = {f.name: flat.field(f.name) for f in flat.type}
    return np.diff(offsets), fields


def binary_block(arr: pa.Array, n: int, k: int) -> np.ndarray | None:
    """(n, k, B) bytes of a binary column whose entries all have one size B (else None)."""
    arr = arr.cast(pa.large_binary())
    offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset: arr.offset + len(arr) + 1]
    sizes = np.diff(offs)
    if len(sizes) == 0 or not np.all(sizes == sizes[0]):
        return None if len(sizes) else np.zeros((n, k, 0), np.uint8)
    data = np.frombuffer(arr.buffers()[2], np.uint8)[offs[0]: offs[-1]]
    return data.reshape(n, k, int(sizes[0]))


def descriptor_at(fields: dict, i: int) -> tuple[int, int, Descriptor]:
    """(pe, tile, Descriptor) of entry i: one entry, read once per group."""
    return descriptor_of({name: fields[name][i].as_py() for name in fields
                          if name not in ("payload", "defined", "status")})


def descriptor_of(v: dict) -> tuple[int, int, Descriptor]:
    """descriptor_at of an entry's fields given as Python values."""
    dt = v["dtype"]
    desc = Descriptor(v["location"], v["kind"], None if dt == "" else datatype(dt).code, v["Row"], v["Col"],
                      v["ValidRow"], v["ValidCol"], v["Layout"], "standard", v["capacity"], _fmap(v))
    return v["pe"], v["tile"], desc


def _fmap(v: dict) -> FeatureMap | None:
    """The entry's feature-map descriptor (None without one); ValueError when malformed."""
    if not v.get("fmap_layout"):
        if v.get("fmap_params") or v.get("fmap_pad_bits") or v.get("fmap_transposed"):
            raise ValueError("fmap_params, fmap_pad_bits or fmap_transposed set without fmap_layout")
        return None
    params = v.get("fmap_params") or []
    if len(params) != len(FeatureMap.PARAMS):
        raise ValueError(f"fmap_params holds {len(params)} values; expected {len(FeatureMap.PARAMS)} "
                         f"({', '.join(FeatureMap.PARAMS)})")
    return FeatureMap(v["fmap_layout"], *params, pad_bits=v.get("fmap_pad_bits") or 0,
                      transposed=bool(v.get("fmap_transposed")))
