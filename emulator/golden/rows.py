"""Golden rows <-> groups: the Arrow layout of docs/golden-format.md, built and read back
with array operations over whole groups (no per-element Python)."""
from __future__ import annotations

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


def _binary(chunks: list[np.ndarray]) -> pa.Array:
    """A binary array from per-entry byte blocks: chunks[s] is (n, k_s, B_s); entries are
    ordered case-major, then s, then k."""
    n = chunks[0].shape[0]
    sizes = np.concatenate([np.full(c.shape[1], c.shape[2], np.int64) for c in chunks])
    data = np.concatenate([c.reshape(n, -1) for c in chunks], axis=1).reshape(-1)
    per_case = np.tile(sizes, n)
    offsets = np.zeros(len(per_case) + 1, np.int64)
    np.cumsum(per_case, out=offsets[1:])
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(per_case),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(pa.binary())


def _tiles_array(n: int, descs: list[tuple[Descriptor, int, tuple[int, ...]]], payloads, defineds,
                 status: np.ndarray | None = None, present: np.ndarray | None = None) -> pa.Array:
    """list<tile struct> with the same k entries per case (or none where `present` is False).
    The descriptor fields are one case's k entries built once and repeated by a take (no
    per-case Python objects); payloads, definedness and status are per case."""
    k = sum(len(pes) for _, _, pes in descs)
    entries = [(pe, tid, x) for x, tid, pes in descs for pe in pes]
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
        **_fmap_fields(descs),
    }
    index = pa.array(np.tile(np.arange(k, dtype=np.int64), n))
    fields = {name: arr.take(index) for name, arr in one.items()}
    fields["payload"] = _binary(payloads) if k else pa.array([], pa.binary())
    fields["defined"] = _binary(defineds) if k else pa.array([], pa.binary())
    typ = TILE
    if status is not None:
        fields["status"] = pa.array(status.reshape(-1), pa.uint8())
        typ = OUT_TILE
    flat = pa.StructArray.from_arrays([fields[f.name] for f in typ], fields=list(typ))
    counts = np.full(n, k, np.int64) if present is None else np.where(present, k, 0)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    if present is not None and not present.all():     # drop the entries of absent cases
        keep = np.repeat(present, k)
        flat = flat.filter(pa.array(keep))
    return pa.ListArray.from_arrays(pa.array(offsets), flat)


def _fmap_fields(descs: list[tuple[Descriptor, int, tuple[int, ...]]]) -> dict:
    """The fmap_* fields of one case's tile entries (the descriptors are per group)."""
    fms = [d.fmap for d, _, pes in descs for _ in pes]
    return {
        "fmap_layout": pa.array(["" if f is None else f.layout for f in fms], pa.string()),
        "fmap_params": pa.array([[] if f is None else list(f.params()) for f in fms], pa.list_(pa.int64())),
        "fmap_pad_bits": pa.array([0 if f is None else f.pad_bits for f in fms], pa.uint64()),
        "fmap_transposed": pa.array([False if f is None else f.transposed for f in fms], pa.bool_()),
    }


def gprs_array(gprs: np.ndarray | None, n: int) -> pa.Array:
    """list<struct<pe, index, value>> of every nonzero GPR of each case (none: an empty list)."""
    if gprs is None:
        return pa.array([[]] * n, pa.list_(GPR))
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
    """n copies of one value (numpy would strip a bytes value's trailing NUL bytes)."""
    return pa.array([value], typ).take(pa.array(np.zeros(n, np.int64)))


def _strings(values: np.ndarray, empty: np.ndarray) -> pa.Array:
    """A string column of per-case values that are "" wherever `empty` (the committed cases):
    converted only where a case rejected, the rest repeated."""
    if empty.all():
        return _repeat("", len(values), pa.string())
    return pa.array(values, pa.string())


def pe_mask_of(block) -> int:
    """The row's pe_mask: the destination binding's PE_MASK (0 for a block without bindings)."""
    return (block.iot[-1].PE_MASK & 0xFF) if block.iot else 0


def case_columns(g: Group, out: Outcome) -> dict[str, pa.Array]:
    """Every column of the group's rows but case, class and group: what a replay recomputes."""
    n = g.n
    data, text = stream_of(g.block)
    ins = _tiles_array(
        n, [(t.desc, t.tile, t.pes) for t in g.tiles],
        [pack_rows(t.elems, t.desc.container) for t in g.tiles],
        [np.packbits(t.defined, axis=-1, bitorder="little") for t in g.tiles])
    if out.dest is not None:
        dest_id = g.block.iot[-1].tile
        st = out.status[:, list(out.pes)]
        outs = _tiles_array(n, [(out.dest, dest_id, out.pes)], [pack_rows(out.elems, out.dest.container)],
                            [np.packbits(out.defined, axis=-1, bitorder="little")], status=st,
                            present=out.committed)
    else:
        outs = pa.array([[]] * n, pa.list_(OUT_TILE))
    return {
        "stream": _repeat(data, n, pa.binary()),
        "asm": _repeat(text, n, pa.string()),
        "local_bytes": pa.array(np.full(n, g.config.local_bytes, np.uint32)),
        "matrix_bytes": pa.array(np.full(n, g.config.matrix_bytes, np.uint32)),
        "pe_mask": pa.array(np.full(n, pe_mask_of(g.block), np.uint8)),
        "gprs": gprs_array(g.gprs, n),
        "inputs": ins,
        "outcome": pa.array(["reject", "commit"], pa.string()).take(pa.array(out.committed.astype(np.int8))),
        "reason": _strings(out.reason, out.committed),
        "field": _strings(out.field, out.committed),
        "message": _strings(out.message, out.committed),
        "outputs": outs,
        "status": pa.FixedSizeListArray.from_arrays(pa.array(out.status.reshape(-1), pa.uint8()), 4),
    }


def group_table(g: Group, out: Outcome, first_case: int, group_index: int) -> pa.Table:
    n = g.n
    cols = {
        "case": pa.array(np.arange(first_case, first_case + n, dtype=np.uint64)),
        "class": _repeat(g.cls.name, n, pa.string()),
        "group": pa.array(np.full(n, group_index, np.uint32)),
        **case_columns(g, out),
    }
    return pa.Table.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)


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
    v = {name: fields[name][i].as_py() for name in fields if name not in ("payload", "defined", "status")}
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
