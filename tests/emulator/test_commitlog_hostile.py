"""Hostile commit logs (docs/commit-log.md, "Checksums" and "Checks on reading"): `tile-emu
verify LOG` refuses every column value no writer makes -- nulls, types, domains from the
project's tables -- and every record changed after it was written (each record batch or group
of lines carries a chained XXH3-128), in one line naming the file and the record, exit 1; a
format version 1 log (no checksums) still reads, with a note.  Edited logs are re-sealed with
checksums computed as the docs define them (log_helpers), so what is refused is the edit."""
from __future__ import annotations

import contextlib
import json
import pathlib

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings, strategies as st

import isa
from emulator import Machine, MachineBatch
from emulator import commitlog as CL
from emulator.cli import main
from isa.datatypes import BY_NAME
from isa.instructions import lookup

from emu_helpers import blk, everywhere
from log_helpers import CHAIN_START, CHECKSUM_KEY, RECORDS_KEY, arrow_checksum, record_lines, sealed_jsonl, \
    write_sealed_arrow
from mutate import damaged, row_edit

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _machine(seed: int) -> Machine:
    rng = np.random.default_rng(seed)
    m = Machine()
    everywhere(m, 1, "FP32", (rng.random((4, 16), dtype=np.float32) + 1).view(np.uint32))
    everywhere(m, 5, "FP32", (rng.random((4, 15), dtype=np.float32) + 1).view(np.uint32))
    return m


# TADD 4x16 FP32 on every PE, TCMP of 4x15 tiles (a 60-element predicate: 4 spare bits in its
# last byte), then a block that reads a tile no PE has: SOURCE_MISSING
BLOCKS = [blk("TADD", "FP32", [1, 1], 2, mask=0b1111, vr=4, vc=16),
          blk("TCMP", "FP32", [5, 5], 6, mask=0b0011, vr=4, vc=15, CMode=2),
          blk("TSUB", "FP32", [1, 9], 7, mask=0b0001, vr=4, vc=16)]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """commits.arrow and commits.jsonl of two machines running BLOCKS from .tbs bytes."""
    d = tmp_path_factory.mktemp("logs")
    data = isa.encode(BLOCKS)
    for suffix in (".arrow", ".jsonl"):
        with CL.open_log(d / f"commits{suffix}", machines=2) as log:
            MachineBatch([_machine(0), _machine(1)], "cpu").run(data, log=log)
    return d


def _rows(log_dir) -> list[dict]:
    return CL.read_log(log_dir / "commits.arrow").to_pylist()


def _json_line(row: dict) -> str:
    row = {k: v.hex() if isinstance(v, bytes) else v for k, v in row.items()}
    return json.dumps(row, separators=(",", ":"))


def write_rows(path: pathlib.Path, rows: list[dict], version: int = 2, **arrow) -> None:
    """`rows` as a log of `path`'s format: version 2 sealed (log_helpers), or version 1 (no
    checksums: schema metadata version 1, no header line)."""
    if path.suffix == ".jsonl":
        lines = [_json_line(r) for r in rows]
        path.write_text(sealed_jsonl(lines) if version == 2 else "".join(line + "\n" for line in lines))
        return
    table = pa.Table.from_pylist(rows, schema=CL.SCHEMA)
    if version == 2:
        write_sealed_arrow(path, table, **arrow)
        return
    schema = CL.SCHEMA.with_metadata({b"tile-emu.commitlog": b'{"format": "tile-emu commit log", "version": 1}'})
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as w:
        w.write_table(table.cast(schema), max_chunksize=3)


def verify_line(capsys, path) -> tuple[int, str, str]:
    # by its short relative name: a message cuts a long path, and pytest's temporary paths grow
    # with the worker count
    with contextlib.chdir(path.parent):
        rc = main(["verify", path.name])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    return rc, cap.out, cap.err


def refused(capsys, path, *words) -> str:
    rc, out, err = verify_line(capsys, path)
    assert rc == 1 and err.count("\n") == 1 and path.name in err, (rc, out, err)
    for w in words:
        assert w in err, (w, err)
    return err


def _first(rows, record="commit", mnemonic=None) -> int:
    return next(i for i, r in enumerate(rows) if r["record"] == record and mnemonic in (None, r["mnemonic"]))


def test_the_fixture_logs_verify_with_their_checksums(log_dir, capsys):
    for suffix in (".arrow", ".jsonl"):
        rc, out, err = verify_line(capsys, log_dir / f"commits{suffix}")
        assert rc == 0 and "commit log intact (14 records: 12 commits, 2 faults, 2 machine(s); " in out, (out, err)
        assert "checksums match" in out and "note" not in out
    rows = _rows(log_dir)
    assert [r["record"] for r in rows].count("fault") == 2 and rows[-1]["record"] == "fault"


# ---------------------------------------------------------------------------- item 2: domains

def _set(i_of, **values):
    def edit(rows):
        rows[i_of(rows)].update(values)
    return edit


def _commit(mnemonic=None):
    return lambda rows: _first(rows, "commit", mnemonic)


def _fault(rows):
    return _first(rows, "fault")


OTHER_DTYPE = next(n for n in BY_NAME if n not in lookup("TADD").dtypes)

# (edit of the rows, formats, the words of the refusal): the review's examples first
LIES = [
    (_set(_commit(), valid_row=None), (".arrow", ".jsonl"), "'valid_row' is null"),
    (_set(_commit(), status=None), (".arrow", ".jsonl"), "'status' is null"),
    (_set(_fault, field=None), (".arrow", ".jsonl"), "'field' is null"),
    (_set(_commit(), valid_col=1.5), (".jsonl",), "1.5 is not an integer"),
    (_set(_commit(), reason="SOURCE_MISSING"), (".arrow", ".jsonl"), "a commit record carries a fault's 'reason'"),
    (_set(_commit(), location="TADD"), (".arrow", ".jsonl"), "'location' is not one of Local, Matrix"),
    (_set(_commit(), mnemonic="NOPE"), (".arrow", ".jsonl"), "'mnemonic' is not an instruction"),
    (_set(_commit(), fmap_layout="commit"), (".arrow", ".jsonl"), "'fmap_layout' is not \"\""),
    (_set(_commit(), block_datatype="DECODE_ERROR"), (".arrow", ".jsonl"), "'block_datatype' is not a DataType"),
    (_set(_commit("TADD"), capacity=1), (".arrow", ".jsonl"), "'capacity' is below the payload bytes"),
    # more of the same kind: every column's domain
    (_set(_commit(), offset=-2), (".arrow", ".jsonl"), "'offset' is below -1"),
    (_set(_commit(), status=64), (".arrow", ".jsonl"), "'status' has bits above the 5 flags"),
    (_set(_commit(), pe=4), (".arrow", ".jsonl"), "'pe' is not a PE"),
    (_set(_commit(), layout=13), (".arrow", ".jsonl"), "'layout' is a reserved Layout code"),
    (_set(_commit(), representation="cube"), (".arrow", ".jsonl"), "private CUBE"),
    (_set(_commit(), fmap_transposed=True), (".arrow", ".jsonl"), "'fmap_transposed'"),
    (_set(_commit(), fmap_params=[1, None]), (".arrow", ".jsonl"), "'fmap_params' holds a null item"),
    (_set(_commit(), valid_row=0), (".arrow", ".jsonl"), "the valid rectangle is empty"),
    (_set(_commit(), capacity=1 << 40), (".arrow", ".jsonl"), "above the largest store"),
    (_set(_commit(), row=1 << 31, col=1 << 31), (".arrow", ".jsonl"), "Row*Col elements exceed"),
    (_set(_commit("TADD"), block_datatype=OTHER_DTYPE), (".arrow", ".jsonl"), "not one of the instruction's DataTypes"),
    (_set(_commit("TADD"), datatype="FP16"), (".arrow", ".jsonl"), "'datatype' is not the block's DataType"),
    (_set(_commit("TADD"), kind="predicate", datatype=""), (".arrow", ".jsonl"), "kind or location is not the"),
    (_set(_commit("TCMP"), datatype="FP32"), (".arrow", ".jsonl"), "a predicate tile names a DataType"),
    (_set(_commit(), message="x"), (".arrow", ".jsonl"), "a commit record carries a fault's 'message'"),
    (_set(_fault, reason="NOPE"), (".arrow", ".jsonl"), "'reason' is not a reason code"),
    (_set(_fault, reason=""), (".arrow", ".jsonl"), "'reason' is not a reason code"),
    (_set(_fault, field="B.NOPE"), (".arrow", ".jsonl"), "'field' is not a descriptor field"),
    (_set(_fault, field="B.IOT[1].capacityx"), (".arrow", ".jsonl"), "'field' is not a descriptor field"),
    (_set(_fault, reason="DECODE_ERROR"), (".arrow", ".jsonl"), "a DECODE_ERROR fault names a field"),
    (_set(_fault, mnemonic=""), (".arrow", ".jsonl"), "'mnemonic' is \"\" exactly when"),
    (_set(_fault, payload=b"\0"), (".arrow", ".jsonl"), "a fault record carries 'payload'"),
    (_set(_fault, tile=3), (".arrow", ".jsonl"), "a fault record carries 'tile'"),
    (_set(_fault, status=1), (".arrow", ".jsonl"), "a fault record carries a status"),
    (_set(_commit(), record="reject"), (".arrow", ".jsonl"), "'record' is neither"),
    (lambda rows: rows[_first(rows, "commit", "TCMP")].update(
        payload=rows[_first(rows, "commit", "TCMP")]["payload"][:-1] + b"\xf0"), (".arrow", ".jsonl"),
     "'payload' has bits set past its last element"),
    (lambda rows: rows[_first(rows, "commit", "TCMP")].update(
        defined=rows[_first(rows, "commit", "TCMP")]["defined"][:-1] + b"\xff"), (".arrow", ".jsonl"),
     "'defined' has bits set past its last element"),
    (lambda rows: rows[1].update(offset=rows[1]["offset"] + 8), (".arrow", ".jsonl"),
     "the records of one block differ in 'offset'"),
    (lambda rows: rows[1].update(tile=9), (".arrow", ".jsonl"), "the records of one block differ in 'tile'"),
    (_set(_commit(), pe=True), (".jsonl",), "a value has the wrong type"),
    (_set(_commit(), fmap_transposed=0), (".jsonl",), "a value has the wrong type"),
    (_set(_commit(), valid_col=1e0), (".jsonl",), "is not an integer"),
    (lambda rows: rows[0].update(payload=rows[0]["payload"].hex().upper()), (".jsonl",),
     "'payload' is not lowercase hex"),
    (lambda rows: rows[0].update(defined=rows[0]["defined"].hex() + " "), (".jsonl",),
     "'defined' is not lowercase hex"),
]


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize("edit,formats,words", LIES)
def test_a_value_no_writer_makes_is_refused_naming_the_record(log_dir, tmp_path, capsys, edit, formats, words,
                                                             version):
    for suffix in formats:
        rows = _rows(log_dir)
        edit(rows)
        path = tmp_path / f"lying{suffix}"
        try:
            write_rows(path, rows, version)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            continue                    # not representable in Arrow
        err = refused(capsys, path, words)
        assert ": record " in err


def test_a_json_line_nested_deeper_than_the_parser_goes_is_one_line(log_dir, tmp_path, capsys):
    lines = record_lines((log_dir / "commits.jsonl").read_text())
    lines[1] = "[" * 100_000
    path = tmp_path / "nested.jsonl"
    path.write_text(sealed_jsonl(lines))
    refused(capsys, path, "record 1 (line 3): not JSON (the JSON nests too deeply)")
    path.write_text("".join(line + "\n" for line in lines))          # version 1: no header
    refused(capsys, path, "record 1 (line 2): not JSON")


def test_json_nested_to_every_depth_near_the_recursion_limit_is_one_line(log_dir, tmp_path, capsys):
    """A record line, a version 1 line, the header and the Arrow metadata nested from 200 levels
    below Python's recursion limit to past it: parsed and refused, or refused as too deep --
    never a RecursionError from what reads the parsed value (a message's repr, pyarrow's)."""
    import sys
    lines = record_lines((log_dir / "commits.jsonl").read_text())
    rest = (log_dir / "commits.jsonl").read_text().split("\n", 1)[1]
    table = CL.read_log(log_dir / "commits.arrow")
    limit = sys.getrecursionlimit()
    for depth in range(limit - 200, limit + 10, 9):
        nest = "[" * depth + "]" * depth
        texts = [sealed_jsonl([lines[0].replace('"fmap_params":[]', '"fmap_params":' + nest)] + lines[1:]),
                 sealed_jsonl([lines[0].replace('"pe":0', '"pe":' + nest, 1)] + lines[1:]),
                 "".join(x + "\n" for x in [lines[0].replace('"status":0', '"status":' + nest)] + lines[1:]),
                 '{"format":"tile-emu commit log","version":%s}\n' % nest + rest]
        for i, text in enumerate(texts):
            path = tmp_path / f"deep{i}.jsonl"
            path.write_text(text)
            refused(capsys, path)
        path = tmp_path / "deep.arrow"
        write_sealed_arrow(path, table, metadata={META: b'{"format":"tile-emu commit log","version":%s}' % nest.encode()})
        refused(capsys, path)


META = b"tile-emu.commitlog"


@pytest.mark.parametrize("metadata,words", [
    (None, "no 'tile-emu.commitlog' schema metadata"),
    ({META: b'{"format": "tile-emu commit log", "version": 3}'},
     "names format version 3; this build reads versions 1, 2"),
    ({META: b'{"format": "tile-emu commit log", "version": "2"}'}, "names format version '2'"),
    ({META: b'{"format": "tile-emu state", "version": 2}'}, "not a tile-emu commit log"),
    ({META: b'{"format": "tile-emu commit log", "version": 2, "x": 1}'}, "not a tile-emu commit log"),
    ({META: b"[" * 100_000}, "not JSON (the JSON nests too deeply)"),
    ({META: b'{"format": "tile-emu commit log", "version": 2}', b"pandas": b"{}"}, "schema metadata other than"),
])
def test_an_arrow_log_without_its_metadata_or_of_an_unknown_version_is_refused(log_dir, tmp_path, capsys, metadata,
                                                                               words):
    path = tmp_path / "meta.arrow"
    write_sealed_arrow(path, CL.read_log(log_dir / "commits.arrow"), metadata=metadata)
    refused(capsys, path, words)


def test_an_arrow_log_whose_column_name_is_not_utf8_is_one_line(log_dir, tmp_path, capsys):
    path = tmp_path / "name.arrow"
    path.write_bytes((log_dir / "commits.arrow").read_bytes().replace(b"fmap_layout", b"\xf2map_layout"))
    refused(capsys, path, "a column name is not UTF-8 text")


@pytest.mark.parametrize("header,words", [
    ('{"format":"tile-emu commit log","version":3}', "line 1 names format version 3"),
    ('{"format":"tile-emu commit log","version":1}', "a version 1 log has no header line"),
    ('{"format":"tile-emu commit log"}', "line 1 is not"),
])
def test_a_jsonl_log_whose_header_names_an_unknown_version_is_refused(log_dir, tmp_path, capsys, header, words):
    text = (log_dir / "commits.jsonl").read_text().split("\n", 1)[1]
    path = tmp_path / "head.jsonl"
    path.write_text(header + "\n" + text)
    refused(capsys, path, words)


def _copies(t: pa.Table, k: int) -> pa.Table:
    """k copies of a log's records as machines 0..k-1 (each copy's machine renumbered)."""
    machines = np.repeat(np.arange(k, dtype=np.uint32) * 2, t.num_rows) + np.tile(t["machine"].to_numpy(), k)
    return pa.concat_tables([t] * k).set_column(0, "machine", pa.array(machines, pa.uint32()))


def test_the_record_checks_run_on_columns_not_per_record(log_dir):
    """Vectorised: the Python calls the checks make do not grow with the number of records
    in a record batch (a batch of 14 and one of 14,000 records take the same calls; logs hold
    millions of records, in batches of 4,096)."""
    import sys
    t = CL.read_log(log_dir / "commits.arrow")

    def calls(table):
        n = [0]

        def count(frame, event, arg):
            n[0] += event in ("call", "c_call")
        sys.setprofile(count)
        try:
            CL._check_records("x.arrow", table)
        finally:
            sys.setprofile(None)
        return n[0]
    assert calls(_copies(t, 1000).combine_chunks()) == calls(_copies(t, 1).combine_chunks()) > 0


# ---------------------------------------------------------------------------- item 3: checksums

def test_an_arrow_logs_checksums_are_the_documented_chain(log_dir, monkeypatch, tmp_path):
    """Each record batch's custom metadata holds XXH3-128(previous checksum + the batch's
    canonical bytes), computed here from to_pylist(); the last batch is empty and counts the
    records -- also for a log written in many batches and through the spill of a batch run."""
    monkeypatch.setattr(CL, "BATCH_ROWS", 3)
    monkeypatch.setattr(CL, "HOLD_BYTES", 1)
    path = tmp_path / "many.arrow"
    with CL.open_log(path, machines=2) as log:
        MachineBatch([_machine(0), _machine(1)], "cpu").run(isa.encode(BLOCKS), log=log)
    for p in (log_dir / "commits.arrow", path):
        reader = pa.ipc.open_file(pa.memory_map(str(p)))
        prev, total = CHAIN_START, 0
        got = [reader.get_batch_with_custom_metadata(i) for i in range(reader.num_record_batches)]
        for g in got[:-1]:
            prev = arrow_checksum(prev, g.batch)
            total += g.batch.num_rows
            assert g.custom_metadata == {CHECKSUM_KEY: prev.hex().encode()} and g.batch.num_rows
        assert got[-1].batch.num_rows == 0 and got[-1].custom_metadata == {
            CHECKSUM_KEY: xxhash.xxh3_128(prev).hexdigest().encode(), RECORDS_KEY: str(total).encode()}
        assert total == 14 and (p == path) == (len(got) > 2)
    assert CL.read_log(path).to_pylist() == _rows(log_dir)


def test_a_jsonl_logs_checksum_lines_are_the_documented_chain(log_dir):
    lines = (log_dir / "commits.jsonl").read_text().splitlines()
    assert lines[0] == '{"format":"tile-emu commit log","version":2}'
    prev, group, count = CHAIN_START, [], 0
    for line in lines[1:]:
        if line.startswith('{"machine"'):
            group.append(line)
            continue
        prev_before = prev
        prev = xxhash.xxh3_128(prev + "".join(x + "\n" for x in group).encode()).digest()
        count += len(group)
        if line.startswith('{"records"'):
            assert not group and line == '{"records":%d,"xxh3_128":"%s"}' % (count, prev.hex())
            assert prev == xxhash.xxh3_128(prev_before).digest()
        else:
            assert group and line == '{"xxh3_128":"%s"}' % prev.hex()
        group = []
    assert count == 14 and lines[-1].startswith('{"records"')


def test_a_changed_payload_byte_in_an_arrow_log_is_named(log_dir, tmp_path, capsys):
    raw = bytearray((log_dir / "commits.arrow").read_bytes())
    rows = _rows(log_dir)
    at = raw.find(rows[0]["payload"])            # the bytes of record 0's payload (its first copy), in the file
    assert at > 0 and rows[0]["mnemonic"] == "TADD"
    raw[at + 7] ^= 1
    path = tmp_path / "changed.arrow"
    path.write_bytes(bytes(raw))
    refused(capsys, path, "record 0 (the first of record batch 0, records 0..13): the batch does not match its "
                          "checksum")


@pytest.mark.parametrize("old,new", [('"status":0', '"status":1'), ('"offset":16', '"offset":24')])
def test_a_changed_value_in_a_jsonl_log_is_named(log_dir, tmp_path, capsys, old, new):
    text = (log_dir / "commits.jsonl").read_text()
    assert old in text
    path = tmp_path / "changed.jsonl"
    path.write_text(text.replace(old, new, 1))
    refused(capsys, path, "record 0 (line 2, the first of lines 2..15): the lines do not match their checksum "
                          "(line 16)")


@pytest.fixture
def small_batches(log_dir, tmp_path, monkeypatch):
    """The fixture's log written in groups of 3 records (5 groups and the closing one)."""
    monkeypatch.setattr(CL, "BATCH_ROWS", 3)
    for suffix in (".arrow", ".jsonl"):
        with CL.open_log(tmp_path / f"s{suffix}", machines=2) as log:
            MachineBatch([_machine(0), _machine(1)], "cpu").run(isa.encode(BLOCKS), log=log)
    return tmp_path


def _arrow_batches(path):
    r = pa.ipc.open_file(pa.memory_map(str(path)))
    return r.schema, [r.get_batch_with_custom_metadata(i) for i in range(r.num_record_batches)]


def _write_batches(path, schema, got) -> None:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as w:
        for g in got:
            w.write_batch(g.batch, custom_metadata=g.custom_metadata)


@pytest.mark.parametrize("change,words", [
    (lambda g: g[:1] + g[2:], "record 3 (the first of record batch 1, records 3..5): the batch does not match"),
    (lambda g: [g[1], g[0]] + g[2:], "record 0 (the first of record batch 0, records 0..2)"),
    (lambda g: g[:2] + g[1:], "record 6 (the first of record batch 2"),
    (lambda g: g[:-1], "does not end with its closing record batch"),
    (lambda g: g[:-2] + g[-1:], "the closing record batch does not match its checksum"),
])
def test_a_removed_repeated_or_reordered_arrow_batch_is_refused(small_batches, capsys, change, words):
    schema, got = _arrow_batches(small_batches / "s.arrow")
    assert len(got) == 6
    path = small_batches / "x.arrow"
    _write_batches(path, schema, change(got))
    refused(capsys, path, words)


def _groups(text):
    lines = text.splitlines(keepends=True)
    groups, cur = [], []
    for line in lines[1:-1]:
        cur.append(line)
        if line.startswith('{"xxh3_128"'):
            groups.append(cur)
            cur = []
    return lines[0], groups, lines[-1]


@pytest.mark.parametrize("change,words", [
    (lambda g: g[:1] + g[2:], "record 3 (line 6, the first of lines 6..8): the lines do not match their checksum"),
    (lambda g: [g[1], g[0]] + g[2:], "record 0 (line 2, the first of lines 2..4)"),
    (lambda g: g[:-1], "the closing line does not match its checksum"),
])
def test_a_removed_or_reordered_group_of_lines_is_refused(small_batches, capsys, change, words):
    head, groups, end = _groups((small_batches / "s.jsonl").read_text())
    assert len(groups) == 5
    path = small_batches / "x.jsonl"
    path.write_text(head + "".join(sum(change(groups), [])) + end)
    refused(capsys, path, words)


@pytest.mark.parametrize("cut,words", [
    (lambda t: t[: t.rindex('{"records"')], "does not end with its closing line"),
    (lambda t: t.replace('{"records":14', '{"records":13'), "the closing line counts 13 records; the log holds 14"),
    (lambda t: t.replace('{"xxh3_128":"', '{"xxh3_128":"0', 1), "line 5: not a checksum line"),
    (lambda t: t[: t.index('{"xxh3_128"')] + t[t.index('{"xxh3_128"'):].split("\n", 1)[1], "the lines do not match"),
])
def test_a_jsonl_log_cut_short_or_with_a_damaged_checksum_line_is_refused(small_batches, capsys, cut, words):
    path = small_batches / "x.jsonl"
    path.write_text(cut((small_batches / "s.jsonl").read_text()))
    refused(capsys, path, words)


@pytest.mark.parametrize("suffix", [".arrow", ".jsonl"])
def test_a_version_1_log_still_reads_and_verify_says_it_has_no_checksums(log_dir, tmp_path, capsys, suffix):
    rows = _rows(log_dir)
    path = tmp_path / f"old{suffix}"
    write_rows(path, rows, version=1)
    assert CL.read_log(path).to_pylist() == rows
    got = CL.check_log(path)
    assert (got.version, got.checksums) == (1, 0)
    rc, out, _ = verify_line(capsys, path)
    assert rc == 0 and "format version 1 commit log, which carries no checksums" in out
    assert out.splitlines()[-1] == "verify: commit log intact (14 records: 12 commits, 2 faults, 2 machine(s))"
    from emulator.cosim import compare
    assert compare(CL.read_log(path), CL.read_log(log_dir / f"commits{suffix}")) is None


def test_the_checksum_recipe_of_the_docs_runs(log_dir, monkeypatch, capsys):
    """docs/commit-log.md's recipe checks both formats' checksums with pyarrow and xxhash."""
    doc = (ROOT / "docs" / "commit-log.md").read_text()
    recipe = doc.split("## Checksums")[1].split("```python\n")[1].split("```")[0]
    monkeypatch.chdir(log_dir)
    exec(compile(recipe, "commit-log.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["commits.arrow: 2 checksums match, 14 records",
                                                    "commits.jsonl: 2 checksums match, 14 records"]


# ---------------------------------------------------------------------------- fuzzing

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ_SLOW = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 300), st.sampled_from([2 ** 31, 2 ** 32 - 1, 2 ** 64 - 1, 2 ** 63, -1]),
    st.floats(allow_nan=False, allow_infinity=False), st.binary(max_size=80), st.text(max_size=12),
    st.sampled_from(["", "commit", "fault", "TADD", "FP32", "FP16", "U8", "Local", "Matrix", "predicate", "numeric",
                     "cube", "standard", "NC1HWC0", "DECODE_ERROR", "SOURCE_MISSING", "B.IOT[1]", "BSTART", "x" * 300]),
    st.lists(st.integers(-2, 70), max_size=18))


def _fuzz_log(log_dir, capsys, data, suffix):
    """One hostile edit of a real log: bytes flipped, dropped or repeated, the file cut, a value
    set (re-sealed or not), records dropped, repeated or swapped (re-sealed), a column retyped,
    the metadata or header rewritten.  verify answers exit 0 or one line with exit 1, never a
    traceback; a log it calls intact without a re-seal holds exactly the records written."""
    import tempfile
    src = log_dir / f"commits{suffix}"
    kinds = ["bytes", "bytes", "truncate", "value", "value", "rows", "meta"] + (["type"] if suffix == ".arrow" else [])
    kind = data.draw(st.sampled_from(kinds))
    sealed = False
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / f"f{suffix}"
        if kind in ("bytes", "truncate"):
            path.write_bytes(damaged(bytearray(src.read_bytes()), data, kind == "truncate"))
        elif kind == "meta":
            value = data.draw(st.one_of(HOSTILE, st.just({"format": "tile-emu commit log", "version": 2}),
                                        st.dictionaries(st.sampled_from(["format", "version", "x"]), HOSTILE)))
            text = json.dumps(value, separators=(",", ":"), default=bytes.hex)
            if suffix == ".arrow":
                write_sealed_arrow(path, CL.read_log(src), metadata={META: text.encode()})
            else:
                path.write_text(text + "\n" + src.read_text().split("\n", 1)[1])
            sealed = True
        else:
            rows = _rows(log_dir)
            schema = CL.SCHEMA
            if kind == "value":
                for _ in range(data.draw(st.integers(1, 3))):
                    r = data.draw(st.sampled_from(rows))
                    r[data.draw(st.sampled_from(sorted(r)))] = data.draw(HOSTILE)
            elif kind == "rows":
                row_edit(rows, data)
            else:
                i = data.draw(st.integers(0, len(schema) - 1))
                typ = data.draw(st.sampled_from([pa.int64(), pa.string(), pa.uint8(), pa.binary(), pa.uint32()]))
                schema = schema.set(i, pa.field(schema.field(i).name, typ))
            sealed = kind != "value" or data.draw(st.booleans())
            if suffix == ".jsonl":
                lines = [_json_line(r) for r in rows]
                if sealed:
                    path.write_text(sealed_jsonl(lines))
                else:       # the edited lines in place of the originals, checksums as they were
                    old = src.read_text().splitlines()
                    k = iter(lines)
                    path.write_text("".join((next(k) if x.startswith('{"machine"') else x) + "\n" for x in old))
            else:
                try:
                    table = pa.Table.from_pylist(rows, schema=schema)
                except (pa.ArrowException, TypeError, ValueError, OverflowError):
                    return                                 # not representable in Arrow: nothing to test
                if sealed:
                    write_sealed_arrow(path, table, batch_rows=data.draw(st.integers(1, 20)))
                else:       # the edited records with the original batches' checksums
                    schema0, got = _arrow_batches(src)
                    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema0) as w:
                        w.write_batch(table.combine_chunks().to_batches()[0], custom_metadata=got[0].custom_metadata)
                        w.write_batch(got[-1].batch, custom_metadata=got[-1].custom_metadata)
        rc, out, err = verify_line(capsys, path)
        assert rc in (0, 1), (kind, rc, err[-800:])
        if rc == 1:
            assert err.count("\n") == 1 and len(err) < 700 and path.name in err, (kind, err[-800:])
        elif not sealed:
            assert CL.read_log(path).to_pylist() == _rows(log_dir), kind


@pytest.mark.parametrize("suffix", [".arrow", ".jsonl"])
@FUZZ
@given(data=st.data())
def test_fuzzed_logs_give_one_line_or_the_records_written(log_dir, capsys, suffix, data):
    _fuzz_log(log_dir, capsys, data, suffix)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".arrow", ".jsonl"])
@FUZZ_SLOW
@given(data=st.data())
def test_many_fuzzed_logs_give_one_line_or_the_records_written(log_dir, capsys, suffix, data):
    _fuzz_log(log_dir, capsys, data, suffix)
