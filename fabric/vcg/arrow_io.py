"""Arrow flit files (docs/vcg.md "Arrow schemas"): zero-copy views in, zero-copy arrays out.

Input  (one row per 8-way flit, [slice][time] order):
    flit        fixed_size_list<item: T>[8]   T in fold.SUPPORTED_DTYPES, no nulls (bfloat16, which
                                              Arrow lacks: uint16 bits, read with dtype="bfloat16")
    valid_size  uint8 (optional)              VCG tag; checked against the mapping when present
Output (one row per 4-way output flit, [slice][out_time] order):
    slice       uint32
    out_time    uint32
    flit        fixed_size_list<item: T>[4]
    valid_size  uint8                         1 when R was in Packet (lane 0), else 4
Schema metadata key b"tile-emu.vcg" holds JSON: mapping, reduce, op, narrow (and dtype).
Element type names are NumPy's: int8 ... uint64, float16, bfloat16, float32, float64.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from isa.atomicio import atomic_path, quote, shown, why

from .fold import BF16, SUPPORTED_DTYPES, raw_dtype

META_KEY = b"tile-emu.vcg"
INPUT_COLUMNS = ("flit", "valid_size")     # every column an input flit file may have


class FlitFileError(ValueError):
    """A flit file that cannot be read as the documented schema."""


def _np_dtype(t: pa.DataType) -> np.dtype:
    try:
        dt = np.dtype(t.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        dt = None
    if dt is None or dt not in SUPPORTED_DTYPES:
        raise FlitFileError(f"flit element type {type_text(t)} is not supported "
                            f"(use one of {', '.join(map(str, SUPPORTED_DTYPES))})")
    return dt


def primitive_view(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """Zero-copy NumPy view of a null-free primitive Arrow array (respects its offset)."""
    if arr.null_count:
        raise FlitFileError(f"{arr.null_count} null values; flits and counts must be non-null "
                            "(mask with valid_size, not Arrow nulls)")
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def flit_view(col, lanes: int = 8, dtype=None) -> np.ndarray:
    """[N, lanes] NumPy view of a fixed_size_list column; dtype reinterprets same-width bits."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not pa.types.is_fixed_size_list(col.type) or col.type.list_size != lanes:
        raise FlitFileError(f"column type {type_text(col.type)} is not fixed_size_list<_>[{lanes}]")
    if col.null_count:
        raise FlitFileError(f"{col.null_count} null flits; flits must be non-null")
    flat = col.flatten()
    view = primitive_view(flat, _np_dtype(flat.type)).reshape(-1, lanes)
    if dtype is not None:
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise FlitFileError(f"unknown element type {quote(dtype)}") from None
        if dt not in SUPPORTED_DTYPES or dt.itemsize != view.dtype.itemsize:
            raise FlitFileError(f"cannot reinterpret {view.dtype} flits as {dt}")
        view = view.view(dt)
    return view


def read_table(path) -> pa.Table:
    try:
        source = pa.memory_map(str(path), "r")
    except (OSError, FileNotFoundError) as e:
        raise FlitFileError(f"cannot open {shown(path)}: {why(e)}") from None
    try:
        try:
            reader = pa.ipc.open_file(source)
        except (pa.ArrowException, OSError):     # no file footer: perhaps an IPC stream
            source.seek(0)
            reader = pa.ipc.open_stream(source)
        table = reader.read_all()
        column_names(table)          # before validate(), which decodes the names too
        # IPC reads trust the file's lengths and offsets; check them before any view is taken.
        table.validate(full=True)
        return table
    except (pa.ArrowException, OSError) as e:
        raise FlitFileError(f"{shown(path)} is not a valid Arrow IPC file or stream: {why(e)}") from None
    except ValueError as e:          # from column_names
        raise FlitFileError(f"{shown(path)}: {e}") from None


def type_text(t: pa.DataType) -> str:
    """str(t) for a message; a nested field name that is not UTF-8 cannot be shown."""
    try:
        return str(t)
    except UnicodeDecodeError:
        return "(a type whose nested field name is not UTF-8)"


def column_names(table: pa.Table) -> list[str]:
    """The table's column names, each UTF-8 and none repeated; ValueError says which and why."""
    try:
        names = table.schema.names
    except UnicodeDecodeError as e:      # a ValueError too: say which kind
        raise ValueError(f"a column name is not UTF-8 text (byte {e.start} of a name)") from None
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"column {quote(n)} appears more than once")
        seen.add(n)
    return names


def read_flits(path, dtype=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(x8 [N, 8] view, valid_size [N] uint8 view or None) from an input flit file; every
    FlitFileError names the file."""
    table = read_table(path)
    try:
        return _flits(table, dtype)
    except FlitFileError as e:
        raise FlitFileError(f"{shown(path)}: {e}") from None


def _flits(table: pa.Table, dtype) -> tuple[np.ndarray, np.ndarray | None]:
    names = table.schema.names       # read_table checked them
    if "flit" not in names:
        raise FlitFileError(f"no 'flit' column (columns: {shown(', '.join(names)) or 'none'})")
    # An unknown column is refused, not ignored: a misspelt `valid_sise` would otherwise turn
    # a tagged file into an untagged one without a word.
    unknown = [n for n in names if n not in INPUT_COLUMNS]
    if unknown:
        raise FlitFileError(f"unknown column(s) {quote(', '.join(unknown))}; an input "
                            f"flit file has only {' and '.join(INPUT_COLUMNS)}")
    x8 = flit_view(table.column("flit"), 8, dtype)
    valid = None
    if "valid_size" in names:
        col = table.column("valid_size")
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if col.type != pa.uint8():
            raise FlitFileError(f"valid_size column has type {type_text(col.type)}, expected uint8")
        valid = primitive_view(col, np.dtype(np.uint8))
        if valid.size and int(valid.max()) > 8:
            row = int(np.flatnonzero(valid > 8)[0])
            raise FlitFileError(f"valid_size {int(valid[row])} > 8 at row {row}")
    return x8, valid


def flit_array(x: np.ndarray) -> pa.FixedSizeListArray:
    """[N, L] NumPy -> fixed_size_list<T>[L], sharing the NumPy buffer when contiguous; bfloat16
    (no Arrow type) as its uint16 bits."""
    x = np.ascontiguousarray(x)
    if x.dtype == BF16:
        x = x.view(raw_dtype(x.dtype))
    return pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[-1])


def input_table(x8: np.ndarray, valid: np.ndarray | None = None, meta: dict | None = None) -> pa.Table:
    cols = {"flit": flit_array(x8.reshape(-1, 8))}
    if valid is not None:
        cols["valid_size"] = pa.array(np.ascontiguousarray(valid.reshape(-1), dtype=np.uint8))
    return _with_meta(pa.table(cols), meta)


def output_table(out: np.ndarray, out_valid: np.ndarray, meta: dict | None = None) -> pa.Table:
    s, o = out.shape[:2]
    return _with_meta(pa.table({
        "slice": pa.array(np.repeat(np.arange(s, dtype=np.uint32), o)),
        "out_time": pa.array(np.tile(np.arange(o, dtype=np.uint32), s)),
        "flit": flit_array(out.reshape(-1, 4)),
        "valid_size": pa.array(np.ascontiguousarray(out_valid.reshape(-1), dtype=np.uint8)),
    }), meta)


def _with_meta(table: pa.Table, meta: dict | None) -> pa.Table:
    if not meta:
        return table
    return table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode()})


def write_table(path, table: pa.Table) -> None:
    """Write `table` as an Arrow IPC file, atomically (isa.atomicio); an IPC file's footer
    needs a regular file, so a device path is an OutputPathError."""
    with atomic_path(path, devices=False) as tmp, pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def to_device(x: np.ndarray):
    """NumPy view -> CuPy array: the one host-to-device copy (Arrow host buffers cannot be
    aliased by the GPU)."""
    import cupy
    return cupy.asarray(x)
