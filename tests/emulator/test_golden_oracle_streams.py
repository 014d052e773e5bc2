"""verify --oracle of stream datasets (emulator/golden/streams_oracle.py): every committed
(block, PE) with an independent reference is checked on the state the stored records imply; a
planted wrong payload or status is named by file, case, block, PE and element; a wrong result
a later block reads is reported once; an altered file is one line, exit 1."""
from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from emulator.golden import oracle as O
from emulator.golden import streams as S
from emulator.golden import streams_dataset as SD
from emulator.golden.dataset import _block_keys, sha256
from isa import encoding
from isa.datatypes import DATATYPES, datatype

PART = "blocks=8/shape=r4c8/part-00000.parquet"
# integer ops whose result changes with any one bit of any one source element
BIJECTIVE = {"TADD", "TSUB", "TXOR", "TNOT", "TNEG"}


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle_streams") / "s"
    assert main(["golden", "--streams", "--blocks", "8", "--cases", "240", "--seed", "5", "--shapes", "r4c8",
                 "--group-cases", "12", "--out", str(out), "--quiet"]) == 0
    return out


def _verify(folder, capsys):
    rc = main(["verify", str(folder), "--oracle", "--quiet"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _rows(folder):
    return pq.read_table(folder / PART).to_pylist()


def _records(row) -> list[dict]:
    """The row's records (format version 2), read with plain JSON as docs/golden-format.md
    tells a reader to: each head of `layout.records` with `index` (its byte in record_status),
    `at` (its payload's byte offset in record_payload), its payload bytes and its status."""
    heads = json.loads(row["layout"])["records"]
    out, at = [], 0
    for j, h in enumerate(heads):
        out.append({**h, "index": j, "at": at, "payload": row["record_payload"][at: at + h["payload_bytes"]],
                    "status": row["record_status"][j]})
        at += h["payload_bytes"]
    return out


def _rewrite(folder, rows):
    """Write the rows back and record the file's new checksum and size in the manifest, as a
    generator with a bug would have written them."""
    path = folder / PART
    pq.write_table(pq.read_table(path).from_pylist(rows, schema=SD.SCHEMA), path)
    m = json.loads((folder / "manifest.json").read_text())
    for p in m["partitions"]:
        for f in p["files"]:
            if f["path"] == PART:
                f["sha256"], f["bytes"] = sha256(path), path.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(m))


def _keys(row, block):
    return _block_keys(encoding.decode(row["stream"])[block])


def _covered(row, rec, ops=None) -> bool:
    """A commit record at a block > 0 of a numeric destination whose op has a reference."""
    if rec["record"] != "commit" or rec["block"] == 0 or rec["kind"] != "numeric":
        return False
    keys = _keys(row, rec["block"])
    return O.plan_for(keys) is not None and (ops is None or (keys["op"] in ops and datatype(keys["dtype"]).is_int))


def _flip_element0(row, rec):
    e = bytearray(row["record_payload"])
    e[rec["at"]] ^= 1 << 1             # a low bit of element 0 (the first valid element; byte-wide or wider)
    row["record_payload"] = bytes(e)


def test_every_committed_block_with_a_reference_matches_and_the_report_names_the_rest(streams, capsys):
    rc, out, _ = _verify(streams, capsys)
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("verify --oracle: 240 streams; every checked result matches")
    by = {ln.split(":")[0].strip(): ln for ln in lines[1:]}
    assert {"softfloat", "mpfr", "exact", "no independent reference"} <= set(by)
    assert "committed (block, PE)s" in by["exact"] and "TSEL (" in by["exact"]
    assert "TEXTRACT (" in by["no independent reference"] or "TINSERT (" in by["no independent reference"]


def test_a_planted_wrong_payload_at_a_later_block_is_named_by_file_case_block_pe_element(streams, tmp_path, capsys):
    folder = tmp_path / "s"
    shutil.copytree(streams, folder)
    rows = _rows(folder)
    i, rec = next((i, r) for i, row in enumerate(rows) for r in _records(row)
                  if _covered(row, r, BIJECTIVE | {"TAND", "TOR", "TMUL", "TSHL"}))
    _flip_element0(rows[i], rec)
    _rewrite(folder, rows)
    rc, out, _ = _verify(folder, capsys)
    assert rc == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{PART}: case {rows[i]['case']} block {rec['block']} PE{rec['pe']} element 0: "), first
    assert "stored" in first and "exact gives" in first
    assert "MISMATCH" in out


def test_a_planted_status_bit_is_caught(streams, tmp_path, capsys):
    folder = tmp_path / "s"
    shutil.copytree(streams, folder)
    rows = _rows(folder)
    i, rec = next((i, r) for i, row in enumerate(rows) for r in _records(row)
                  if _covered(row, r) and O.plan_for(_keys(row, r["block"])).status)
    status = bytearray(rows[i]["record_status"])
    status[rec["index"]] ^= O.NV
    rows[i]["record_status"] = bytes(status)
    _rewrite(folder, rows)
    rc, out, _ = _verify(folder, capsys)
    assert rc == 1
    assert out.splitlines()[0].startswith(f"{PART}: case {rows[i]['case']} block {rec['block']} PE{rec['pe']}: ")
    assert ": status: stored " in out.splitlines()[0]


def _feeding(rows):
    """(row, record, later record): an exact-op result on (PE, tile) at block k that a later
    oracle-covered bijective op reads as a source, with no commit to that tile in between."""
    for i, row in enumerate(rows):
        if row["outcome"] != "commit":
            continue
        blocks = encoding.decode(row["stream"])
        recs = _records(row)
        for r in recs:
            if not _covered(row, r, BIJECTIVE):
                continue
            for later in recs:
                if later["block"] <= r["block"] or later["pe"] != r["pe"] or not _covered(row, later, BIJECTIVE):
                    continue
                between = [x for x in recs if r["block"] < x["block"] < later["block"] and x["pe"] == r["pe"]
                           and x["tile"] == r["tile"]]
                reads = [b.tile for b in blocks[later["block"]].iot[:-1]]
                if not between and r["tile"] in reads:
                    return i, r, later
    raise AssertionError("the dataset holds no block whose result a later block reads")


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """Streams of the bijective integer instructions only (golden --streams --ops/--dtypes):
    results that later blocks read, each of whose bits the later result shows."""
    out = tmp_path_factory.mktemp("oracle_chains") / "s"
    assert main(["golden", "--streams", "--blocks", "8", "--cases", "48", "--seed", "5", "--shapes", "r4c8",
                 "--group-cases", "12", "--ops", ",".join(sorted(BIJECTIVE)), "--dtypes", "S8,U16,S32",
                 "--out", str(out), "--quiet"]) == 0
    return out


def test_a_wrong_result_a_later_block_reads_is_reported_once_at_its_own_block(chains, tmp_path, capsys):
    folder = tmp_path / "s"
    shutil.copytree(chains, folder)
    rows = _rows(folder)
    i, rec, later = _feeding(rows)
    _flip_element0(rows[i], rec)
    _rewrite(folder, rows)
    rc, out, _ = _verify(folder, capsys)
    assert rc == 1
    shown = [ln for ln in out.splitlines() if ln.startswith(PART)]
    at = f"{PART}: case {rows[i]['case']} block {rec['block']} PE{rec['pe']} element "
    assert shown and all(ln.startswith(at) for ln in shown), out
    # the later block read the stored (wrong) payload, mismatched for it, and is counted, not named
    assert f"block {later['block']} PE{later['pe']}" not in out
    assert "mismatch where a source holds a result reported above" in out.splitlines()[-1]


@pytest.mark.parametrize("edit", ["truncate", "short_payload", "pe_out_of_range", "source_missing"])
def test_an_altered_or_truncated_stream_dataset_is_one_line_exit_1(streams, tmp_path, capsys, edit):
    folder = tmp_path / "s"
    shutil.copytree(streams, folder)
    if edit == "truncate":
        data = (folder / PART).read_bytes()
        (folder / PART).write_bytes(data[: len(data) // 2])
    else:
        rows = _rows(folder)
        i, rec = next((i, r) for i, row in enumerate(rows) for r in _records(row) if _covered(row, r))
        if edit == "short_payload":         # the payload bytes the layout gives, one short
            rows[i]["record_payload"] = rows[i]["record_payload"][:-1]
        else:
            lay = json.loads(rows[i]["layout"])
            if edit == "pe_out_of_range":   # a record of PE 9 in the row's layout (the open refuses it)
                lay["records"][rec["index"]]["pe"] = 9
            else:                           # initial tiles under other ids: a committed block's source is not there
                for e in lay["initial"]:    # (the window sources keep theirs: the open knows their shapes)
                    e["tile"] += 0 if e["tile"] in S.WINDOW_SOURCES else 1000
            rows[i]["layout"] = json.dumps(lay, separators=(",", ":"))
        _rewrite(folder, rows)
    rc, out, err = _verify(folder, capsys)
    assert rc == 1
    assert "Traceback" not in out + err and len(err.strip().splitlines()) == 1, err
    assert PART.split("/part")[0] in err and ("case " in err or edit == "truncate")
    if edit == "source_missing":
        assert "is in neither the initial state nor an earlier block's commit" in err, err


def test_state_before_a_block_applies_only_earlier_commits(streams):
    """A block that reads its own destination (source = destination) is judged on the tile as
    it was before the block: the stored dataset passes, so this is the arrangement it has."""
    rows = _rows(streams)
    alias = [(row, r) for row in rows for r in _records(row) if _covered(row, r)
             and r["tile"] in [b.tile for b in encoding.decode(row["stream"])[r["block"]].iot[:-1]]]
    assert alias


def test_under_another_profile_only_labels_without_a_floating_datatype_keep_a_reference(tmp_path, capsys):
    out = tmp_path / "ftz"
    assert main(["golden", "--streams", "--blocks", "4", "--cases", "24", "--group-cases", "12", "--shapes", "r1c8",
                 "--profile", "ftz", "--seed", "2", "--out", str(out), "--quiet"]) == 0
    rc, text, _ = _verify(out, capsys)
    assert rc == 0
    by = {ln.split(":")[0].strip(): ln.split(":", 1)[1] for ln in text.splitlines() if ln.startswith("  ")}
    assert set(by) <= {"exact", "no independent reference"}
    covered = [lab for lab in by.get("exact", "").split("elements: ")[-1].split("), ")]
    assert all(not datatype(d.strip(" ()")).is_float for lab in covered if "TCVT" not in lab
               for d in lab.split("(")[1].split(","))
    assert any(f"({d.name})" in by["no independent reference"] for d in DATATYPES if d.is_float)


def test_gathering_in_small_batches_gives_the_same_report(streams, capsys, monkeypatch):
    """The references run once per gathering of a label's lanes; how many lanes one gathering
    holds (a memory bound) changes nothing in what is checked or reported."""
    from emulator.golden import streams_oracle as M
    whole = _verify(streams, capsys)
    monkeypatch.setattr(M, "FLUSH_ELEMENTS", 50)
    monkeypatch.setattr(M, "PENDING_ELEMENTS", 400)
    assert _verify(streams, capsys) == whole and whole[0] == 0


def test_tsel_keeps_the_status_its_pe_had_before_the_block(streams):
    """Decision 079: TSEL performs no status update, so a TSEL record's status is the one the
    PE's previous record left; the dataset holds TSELs after a nonzero status, and they pass."""
    from emulator.golden import streams_oracle as M
    from emulator.golden.streams_dataset import open_stream_dataset
    ds = open_stream_dataset(streams)
    run = M._Run(O.Report(), ds.profile.name, 20)
    kept = 0
    for part, chunk, rec in ds.files:
        for lab, lanes, _ in M._file_lanes(M.stream_rows(ds.read(part, chunk, rec), rec["path"]), 0, run):
            if lab.startswith("TSEL."):
                assert (lanes.status == lanes.before).all()
                kept += int((lanes.before != 0).sum())
    assert kept


def test_the_check_reads_each_row_as_the_plain_json_recipe_does(streams):
    """stream_rows (the one adapter from the row format) gives each row's initial tiles, PE by
    PE, and its records, in order, with the payload bytes and statuses a reader of
    docs/golden-format.md's recipe (plain JSON and byte offsets) finds."""
    from emulator.golden import streams_oracle as M
    ds = SD.open_stream_dataset(streams)
    part, chunk, rec = next(f for f in ds.files if f[2]["path"] == PART)
    got = M.stream_rows(ds.read(part, chunk, rec), rec["path"])
    names = {"kind": "kind", "datatype": "dtype", "row": "Row", "col": "Col", "valid_row": "ValidRow",
             "valid_col": "ValidCol"}
    tiles = lambda f, j: {**{k: f[k][j].as_py() for k in ("pe", "tile", *names.values())},  # noqa: E731
                          "payload": f["payload"][j].as_py()}
    want_init, want_rec = [], []
    for r, row in enumerate(_rows(streams)):
        at = 0
        for e in json.loads(row["layout"])["initial"]:
            body = {v: e[k] for k, v in names.items()}
            payload = row["initial_payload"][at: at + e["payload_bytes"]]
            want_init += [(r, {"pe": p, "tile": e["tile"], **body, "payload": payload}) for p in e["pes"]]
            at += e["payload_bytes"]
        for x in _records(row):
            want_rec.append((r, x["block"], x["record"] == "commit", x["status"],
                             {"pe": x["pe"], "tile": x["tile"], **{v: x[k] for k, v in names.items()},
                              "payload": x["payload"]}))
    assert [(int(got.initial_row[j]), tiles(got.initial, j)) for j in range(len(got.initial_row))] == want_init
    assert [(int(got.record_row[j]), int(got.record_block[j]), bool(got.record_commit[j]), int(got.record_status[j]),
             tiles(got.records, j)) for j in range(len(got.record_row))] == want_rec
