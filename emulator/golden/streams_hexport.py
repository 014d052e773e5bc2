"""HDL export of stream datasets: `tile-emu golden export STREAMS --format hex --out H`
(docs/golden-format.md, "Hex export of stream datasets").

A stream case is an initial machine state, a stream of blocks and the commit records the stream
made, so the files differ from a single-block export's (hexport.py), which has one tile per
operand role.  Per partition (blocks=K/shape=S), in case order:

- `stream.hex`: each case's `.tbs` stream as 64-bit little-endian words (16 digits a line);
- `gprs.hex`: each case's initial GPRs, PE 0 GPR 0 .. PE 3 GPR 31 (16 digits a line);
- `initial.hex` / `initial.def.hex`: the physical elements (tile-store order) of each initial
  (PE, tile), one a line, as many digits as the tile's container has, and `1`/`0` per element;
- `commit.hex` / `commit.def.hex`: the same of each commit record's destination tile;
- `tiles.txt` (one line per initial (case, PE, tile)), `records.txt` (one per record, commits in
  (block, PE) order then the fault record of a stream that stopped) and `cases.txt` (one per
  case): where each item's lines start, how many, its descriptor, and CRC-32s of the line's own
  text and of its lines of each file;
- `manifest.json` (written last): every file's line count, size and SHA-256.

`check(H)` (`tile-emu verify H`) names the file and the case of anything truncated or altered.
Elements are unpacked and formatted with array operations over each run of cases that share a
layout; Python loops run per index line (formatting and checksums), as in hexport.py.
"""
from __future__ import annotations

import hashlib
import pathlib
import zlib

import numpy as np

from isa.atomicio import atomic_open, quote, shown, why

from . import streams_dataset as SD
from .dataset import MANIFEST, GoldenError, sha256, write_json
from .export import hex_columns
from .hexport import _empty, check_parts, prepare_out
from .hexport import is_export as hexport_is_export
from ..tiles import unpack_payloads

FORMAT = "tile-emu stream hex export"
FORMAT_VERSION = 1
ABSENT = "-"
WORD_DIGITS = 16
GPR_LINES = SD.GPR_BYTES // 8

CASES, TILES, RECORDS = "cases.txt", "tiles.txt", "records.txt"
STREAM, GPRS = "stream.hex", "gprs.hex"
INITIAL, INITIAL_DEF, COMMIT, COMMIT_DEF = "initial.hex", "initial.def.hex", "commit.hex", "commit.def.hex"
DATA_FILES = (STREAM, GPRS, INITIAL, INITIAL_DEF, COMMIT, COMMIT_DEF)
INDEX_FILES = (CASES, TILES, RECORDS)

_DESC = ("kind", "datatype", "row", "col", "valid_row", "valid_col", "layout")
HEADERS = {
    CASES: ("case", "class", "outcome", "fault_block", "reason", "executed", "stream_line", "stream_words",
            "gprs_line", "tiles_line", "tiles_n", "records_line", "records_n", "crc_line", "crc_stream", "crc_gprs"),
    TILES: ("case", "pe", "tile", *_DESC, "digits", "line", "n", "crc_line", "crc_hex", "crc_def"),
    RECORDS: ("case", "block", "offset", "record", "mnemonic", "pe", "tile", *_DESC, "status", "digits", "line", "n",
              "crc_line", "crc_hex", "crc_def"),
}
# the element files an index file's `line`/`n` point into (values, definedness)
ELEMENTS = {TILES: (INITIAL, INITIAL_DEF), RECORDS: (COMMIT, COMMIT_DEF)}


def _digits(container: int) -> int:
    return (container + 3) // 4


def _text(v) -> str:
    return ABSENT if v in ("", None) else str(v)


def _with_newlines(cols: np.ndarray) -> np.ndarray:
    """(k, d) ASCII columns -> (k, d + 1) with a newline each."""
    return np.concatenate([cols, np.full((cols.shape[0], 1), ord("\n"), np.uint8)], axis=1)


def _element_bytes(desc, payload: np.ndarray, defined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, E * (digits + 1)) value lines and (m, E * 2) definedness lines of one tile of m cases."""
    m, count = payload.shape[0], desc.elements
    vals = unpack_payloads(np.ascontiguousarray(payload), count, desc.container).reshape(m, count)
    dfn = np.unpackbits(np.ascontiguousarray(defined), axis=-1, bitorder="little", count=count)
    d = _digits(desc.container)
    v = _with_newlines(hex_columns(vals.reshape(-1), d)).reshape(m, count * (d + 1))
    f = np.empty((m, count, 2), np.uint8)
    f[..., 0] = ord("0") + dfn
    f[..., 1] = ord("\n")
    return v, f.reshape(m, count * 2)


def _desc_fields(e: dict) -> list:
    return [_text(e["kind"]), _text(e["datatype"]), e["row"], e["col"], e["valid_row"], e["valid_col"], e["layout"]]


class _Part:
    """One partition's files, open while its Parquet files are appended."""

    def __init__(self, folder: pathlib.Path):
        self.names = INDEX_FILES + DATA_FILES
        self.ctx = {name: atomic_open(folder / name, "wb") for name in self.names}
        self.f = {name: c.__enter__() for name, c in self.ctx.items()}
        self.lines = dict.fromkeys(self.names, 0)
        self.cases = 0
        for name in INDEX_FILES:
            self.f[name].write(("# " + " ".join(HEADERS[name]) + "\n").encode())

    def close(self, exc=None) -> None:
        for c in self.ctx.values():
            c.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)

    def put(self, name: str, data: bytes, lines: int) -> None:
        self.f[name].write(data)
        self.lines[name] += lines


def _entry_line(fields: list, chunks: list[bytes]) -> str:
    body = " ".join(str(x) for x in fields)
    crcs = [zlib.crc32(body.encode())] + [zlib.crc32(c) for c in chunks]
    return body + " " + " ".join(f"{c:08x}" for c in crcs) + "\n"


def _append_run(p: _Part, t, lo: int, hi: int, lay: SD.Layout, where: str) -> None:
    """Cases lo..hi-1 of table t, which share layout `lay`."""
    m = hi - lo
    sub = t.slice(lo, m)
    col = {name: SD.binary_rows(sub.column(name), lay.width(name)) for name in SD.BINARY_COLUMNS}
    for name, a in col.items():
        if a is None:
            raise GoldenError(f"{where}: {name}: a value of another length than its layout gives")
    cases = sub.column("case").to_numpy()
    # initial tiles, one item per (PE, tile) of each entry; records, one each
    po, do = lay.initial_offsets
    tiles = []          # (fields, values (m, bytes), defined (m, bytes), elements)
    for i, (e, desc) in enumerate(zip(lay.initial, lay.initial_descs)):
        v, f = _element_bytes(desc, col["initial_payload"][:, po[i]:po[i + 1]],
                              col["initial_defined"][:, do[i]:do[i + 1]])
        for pe in e["pes"]:
            tiles.append(([pe, e["tile"], *_desc_fields(e), _digits(desc.container)], v, f, desc.elements))
    ro, rd = lay.record_offsets
    records = []
    status = col["record_status"]
    for i, (e, desc) in enumerate(zip(lay.records, lay.record_descs)):
        head = [e["block"], e["offset"], e["record"], _text(e["mnemonic"]), e["pe"], e["tile"]]
        if desc is None:
            records.append((head + _desc_fields(e), i, None, None, 0, 0))
            continue
        v, f = _element_bytes(desc, col["record_payload"][:, ro[i]:ro[i + 1]], col["record_defined"][:, rd[i]:rd[i + 1]])
        records.append((head + _desc_fields(e), i, v, f, desc.elements, _digits(desc.container)))
    streams = sub.column("stream").to_pylist()
    for k, s in enumerate(streams):
        if len(s) % 8:
            raise GoldenError(f"{where}: case {int(cases[k])}: stream is not a whole number of 64-bit words")
    words = [np.frombuffer(s, "<u8") for s in streams]
    gprs = np.ascontiguousarray(col["gprs"]).view("<u8").reshape(m, GPR_LINES)
    stream_text = _with_newlines(hex_columns(np.concatenate(words).astype(np.uint64), WORD_DIGITS)).tobytes() \
        if words else b""
    gpr_text = _with_newlines(hex_columns(gprs.reshape(-1), WORD_DIGITS)).reshape(m, -1)
    init_v = np.concatenate([x[1] for x in tiles], axis=1) if tiles else np.zeros((m, 0), np.uint8)
    init_f = np.concatenate([x[2] for x in tiles], axis=1) if tiles else np.zeros((m, 0), np.uint8)
    rec_v = [x[2] for x in records if x[2] is not None]
    rec_f = [x[3] for x in records if x[3] is not None]
    rec_v = np.concatenate(rec_v, axis=1) if rec_v else np.zeros((m, 0), np.uint8)
    rec_f = np.concatenate(rec_f, axis=1) if rec_f else np.zeros((m, 0), np.uint8)
    init_lines = sum(x[3] for x in tiles)
    rec_lines = sum(x[4] for x in records)
    cls, outcome = sub.column("class").to_pylist(), sub.column("outcome").to_pylist()
    fault_block, reason = sub.column("fault_block").to_numpy(), sub.column("reason").to_pylist()
    executed = sub.column("executed").to_numpy()
    text = {CASES: [], TILES: [], RECORDS: []}
    s_at = 0
    for k in range(m):
        case = int(cases[k])
        i_line = p.lines[INITIAL] + k * init_lines
        vrow, frow = init_v[k].tobytes(), init_f[k].tobytes()
        a = b = 0
        for fields, v, f, n in tiles:
            w = v.shape[1]
            text[TILES].append(_entry_line([case, *fields, i_line, n], [vrow[a:a + w], frow[b:b + 2 * n]]))
            a, b, i_line = a + w, b + 2 * n, i_line + n
        c_line = p.lines[COMMIT] + k * rec_lines
        vrow, frow = rec_v[k].tobytes(), rec_f[k].tobytes()
        a = b = 0
        for fields, i, v, f, n, d in records:
            w = 0 if v is None else v.shape[1]
            text[RECORDS].append(_entry_line([case, *fields, f"{int(status[k, i]):02X}", d, c_line if n else -1, n],
                                             [vrow[a:a + w], frow[b:b + 2 * n]]))
            a, b, c_line = a + w, b + 2 * n, c_line + n
        nw = len(words[k])
        body = [case, cls[k], outcome[k], int(fault_block[k]), _text(reason[k]), int(executed[k]),
                p.lines[STREAM] + s_at, nw, p.lines[GPRS] + k * GPR_LINES,
                p.lines[TILES] + k * len(tiles), len(tiles), p.lines[RECORDS] + k * len(records), len(records)]
        text[CASES].append(_entry_line(body, [stream_text[s_at * 17:(s_at + nw) * 17], gpr_text[k].tobytes()]))
        s_at += nw
    for name in INDEX_FILES:
        p.put(name, "".join(text[name]).encode(), len(text[name]))
    p.put(STREAM, stream_text, s_at)
    p.put(GPRS, gpr_text.tobytes(), m * GPR_LINES)
    p.put(INITIAL, init_v.tobytes(), m * init_lines)
    p.put(INITIAL_DEF, init_f.tobytes(), m * init_lines)
    p.put(COMMIT, rec_v.tobytes(), m * rec_lines)
    p.put(COMMIT_DEF, rec_f.tobytes(), m * rec_lines)
    p.cases += m


def _append(p: _Part, t, where: str) -> None:
    texts, index = SD.layouts_of(t)
    lays = [SD.parse_layout(x) for x in texts]        # open_stream_dataset parsed each already
    edges = [0, *(np.flatnonzero(np.diff(index)) + 1).tolist(), len(index)]
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi > lo:
            _append_run(p, t, lo, hi, lays[int(index[lo])], where)


def write_hex(folder, out) -> dict:
    """Export every partition of a stream dataset to folder `out` (absent or empty); the
    manifest written last.  GoldenError, one line, for a damaged dataset or an unusable `out`."""
    folder = pathlib.Path(folder)
    ds = SD.open_stream_dataset(folder)     # export refuses what verify refuses
    out, created = prepare_out(out)
    entries = []
    try:
        for part in ds.partitions:
            target = out / part.path
            target.mkdir(parents=True, exist_ok=True)
            p = _Part(target)
            try:
                for pt, k, rec in ds.files:
                    if pt == part:
                        _append(p, ds.read(pt, k, rec), shown(rec["path"]))
            except BaseException as exc:
                p.close(exc)
                raise
            p.close()
            entries.append({"path": part.path, **part.keys(), "cases": p.cases, "files": {
                name: {"lines": p.lines[name], "bytes": (target / name).stat().st_size, "sha256": sha256(target / name)}
                for name in p.names}})
    except BaseException:                 # a failed export leaves --out as it found it
        _empty(out, remove=created)
        raise
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "dataset": {
        "manifest_sha256": sha256(folder / MANIFEST), "profile": ds.manifest.get("profile"),
        "tile_emu_version": ds.manifest.get("tile_emu_version")}, "partitions": entries}
    write_json(out / MANIFEST, manifest)
    return manifest


# ---------------------------------------------------------------------------- checking

def is_export(folder) -> bool:
    """Whether `folder` holds a stream hex export (its manifest says so)."""
    return hexport_is_export(folder, FORMAT)


def check(folder) -> int:
    """Check a stream hex export end to end; the number of cases checked.  GoldenError, one line
    naming the file and the case, for anything truncated, altered or malformed."""
    return check_parts(folder, FORMAT, FORMAT_VERSION, _check_part)


class _Lines:
    """An element file split into lines (vectorised): where each starts and how long it is."""

    def __init__(self, data: bytes):
        self.data = data
        arr = np.frombuffer(data, np.uint8)
        ends = np.flatnonzero(arr == ord("\n"))
        self.starts = np.r_[0, ends[:-1] + 1].astype(np.int64) if len(ends) else np.zeros(0, np.int64)
        self.lengths = ends - self.starts
        self.ends = ends
        self.tail = len(data) - (int(ends[-1]) + 1 if len(ends) else 0)     # bytes after the last newline
        hexd = ((arr >= ord("0")) & (arr <= ord("9"))) | ((arr >= ord("A")) & (arr <= ord("F"))) | (arr == ord("\n"))
        bad = np.flatnonzero(~hexd)
        self.bad_line = int(np.searchsorted(ends, bad[0])) if len(bad) else -1

    def __len__(self) -> int:
        return len(self.ends)

    def chunk(self, line: int, n: int) -> bytes:
        if n == 0:
            return b""
        return self.data[int(self.starts[line]): int(self.ends[line + n - 1]) + 1]


def _check_part(folder: pathlib.Path, part: dict) -> int:
    base = folder / part["path"]
    files = part["files"]

    def label(name: str) -> str:
        return quote(f"{part['path']}/{name}")

    raw, changed = {}, set()
    for name in INDEX_FILES + DATA_FILES:
        try:
            raw[name] = (base / name).read_bytes()
        except OSError as exc:
            raise GoldenError(f"{label(name)}: cannot read ({why(exc)})") from None
        if hashlib.sha256(raw[name]).hexdigest() != files[name]["sha256"]:
            changed.add(name)
    index = {}
    for name in INDEX_FILES:
        text = raw[name].decode("utf-8", "replace").split("\n")
        if text[0] != "# " + " ".join(HEADERS[name]):
            raise GoldenError(f"{label(name)}: line 1: not the header of a stream hex export's {name}")
        rows = text[1:]
        if rows and rows[-1] == "":
            rows.pop()
        elif rows:
            raise GoldenError(f"{label(name)}: line {len(rows) + 1}: truncated (no final newline; "
                              f"case {rows[-1].split(' ', 1)[0]})")
        if len(rows) != files[name]["lines"]:
            last = rows[-1].split(" ", 1)[0] if rows else "?"
            raise GoldenError(f"{label(name)}: {len(rows)} lines, the manifest says {files[name]['lines']} "
                              f"(truncated or altered after case {last})")
        index[name] = [r.split(" ") for r in rows]
    lines = {name: _Lines(raw[name]) for name in DATA_FILES}
    owners = {name: [] for name in DATA_FILES}      # (first line, n, who) of every item, per file

    def fields_of(name: str, k: int, f: list) -> dict:
        cols = HEADERS[name]
        who = f"case {f[0]}"
        if len(f) != len(cols):
            raise GoldenError(f"{label(name)}: line {k + 2}: {who}: {len(f)} fields, the header has {len(cols)}")
        body = " ".join(f[:-3])
        v = dict(zip(cols, f))
        try:
            crcs = [int(x, 16) for x in f[-3:]]
            ints = {c: int(v[c]) for c in ("case", "line", "n", "digits", "stream_line", "stream_words", "gprs_line",
                                            "tiles_line", "tiles_n", "records_line", "records_n", "pe", "block")
                    if c in v}
        except ValueError:
            raise GoldenError(f"{label(name)}: line {k + 2}: {who}: a field is not a number") from None
        if zlib.crc32(body.encode()) != crcs[0]:
            raise GoldenError(f"{label(name)}: line {k + 2}: {who}: altered (checksum differs)")
        return {**v, **ints, "crcs": crcs}

    def item(name: str, who: str, crc: int, line: int, n: int, digits: int | None) -> None:
        """Lines line..line+n-1 of data file `name` belong to `who`: whole, of `digits` digits, checksummed."""
        ls = lines[name]
        if n and (line < 0 or line + n > len(ls)):
            raise GoldenError(f"{label(name)}: {who}: truncated (its lines {line}..{line + n - 1} are missing)")
        if n and digits is not None and not (ls.lengths[line:line + n] == digits).all():
            bad = line + int(np.argmax(ls.lengths[line:line + n] != digits))
            raise GoldenError(f"{label(name)}: line {bad + 1}: not {digits} hex digits ({who})")
        if zlib.crc32(ls.chunk(line, n)) != crc:
            bad = name if name in changed or not changed & set(INDEX_FILES) else sorted(changed & set(INDEX_FILES))[0]
            raise GoldenError(f"{label(bad)}: {who}: altered (the lines of this item differ from their checksum)")
        owners[name].append((line, n, who))

    expect = {name: 0 for name in DATA_FILES}
    per_case = {TILES: {}, RECORDS: {}}
    for name in (TILES, RECORDS):
        vals, defs = ELEMENTS[name]
        for k, f in enumerate(index[name]):
            v = fields_of(name, k, f)
            who = f"case {v['case']} ({'block ' + str(v['block']) + ', ' if name == RECORDS else ''}PE {v['pe']}, " \
                  f"tile {v['tile']})"
            n = v["n"]
            if n:
                if v["line"] != expect[vals]:
                    raise GoldenError(f"{label(name)}: line {k + 2}: {who}: line {v['line']}, expected {expect[vals]}")
                expect[vals] += n
                expect[defs] += n
            item(vals, who, v["crcs"][1], v["line"], n, v["digits"])
            item(defs, who, v["crcs"][2], v["line"], n, 1)
            per_case[name].setdefault(v["case"], []).append(k)
    for k, f in enumerate(index[CASES]):
        v = fields_of(CASES, k, f)
        who = f"case {v['case']}"
        for name, key in ((TILES, "tiles"), (RECORDS, "records")):
            got = per_case[name].get(v["case"], [])
            if got != list(range(v[f"{key}_line"], v[f"{key}_line"] + v[f"{key}_n"])):
                raise GoldenError(f"{label(CASES)}: line {k + 2}: {who}: {key}_line/{key}_n do not name its lines "
                                  f"of {name}")
        if v["stream_line"] != expect[STREAM] or v["gprs_line"] != expect[GPRS]:
            raise GoldenError(f"{label(CASES)}: line {k + 2}: {who}: stream_line/gprs_line out of order")
        expect[STREAM] += v["stream_words"]
        expect[GPRS] += GPR_LINES
        item(STREAM, who, v["crcs"][1], v["stream_line"], v["stream_words"], WORD_DIGITS)
        item(GPRS, who, v["crcs"][2], v["gprs_line"], GPR_LINES, WORD_DIGITS)
    for name in DATA_FILES:
        ls = lines[name]
        if ls.bad_line >= 0:
            raise GoldenError(f"{label(name)}: line {ls.bad_line + 1}: not hex digits ({_owner(owners[name], ls.bad_line)})")
        if ls.tail or len(ls) != expect[name]:
            raise GoldenError(f"{label(name)}: {len(ls) + bool(ls.tail)} lines, the index files list {expect[name]} "
                              f"(trailing lines after the last case)")
    for name in INDEX_FILES + DATA_FILES:
        if name in changed:
            raise GoldenError(f"{label(name)}: SHA-256 differs from the manifest (altered outside any case)")
    if len(index[CASES]) != part.get("cases"):
        raise GoldenError(f"{label(CASES)}: {len(index[CASES])} cases, the manifest says {part.get('cases')}")
    return len(index[CASES])


def _owner(items: list, line: int) -> str:
    for start, n, who in items:
        if n and start <= line < start + n:
            return who
    return "after the last case"
