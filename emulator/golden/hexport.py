"""HDL export: `tile-emu golden export DIR --format hex --out H` (docs/golden-format.md, "Hex export").

Per partition of a golden dataset, `$readmemh`-readable files -- one element per line, as many
hex digits as the DataType's container has -- of every source role and of the expected
destination, each with a definedness file (`1`/`0` per element), the expected numeric status
and the encoded stream, plus `cases.txt`, one line per (case, selected PE) saying where that
lane's elements start in each file, the shapes, the outcome and per-file CRC-32 checksums of
the lane's lines; since format version 2 also `fields.txt` (per case the decoded block fields:
Mode, Function, DataType, PE_MASK, B.DATR, the PadValue in force, store sizes, outcome, reason
and field), `tiles.txt` (per lane and role the tile's location, kind, capacity, representation
and TIMG2COL descriptor), `roles.txt` (the src0/src1/src2/dst slot table) and `index.txt` (every
file's line count, for testbenches that cannot read JSON); `manifest.json` (written last) lists
every file with its line count and SHA-256.  `check(H)` (`tile-emu verify H`) finds a truncated or altered export and names the
file and the case.

Elements are gathered, unpacked and formatted with array operations over a whole Parquet
file; the only Python loops run per case and PE (the cases.txt lines and their checksums).
"""
from __future__ import annotations

import binascii
import hashlib
import json
import os
import pathlib
import re
import zlib

import numpy as np
import pyarrow as pa

from isa import encoding, instructions as I, jsontext
from isa.atomicio import atomic_open, quote, shown, why
from isa.datatypes import datatype
from isa.errors import DecodeError

from .dataset import MANIFEST, MAX_FILES, MAX_MANIFEST_BYTES, GoldenError, Params, check_listed, parse_manifest
from .dataset import open_dataset, open_regular, read_small, partitions as plan_partitions, sha256, write_json
from .export import hex_columns
from .replay import require_well_formed
from .rows import gprs_of, tiles_of

FORMAT = "tile-emu hex export"
FORMAT_VERSION = 2          # 2: fields.txt, tiles.txt, roles.txt, index.txt added (version 1's files unchanged)
CASES = "cases.txt"
FIELDS, TILE_INFO, ROLES, INDEX = "fields.txt", "tiles.txt", "roles.txt", "index.txt"
EXTRA_FILES = (FIELDS, TILE_INFO, ROLES, INDEX)
STATUS = "status.hex"
STREAM = "stream.hex"
ABSENT = "-"
PREDICATE = "PRED"
WORD_DIGITS = 16            # the stream as 64-bit little-endian words (docs/encoding.md)
# cases.txt: the lane's own columns, then per tile role, then one CRC-32 per file
LANE_COLUMNS = ("case", "pe", "outcome", "class", "reason", "r1", "r2", "stream_line", "stream_words")
ROLE_COLUMNS = ("line", "n", "row", "col", "vrow", "vcol", "layout", "dtype")


# decoded block fields per case (fields.txt) and per (lane, role) tile facts (tiles.txt): plain
# decimal codes a $fscanf reads (-1: the field is omitted), names last (docs/golden-format.md)
FIELD_COLUMNS = ("case", "mode", "function", "datatype", "pe_mask", "pad_field", "pad_value", "cmode", "sat",
                 "canonicalize", "dst_datatype", "rmode", "layout", "local_bytes", "matrix_bytes", "committed",
                 "reason_code", "mnemonic", "datatype_name", "pad_name", "reason", "field")
FMAP_COLUMNS = ("fmap_layout", "N", "D", "C1", "H", "W", "C0", "filterH", "filterW", "strideH", "strideW",
                "dilationH", "dilationW", "padLeft", "padRight", "padTop", "padBottom", "channels", "fmap_pad_bits",
                "fmap_transposed")
TILE_COLUMNS = ("case", "pe", "slot", "role", "present", "tile", "location", "kind", "capacity", "representation",
                *FMAP_COLUMNS)
ROLE_TABLE_COLUMNS = ("slot", "slot_name", "role", "file", "def_file", "bits")
SLOTS = ("src0", "src1", "src2", "dst")      # slot 3 is always the destination
DST_SLOT = 3
# code tables (docs/golden-format.md, "Codes")
LOCATION_CODES = {"Local": 0, "Matrix": 1}
KIND_CODES = {"numeric": 0, "predicate": 1}
REPRESENTATION_CODES = {"standard": 0, "cube": 1}
FMAP_LAYOUT_CODES = {"": 0, "NC1HWC0": 1, "NDC1HWC0": 2}


def reason_codes() -> dict[str, int]:
    """Reason name -> numeric code: 0 none, then isa.errors.REASONS in table order, DECODE_ERROR last."""
    from isa.errors import REASONS
    names = [*REASONS, "DECODE_ERROR"]
    return {"": 0, **{n: k + 1 for k, n in enumerate(names)}}


def slots(op: str) -> list[int]:
    """Each role's slot, in roles() order: sources 0, 1, 2 in B.IOT order, the destination 3."""
    rl = roles(op)
    return [*range(len(rl) - 1), DST_SLOT]


def role_table(op: str, bits: dict[str, int]) -> list[list]:
    """roles.txt's rows: slot, slot name, the instruction's role name, its files, its bits."""
    return [[s, SLOTS[s], r, f"{r}.hex", f"{r}.def.hex", bits[r]] for s, r in zip(slots(op), roles(op))]


def _word(v) -> str:
    """A text field as one word: `-` for empty, spaces as `_`."""
    v = "" if v is None else str(v)
    return "-" if v == "" else v.replace(" ", "_")


def _opt(v) -> int:
    return -1 if v is None else int(v)


def block_fields(b, case: int, local_bytes: int, matrix_bytes: int, committed: bool, reason: str, field: str) -> list:
    """fields.txt's row of a case whose stream decodes to block b."""
    from isa.fields import PAD_VALUES
    d = b.datr
    get = (lambda n: None) if d is None else (lambda n: getattr(d, n))
    instr = I.by_carrier(b.bstart.Mode, b.bstart.Function)
    pad = get("PadValueOrByteId")
    pad_value = 3 if pad is None else int(pad) & 3
    try:
        dtname = datatype(b.bstart.DataType).name
    except ValueError:
        dtname = "-"
    return [case, b.bstart.Mode, b.bstart.Function, b.bstart.DataType, b.iot[-1].PE_MASK if b.iot else -1,
            _opt(pad), pad_value, _opt(get("CMode")), _opt(get("Sat")), _opt(get("Canonicalize")),
            _opt(get("DataType")), _opt(get("RMode")), _opt(get("Layout")), int(local_bytes), int(matrix_bytes),
            int(committed), reason_codes().get(reason or "", -1), instr.mnemonic if instr else "-", dtname,
            PAD_VALUES[pad_value], _word(reason), _word(field)]


def fmap_fields(layout, params, pad_bits, transposed) -> list:
    """The FMAP_COLUMNS of a tile (zeros without a feature-map descriptor)."""
    params = list(params or [])
    params = params if len(params) == 17 else [0] * 17
    return [FMAP_LAYOUT_CODES.get(layout or "", -1), *[int(x) for x in params], f"{int(pad_bits or 0):016X}",
            int(bool(transposed))]


def roles(op: str) -> list[str]:
    """The tile roles of an instruction as its table row names them: the sources in B.IOT
    order, then the destination (`left`, `right`, `dst`; `mask`, `true`, `false`, `dst`; ...)."""
    instr = I.lookup(op)
    return list(instr.sources) + [instr.dest]


def data_files(op: str) -> list[str]:
    """Every element file of a partition, in the order of the checksum columns."""
    out = []
    for r in roles(op):
        out += [f"{r}.hex", f"{r}.def.hex"]
    return out + [STATUS, STREAM]


def header(op: str) -> list[str]:
    cols = list(LANE_COLUMNS)
    for r in roles(op):
        cols += [f"{r}_{c}" for c in ROLE_COLUMNS]
    return cols + ["crc_" + f.replace(".", "_") for f in [CASES] + data_files(op)]


# ---------------------------------------------------------------------------- gathering

def _digits(bits: int) -> int:
    return (bits + 3) // 4


def _gather(arr: pa.Array, idx: np.ndarray, counts: np.ndarray, container: int, what: str) -> np.ndarray:
    """The first counts[i] container slots of binary entries idx[i] of `arr`, concatenated
    (uint64).  A byte string too short for its descriptor is a GoldenError (`what` says where)."""
    if len(idx) == 0:
        return np.zeros(0, np.uint64)
    sub = arr.take(pa.array(idx)).cast(pa.large_binary())
    offs = np.frombuffer(sub.buffers()[1], np.int64)[sub.offset: sub.offset + len(sub) + 1]
    data = np.frombuffer(sub.buffers()[2], np.uint8)[offs[0]: offs[-1]] if offs[-1] > offs[0] else \
        np.zeros(0, np.uint8)
    lens = np.diff(offs)
    if container >= 8:
        width = container // 8
        if np.any(lens % width):
            raise GoldenError(f"{what}: a byte string is not a whole number of {container}-bit elements")
        vals = data.view(f"<u{width}").astype(np.uint64)
        slots = lens // width
    elif container == 4:
        vals = np.empty(data.size * 2, np.uint64)
        vals[0::2], vals[1::2] = data & 0xF, data >> 4
        slots = lens * 2
    else:
        vals = np.unpackbits(data, bitorder="little").astype(np.uint64)
        slots = lens * 8
    if np.any(counts > slots):
        raise GoldenError(f"{what}: a byte string is shorter than its descriptor")
    first = np.repeat(np.cumsum(slots) - slots, counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return vals[first + within]


def _container(name: str) -> int:
    try:
        return datatype(name).container
    except ValueError:
        return 0


def _lines(values: np.ndarray, digits: int) -> bytes:
    if len(values) == 0:
        return b""
    cols = hex_columns(values, digits)
    return np.concatenate([cols, np.full((len(values), 1), ord("\n"), np.uint8)], axis=1).tobytes()


class OpenFiles:
    """A partition's output files, each written atomically, open while rows are appended;
    `lines` counts what each received (an index file's header line not counted)."""

    def __init__(self, folder: pathlib.Path, names, headers: dict[str, list[str]]):
        self.names = tuple(names)
        self.ctx = {name: atomic_open(folder / name, "wb") for name in self.names}
        self.handles = {name: ctx.__enter__() for name, ctx in self.ctx.items()}
        self.lines = dict.fromkeys(self.names, 0)
        self.cases = 0
        for name, cols in headers.items():
            self.handles[name].write(("# " + " ".join(cols) + "\n").encode())

    def close(self, exc=None) -> None:
        for ctx in self.ctx.values():
            ctx.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)

    def write(self, name: str, data: bytes, lines: int) -> None:
        self.handles[name].write(data)
        self.lines[name] += lines


def checked_line(fields: list, chunks: list[bytes]) -> str:
    """An index line: the fields, then CRC-32s of the fields' own text and of each chunk."""
    body = " ".join(str(x) for x in fields)
    crcs = [zlib.crc32(body.encode())] + [zlib.crc32(c) for c in chunks]
    return body + " " + " ".join(f"{c:08x}" for c in crcs) + "\n"


class _Part(OpenFiles):
    """One partition's files, open while its Parquet files are appended."""

    def __init__(self, folder: pathlib.Path, part: dict):
        self.op = part["op"]
        self.part = part
        self.roles = roles(self.op)
        self.dest = I.lookup(self.op).dest
        self.bits = role_bits(self.op, part["dtype"], part.get("dst"))
        super().__init__(folder, [CASES] + data_files(self.op) + list(EXTRA_FILES),
                         {CASES: header(self.op), FIELDS: (*FIELD_COLUMNS, "crc_line"), TILE_INFO: (*TILE_COLUMNS, "crc_line"),
                          ROLES: ROLE_TABLE_COLUMNS, INDEX: INDEX_COLUMNS})
        rows = role_table(self.op, self.bits)
        self.write(ROLES, "".join(" ".join(str(x) for x in r) + "\n" for r in rows).encode(), len(rows))

    def write_index(self) -> None:
        """index.txt, once every other file is complete: each file's line count (index files:
        after their header), then the partition's cases and lanes."""
        rows = index_rows(self.op, self.lines, self.cases)
        self.write(INDEX, "".join(f"{k} {v}\n" for k, v in rows).encode(), len(rows))


INDEX_COLUMNS = ("name", "count")


def index_rows(op: str, lines: dict, cases: int) -> list[tuple[str, int]]:
    """index.txt's rows: (file, lines) of every file but itself, in a fixed order (cases.txt,
    the role files, status.hex, stream.hex, fields.txt, tiles.txt, roles.txt), then (`cases`,
    N) and (`lanes`, L)."""
    names = [CASES, *data_files(op), *EXTRA_FILES[:-1]]
    return [(n, lines[n]) for n in names] + [("cases", cases), ("lanes", lines[CASES])]


def role_bits(op: str, dtype: str, dst: str | None) -> dict[str, int]:
    """Each role's element width: the DataType's container; predicates (TCMP's destination,
    TSEL's mask source, Decisions 069/079) one bit."""
    instr = I.lookup(op)
    src = datatype(dtype)
    out = datatype(dst) if dst else src
    rl = roles(op)
    bits = {}
    for k, r in enumerate(rl):
        is_dest = k == len(rl) - 1
        pred = instr.dest_kind == "predicate" if is_dest else (instr.schema == I.SELECT and k == 0)
        bits[r] = 1 if pred else (out if is_dest else src).container
    return bits


def _append(p: _Part, t: pa.Table, path: str) -> None:
    """Append the cases of one Parquet file to the partition's files."""
    n = len(t)
    if n == 0:
        return
    cases = t.column("case").to_numpy()
    masks = t.column("pe_mask").to_numpy().astype(np.int64)
    outcome = t.column("outcome").to_pylist()
    klass = t.column("class").to_pylist()
    reason = t.column("reason").to_pylist()
    status = np.stack(t.column("status").to_numpy(zero_copy_only=False)).astype(np.uint8)
    try:
        gprs = gprs_of(t.column("gprs"), n)
    except ValueError as exc:
        raise GoldenError(f"{quote(path)}: gprs: {exc}") from None
    in_counts, fin = tiles_of(t.column("inputs"))
    out_counts, fout = tiles_of(t.column("outputs"))
    in_start = np.cumsum(in_counts) - in_counts
    out_start = np.cumsum(out_counts) - out_counts
    in_pe, in_tile = fin["pe"].to_numpy(), fin["tile"].to_numpy()
    out_pe = fout["pe"].to_numpy()
    streams = t.column("stream").to_pylist()
    blocks: dict[bytes, object] = {}

    def block(data: bytes, case: int):
        if data not in blocks:
            try:
                b = encoding.decode(data)
            except DecodeError as exc:
                raise GoldenError(f"{quote(path)}: case {case}: stream does not decode ({exc})") from None
            if len(b) != 1:
                raise GoldenError(f"{quote(path)}: case {case}: the stream holds {len(b)} blocks, not one")
            blocks[data] = b[0]
        return blocks[data]

    def bindings(data: bytes, case: int) -> list[int]:
        return [x.tile for x in block(data, case).iot]

    local_b, matrix_b = t.column("local_bytes").to_numpy(), t.column("matrix_bytes").to_numpy()
    field = t.column("field").to_pylist()
    fields_text = "".join(checked_line(block_fields(block(streams[i], int(cases[i])), int(cases[i]), local_b[i],
                                                    matrix_b[i], outcome[i] == "commit", reason[i], field[i]), [])
                          for i in range(n))

    # lanes: (row, pe) for every PE the destination binding selects (-1: none selected)
    lane_row, lane_pe = [], []
    for i in range(n):
        pes = [q for q in range(4) if masks[i] >> q & 1] or [-1]
        lane_row += [i] * len(pes)
        lane_pe += pes
    lane_row = np.array(lane_row, np.int64)
    lane_pe = np.array(lane_pe, np.int64)
    L = len(lane_row)
    arity = len(p.roles) - 1
    # flat entry index of each (lane, role), -1 where the tile is absent
    entry = np.full((L, len(p.roles)), -1, np.int64)
    for j, (i, q) in enumerate(zip(lane_row.tolist(), lane_pe.tolist())):
        tiles = bindings(streams[i], int(cases[i]))
        srcs, dest = tiles[:-1], tiles[-1] if tiles else None
        lo, hi = int(in_start[i]), int(in_start[i] + in_counts[i])
        for k in range(min(arity, len(srcs))):
            hit = np.flatnonzero((in_pe[lo:hi] == q) & (in_tile[lo:hi] == srcs[k]))
            if hit.size:
                entry[j, k] = lo + int(hit[0])
        lo, hi = int(out_start[i]), int(out_start[i] + out_counts[i])
        hit = np.flatnonzero(out_pe[lo:hi] == q)
        if hit.size and dest is not None:
            entry[j, arity] = lo + int(hit[0])

    cols_of = {}
    chunks = {}
    for k, r in enumerate(p.roles):
        is_dest = k == arity
        f = fout if is_dest else fin
        e = entry[:, k]
        have = e >= 0
        shape = {c: np.zeros(L, np.int64) for c in ("Row", "Col", "ValidRow", "ValidCol", "Layout")}
        names = np.full(L, ABSENT, object)
        if have.any():
            for c in shape:
                shape[c][have] = f[c].to_numpy().astype(np.int64)[e[have]]
            kind = np.asarray(f["kind"].to_numpy(zero_copy_only=False), object)[e[have]]
            dts = np.asarray(f["dtype"].to_numpy(zero_copy_only=False), object)[e[have]]
            names[have] = np.where(kind == "predicate", PREDICATE, dts)
            # a tile of another element width than the role's (an illegal case's wrong source
            # kind) has no lines in the role's file: its cases.txt entry still names its type
            width = np.array([1 if x == PREDICATE else _container(x) for x in names[have]], np.int64)
            fits = np.zeros(L, bool)
            fits[have] = width == p.bits[r]
            have &= fits
        counts = np.where(have, shape["Row"] * shape["Col"], 0)
        idx = e[have]
        where = f"{quote(path)}: {'outputs' if is_dest else 'inputs'} ({r})"
        vals = _gather(f["payload"], idx, counts[have], p.bits[r], where)
        dfn = _gather(f["defined"], idx, counts[have], 1, where)
        digits = _digits(p.bits[r])
        chunks[f"{r}.hex"] = (_lines(vals, digits), digits + 1, counts)
        chunks[f"{r}.def.hex"] = (_lines(dfn, 1), 2, counts)
        line = np.where(have, p.lines[f"{r}.hex"] + np.cumsum(counts) - counts, -1)
        cols_of[r] = (line, counts, shape, names)
    tile_text = _tile_lines(p, entry, lane_row, lane_pe, cases, streams, fin, fout, bindings)
    st = status[lane_row, np.maximum(lane_pe, 0)] * (lane_pe >= 0)
    chunks[STATUS] = (_lines(st.astype(np.uint64), 2), 3, np.ones(L, np.int64))
    # the stream of each case once, as 64-bit words; every lane of the case points at it
    words = [np.frombuffer(s, "<u8") if len(s) % 8 == 0 else None for s in streams]
    if any(w is None for w in words):
        bad = next(i for i, w in enumerate(words) if w is None)
        raise GoldenError(f"{quote(path)}: case {int(cases[bad])}: stream is not a whole number of 64-bit words")
    nwords = np.array([len(w) for w in words], np.int64)
    stream_line = p.lines[STREAM] + np.cumsum(nwords) - nwords
    stream_bytes = _lines(np.concatenate(words).astype(np.uint64) if words else np.zeros(0, np.uint64), WORD_DIGITS)
    first_lane = np.r_[True, lane_row[1:] != lane_row[:-1]]
    stream_counts = np.where(first_lane, nwords[lane_row], 0)      # the CRC covers it once
    chunks[STREAM] = (stream_bytes, WORD_DIGITS + 1, stream_counts)

    # cases.txt lines and their checksums (a loop per lane, over byte slices)
    gpr1 = gprs[lane_row, np.maximum(lane_pe, 0), 1] if gprs is not None else np.zeros(L, np.uint64)
    gpr2 = gprs[lane_row, np.maximum(lane_pe, 0), 2] if gprs is not None else np.zeros(L, np.uint64)
    pos = {name: np.cumsum(c) - c for name, (_, _, c) in chunks.items()}
    text = []
    for j in range(L):
        i = int(lane_row[j])
        fields = [int(cases[i]), int(lane_pe[j]), outcome[i], klass[i] or ABSENT, reason[i] or ABSENT,
                  int(gpr1[j]), int(gpr2[j]), int(stream_line[i]), int(nwords[i])]
        for r in p.roles:
            line, counts, shape, names = cols_of[r]
            fields += [int(line[j]), int(counts[j]), int(shape["Row"][j]), int(shape["Col"][j]),
                       int(shape["ValidRow"][j]), int(shape["ValidCol"][j]), int(shape["Layout"][j]), names[j]]
        parts = []
        for name in data_files(p.op):
            data, width, counts = chunks[name]
            a = int(pos[name][j]) * width
            parts.append(data[a: a + int(counts[j]) * width])
        text.append(checked_line(fields, parts))
    p.write(CASES, "".join(text).encode(), L)
    p.write(FIELDS, fields_text.encode(), n)
    p.write(TILE_INFO, tile_text.encode(), L * len(p.roles))
    for name, (data, width, _) in chunks.items():
        p.write(name, data, len(data) // width)
    p.cases += n


def _tile_lines(p: _Part, entry, lane_row, lane_pe, cases, streams, fin, fout, bindings) -> str:
    """tiles.txt's lines of a file's lanes: per lane, one per role in roles() order (slot, the
    bound tile id, whether that PE holds it, its location, kind, capacity, representation and
    feature-map descriptor; zeros where the tile is absent)."""
    arity = len(p.roles) - 1
    cols = {}
    for src, f in (("in", fin), ("out", fout)):
        cols[src] = {k: (f[k].to_pylist() if k in f else None) for k in
                     ("location", "kind", "capacity", "fmap_layout", "fmap_params", "fmap_pad_bits", "fmap_transposed")}
    out = []
    for j in range(len(lane_row)):
        i = int(lane_row[j])
        tiles = bindings(streams[i], int(cases[i]))
        for k, (slot, r) in enumerate(zip(slots(p.op), p.roles)):
            e = int(entry[j, k])
            tile = tiles[-1] if k == arity and tiles else tiles[k] if k < min(arity, len(tiles) - 1) else -1
            if e < 0:
                row = [0, tile, -1, -1, 0, 0, *fmap_fields("", [], 0, False)]
            else:
                c = cols["out" if k == arity else "in"]
                get = lambda name: c[name][e] if c[name] is not None else None      # noqa: E731
                row = [1, tile, LOCATION_CODES.get(get("location"), -1), KIND_CODES.get(get("kind"), -1),
                       int(get("capacity") or 0), REPRESENTATION_CODES["standard"],
                       *fmap_fields(get("fmap_layout"), get("fmap_params"), get("fmap_pad_bits"),
                                    get("fmap_transposed"))]
            out.append(checked_line([int(cases[i]), int(lane_pe[j]), slot, r, *row], []))
    return "".join(out)


def _selected(m: dict, op: str | None, dtype: str | None) -> list[dict]:
    parts = [q for q in m["partitions"] if (op is None or q.get("op") == op.upper())
             and (dtype is None or str(q.get("dtype", "")).upper() == dtype.upper())]
    if not parts:
        raise GoldenError("the dataset has no partition" + (f" for {op}" if op else "") + (f" {dtype}" if dtype else ""))
    return parts


def write_hex(folder, out, op: str | None = None, dtype: str | None = None) -> dict:
    """Export every partition of the dataset (or those of `op`/`dtype`) to folder `out`
    (absent or empty); returns the manifest written last.  GoldenError, one line, for a
    damaged dataset or an unusable `out`."""
    folder = pathlib.Path(folder)
    ds = open_dataset(folder)             # export refuses what verify refuses
    m = ds.manifest
    wanted = {id(q) for q in _selected(m, op, dtype)}
    out, created = prepare_out(out)
    by_part: dict[int, list] = {}
    for part, f in ds.listed():
        if id(part) in wanted:
            by_part.setdefault(id(part), []).append(f)
    entries = []
    try:
        for part in m["partitions"]:
            if id(part) not in wanted:
                continue
            files = by_part.get(id(part), [])
            path = files[0].path.rsplit("/", 1)[0] if files else _part_path(part)
            target = out / path
            target.mkdir(parents=True, exist_ok=True)
            p = _Part(target, part)
            try:
                for f in files:
                    t = ds.read(f)
                    require_well_formed(t, ds, f.path)
                    _append(p, t, f.path)
            except BaseException as exc:
                p.close(exc)
                raise
            p.write_index()
            p.close()
            entries.append(_entry(target, path, part, p))
    except BaseException:                 # a failed export leaves --out as it found it
        _empty(out, remove=created)
        raise
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "dataset": {
        "manifest_sha256": sha256(folder / MANIFEST), "profile": m.get("profile"),
        "tile_emu_version": m.get("tile_emu_version")}, "partitions": entries}
    write_json(out / MANIFEST, manifest)
    return manifest


def prepare_out(out) -> tuple[pathlib.Path, bool]:
    """(--out as a Path, whether it was created): an absent or empty folder, made here."""
    if out is None or str(out) == "":
        raise GoldenError("--format hex needs --out FOLDER")
    out = pathlib.Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise GoldenError(f"--out {shown(out)} must be an empty or new folder")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GoldenError(f"--out {shown(out)}: cannot create ({why(exc)})") from None
    return out, created


def _empty(out: pathlib.Path, remove: bool) -> None:
    """Remove what a failed export created below `out` (and `out` itself when it created it);
    --out was absent or empty, so everything there is the export's own."""
    for root, dirs, names in os.walk(out, topdown=False):
        for name in names:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            os.rmdir(os.path.join(root, name))
    if remove:
        out.rmdir()


def _part_path(part: dict) -> str:
    s = f"op={part['op']}/dtype={part['dtype']}"
    if part.get("dst"):
        s += f"/dst={part['dst']}/rmode={part['rmode']}/sat={int(bool(part['sat']))}"
    return s


def _file_digits(name: str, bits: dict) -> int:
    if name.endswith(".def.hex"):
        return 1
    if name == STATUS:
        return 2
    if name == STREAM:
        return WORD_DIGITS
    return _digits(bits[name[: -len(".hex")]])


def _entry(target: pathlib.Path, path: str, part: dict, p: _Part) -> dict:
    files = {}
    for name in [CASES] + data_files(p.op) + list(EXTRA_FILES):
        files[name] = {"lines": p.lines[name], "bytes": (target / name).stat().st_size,
                       "sha256": sha256(target / name)}
        if name.endswith(".hex"):
            files[name]["digits"] = _file_digits(name, p.bits)
    return {"path": path, **{k: part[k] for k in ("op", "dtype", "dst", "rmode", "sat") if part.get(k) is not None},
            "cases": p.cases, "roles": {r: {"bits": p.bits[r]} for r in p.roles}, "files": files}


# ---------------------------------------------------------------------------- checking
#
# Both export kinds are checked by the same steps (streams_hexport.py reuses all of them): the
# manifest read within the datasets' size limit and checked against a JSON Schema; each
# partition's path and file list recomputed from its keys (`describe`), so a path cannot leave
# the export, and the path resolved so that no link leads out of it; the folder holding exactly
# the listed files, each a regular file of the manifest's size; then each partition's files read
# once front to back in READ_BYTES blocks, in lockstep, index line by index line, each run of
# items checked in one vectorised pass (bounded memory, whatever the export's size); last the
# line counts, trailing lines, the SHA-256s and the partition's case count.

READ_BYTES = 1 << 22        # the checker reads each file this many bytes at a time
MAX_LINE = 1 << 16          # no exporter writes an index line this long (theirs are under 1 KB)
MAX_DIGITS = WORD_DIGITS    # the widest element line: 64 bits

_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$", "maxLength": 64}
_COUNT = {"type": "integer", "minimum": 0}
_NAME = {"type": "string", "maxLength": 64}
FILE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["lines", "bytes", "sha256"],
               "properties": {"lines": _COUNT, "bytes": _COUNT, "sha256": _SHA256}}


def manifest_schema(fmt: str, keys: dict, required: list[str], extra: dict, file_schema: dict) -> dict:
    """The JSON Schema of an export manifest of format `fmt` whose partitions have the keys
    `keys` (`required` among them), the members `extra` and path, cases and files."""
    from .dataset import MANIFEST_SCHEMA as DATASET
    return {
        "type": "object", "additionalProperties": False,
        "required": ["format", "format_version", "dataset", "partitions"],
        "properties": {
            "format": {"const": fmt}, "format_version": {"type": "integer"},
            "dataset": {"type": "object", "additionalProperties": False,
                        "required": ["manifest_sha256", "profile", "tile_emu_version"],
                        "properties": {"manifest_sha256": _SHA256, "profile": DATASET["properties"]["profile"],
                                       "tile_emu_version": DATASET["properties"]["tile_emu_version"]}},
            "partitions": {"type": "array", "minItems": 1, "maxItems": MAX_FILES, "items": {
                "type": "object", "additionalProperties": False,
                "required": ["path", *required, *extra, "cases", "files"],
                "properties": {"path": {"type": "string", "maxLength": 1024}, **keys, **extra, "cases": _COUNT,
                               "files": {"type": "object", "maxProperties": 64,
                                         "additionalProperties": file_schema}}}},
        }}


MANIFEST_SCHEMA = manifest_schema(
    FORMAT, {"op": _NAME, "dtype": _NAME, "dst": _NAME, "rmode": _NAME, "sat": {"type": "boolean"}}, ["op", "dtype"],
    {"roles": {"type": "object", "maxProperties": 8, "additionalProperties": {
        "type": "object", "additionalProperties": False, "required": ["bits"],
        "properties": {"bits": {"type": "integer"}}}}},
    {**FILE_SCHEMA, "properties": {**FILE_SCHEMA["properties"], "digits": {"type": "integer"}}})


def _manifest_text(path: pathlib.Path) -> str:
    """An export manifest's text: a regular file of at most the datasets' MAX_MANIFEST_BYTES."""
    return read_small(path, shown(path), MAX_MANIFEST_BYTES, "a manifest")


def _manifest_json(path: pathlib.Path):
    """An export manifest parsed (JsonTextError for any malformed text, deep nesting included)."""
    return jsontext.loads(_manifest_text(path), max_depth=jsontext.MAX_DEPTH)


def is_export(folder, fmt: str = FORMAT) -> bool:
    """Whether `folder` holds a hex export of format `fmt` (its manifest says so)."""
    try:
        m = _manifest_json(pathlib.Path(folder) / MANIFEST)
    except (GoldenError, jsontext.JsonTextError):
        return False
    return isinstance(m, dict) and m.get("format") == fmt


def read_export_manifest(folder: pathlib.Path, fmt: str = FORMAT, version: int = FORMAT_VERSION,
                         schema: dict = MANIFEST_SCHEMA) -> dict:
    """An export's manifest, parsed; GoldenError unless it names format `fmt` version `version`
    and has the structure and types of `schema`."""
    path = pathlib.Path(folder) / MANIFEST
    return parse_manifest(lambda: _manifest_json(path), path, fmt, version, schema)


def check(folder) -> int:
    """Check a hex export end to end; the number of (case, PE) lanes checked.  GoldenError,
    one line naming the file and the case, for anything truncated, altered or malformed."""
    return check_parts(folder, FORMAT, FORMAT_VERSION, MANIFEST_SCHEMA, _describe, _check_part)


def check_parts(folder, fmt: str, version: int, schema: dict, describe, check_part) -> int:
    """The sum of check_part(folder, partition) over an export's partitions, after the checks
    both kinds share: the manifest (format `fmt` version `version`, of `schema`); each
    partition's path a relative one inside the export with no link leading out, the path its
    keys give and listed once, its files exactly those its keys give -- `describe(partition,
    where)` returns (path, {file name: {member: value its keys give}}); the folder holding
    exactly the listed files, each a regular file inside it."""
    folder = pathlib.Path(folder)
    m = read_export_manifest(folder, fmt, version, schema)
    listed, paths = set(), {}
    for i, part in enumerate(m["partitions"]):
        at = f"{shown(folder / MANIFEST)}: partitions[{i}]"
        path = part["path"]
        inside(folder, path, f"{at}.path")
        want, records = describe(part, at)
        if path != want:
            raise GoldenError(f"{at}.path: {quote(path)}; its keys give {want}")
        if path in paths:
            raise GoldenError(f"{at}: {path} is listed twice (also partitions[{paths[path]}])")
        paths[path] = i
        got = part["files"]
        if set(got) != set(records):
            lacking, extra = sorted(set(records) - set(got)), sorted(set(got) - set(records))
            raise GoldenError(f"{at}.files: " + (f"lacks {lacking[0]}" if lacking else
                                                 f"lists {quote(extra[0])}, which such a partition does not have"))
        for name, members in records.items():
            for key, value in members.items():
                if got[name].get(key) != value:
                    raise GoldenError(f"{at}.files.{name}.{key}: {shown(repr(got[name].get(key)), 40)}; its keys give "
                                      f"{value!r}")
        listed |= {f"{path}/{name}" for name in got}
    check_listed(folder, listed, (MANIFEST,), "export")
    return sum(check_part(folder, part) for part in m["partitions"])


def inside(folder: pathlib.Path, path: str, where: str) -> None:
    """GoldenError unless `path` is a relative path of plain names below `folder` and, with its
    links resolved, still inside `folder`."""
    names = path.split("/")
    if path.startswith("/") or any(n in ("", ".", "..") for n in names) or "\\" in path or "\0" in path:
        raise GoldenError(f"{where}: {quote(path)} is not a path inside the export (relative, plain names, no '..')")
    root = os.path.realpath(folder)
    real = os.path.realpath(folder / path)
    if os.path.commonpath([real, root]) != root:
        raise GoldenError(f"{where}: {quote(path)} leads out of the export through a link (to {shown(real)})")


def _describe(part: dict, where: str) -> tuple[str, dict]:
    """(the path, {file: {digits}}) a single-block partition's keys give; its `roles` checked
    against them (the writer's widths)."""
    keys = {k: part[k] for k in ("op", "dtype", "dst", "rmode", "sat") if k in part}
    try:
        params = Params(ops=(keys["op"],), dtypes=(keys["dtype"],), dst_dtypes=(keys["dst"],) if "dst" in keys else (),
                        rmodes=(keys.get("rmode", "RNE"),), sat=(int(keys.get("sat", 0)),), cases=1, seed=0)
        found = [q for q in plan_partitions(params) if q.keys() == keys]
    except GoldenError as exc:
        raise GoldenError(f"{where}: {exc}") from None
    if not found:
        raise GoldenError(f"{where}: keys {shown(json.dumps(keys, sort_keys=True), 120)} are no partition's")
    bits = role_bits(part["op"], part["dtype"], part.get("dst"))
    if part["roles"] != {r: {"bits": b} for r, b in bits.items()}:
        raise GoldenError(f"{where}.roles: {shown(json.dumps(part['roles'], sort_keys=True), 120)}; its keys give "
                          + json.dumps({r: {"bits": b} for r, b in bits.items()}, sort_keys=True))
    records = {CASES: {"digits": None}, **{name: {"digits": None} for name in EXTRA_FILES}}
    for name in data_files(part["op"]):
        records[name] = {"digits": _file_digits(name, bits)}
    return found[0].path, records


class Reader:
    """A regular file said to hold `size` bytes (its manifest's `bytes`; `sha` its `sha256`),
    read front to back in blocks of READ_BYTES, handing out whole lines or runs of bytes and
    hashing all it reads: never more read than `size` bytes or the file holds, nor more held
    than a block and what the caller takes."""

    def __init__(self, path: pathlib.Path, label: str, size: int, sha: str | None = None):
        self.label, self.size, self.want = label, size, sha
        self.f = open_regular(path, label)
        self.on_disk = os.fstat(self.f.fileno()).st_size
        self.left = min(size, self.on_disk)             # bytes not read yet, of those it may read
        self.beyond = self.on_disk - self.left          # bytes past the manifest's size (never read)
        self.sha = hashlib.sha256()
        self.buf = b""
        self.at = 0             # start of the unread part of buf
        self.line = 0           # lines handed out so far

    def _fill(self) -> bool:
        """Append the next block to the unread part of buf (which then starts at 0); False at the end."""
        block = self.f.read(min(READ_BYTES, self.left)) if self.left > 0 else b""
        if not block:
            self.left = 0       # shorter than when opened: its end
            return False
        self.left -= len(block)
        self.sha.update(block)
        self.buf = self.buf[self.at:] + block
        self.at = 0
        return True

    def unread(self) -> int:
        return len(self.buf) - self.at + self.left

    def past_size(self) -> None:
        """What the caller needs lies past the manifest's size: GoldenError if the file goes on."""
        if self.beyond:
            raise GoldenError(f"{self.label}: {self.on_disk:,} bytes, the manifest says {self.size:,}")

    def line_of_text(self) -> bytes | None:
        """The next line (with its newline), or None when the file ends first.  A line longer
        than MAX_LINE is a GoldenError (no export has one: memory stays bounded)."""
        scanned = 0
        while True:
            k = self.buf.find(b"\n", self.at + scanned)
            if k >= 0:
                out, self.at = self.buf[self.at:k + 1], k + 1
                self.line += 1
                return out
            scanned = len(self.buf) - self.at
            if scanned > MAX_LINE:
                raise GoldenError(f"{self.label}: line {self.line + 1}: longer than {MAX_LINE:,} bytes (not an index "
                                  f"line)")
            if not self._fill():
                if scanned:
                    self.past_size()
                return None

    def take_bytes(self, size: int, lines: int) -> bytes | None:
        """The next `size` bytes, counted as `lines` lines (an item of fixed-width lines: the
        caller checks that they are), or None when the file holds fewer (nothing is read then)."""
        if size > self.unread():
            self.past_size()
            return None
        while len(self.buf) - self.at < size:
            if not self._fill():        # shorter than when opened
                return None
        out = self.buf[self.at:self.at + size]
        self.at += size
        self.line += lines
        return out

    def rest(self) -> int:
        """The number of bytes left unread (read to the end, so that the hash covers the file)."""
        left = len(self.buf) - self.at
        self.buf, self.at = b"", 0
        while self._fill():
            left += len(self.buf)
            self.buf = b""
        return left

    def intact(self) -> bool:
        """Whether the file has the manifest's size and SHA-256 (read to its end)."""
        if self.on_disk != self.size:
            return False
        self.rest()
        return self.sha.hexdigest() == self.want

    def close(self) -> None:
        self.f.close()


def open_readers(base: pathlib.Path, files: dict, names, label) -> dict:
    """A Reader of each file of a partition (folder `base`, manifest records `files`)."""
    readers = {}
    try:
        for name in names:
            readers[name] = Reader(base / name, label(name), files[name]["bytes"], files[name]["sha256"])
    except BaseException:
        for r in readers.values():
            r.close()
        raise
    return readers


def index_line(r: Reader, after: str) -> bytes | None:
    """The next line of an index file, or None at its end (`after`: the last item, for a
    truncated last line)."""
    raw = r.line_of_text()
    if raw is None and r.rest():
        raise GoldenError(f"{r.label}: line {r.line + 1}: truncated (no final newline; after {after})")
    return raw


NUMBER = rb"-?[0-9]{1,18}"      # a number as the exporters write it (and one int64 holds)
TEXT = rb"[^ ]+"                # a word (an empty text is written `-`)
CRC = rb"[0-9a-f]{8}"


def fields_pattern(kinds: list[bytes], crcs: int) -> re.Pattern:
    """An index line (without its newline): fields of the patterns `kinds`, then `crcs` checksums."""
    return re.compile(b" ".join([*kinds, *[CRC] * crcs]))


def field_error(raw: bytes, cols, kinds: list[bytes], at: str, who: str) -> GoldenError:
    """Why an index line does not match its pattern: its field count, or its first field that
    is not what the exporter writes there."""
    f = raw.rstrip(b"\n").split(b" ")
    if len(f) != len(cols):
        return GoldenError(f"{at}: {who}: {len(f)} fields, the header has {len(cols)}")
    for col, kind, v in zip(cols, [*kinds, *[CRC] * (len(cols) - len(kinds))], f):
        if not re.fullmatch(kind, v):
            what = {NUMBER: "a number", CRC: "a checksum (8 lower-case hex digits)", TEXT: "a word"}.get(kind) or \
                " or ".join(x.decode() for x in kind.strip(b"(?:)").split(b"|"))         # (?:commit|reject)
            return GoldenError(f"{at}: {who}: {col} {shown(v.decode('utf-8', 'replace'), 24)} is not {what}")
    return GoldenError(f"{at}: {who}: malformed")


_HEX_BYTE = np.zeros(256, bool)
_HEX_BYTE[np.frombuffer(b"0123456789ABCDEF", np.uint8)] = True


def check_items(r: Reader, name: str, crc, line, n, digits, describe) -> None:
    """The next lines of data file `name` (read by `r`) are those of the items given by the
    arrays crc, line, n, digits (`describe(k)`: (who, where it is listed) of item k), in order:
    each item of lines starts where the one before ended and is n lines of exactly `digits`
    hex digits whose CRC-32 is crc; an item of no lines has the CRC of nothing, 0.  Checked
    with array operations and one read per run of items of at most READ_BYTES (a larger item
    alone, in pieces); Python loops only over the items' CRCs."""
    crc, line, n = (np.asarray(x, np.int64).reshape(-1) for x in (crc, line, n))
    digits = np.broadcast_to(np.asarray(digits, np.int64), n.shape)
    if not n.size:
        return
    live = n != 0
    counted = np.where(n > 0, n, 0)
    start = r.line + np.cumsum(counted) - counted
    bad = np.where(live, (line != start) | (n < 0) | (n > r.unread()) | (digits < 1) | (digits > MAX_DIGITS), crc != 0)
    if bad.any():
        k = int(np.argmax(bad))
        who, at = describe(k)
        if not live[k]:
            raise GoldenError(f"{at}: {who}: altered (its checksum of no lines of {name} is not 00000000)")
        if line[k] != start[k]:
            raise GoldenError(f"{at}: {who}: its lines of {name} start at {line[k]}, expected {start[k]}")
        if n[k] < 0 or not 1 <= digits[k] <= MAX_DIGITS:
            raise GoldenError(f"{at}: {who}: {n[k]} lines of {digits[k]} digits in {name}")
    idx = np.flatnonzero(live)
    ends = np.cumsum(n[idx] * (digits[idx] + 1))
    a = 0
    while a < idx.size:
        b = max(int(np.searchsorted(ends, (ends[a - 1] if a else 0) + READ_BYTES, "right")), a + 1)
        _check_run(r, name, idx[a:b], crc, line, n, digits, describe)
        a = b


def _check_run(r: Reader, name: str, sel: np.ndarray, crc, line, n, digits, describe) -> None:
    ns, widths = n[sel], digits[sel] + 1
    ends = np.cumsum(ns * widths)
    total = int(ends[-1])
    if total > r.unread():
        r.past_size()
        j = int(sel[np.searchsorted(ends, r.unread(), "right")])
        raise GoldenError(f"{r.label}: {describe(j)[0]}: truncated (its lines {line[j]}..{line[j] + n[j] - 1} are "
                          f"missing)")
    if total > READ_BYTES:                      # one item larger than a block: in pieces
        j, w = int(sel[0]), int(widths[0])
        per, done, got = max(1, READ_BYTES // w), 0, 0
        while done < n[j]:
            m = int(min(per, n[j] - done))
            chunk = _taken(r, r.take_bytes(m * w, m))
            _hex_lines(r, chunk, np.full(1, m), np.full(1, w), line[j] + done, lambda k: (j, int(digits[j])), describe)
            got = zlib.crc32(chunk, got)
            done += m
        if got != crc[j]:
            _altered(r, name, describe(j))
        return
    chunk = _taken(r, r.take_bytes(total, int(ns.sum())))
    _hex_lines(r, chunk, ns, widths, int(line[sel[0]]),
               lambda k: (int(sel[k]), int(digits[sel[k]])), describe)
    view, a = memoryview(chunk), 0
    for j, e, c in zip(sel.tolist(), ends.tolist(), crc[sel].tolist()):
        if zlib.crc32(view[a:e]) != c:
            _altered(r, name, describe(j))
        a = e


def _taken(r: Reader, chunk: bytes | None) -> bytes:
    if chunk is None:                           # it had the bytes when the run was planned
        raise GoldenError(f"{r.label}: shorter than when it was opened (changed while checked)")
    return chunk


def _hex_lines(r: Reader, chunk: bytes, ns: np.ndarray, widths: np.ndarray, first: int, item_of, describe) -> None:
    """Every line of `chunk` (ns[i] lines of widths[i] bytes each, newline included) is hex
    digits and a newline; else the first bad one (line `first` of the file is the chunk's first)
    is named with its item (`item_of(i)`: (item, digits) of the run's i-th)."""
    arr = np.frombuffer(chunk, np.uint8)
    if (widths == widths[0]).all():             # one width: a matrix of lines
        m = arr.reshape(-1, int(widths[0]))
        ok = (m[:, -1] == ord("\n")) & _HEX_BYTE[m[:, :-1]].all(axis=1)
        if ok.all():
            return
        bad = int(np.argmax(~ok))
    else:
        ends = np.cumsum(np.repeat(widths, ns)) - 1
        newline = np.zeros(arr.size, bool)
        newline[ends] = True
        ok = np.where(newline, arr == ord("\n"), _HEX_BYTE[arr])
        if ok.all():
            return
        bad = int(np.searchsorted(ends, int(np.argmax(~ok))))
    j, d = item_of(int(np.searchsorted(np.cumsum(ns), bad, "right")))
    raise GoldenError(f"{r.label}: line {first + bad + 1}: not {d} hex digits ({describe(j)[0]})")


def _altered(r: Reader, name: str, described: tuple[str, str]) -> None:
    """An item whose lines differ from its checksum: the data file is named, unless it is the
    manifest's (then the index line's checksum is what changed)."""
    who, at = described
    if r.intact():
        raise GoldenError(f"{at}: {who}: altered (its checksum of {name} differs from {name}'s lines, which match "
                          f"the manifest)")
    raise GoldenError(f"{r.label}: {who}: altered (the lines of this item differ from their checksum)")


def finish(readers: dict, files: dict, index: tuple[str, ...], label, last: str) -> None:
    """After the last item: no file holds more lines, each holds the manifest's line count
    (the index files' headers not counted), and each has the manifest's size and SHA-256."""
    for name, r in readers.items():             # the index files first: they say where the rest end
        if r.unread() or r.beyond:              # (not read: the file may be of any size)
            raise GoldenError(f"{label(name)}: trailing lines after the last case ({last})")
        got = r.line - (name in index)
        if got != files[name]["lines"]:
            raise GoldenError(f"{label(name)}: {got} lines, the manifest says {files[name]['lines']} "
                              f"(truncated or altered after {last})")
        if r.on_disk != r.size:
            raise GoldenError(f"{label(name)}: {r.on_disk:,} bytes, the manifest says {r.size:,}")
    for name, r in readers.items():
        if r.sha.hexdigest() != files[name]["sha256"]:
            raise GoldenError(f"{label(name)}: SHA-256 differs from the manifest (altered outside any case)")


BATCH_LANES = 4096          # cases.txt lines checked in one pass


def _check_part(folder: pathlib.Path, part: dict) -> int:
    """One partition, every file read once front to back in lockstep, in batches of at most
    BATCH_LANES lanes (and runs of READ_BYTES of element lines): bounded memory."""
    walker = []

    def walk(readers, label):
        walker.append(_Lanes(part, readers, label))
        return walker[0].walk()

    count = check_partition(folder, part, (CASES, *EXTRA_FILES), data_files(part["op"]), walk)
    walker[0].check_index()
    return count


_CODE = rb"-?[0-9]{1,20}"
FIELD_KINDS = [_CODE if c not in ("mnemonic", "datatype_name", "pad_name", "reason", "field") else TEXT
               for c in FIELD_COLUMNS]
TILE_KINDS = [TEXT if c == "role" else rb"[0-9A-F]{16}" if c == "fmap_pad_bits" else _CODE for c in TILE_COLUMNS]
_FIELD_PATTERN, _TILE_PATTERN = fields_pattern(FIELD_KINDS, 1), fields_pattern(TILE_KINDS, 1)


def text_line(r: Reader, cols, kinds, pattern, who: str) -> tuple[list[str], str]:
    """The next line of a plain index file (fields.txt, tiles.txt, ...): its fields (without
    the checksum) after its pattern and own CRC-32 are checked, and where it is; GoldenError
    naming `who` when the file ends first or the line is malformed or altered."""
    raw = index_line(r, who)
    if raw is None:
        raise GoldenError(f"{r.label}: {who}: truncated (its line is missing)")
    text, at = raw[:-1], f"{r.label}: line {r.line}"
    if pattern.fullmatch(text) is None:
        raise field_error(text, [*cols, "crc_line"], kinds, at, who)
    if zlib.crc32(text[:-9]) != int(text[-8:], 16):
        raise GoldenError(f"{at}: {who}: altered (checksum differs)")
    return text[:-9].decode().split(" "), at


def expect_lines(r: Reader, want: list[str], who: str) -> None:
    """The next lines of `r` are exactly `want` (a small file recomputed from the manifest)."""
    for k, line in enumerate(want):
        raw = r.line_of_text()
        if raw is None:
            r.past_size()
            raise GoldenError(f"{r.label}: line {r.line + 1}: truncated (expected {shown(line.strip(), 60)})")
        if raw.decode("utf-8", "replace") != line:
            raise GoldenError(f"{r.label}: line {r.line}: {shown(raw.decode('utf-8', 'replace').strip(), 60)}; "
                              f"{who} give {shown(line.strip(), 60)}")


def check_partition(folder: pathlib.Path, part: dict, index: tuple[str, ...], data, walk) -> int:
    """A partition's files (`index` files, then `data` files) opened as Readers, walked by
    `walk(readers, label)` -> (count, cases, the last case), then `finish` and the partition's
    case count checked; the count."""
    files = part["files"]

    def label(name: str) -> str:
        return quote(f"{part['path']}/{name}")

    readers = open_readers(folder / part["path"], files, [*index, *data], label)
    try:
        count, cases, last = walk(readers, label)
        finish(readers, files, index, label, last)
    finally:
        for r in readers.values():
            r.close()
    if cases != part["cases"]:
        raise GoldenError(f"{label(index[0])}: {cases} cases, the manifest says {part['cases']}")
    return count


class _Lanes:
    """The walk of one partition's cases.txt: each batch of lines parsed and checked with array
    operations, then its lanes' lines of every data file (check_items)."""

    def __init__(self, part: dict, readers: dict, label):
        self.op = op = part["op"]
        self.readers, self.label, self.r = readers, label, readers[CASES]
        self.cols, self.names, self.roles = header(op), data_files(op), roles(op)
        self.body = len(self.cols) - len(self.names) - 1
        self.kinds = [rb"[0-9]{1,20}" if c in ("r1", "r2") else rb"(?:commit|reject)" if c == "outcome"
                      else TEXT if c in ("class", "reason") or c.endswith("_dtype") else NUMBER
                      for c in self.cols[:self.body]]
        self.pattern = fields_pattern(self.kinds, len(self.names) + 1)
        numeric = [k for k, kind in enumerate(self.kinds) if kind == NUMBER]
        self.numeric = numeric
        self.at = {self.cols[k]: j for j, k in enumerate(numeric)}       # column -> column of the numbers
        self.bits = {r: part["roles"][r]["bits"] for r in self.roles}
        self.digits = {name: part["files"][name]["digits"] for name in self.names}
        self.widths: dict[bytes, int] = {}
        self.lanes = self.cases = 0
        self.prev = None        # (case, PE, stream_line, stream_words) of the last lane checked
        self.part = part

    def walk(self) -> tuple[int, int, str]:
        """(lanes, cases, the last lane)."""
        if self.r.line_of_text() != ("# " + " ".join(self.cols) + "\n").encode():
            raise GoldenError(f"{self.label(CASES)}: line 1: not the header of a {self.op} export")
        self._extra_files()
        batch, last = [], "the header"
        while True:
            raw = self.r.line_of_text()
            if raw is None:
                if self.r.rest():
                    after = self._who(batch[-1]) if batch else last
                    raise GoldenError(f"{self.r.label}: line {self.r.line + 1}: truncated (no final newline; after "
                                      f"{after})")
                break
            batch.append(raw)
            if len(batch) == BATCH_LANES:
                last = self._batch(batch)
                batch = []
        if batch:
            last = self._batch(batch)
        return self.lanes, self.cases, last

    def _extra_files(self) -> None:
        """The headers of fields.txt and tiles.txt; roles.txt and index.txt whole, recomputed
        from the partition's keys and the manifest's line counts."""
        heads = {FIELDS: FIELD_COLUMNS, TILE_INFO: TILE_COLUMNS, ROLES: ROLE_TABLE_COLUMNS, INDEX: INDEX_COLUMNS}
        for name, cols in heads.items():
            tail = ["crc_line"] if name in (FIELDS, TILE_INFO) else []
            expect_lines(self.readers[name], ["# " + " ".join([*cols, *tail]) + "\n"], "the format's header must")
        expect_lines(self.readers[ROLES], [" ".join(str(x) for x in r) + "\n" for r in role_table(self.op, self.bits)],
                     "the partition's keys")
        r = self.readers[INDEX]         # compared once finish() has checked the manifest's counts
        self.index_text = [r.line_of_text() for _ in range(len(self.part["files"]) + 1)]

    def check_index(self) -> None:
        """index.txt against the manifest's line counts (which finish() found to be the files')."""
        lines = {name: f["lines"] for name, f in self.part["files"].items()}
        want = [f"{k} {v}\n" for k, v in index_rows(self.op, lines, self.part["cases"])]
        for k, (got, line) in enumerate(zip(self.index_text, want)):
            if got is None or got.decode("utf-8", "replace") != line:
                text = "its end" if got is None else shown(got.decode("utf-8", "replace").strip(), 60)
                raise GoldenError(f"{self.label(INDEX)}: line {k + 2}: {text}; the files hold {line.strip()}")

    def _extra_lines(self, case, pe, first, who) -> None:
        """Each new case's fields.txt line and each lane's tiles.txt lines (one per role, in
        slot order), in lockstep with cases.txt: their case, PE, slot and role."""
        rf, rt = self.readers[FIELDS], self.readers[TILE_INFO]
        for k in range(len(case)):
            if first[k]:
                f, at = text_line(rf, FIELD_COLUMNS, FIELD_KINDS, _FIELD_PATTERN, who(k)[0])
                if int(f[0]) != case[k]:
                    raise GoldenError(f"{at}: case {f[0]}, expected case {case[k]} (one line per case, in order)")
            for slot, r in zip(slots(self.op), self.roles):
                f, at = text_line(rt, TILE_COLUMNS, TILE_KINDS, _TILE_PATTERN, who(k)[0])
                if (int(f[0]), int(f[1]), int(f[2]), f[3]) != (case[k], pe[k], slot, r):
                    raise GoldenError(f"{at}: case {f[0]} PE {f[1]} slot {f[2]} role {shown(f[3], 20)}, expected case "
                                      f"{case[k]} PE {pe[k]} slot {slot} role {r} (per lane, one line per role)")

    @staticmethod
    def _who(raw: bytes) -> str:
        f = raw.split(b" ", 2)
        return f"case {f[0].decode('utf-8', 'replace')} (PE {f[1].decode('utf-8', 'replace') if len(f) > 1 else '?'})"

    def _batch(self, raws: list[bytes]) -> str:
        """Check lines raws (of cases.txt, the next after those checked) and their lanes' lines."""
        L, line0 = len(raws), self.r.line - len(raws) + 1            # line0: the first's line number
        where = lambda k: f"{self.label(CASES)}: line {line0 + k}"    # noqa: E731
        text = [x[:-1] for x in raws]
        match = self.pattern.fullmatch
        for k, x in enumerate(text):
            if match(x) is None:
                raise field_error(x, self.cols, self.kinds, where(k), self._who(x))
        fields = np.array([x.split(b" ") for x in text])
        nums = fields[:, self.numeric].astype(np.int64)
        crcs = np.frombuffer(binascii.unhexlify(fields[:, self.body:].astype("S8").tobytes()), ">u4") \
            .reshape(L, -1).astype(np.int64)
        own = np.array([zlib.crc32(x[:len(x) - 9 * crcs.shape[1]]) for x in text], np.int64)
        col = lambda c: nums[:, self.at[c]]                          # noqa: E731
        case, pe, s0, sn = col("case"), col("pe"), col("stream_line"), col("stream_words")
        pcase, ppe, ps0, psn = (np.r_[p, x[:-1]] for p, x in zip(self.prev or (0, 0, 0, 0), (case, pe, s0, sn)))
        first = case != pcase
        first[0] |= self.prev is None
        expect = self.cases + np.cumsum(first) - 1
        bad = (own != crcs[:, 0]) | np.where(first, (case != expect) | (pe < -1) | (pe > 3),
                                             (ppe == -1) | (pe <= ppe) | (pe > 3) | (s0 != ps0) | (sn != psn))
        for r in self.roles:
            n = col(f"{r}_n")
            bad |= (n != 0) & ((n != col(f"{r}_row") * col(f"{r}_col")) | (self._width(fields[:, self.cols.index(
                f"{r}_dtype")]) != self.bits[r]))
        if bad.any():
            k = int(np.argmax(bad))
            self._lane_error(where(k), self._who(text[k]), own[k] != crcs[k, 0], bool(first[k]), int(expect[k]),
                             fields[k], nums[k], (int(ppe[k]), int(ps0[k]), int(psn[k])))
        who = lambda k: (self._who(text[k]), where(k))              # noqa: E731
        for k, r in enumerate(self.roles):
            n = col(f"{r}_n")
            for j, name in enumerate((f"{r}.hex", f"{r}.def.hex")):
                check_items(self.readers[name], name, crcs[:, 1 + 2 * k + j], col(f"{r}_line"), n, self.digits[name],
                            who)
        check_items(self.readers[STATUS], STATUS, crcs[:, -2], self.lanes + np.arange(L), np.ones(L, np.int64),
                    self.digits[STATUS], who)
        check_items(self.readers[STREAM], STREAM, crcs[:, -1], s0, np.where(first, sn, 0), self.digits[STREAM], who)
        self._extra_lines(case.tolist(), pe.tolist(), first.tolist(), who)
        self.lanes += L
        self.cases += int(first.sum())
        self.prev = (int(case[-1]), int(pe[-1]), int(s0[-1]), int(sn[-1]))
        return self._who(text[-1])

    def _bits(self, name: bytes) -> int:
        """The element bits of a `<role>_dtype` (0: no DataType)."""
        if name not in self.widths:
            self.widths[name] = 1 if name == PREDICATE.encode() else _container(name.decode("utf-8", "replace"))
        return self.widths[name]

    def _width(self, names: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(names, return_inverse=True)
        return np.array([self._bits(u) for u in uniq.tolist()], np.int64)[inv]

    def _lane_error(self, at, who, altered, first, expect, fields, nums, prev) -> None:
        """The GoldenError of a lane the batch check refused, found by the same checks in order
        (prev: the PE, stream_line and stream_words of the lane before)."""
        v = {c: int(nums[j]) for c, j in self.at.items()}
        if altered:
            raise GoldenError(f"{at}: {who}: altered (checksum differs)")
        if first and v["case"] != expect:
            raise GoldenError(f"{at}: {who}: expected case {expect} (every case of the partition, in order)")
        if first and not -1 <= v["pe"] <= 3:
            raise GoldenError(f"{at}: {who}: no such PE")
        if not first and (prev[0] == -1 or not prev[0] < v["pe"] <= 3
                          or (v["stream_line"], v["stream_words"]) != prev[1:]):
            raise GoldenError(f"{at}: {who}: not the next lane of case {v['case']} (PEs in order, the case's stream)")
        for r in self.roles:
            n, dtype = v[f"{r}_n"], fields[self.cols.index(f"{r}_dtype")]
            if n and (n != v[f"{r}_row"] * v[f"{r}_col"] or self._bits(dtype) != self.bits[r]):
                raise GoldenError(f"{at}: {who}: {r}_n {n} is not {r}_row x {r}_col elements of {self.bits[r]} bits "
                                  f"({shown(dtype.decode('utf-8', 'replace'), 20)})")
        raise GoldenError(f"{at}: {who}: malformed")
