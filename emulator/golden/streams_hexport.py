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

`check(H)` (`tile-emu verify H`) names the file and the case of anything truncated or altered;
it reads every file of a partition once, front to back in blocks, case by case: bounded memory.
Elements are unpacked and formatted with array operations over each run of cases that share a
layout; Python loops run per index line (formatting and checksums), as in hexport.py.
"""
from __future__ import annotations

import hashlib
import pathlib
import zlib

import numpy as np

from isa.atomicio import quote, shown, why

from . import streams_dataset as SD
from .dataset import MANIFEST, GoldenError, sha256, write_json
from .hexport import OpenFiles, _digits, _empty, _lines, check_parts, checked_line, prepare_out
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


def _text(v) -> str:
    return ABSENT if v in ("", None) else str(v)


def _element_bytes(desc, payload: np.ndarray, defined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, E * (digits + 1)) value lines and (m, E * 2) definedness lines of one tile of m cases."""
    m, count = payload.shape[0], desc.elements
    vals = unpack_payloads(np.ascontiguousarray(payload), count, desc.container).reshape(m, count)
    dfn = np.unpackbits(np.ascontiguousarray(defined), axis=-1, bitorder="little", count=count)
    d = _digits(desc.container)
    v = np.frombuffer(_lines(vals.reshape(-1), d), np.uint8).reshape(m, count * (d + 1))
    f = np.empty((m, count, 2), np.uint8)
    f[..., 0] = ord("0") + dfn
    f[..., 1] = ord("\n")
    return v, f.reshape(m, count * 2)


def _desc_fields(e: dict) -> list:
    return [_text(e["kind"]), _text(e["datatype"]), e["row"], e["col"], e["valid_row"], e["valid_col"], e["layout"]]


def _append_run(p: OpenFiles, t, lo: int, hi: int, lay: SD.Layout, where: str) -> None:
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
    stream_text = _lines(np.concatenate(words).astype(np.uint64), WORD_DIGITS)
    gpr_text = _lines(gprs.reshape(-1), WORD_DIGITS)
    line = WORD_DIGITS + 1                        # bytes of a stream or GPR line
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
            text[TILES].append(checked_line([case, *fields, i_line, n], [vrow[a:a + w], frow[b:b + 2 * n]]))
            a, b, i_line = a + w, b + 2 * n, i_line + n
        c_line = p.lines[COMMIT] + k * rec_lines
        vrow, frow = rec_v[k].tobytes(), rec_f[k].tobytes()
        a = b = 0
        for fields, i, v, f, n, d in records:
            w = 0 if v is None else v.shape[1]
            text[RECORDS].append(checked_line([case, *fields, f"{int(status[k, i]):02X}", d, c_line if n else -1, n],
                                             [vrow[a:a + w], frow[b:b + 2 * n]]))
            a, b, c_line = a + w, b + 2 * n, c_line + n
        nw = len(words[k])
        body = [case, cls[k], outcome[k], int(fault_block[k]), _text(reason[k]), int(executed[k]),
                p.lines[STREAM] + s_at, nw, p.lines[GPRS] + k * GPR_LINES,
                p.lines[TILES] + k * len(tiles), len(tiles), p.lines[RECORDS] + k * len(records), len(records)]
        g = k * GPR_LINES * line
        text[CASES].append(checked_line(body, [stream_text[s_at * line:(s_at + nw) * line],
                                               gpr_text[g:g + GPR_LINES * line]]))
        s_at += nw
    for name in INDEX_FILES:
        p.write(name, "".join(text[name]).encode(), len(text[name]))
    p.write(STREAM, stream_text, s_at)
    p.write(GPRS, gpr_text, m * GPR_LINES)
    p.write(INITIAL, init_v.tobytes(), m * init_lines)
    p.write(INITIAL_DEF, init_f.tobytes(), m * init_lines)
    p.write(COMMIT, rec_v.tobytes(), m * rec_lines)
    p.write(COMMIT_DEF, rec_f.tobytes(), m * rec_lines)
    p.cases += m


def _append(p: OpenFiles, t, where: str) -> None:
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
            p = OpenFiles(target, INDEX_FILES + DATA_FILES, {name: HEADERS[name] for name in INDEX_FILES})
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


READ_BYTES = 1 << 22        # the checker reads each file this many bytes at a time


class _Reader:
    """A file read front to back in blocks, handing out whole lines (bounded memory), hashed as
    it goes (SHA-256 of everything read)."""

    def __init__(self, path: pathlib.Path, label: str):
        self.label = label
        try:
            self.f = open(path, "rb")
        except OSError as exc:
            raise GoldenError(f"{label}: cannot read ({why(exc)})") from None
        self.sha = hashlib.sha256()
        self.buf = b""
        self.at = 0             # start of the unread part of buf
        self.line = 0           # lines handed out so far
        self.eof = False

    def _fill(self) -> bool:
        """Append the next block to the unread part of buf (which then starts at 0); False at the end."""
        block = self.f.read(READ_BYTES)
        if not block:
            self.eof = True
            return False
        self.sha.update(block)
        self.buf = self.buf[self.at:] + block
        self.at = 0
        return True

    def line_of_text(self) -> bytes | None:
        """The next line (with its newline), or None when the file ends first."""
        while True:
            k = self.buf.find(b"\n", self.at)
            if k >= 0:
                out, self.at = self.buf[self.at:k + 1], k + 1
                self.line += 1
                return out
            if not self._fill():
                return None

    def take_bytes(self, size: int, lines: int) -> bytes | None:
        """The next `size` bytes, counted as `lines` lines (an item of fixed-width lines: the
        caller checks that they are), or None when the file ends first."""
        while len(self.buf) - self.at < size:
            if not self._fill():
                return None
        out = self.buf[self.at:self.at + size]
        self.at += size
        self.line += lines
        return out

    def rest(self) -> int:
        """The number of bytes left unread (read to the end, so that the hash covers the file)."""
        left = len(self.buf) - self.at
        self.at = len(self.buf)
        while self._fill():
            left += len(self.buf)
            self.at = len(self.buf)
        return left

    def close(self) -> None:
        self.f.close()


def _check_part(folder: pathlib.Path, part: dict) -> int:
    """One partition, every file read once front to back in lockstep, case by case (memory
    bounded by READ_BYTES and one case's lines, whatever the export's size)."""
    base = folder / part["path"]
    files = part["files"]

    def label(name: str) -> str:
        return quote(f"{part['path']}/{name}")

    readers = {name: _Reader(base / name, label(name)) for name in INDEX_FILES + DATA_FILES}
    try:
        cases, last = _check_cases(readers, label)
        for name in (CASES, TILES, RECORDS) + DATA_FILES:   # the list of cases first: it says where the rest end
            r = readers[name]
            got = r.line - (name in INDEX_FILES)
            if r.rest():
                raise GoldenError(f"{label(name)}: trailing lines after the last case ({last})")
            if got != files[name]["lines"]:
                raise GoldenError(f"{label(name)}: {got} lines, the manifest says {files[name]['lines']} "
                                  f"(truncated or altered after {last})")
        for name, r in readers.items():
            if r.sha.hexdigest() != files[name]["sha256"]:
                raise GoldenError(f"{label(name)}: SHA-256 differs from the manifest (altered outside any case)")
    finally:
        for r in readers.values():
            r.close()
    if cases != part.get("cases"):
        raise GoldenError(f"{label(CASES)}: {cases} cases, the manifest says {part.get('cases')}")
    return cases


def _index_line(r: _Reader, name: str, who: str) -> dict | None:
    """The next line of index file `name` as a dict of its columns (ints where numeric), its own
    checksum verified; None at the end of the file."""
    raw = r.line_of_text()
    if raw is None:
        tail = r.rest()
        if tail:
            raise GoldenError(f"{r.label}: line {r.line + 2}: truncated (no final newline; after {who})")
        return None
    f = raw[:-1].decode("utf-8", "replace").split(" ")
    cols = HEADERS[name]
    at = f"{r.label}: line {r.line + 1}: case {f[0]}"
    if len(f) != len(cols):
        raise GoldenError(f"{at}: {len(f)} fields, the header has {len(cols)}")
    v: dict = dict(zip(cols, f))
    try:
        crcs = [int(x, 16) for x in f[-3:]]
        for c in ("case", "line", "n", "digits", "stream_line", "stream_words", "gprs_line", "tiles_line", "tiles_n",
                  "records_line", "records_n", "pe", "block"):
            if c in v:
                v[c] = int(v[c])
    except ValueError:
        raise GoldenError(f"{at}: a field is not a number") from None
    if zlib.crc32(" ".join(f[:-3]).encode()) != crcs[0]:
        raise GoldenError(f"{at}: altered (checksum differs)")
    v["crcs"] = crcs
    return v


_HEX_BYTE = np.zeros(256, bool)
_HEX_BYTE[np.frombuffer(b"0123456789ABCDEF", np.uint8)] = True


def _items(readers: dict, name: str, items: list[tuple]) -> None:
    """The next lines of data file `name` are those of `items` (who, crc, line, n, digits), in
    order: each starting where the one before ended, n lines of exactly `digits` hex digits,
    with the checksum its index line gives.  One read and one vectorised check per call."""
    r = readers[name]
    items = [x for x in items if x[3]]
    if not items:
        return
    expect = r.line
    for who, _, line, n, _ in items:
        if line != expect:
            raise GoldenError(f"{r.label}: {who}: its lines start at {line}, expected {expect}")
        expect += n
    ns = np.array([x[3] for x in items], np.int64)
    widths = np.array([x[4] + 1 for x in items], np.int64)
    sizes = ns * widths
    chunk = r.take_bytes(int(sizes.sum()), int(ns.sum()))
    if chunk is None:
        who, _, line, _, _ = items[0]
        raise GoldenError(f"{r.label}: {who}: truncated (its lines {line}..{line + int(ns.sum()) - 1} are missing)")
    arr = np.frombuffer(chunk, np.uint8)
    ends = np.cumsum(np.repeat(widths, ns)) - 1           # where each line's newline must be
    newline = np.zeros(arr.size, bool)
    newline[ends] = True
    ok = np.where(newline, arr == ord("\n"), _HEX_BYTE[arr])
    if not ok.all():
        bad_line = int(np.searchsorted(ends, int(np.argmax(~ok))))
        k = int(np.searchsorted(np.cumsum(ns), bad_line, "right"))
        who, _, line, _, digits = items[k]
        raise GoldenError(f"{r.label}: line {items[0][2] + bad_line + 1}: not {digits} hex digits ({who})")
    at = 0
    for (who, crc, _, _, _), size in zip(items, sizes.tolist()):
        if zlib.crc32(chunk[at:at + size]) != crc:
            raise GoldenError(f"{r.label}: {who}: altered (the lines of this item differ from their checksum)")
        at += size


def _check_cases(readers: dict, label) -> tuple[int, str]:
    """Walk cases.txt, each case's tiles and records lines and its lines of every data file;
    (cases, the last case's name)."""
    for name in INDEX_FILES:
        head = readers[name].line_of_text()
        if head is None or head.decode("utf-8", "replace") != "# " + " ".join(HEADERS[name]) + "\n":
            raise GoldenError(f"{label(name)}: line 1: not the header of a stream hex export's {name}")
    count, who = 0, "the header"
    while True:
        c = _index_line(readers[CASES], CASES, who)
        if c is None:
            return count, who
        who = f"case {c['case']}"
        for name, key in ((TILES, "tiles"), (RECORDS, "records")):
            r = readers[name]
            if c[f"{key}_line"] != r.line - 1:
                raise GoldenError(f"{label(CASES)}: line {count + 2}: {who}: {key}_line {c[key + '_line']}, expected "
                                  f"{r.line - 1}")
            vals, defs = ELEMENTS[name]
            items = []
            for _ in range(c[f"{key}_n"]):
                v = _index_line(r, name, who)
                if v is None:
                    raise GoldenError(f"{r.label}: {who}: truncated (its {key} lines are missing)")
                if v["case"] != c["case"]:
                    raise GoldenError(f"{r.label}: line {r.line}: case {v['case']}, expected {c['case']} "
                                      f"({key}_n of {who})")
                item = f"{who} ({'block ' + str(v['block']) + ', ' if name == RECORDS else ''}PE {v['pe']}, " \
                       f"tile {v['tile']})"
                items.append((item, v["crcs"], v["line"], v["n"], v["digits"]))
            _items(readers, vals, [(w, crcs[1], line, n, d) for w, crcs, line, n, d in items])
            _items(readers, defs, [(w, crcs[2], line, n, 1) for w, crcs, line, n, _ in items])
        _items(readers, STREAM, [(who, c["crcs"][1], c["stream_line"], c["stream_words"], WORD_DIGITS)])
        _items(readers, GPRS, [(who, c["crcs"][2], c["gprs_line"], GPR_LINES, WORD_DIGITS)])
        count += 1
