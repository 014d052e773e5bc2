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
- since format version 2: `machine.txt` (per case the store sizes and the fault's reason code
  and field), `tile_info.txt` and `record_info.txt` (line for line with tiles.txt and
  records.txt: location, kind, capacity, representation, TIMG2COL descriptor; a fault record's
  reason and field) and `index.txt` (every file's line count);
- `manifest.json` (written last): every file's line count, size and SHA-256.

`check(H)` (`tile-emu verify H`) names the file and the case of anything truncated or altered;
it reads every file of a partition once, front to back in blocks, case by case: bounded memory.
Elements are unpacked and formatted with array operations over each run of cases that share a
layout; Python loops run per index line (formatting and checksums), as in hexport.py.
"""
from __future__ import annotations

import pathlib
import zlib

import numpy as np

from isa.atomicio import shown
from isa.datatypes import datatype
from isa.layouts import cube_elements

from . import hexport, streams_dataset as SD
from .dataset import MANIFEST, GoldenError, sha256, write_json
from .hexport import FILE_SCHEMA, OpenFiles, _digits, _empty, _lines, NUMBER, TEXT, check_items, check_parts, \
    check_partition, checked_line, field_error, fields_pattern, index_line, manifest_schema, prepare_out
from .hexport import is_export as hexport_is_export
from ..tiles import unpack_payloads

FORMAT = "tile-emu stream hex export"
FORMAT_VERSION = 2      # 2: machine.txt, tile_info.txt, record_info.txt, index.txt added (version 1's files unchanged)
ABSENT = "-"
WORD_DIGITS = 16
GPR_LINES = SD.GPR_BYTES // 8

CASES, TILES, RECORDS = "cases.txt", "tiles.txt", "records.txt"
STREAM, GPRS = "stream.hex", "gprs.hex"
INITIAL, INITIAL_DEF, COMMIT, COMMIT_DEF = "initial.hex", "initial.def.hex", "commit.hex", "commit.def.hex"
DATA_FILES = (STREAM, GPRS, INITIAL, INITIAL_DEF, COMMIT, COMMIT_DEF)
MACHINE, TILE_INFO, RECORD_INFO, INDEX = "machine.txt", "tile_info.txt", "record_info.txt", "index.txt"
INDEX_FILES = (CASES, TILES, RECORDS)
EXTRA_FILES = (MACHINE, TILE_INFO, RECORD_INFO, INDEX)
_INFO = ("location", "kind", "capacity", "representation")
EXTRA_HEADERS = {
    MACHINE: ("case", "local_bytes", "matrix_bytes", "reason_code", "reason", "field"),
    TILE_INFO: ("case", "pe", "tile", *_INFO, *hexport.FMAP_COLUMNS),
    RECORD_INFO: ("case", "block", "record", "pe", "tile", *_INFO, "reason_code", "field"),
}

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


def _info(e: dict) -> list:
    """location, kind, capacity, representation codes of a tile entry (-1: none, a fault record)."""
    return [hexport.LOCATION_CODES.get(e["location"], -1), hexport.KIND_CODES.get(e["kind"], -1), int(e["capacity"]),
            hexport.REPRESENTATION_CODES.get(e["representation"], -1)]


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
    text = {CASES: [], TILES: [], RECORDS: [], MACHINE: [], TILE_INFO: [], RECORD_INFO: []}
    codes = hexport.reason_codes()
    local_b, matrix_b = sub.column("local_bytes").to_numpy(), sub.column("matrix_bytes").to_numpy()
    field = sub.column("field").to_pylist()
    tile_info = [[pe, e["tile"], *_info(e), *hexport.fmap_fields(e["fmap_layout"], e["fmap_params"],
                                                                e["fmap_pad_bits"], e["fmap_transposed"])]
                 for e in lay.initial for pe in e["pes"]]
    rec_kind = [(e["block"], e["record"], e["pe"], e["tile"], _info(e), e["record"] == "fault") for e in lay.records]
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
        code = codes.get(reason[k] or "", -1)
        text[MACHINE].append(checked_line([case, int(local_b[k]), int(matrix_b[k]), code, _text(reason[k]),
                                           hexport._word(field[k])], []))
        text[TILE_INFO] += [checked_line([case, *x], []) for x in tile_info]
        text[RECORD_INFO] += [checked_line([case, blk, rec, pe, tile, *info, code if fault else 0,
                                            hexport._word(field[k]) if fault else ABSENT], [])
                              for blk, rec, pe, tile, info, fault in rec_kind]
        nw = len(words[k])
        body = [case, cls[k], outcome[k], int(fault_block[k]), _text(reason[k]), int(executed[k]),
                p.lines[STREAM] + s_at, nw, p.lines[GPRS] + k * GPR_LINES,
                p.lines[TILES] + k * len(tiles), len(tiles), p.lines[RECORDS] + k * len(records), len(records)]
        g = k * GPR_LINES * line
        text[CASES].append(checked_line(body, [stream_text[s_at * line:(s_at + nw) * line],
                                               gpr_text[g:g + GPR_LINES * line]]))
        s_at += nw
    for name in text:
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
            p = OpenFiles(target, INDEX_FILES + DATA_FILES + EXTRA_FILES,
                          {**{name: HEADERS[name] for name in INDEX_FILES},
                           **{name: (*cols, "crc_line") for name, cols in EXTRA_HEADERS.items()},
                           INDEX: hexport.INDEX_COLUMNS})
            try:
                for pt, k, rec in ds.files:
                    if pt == part:
                        _append(p, ds.read(pt, k, rec), shown(rec["path"]))
            except BaseException as exc:
                p.close(exc)
                raise
            rows = index_rows(p.lines, p.cases)
            p.write(INDEX, "".join(f"{k} {v}\n" for k, v in rows).encode(), len(rows))
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


def index_rows(lines: dict, cases: int) -> list[tuple[str, int]]:
    """index.txt's rows: (file, lines) of every other file (index files: after their header),
    in a fixed order, then (`cases`, N)."""
    return [(n, lines[n]) for n in INDEX_FILES + DATA_FILES + EXTRA_FILES[:-1]] + [("cases", cases)]


# ---------------------------------------------------------------------------- checking

MANIFEST_SCHEMA = manifest_schema(FORMAT, {"blocks": {"type": "integer"}, "shape": {"type": "string", "maxLength": 64}},
                                  ["blocks", "shape"], {}, FILE_SCHEMA)


def is_export(folder) -> bool:
    """Whether `folder` holds a stream hex export (its manifest says so)."""
    return hexport_is_export(folder, FORMAT)


def check(folder) -> int:
    """Check a stream hex export end to end; the number of cases checked.  GoldenError, one line
    naming the file and the case, for anything truncated, altered or malformed (hexport.py's
    steps, with this kind's partitions and files)."""
    return check_parts(folder, FORMAT, FORMAT_VERSION, MANIFEST_SCHEMA, _describe, _check_part)


def _describe(part: dict, where: str) -> tuple[str, dict]:
    """(the path, {file: {}}) a stream partition's keys give (a stream length and shape class a
    stream dataset can have)."""
    try:
        found = SD.partitions(SD.StreamParams(blocks=part["blocks"], cases=1, seed=0, shapes=(part["shape"],)))
    except GoldenError as exc:
        raise GoldenError(f"{where}: {exc}") from None
    return found[0].path, {name: {} for name in INDEX_FILES + DATA_FILES + EXTRA_FILES}


def _check_part(folder: pathlib.Path, part: dict) -> int:
    """One partition, every file read once front to back in lockstep, case by case (memory
    bounded by READ_BYTES and a batch of cases' index lines, whatever the export's size)."""
    index_text = []

    def walk(readers, label):
        for name, cols in EXTRA_HEADERS.items():
            hexport.expect_lines(readers[name], ["# " + " ".join([*cols, "crc_line"]) + "\n"], "the format's header must")
        hexport.expect_lines(readers[INDEX], ["# " + " ".join(hexport.INDEX_COLUMNS) + "\n"], "the format's header must")
        r = readers[INDEX]              # compared once finish() has checked the manifest's counts
        index_text.extend(r.line_of_text() for _ in range(len(INDEX_FILES + DATA_FILES + EXTRA_FILES)))
        return _check_cases(readers, label)

    count = check_partition(folder, part, INDEX_FILES + EXTRA_FILES, DATA_FILES, walk)
    lines = {name: f["lines"] for name, f in part["files"].items()}
    for k, (got, (name, n)) in enumerate(zip(index_text, index_rows(lines, part["cases"]))):
        if got is None or got.decode("utf-8", "replace") != f"{name} {n}\n":
            text = "its end" if got is None else shown(got.decode("utf-8", "replace").strip(), 60)
            raise GoldenError(f"{shown(part['path'] + '/' + INDEX)}: line {k + 2}: {text}; the files hold {name} {n}")
    return count


_EXTRA_KINDS = {name: [TEXT if c in ("reason", "field", "record") else rb"[0-9A-F]{16}" if c == "fmap_pad_bits"
                       else rb"-?[0-9]{1,20}" for c in cols] for name, cols in EXTRA_HEADERS.items()}
_EXTRA_PATTERNS = {name: fields_pattern(kinds, 1) for name, kinds in _EXTRA_KINDS.items()}


def _extra(r, name: str, who: str, want: dict) -> None:
    """The next line of machine.txt / tile_info.txt / record_info.txt: well formed, its own
    checksum, and the item `want` ({column: value}) of the index line it belongs to."""
    f, at = hexport.text_line(r, EXTRA_HEADERS[name], _EXTRA_KINDS[name], _EXTRA_PATTERNS[name], who)
    v = dict(zip(EXTRA_HEADERS[name], f))
    for k, x in want.items():
        if v[k] != str(x):
            raise GoldenError(f"{at}: {who}: {k} {shown(v[k], 20)}, expected {x} (one line per line of "
                              f"{ {MACHINE: CASES, TILE_INFO: TILES, RECORD_INFO: RECORDS}[name]}, in order)")


_NUMBERS = ("case", "line", "n", "digits", "stream_line", "stream_words", "gprs_line", "tiles_line", "tiles_n",
            "records_line", "records_n", "pe", "block", "tile", "row", "col", "executed", "fault_block")
_KINDS = {name: [NUMBER if c in _NUMBERS else TEXT for c in cols[:-3]] for name, cols in HEADERS.items()}
_PATTERNS = {name: fields_pattern(kinds, 3) for name, kinds in _KINDS.items()}


_NUMERIC = {name: [k for k, c in enumerate(cols) if c in _NUMBERS] for name, cols in HEADERS.items()}


def _index_line(r, name: str, who: str) -> dict | None:
    """The next line of index file `name` as a dict of its columns (ints where numeric), its own
    checksum verified, `at` saying where it is; None at the end of the file."""
    raw = index_line(r, who)
    if raw is None:
        return None
    text = raw[:-1]
    at = f"{r.label}: line {r.line}"
    if _PATTERNS[name].fullmatch(text) is None:
        case = text.split(b" ", 1)[0].decode("utf-8", "replace")
        raise field_error(text, HEADERS[name], _KINDS[name], at, f"case {case}")
    f: list = text.decode("utf-8", "replace").split(" ")
    if zlib.crc32(text[:len(text) - 27]) != int(f[-3], 16):
        raise GoldenError(f"{at}: case {f[0]}: altered (checksum differs)")
    for k in _NUMERIC[name]:
        f[k] = int(f[k])
    v = dict(zip(HEADERS[name], f))
    v["crcs"], v["at"] = [int(x, 16) for x in f[-3:]], at
    return v


_DIGITS: dict[tuple[str, str], int | None] = {}


def _element_digits(kind: str, name: str) -> int | None:
    """The digits of the elements of a tile of `kind` and DataType `name` (None: no tile has them)."""
    if (kind, name) not in _DIGITS:
        try:
            _DIGITS[kind, name] = 1 if kind == "predicate" else _digits(datatype(name).container) \
                if kind == "numeric" else None
        except ValueError:
            _DIGITS[kind, name] = None
    return _DIGITS[kind, name]


def _check_item(v: dict, item: str) -> None:
    """An element item's count and width are its tile's: n the Row x Col elements (or the CUBE
    representation's whole 16 x 16 blocks), `digits` its DataType's."""
    n, row, col = v["n"], v["row"], v["col"]
    if n and ((n != row * col and n != cube_elements(row, col))
              or v["digits"] != _element_digits(v["kind"], v["datatype"])):
        raise GoldenError(f"{v['at']}: {item}: n {n} and digits {v['digits']} are not those of a "
                          f"{row} x {col} {shown(v['kind'], 20)} {shown(v['datatype'], 20)} tile")


BATCH_CASES = 1024          # cases whose element lines are checked in one pass


def _check_cases(readers: dict, label) -> tuple[int, int, str]:
    """Walk cases.txt and each case's tiles and records lines; check the cases' lines of every
    data file in batches of at most BATCH_CASES cases and READ_BYTES of lines; (cases, cases,
    the last case's name)."""
    for name in INDEX_FILES:
        head = readers[name].line_of_text()
        if head is None or head.decode("utf-8", "replace") != "# " + " ".join(HEADERS[name]) + "\n":
            raise GoldenError(f"{label(name)}: line 1: not the header of a stream hex export's {name}")
    count, who = 0, "the header"
    items = {name: [] for name in DATA_FILES}       # per data file: (crc, line, n, digits, who, where listed)
    size = 0
    while True:
        c = _index_line(readers[CASES], CASES, who)
        if c is None:
            _flush(readers, items)
            return count, count, who
        who = f"case {c['case']}"
        if c["case"] != count:
            raise GoldenError(f"{c['at']}: {who}: expected case {count} (every case of the partition, in order)")
        _extra(readers[MACHINE], MACHINE, who, {"case": c["case"]})
        for name, key in ((TILES, "tiles"), (RECORDS, "records")):
            r = readers[name]
            if c[f"{key}_line"] != r.line - 1:
                raise GoldenError(f"{c['at']}: {who}: {key}_line {c[key + '_line']}, expected {r.line - 1}")
            vals, defs = ELEMENTS[name]
            for _ in range(c[f"{key}_n"]):
                v = _index_line(r, name, who)
                if v is None:
                    raise GoldenError(f"{r.label}: {who}: truncated (its {key} lines are missing)")
                if v["case"] != c["case"]:
                    raise GoldenError(f"{v['at']}: case {v['case']}, expected {c['case']} ({key}_n of {who})")
                item = f"{who} ({'block ' + str(v['block']) + ', ' if name == RECORDS else ''}PE {v['pe']}, " \
                       f"tile {v['tile']})"
                _check_item(v, item)
                if name == TILES:
                    _extra(readers[TILE_INFO], TILE_INFO, item, {k: v[k] for k in ("case", "pe", "tile")})
                else:
                    _extra(readers[RECORD_INFO], RECORD_INFO, item,
                           {k: v[k] for k in ("case", "block", "record", "pe", "tile")})
                _, crc_v, crc_d = v["crcs"]
                items[vals].append((crc_v, v["line"], v["n"], v["digits"], item, v["at"]))
                items[defs].append((crc_d, v["line"], v["n"], 1, item, v["at"]))
                size += v["n"] * (v["digits"] + 3)
        items[STREAM].append((c["crcs"][1], c["stream_line"], c["stream_words"], WORD_DIGITS, who, c["at"]))
        items[GPRS].append((c["crcs"][2], c["gprs_line"], GPR_LINES, WORD_DIGITS, who, c["at"]))
        size += (c["stream_words"] + GPR_LINES) * (WORD_DIGITS + 1)
        count += 1
        if count % BATCH_CASES == 0 or size >= hexport.READ_BYTES:
            _flush(readers, items)
            size = 0


def _flush(readers: dict, items: dict) -> None:
    """Check the items gathered of each data file (in file order: a batch of cases)."""
    for name, got in items.items():
        if got:
            crc, line, n, digits, whos, ats = zip(*got)
            check_items(readers[name], name, crc, line, n, digits, lambda k: (whos[k], ats[k]))
            got.clear()
