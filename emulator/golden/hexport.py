"""HDL export: `tile-emu golden export DIR --format hex --out H` (docs/golden-format.md, "Hex export").

Per partition of a golden dataset, `$readmemh`-readable files -- one element per line, as many
hex digits as the DataType's container has -- of every source role and of the expected
destination, each with a definedness file (`1`/`0` per element), the expected numeric status
and the encoded stream, plus `cases.txt`, one line per (case, selected PE) saying where that
lane's elements start in each file, the shapes, the outcome and per-file CRC-32 checksums of
the lane's lines; `manifest.json` (written last) lists every file with its line count and
SHA-256.  `check(H)` (`tile-emu verify H`) finds a truncated or altered export and names the
file and the case.

Elements are gathered, unpacked and formatted with array operations over a whole Parquet
file; the only Python loops run per case and PE (the cases.txt lines and their checksums).
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import zlib

import numpy as np
import pyarrow as pa

from isa import encoding, instructions as I
from isa.atomicio import atomic_open, quote, shown, why
from isa.datatypes import datatype
from isa.errors import DecodeError

from .dataset import MANIFEST, GoldenError, open_dataset, sha256, write_json
from .export import hex_columns
from .replay import require_well_formed
from .rows import gprs_of, tiles_of

FORMAT = "tile-emu hex export"
FORMAT_VERSION = 1
CASES = "cases.txt"
STATUS = "status.hex"
STREAM = "stream.hex"
ABSENT = "-"
PREDICATE = "PRED"
WORD_DIGITS = 16            # the stream as 64-bit little-endian words (docs/encoding.md)
# cases.txt: the lane's own columns, then per tile role, then one CRC-32 per file
LANE_COLUMNS = ("case", "pe", "outcome", "class", "reason", "r1", "r2", "stream_line", "stream_words")
ROLE_COLUMNS = ("line", "n", "row", "col", "vrow", "vcol", "layout", "dtype")


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
        src = datatype(part["dtype"])
        dst = datatype(part["dst"]) if part.get("dst") else src
        instr = I.lookup(self.op)
        self.dest = instr.dest
        # each role's element width: the DataType's container; predicates (TCMP's destination,
        # TSEL's mask source, Decisions 069/079) one bit
        self.bits = {}
        for k, r in enumerate(self.roles):
            is_dest = k == len(self.roles) - 1
            pred = instr.dest_kind == "predicate" if is_dest else (instr.schema == I.SELECT and k == 0)
            self.bits[r] = 1 if pred else (dst if is_dest else src).container
        super().__init__(folder, [CASES] + data_files(self.op), {CASES: header(self.op)})


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
    blocks: dict[bytes, list[int]] = {}

    def bindings(data: bytes, case: int) -> list[int]:
        if data not in blocks:
            try:
                b = encoding.decode(data)
            except DecodeError as exc:
                raise GoldenError(f"{quote(path)}: case {case}: stream does not decode ({exc})") from None
            if len(b) != 1:
                raise GoldenError(f"{quote(path)}: case {case}: the stream holds {len(b)} blocks, not one")
            blocks[data] = [x.tile for x in b[0].iot]
        return blocks[data]

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
    for name, (data, width, _) in chunks.items():
        p.write(name, data, len(data) // width)
    p.cases += n


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
    for name in [CASES] + data_files(p.op):
        files[name] = {"lines": p.lines[name], "bytes": (target / name).stat().st_size,
                       "sha256": sha256(target / name)}
        if name != CASES:
            files[name]["digits"] = _file_digits(name, p.bits)
    return {"path": path, **{k: part[k] for k in ("op", "dtype", "dst", "rmode", "sat") if part.get(k) is not None},
            "cases": p.cases, "roles": {r: {"bits": p.bits[r]} for r in p.roles}, "files": files}


# ---------------------------------------------------------------------------- checking

def is_export(folder, fmt: str = FORMAT) -> bool:
    """Whether `folder` holds a hex export of format `fmt` (its manifest says so)."""
    try:
        return json.loads((pathlib.Path(folder) / MANIFEST).read_text()).get("format") == fmt
    except (OSError, ValueError, AttributeError):
        return False


def read_export_manifest(folder: pathlib.Path, fmt: str = FORMAT, version: int = FORMAT_VERSION) -> dict:
    """An export's manifest, parsed; GoldenError unless it names format `fmt` version `version`."""
    from isa import jsontext
    path = folder / MANIFEST
    try:
        m = jsontext.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, jsontext.JsonTextError) as exc:
        raise GoldenError(f"{shown(path)}: cannot read the manifest ({why(exc)})") from None
    if not isinstance(m, dict) or m.get("format") != fmt or m.get("format_version") != version:
        raise GoldenError(f"{shown(path)}: not a {fmt} version {version} manifest")
    return m


def check(folder) -> int:
    """Check a hex export end to end; the number of (case, PE) lanes checked.  GoldenError,
    one line naming the file and the case, for anything truncated, altered or malformed."""
    return check_parts(folder, FORMAT, FORMAT_VERSION, _check_part)


def check_parts(folder, fmt: str, version: int, check_part) -> int:
    """The sum of check_part(folder, partition) over an export's manifest of format `fmt`; a
    partition entry without the keys check_part reads is one GoldenError line."""
    folder = pathlib.Path(folder)
    m = read_export_manifest(folder, fmt, version)
    total = 0
    try:
        for part in m["partitions"]:
            total += check_part(folder, part)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, GoldenError):
            raise
        raise GoldenError(f"{shown(folder / MANIFEST)}: malformed partition entry ({exc!r:.80})") from None
    return total


def _check_part(folder: pathlib.Path, part: dict) -> int:
    op, base = part["op"], folder / part["path"]
    names = data_files(op)
    files = part["files"]
    label = lambda name: quote(f"{part['path']}/{name}")     # noqa: E731
    data, changed = {}, set()
    for name in [CASES] + names:
        path = base / name
        try:
            data[name] = path.read_bytes()
        except OSError as exc:
            raise GoldenError(f"{label(name)}: cannot read ({why(exc)})") from None
        if hashlib.sha256(data[name]).hexdigest() != files[name]["sha256"]:
            changed.add(name)
    cols = header(op)
    text = data[CASES].decode("utf-8", "replace").split("\n")
    if text[0] != "# " + " ".join(cols):
        raise GoldenError(f"{label(CASES)}: line 1: not the header of a {op} export")
    lanes = text[1:]
    if lanes and lanes[-1] == "":
        lanes.pop()
    elif lanes:
        raise GoldenError(f"{label(CASES)}: line {len(lanes) + 1}: truncated (no final newline)")
    if len(lanes) != files[CASES]["lines"]:
        case = _case_of(lanes[-1]) if lanes else "?"
        raise GoldenError(f"{label(CASES)}: {len(lanes)} lanes, the manifest says {files[CASES]['lines']} "
                          f"(truncated or altered after case {case})")
    width = {name: files[name]["digits"] + 1 for name in names}
    for name in names:                                     # whole lines of hex digits
        _check_lines(data[name], width[name], label(name), lanes, name, op)
    expect = {name: 0 for name in names}
    for k, line in enumerate(lanes):
        f = line.split(" ")
        where = f"case {f[0]} (PE {f[1] if len(f) > 1 else '?'})"
        if len(f) != len(cols):
            raise GoldenError(f"{label(CASES)}: line {k + 2}: {where}: {len(f)} fields, the header has {len(cols)}")
        try:
            nums = {c: int(v) for c, v in zip(cols, f) if not c.startswith(("crc_", "outcome", "class", "reason"))
                    and not c.endswith("_dtype")}
            crcs = [int(v, 16) for v in f[len(cols) - len(names) - 1:]]
        except ValueError:
            raise GoldenError(f"{label(CASES)}: line {k + 2}: {where}: a field is not a number") from None
        body = " ".join(f[: len(cols) - len(names) - 1])
        if zlib.crc32(body.encode()) != crcs[0]:
            raise GoldenError(f"{label(CASES)}: line {k + 2}: {where}: altered (checksum differs)")
        ranges = {}
        for r in roles(op):
            start, n = nums[f"{r}_line"], nums[f"{r}_n"]
            if n and start != expect[f"{r}.hex"]:
                raise GoldenError(f"{label(CASES)}: line {k + 2}: {where}: {r}_line {start}, expected "
                                  f"{expect[r + '.hex']}")
            if n:
                expect[f"{r}.hex"] += n
                expect[f"{r}.def.hex"] += n
            ranges[f"{r}.hex"] = ranges[f"{r}.def.hex"] = (start, n)
        ranges[STATUS] = (k, 1)
        expect[STATUS] += 1
        s0, sn = nums["stream_line"], nums["stream_words"]
        first = k == 0 or lanes[k - 1].split(" ", 1)[0] != f[0]
        ranges[STREAM] = (s0, sn if first else 0)
        if first:
            if s0 != expect[STREAM]:
                raise GoldenError(f"{label(CASES)}: line {k + 2}: {where}: stream_line {s0}, expected {expect[STREAM]}")
            expect[STREAM] += sn
        for name, crc in zip(names, crcs[1:]):
            a, cnt = ranges[name]
            w = width[name]
            chunk = data[name][a * w: (a + cnt) * w] if cnt else b""
            if cnt and len(chunk) != cnt * w:
                raise GoldenError(f"{label(name)}: {where}: truncated (its lines {a}..{a + cnt - 1} are missing)")
            if zlib.crc32(chunk) != crc:
                bad = name if name in changed or CASES not in changed else CASES
                raise GoldenError(f"{label(bad)}: {where}: altered (the lines of this case differ from "
                                  f"their checksum)")
    for name in names:
        if len(data[name]) != expect[name] * width[name]:
            raise GoldenError(f"{label(name)}: {len(data[name]) // width[name]} lines, the cases list "
                              f"{expect[name]} (trailing lines after the last case)")
    for name in [CASES] + names:
        if name in changed:
            raise GoldenError(f"{label(name)}: SHA-256 differs from the manifest (altered outside any case)")
    return len(lanes)


def _case_of(line: str) -> str:
    f = line.split(" ")
    return f"{f[0]} (PE {f[1]})" if len(f) > 1 else "?"


def _check_lines(data: bytes, width: int, label: str, lanes: list[str], name: str, op: str) -> None:
    """Every line is `width - 1` hex digits and a newline; the first bad line names its case."""
    n = len(data) // width
    arr = np.frombuffer(data[: n * width], np.uint8).reshape(n, width)
    ok = arr[:, -1] == ord("\n")
    digits = arr[:, :-1]
    hexd = ((digits >= ord("0")) & (digits <= ord("9"))) | ((digits >= ord("A")) & (digits <= ord("F")))
    ok &= hexd.all(axis=1)
    if len(data) % width:
        ok = np.r_[ok, False]
    if not ok.all():
        bad = int(np.argmax(~ok))
        raise GoldenError(f"{label}: line {bad + 1}: not {width - 1} hex digits ({_owner(lanes, name, op, bad)})")


def _owner(lanes: list[str], name: str, op: str, line: int) -> str:
    """The case whose lines of file `name` include `line` (0-based)."""
    cols = header(op)
    role = name.split(".")[0]
    for k, text in enumerate(lanes):
        f = text.split(" ")
        if len(f) != len(cols):
            continue
        v = dict(zip(cols, f))
        try:
            if name == STATUS:
                start, n = k, 1
            elif name == STREAM:
                start, n = int(v["stream_line"]), int(v["stream_words"])
            else:
                start, n = int(v[f"{role}_line"]), int(v[f"{role}_n"])
        except (KeyError, ValueError):
            continue
        if n and start <= line < start + n:
            return f"case {f[0]} (PE {f[1]})"
    return "after the last case"
