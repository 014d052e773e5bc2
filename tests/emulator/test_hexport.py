"""Hex export (docs/golden-format.md, "Hex export"): $readmemh files that hold exactly the
golden rows' elements -- read back here line by line as $readmemh would, and compared with the
Parquet rows decoded by NumPy -- and a check that names the file and the case of any damage."""
from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from emulator.golden import hexport as H

ARGS = ["--cases", "40", "--seed", "3", "--quiet"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("hex")
    assert main(["golden", "--ops", "TSEL,TCMP,TFMA", "--dtypes", "FP16", *ARGS, "--out", str(root / "a")]) == 0
    assert main(["golden", "--ops", "TCVT", "--dtypes", "FP16", "--dst-dtypes", "E2M1X2,S8", "--rmodes", "RNE",
                 "--sat", "0", *ARGS, "--out", str(root / "b")]) == 0
    for name in ("a", "b"):
        assert main(["golden", "export", str(root / name), "--format", "hex", "--out", str(root / f"{name}.hex")]) == 0
    return root


def readmemh(path):
    """What $readmemh loads: one value per line (no x digits: definedness has its own file)."""
    return [int(line, 16) for line in pathlib.Path(path).read_text().split("\n") if line]


def elements(tile):
    """A Parquet tile entry's physical elements (NumPy, independently of the exporter)."""
    n = tile["Row"] * tile["Col"]
    raw = np.frombuffer(tile["payload"], np.uint8)
    if tile["kind"] == "predicate":
        vals = np.unpackbits(raw, bitorder="little")
    elif tile["dtype"] in ("E2M1X2", "U4X2", "S4X2", "E1M2X2", "HiF4X2"):
        vals = np.stack([raw & 0xF, raw >> 4], axis=1).reshape(-1)
    else:
        width = {"FP16": "<u2", "BF16": "<u2", "S8": "u1", "U8": "u1", "E4M3": "u1", "FP32": "<u4"}[tile["dtype"]]
        vals = np.frombuffer(tile["payload"], width)
    dfn = np.unpackbits(np.frombuffer(tile["defined"], np.uint8), bitorder="little")[:n]
    return vals[:n].astype(int).tolist(), dfn.astype(int).tolist()


def lanes(folder):
    text = (folder / "cases.txt").read_text().splitlines()
    cols = text[0][2:].split(" ")
    return [dict(zip(cols, line.split(" "))) for line in text[1:]]


@pytest.mark.parametrize("name,part", [("a", "op=TSEL/dtype=FP16"), ("a", "op=TCMP/dtype=FP16"),
                                       ("a", "op=TFMA/dtype=FP16"),
                                       ("b", "op=TCVT/dtype=FP16/dst=E2M1X2/rmode=RNE/sat=0"),
                                       ("b", "op=TCVT/dtype=FP16/dst=S8/rmode=RNE/sat=0")])
def test_every_lane_holds_the_rows_elements_definedness_status_and_stream(datasets, name, part):
    rows = pq.read_table(datasets / name / part / "part-00000.parquet").to_pylist()
    out = datasets / f"{name}.hex" / part
    roles = H.roles(part.split("/")[0][3:])
    files = {f: readmemh(out / f) for f in H.data_files(part.split("/")[0][3:])}
    by_case = {r["case"]: r for r in rows}
    seen = set()
    for k, lane in enumerate(lanes(out)):
        row = by_case[int(lane["case"])]
        pe = int(lane["pe"])
        seen.add(row["case"])
        assert lane["outcome"] == row["outcome"] and lane["class"] == row["class"]
        assert files["status.hex"][k] == row["status"][pe]
        words = np.frombuffer(row["stream"], "<u8").tolist()
        s0 = int(lane["stream_line"])
        assert files["stream.hex"][s0: s0 + int(lane["stream_words"])] == words
        iot = [t for t in _bindings(row)]
        for j, role in enumerate(roles):
            line, n = int(lane[f"{role}_line"]), int(lane[f"{role}_n"])
            if j == len(roles) - 1:
                tiles = [t for t in row["outputs"] if t["pe"] == pe]
            else:
                tiles = [t for t in row["inputs"] if t["pe"] == pe and t["tile"] == iot[j]]
            if not tiles:
                assert (line, n, lane[f"{role}_dtype"]) == (-1, 0, "-")
                continue
            if int(lane[f"{role}_n"]) == 0:           # a tile of another width than the role's file
                assert row["outcome"] == "reject" and line == -1
                assert lane[f"{role}_dtype"] == (tiles[0]["dtype"] or "PRED")
                continue
            vals, dfn = elements(tiles[0])
            assert files[f"{role}.hex"][line: line + n] == vals
            assert files[f"{role}.def.hex"][line: line + n] == dfn
            assert int(lane[f"{role}_vcol"]) == tiles[0]["ValidCol"]
            assert lane[f"{role}_dtype"] == (tiles[0]["dtype"] or "PRED")
    assert seen == set(by_case)


def _bindings(row):
    import isa
    return [b.tile for b in isa.decode(row["stream"])[0].iot]


def test_widths_follow_the_datatype(datasets):
    m = json.loads((datasets / "b.hex" / "manifest.json").read_text())
    part = next(p for p in m["partitions"] if p.get("dst") == "E2M1X2")
    assert part["files"]["src.hex"]["digits"] == 4 and part["files"]["dst.hex"]["digits"] == 1
    assert part["roles"] == {"src": {"bits": 16}, "dst": {"bits": 4}}
    tsel = next(p for p in json.loads((datasets / "a.hex" / "manifest.json").read_text())["partitions"]
                if p["op"] == "TSEL")
    assert tsel["files"]["mask.hex"]["digits"] == 1 and tsel["files"]["true.hex"]["digits"] == 4
    line = (datasets / "a.hex" / "op=TSEL/dtype=FP16/true.hex").read_text().split("\n")[0]
    assert len(line) == 4


def test_the_check_passes_on_an_intact_export(datasets, capsys):
    assert main(["verify", str(datasets / "a.hex")]) == 0
    assert "hex export intact" in capsys.readouterr().out


@pytest.fixture
def copy(datasets, tmp_path):
    dst = tmp_path / "h"
    shutil.copytree(datasets / "a.hex", dst)
    return dst / "op=TFMA/dtype=FP16"


def _fails(copy, capsys, pattern):
    assert main(["verify", str(copy.parents[1])]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    import re
    assert re.search(pattern, err), err


def _lane_of(copy, file, line):
    role = file.split(".")[0]
    for lane in lanes(copy):
        a, n = int(lane[f"{role}_line"]), int(lane[f"{role}_n"])
        if a <= line < a + n:
            return lane["case"], lane["pe"]


def test_a_truncated_file_names_the_file_and_the_first_missing_case(copy, capsys):
    p = copy / "addend.hex"
    lines = p.read_text().split("\n")
    keep = len(lines) // 2
    p.write_text("\n".join(lines[:keep]) + "\n")
    case, pe = _lane_of(copy, "addend.hex", keep)
    _fails(copy, capsys, rf"op=TFMA/dtype=FP16/addend.hex.*: case {case} \(PE {pe}\): truncated")


def _edit_line(copy, file, i, edit):
    """Replace line i of `file` by edit(line); the (case, PE) lane it belongs to."""
    p = copy / file
    lines = p.read_text().split("\n")
    lines[i] = edit(lines[i])
    p.write_text("\n".join(lines))
    return _lane_of(copy, file, i)


def test_an_altered_value_names_the_file_and_its_case(copy, capsys):
    case, pe = _edit_line(copy, "dst.hex", 37, lambda v: format(int(v, 16) ^ 1, "04X"))
    _fails(copy, capsys, rf"dst.hex.*: case {case} \(PE {pe}\): altered")


def test_an_altered_definedness_bit_names_the_file_and_its_case(copy, capsys):
    case, pe = _edit_line(copy, "left.def.hex", 5, lambda v: "0" if v == "1" else "1")
    _fails(copy, capsys, rf"left.def.hex.*: case {case} \(PE {pe}\): altered")


def test_a_line_that_is_not_hex_names_its_case(copy, capsys):
    case, pe = _edit_line(copy, "right.hex", 3, lambda v: "3C0G")
    _fails(copy, capsys, rf"right.hex.*: line 4: not 4 hex digits \(case {case} \(PE {pe}\)\)")


def test_an_altered_cases_line_is_named(copy, capsys):
    p = copy / "cases.txt"
    lines = p.read_text().split("\n")
    f = lines[4].split(" ")
    f[3] = "zeros" if f[3] != "zeros" else "random"            # the class
    lines[4] = " ".join(f)
    p.write_text("\n".join(lines))
    _fails(copy, capsys, rf"cases.txt.*: line 5: case {f[0]} \(PE {f[1]}\): altered")


def test_a_removed_case_line_and_an_appended_line_are_named(copy, capsys):
    p = copy / "cases.txt"
    lines = p.read_text().split("\n")
    p.write_text("\n".join(lines[:3] + lines[4:]))            # the lane of case 2
    _fails(copy, capsys, r"cases.txt.*: line 4: case 3 \(PE 0\): expected case 2")
    p.write_text("\n".join(lines))
    q = copy / "status.hex"
    q.write_text(q.read_text() + "00\n")
    _fails(copy, capsys, r"status.hex.*trailing lines after the last case")


def test_a_missing_file_and_a_foreign_manifest(copy, capsys):
    (copy / "stream.hex").unlink()
    _fails(copy, capsys, r"stream.hex: listed in the manifest but missing")
    (copy.parents[1] / "manifest.json").write_text("{}")
    assert main(["verify", str(copy.parents[1])]) == 1           # not a hex export: the golden reader says so
    assert "manifest" in capsys.readouterr().err


def test_export_refuses_a_non_empty_out_and_needs_out(datasets, tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    assert main(["golden", "export", str(datasets / "a"), "--format", "hex", "--out", str(tmp_path / "x")]) == 1
    assert "must be an empty or new folder" in capsys.readouterr().err
    assert main(["golden", "export", str(datasets / "a"), "--format", "hex"]) == 2


def test_a_failed_export_leaves_no_file_under_a_final_name(datasets, tmp_path, monkeypatch):
    calls = []

    def boom(p, t, path):
        calls.append(path)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(H, "_append", boom)
    with pytest.raises(OSError):
        H.write_hex(datasets / "a", tmp_path / "out")
    assert calls and not [f for f in (tmp_path / "out").rglob("*") if f.is_file()]


def test_partitions_can_be_selected(datasets, tmp_path):
    m = H.write_hex(datasets / "a", tmp_path / "one", op="TSEL")
    assert [p["op"] for p in m["partitions"]] == ["TSEL"]
