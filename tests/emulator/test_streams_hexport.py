"""Hex export of stream datasets (docs/golden-format.md, "Hex export of stream datasets"): the
files, read back line by line as $readmemh would, hold exactly what the Parquet rows hold --
decoded here with plain pyarrow, json and NumPy from the documented stream-row format, not
through the exporter -- and `verify` names the file and the case of any damage."""
from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from emulator.cli import main

BLOCKS = 4
NIBBLES = ("E2M1X2", "U4X2", "S4X2", "E1M2X2", "HiF4X2")


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    root = tmp_path_factory.mktemp("shex")
    assert main(["golden", "--streams", "--blocks", str(BLOCKS), "--cases", "24", "--group-cases", "4",
                 "--illegal-fraction", "0.3", "--seed", "11", "--out", str(root / "s"), "--quiet"]) == 0
    assert main(["golden", "export", str(root / "s"), "--format", "hex", "--out", str(root / "h")]) == 0
    return root


def readmemh(path) -> list[int]:
    return [int(line, 16) for line in pathlib.Path(path).read_text().split("\n") if line]


def index(path) -> list[dict]:
    lines = pathlib.Path(path).read_text().split("\n")
    cols = lines[0][2:].split(" ")
    return [dict(zip(cols, line.split(" "))) for line in lines[1:] if line]


def container(kind: str, dt: str) -> int:
    from isa.datatypes import datatype
    return 1 if kind == "predicate" else datatype(dt).container


def decode(raw: bytes, bits: int, n: int) -> list[int]:
    """Physical elements of a payload image, little-endian (docs/state-format.md)."""
    a = np.frombuffer(raw, np.uint8)
    if bits == 1:
        v = np.unpackbits(a, bitorder="little")
    elif bits == 4:
        v = np.stack([a & 0xF, a >> 4], axis=1).reshape(-1)
    else:
        v = np.frombuffer(raw, f"<u{bits // 8}")
    return v[:n].astype(np.uint64).tolist()


def bits_of(raw: bytes, n: int) -> list[int]:
    return np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")[:n].astype(int).tolist()


def rows_of(dataset: pathlib.Path, part: str) -> list[dict]:
    files = sorted((dataset / part).glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_every_file_holds_what_the_parquet_rows_hold(export):
    man = json.loads((export / "h" / "manifest.json").read_text())
    assert man["format"] == "tile-emu stream hex export" and len(man["partitions"]) == 4
    for part in man["partitions"]:
        base = export / "h" / part["path"]
        rows = rows_of(export / "s", part["path"])
        cases, tiles, records = index(base / "cases.txt"), index(base / "tiles.txt"), index(base / "records.txt")
        files = {n: readmemh(base / n) for n in ("stream.hex", "gprs.hex", "initial.hex", "initial.def.hex",
                                                   "commit.hex", "commit.def.hex")}
        assert [int(c["case"]) for c in cases] == [r["case"] for r in rows]
        for c, r in zip(cases, rows):
            layout = json.loads(r["layout"])
            s0, sn = int(c["stream_line"]), int(c["stream_words"])
            assert files["stream.hex"][s0:s0 + sn] == np.frombuffer(r["stream"], "<u8").tolist()
            g0 = int(c["gprs_line"])
            assert files["gprs.hex"][g0:g0 + 128] == np.frombuffer(r["gprs"], "<u8").tolist()
            assert (c["outcome"], c["class"]) == (r["outcome"], r["class"])
            assert c["reason"] == (r["reason"] or "-") and int(c["fault_block"]) == r["fault_block"]
            # every initial (PE, tile): the layout's entry for it, its slice of initial_payload
            mine = tiles[int(c["tiles_line"]):int(c["tiles_line"]) + int(c["tiles_n"])]
            expect, at, dat = [], 0, 0
            for e in layout["initial"]:
                for pe in e["pes"]:
                    expect.append((pe, e, at, dat))
                at, dat = at + e["payload_bytes"], dat + e["defined_bytes"]
            assert len(mine) == len(expect)
            for t, (pe, e, a, d) in zip(mine, expect):
                assert (int(t["pe"]), int(t["tile"]), t["datatype"]) == (pe, e["tile"], e["datatype"] or "-")
                n, line = int(t["n"]), int(t["line"])
                bits = container(e["kind"], e["datatype"])
                assert n == e["row"] * e["col"] and int(t["digits"]) == (bits + 3) // 4
                assert files["initial.hex"][line:line + n] == decode(r["initial_payload"][a:a + e["payload_bytes"]], bits, n)
                assert files["initial.def.hex"][line:line + n] == bits_of(r["initial_defined"][d:d + e["defined_bytes"]], n)
            # every record, in the layout's order, with its status byte
            mine = records[int(c["records_line"]):int(c["records_line"]) + int(c["records_n"])]
            assert len(mine) == len(layout["records"])
            a = d = 0
            for k, (t, e) in enumerate(zip(mine, layout["records"])):
                assert (int(t["block"]), int(t["pe"]), t["record"], t["mnemonic"]) == \
                    (e["block"], e["pe"], e["record"], e["mnemonic"] or "-")
                assert int(t["status"], 16) == r["record_status"][k]
                n, line = int(t["n"]), int(t["line"])
                if e["record"] == "fault":
                    assert n == 0 and c["outcome"] == "fault"
                    continue
                bits = container(e["kind"], e["datatype"])
                assert files["commit.hex"][line:line + n] == decode(r["record_payload"][a:a + e["payload_bytes"]], bits, n)
                assert files["commit.def.hex"][line:line + n] == bits_of(r["record_defined"][d:d + e["defined_bytes"]], n)
                a, d = a + e["payload_bytes"], d + e["defined_bytes"]


def test_element_lines_have_the_digits_of_their_datatype(export):
    for base in (export / "h").glob("blocks=*/shape=*"):
        lines = (base / "initial.hex").read_text().split("\n")
        for t in index(base / "tiles.txt"):
            want = (container(t["kind"], t["datatype"]) + 3) // 4
            line, n = int(t["line"]), int(t["n"])
            assert {len(x) for x in lines[line:line + n]} == {want}


def test_verify_finds_the_export_intact(export, capsys):
    assert main(["verify", str(export / "h")]) == 0
    assert "stream hex export intact (96 streams)" in capsys.readouterr().out


def _damaged(export, tmp_path):
    h = tmp_path / "h"
    shutil.copytree(export / "h", h)
    return h, next(h.glob("blocks=*/shape=r4c8"))


def _verify_fails(h, capsys) -> str:
    assert main(["verify", str(h)]) == 1
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    return err


def test_an_altered_element_names_the_file_and_the_case(export, tmp_path, capsys):
    h, base = _damaged(export, tmp_path)
    rec = [t for t in index(base / "records.txt") if int(t["n"])][5]
    lines = (base / "commit.hex").read_text().split("\n")
    x = lines[int(rec["line"])]
    lines[int(rec["line"])] = ("1" if x[0] == "0" else "0") + x[1:]
    (base / "commit.hex").write_text("\n".join(lines))
    err = _verify_fails(h, capsys)
    assert "commit.hex" in err and f"case {rec['case']} (block {rec['block']}, PE {rec['pe']}" in err and "altered" in err


def test_a_truncated_element_file_names_the_case_whose_lines_are_missing(export, tmp_path, capsys):
    h, base = _damaged(export, tmp_path)
    data = (base / "initial.hex").read_bytes()
    (base / "initial.hex").write_bytes(data[: len(data) // 2])
    last = index(base / "tiles.txt")
    err = _verify_fails(h, capsys)
    assert "initial.hex" in err and "case " in err and ("truncated" in err or "altered" in err)
    assert any(f"case {t['case']} " in err for t in last)


def test_a_truncated_index_file_and_an_altered_index_line_are_named(export, tmp_path, capsys):
    h, base = _damaged(export, tmp_path)
    first = index(base / "records.txt")[-2]["case"]        # the first case of the lines cut off
    text = (base / "records.txt").read_text().split("\n")
    (base / "records.txt").write_text("\n".join(text[:-3]) + "\n")
    err = _verify_fails(h, capsys)
    assert "records.txt" in err and f"case {first}: truncated" in err
    h, base = _damaged(export, tmp_path / "b")
    text = (base / "cases.txt").read_text().split("\n")
    f = text[3].split(" ")
    f[5] = str(int(f[5]) + 1)                      # `executed` of the third case
    text[3] = " ".join(f)
    (base / "cases.txt").write_text("\n".join(text))
    err = _verify_fails(h, capsys)
    assert "cases.txt" in err and f"case {f[0]}" in err and "altered" in err


def test_a_stream_dataset_is_exported_whole(export, tmp_path, capsys):
    assert main(["golden", "export", str(export / "s"), "--format", "hex", "--out", str(tmp_path / "x"),
                 "--op", "TADD"]) == 2
    assert "exported whole" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_verify_reads_the_files_in_small_blocks_with_the_same_verdicts(export, tmp_path, capsys, monkeypatch):
    # the checker streams every file (bounded memory): blocks smaller than a line change nothing
    from emulator.golden import hexport as SH
    monkeypatch.setattr(SH, "READ_BYTES", 7)
    assert main(["verify", str(export / "h")]) == 0
    capsys.readouterr()
    h, base = _damaged(export, tmp_path)
    lines = (base / "gprs.hex").read_text().split("\n")
    lines[200] = "G" + lines[200][1:]                 # case 1's GPRs (128 lines a case)
    (base / "gprs.hex").write_text("\n".join(lines))
    err = _verify_fails(h, capsys)
    assert "gprs.hex': line 201: not 16 hex digits (case 1)" in err


def test_a_truncated_case_list_and_a_trailing_line_are_named(export, tmp_path, capsys):
    h, base = _damaged(export, tmp_path)
    text = (base / "cases.txt").read_text().split("\n")
    (base / "cases.txt").write_text("\n".join(text[:-2]) + "\n")      # the last case gone
    err = _verify_fails(h, capsys)
    assert "cases.txt" in err and "the manifest says" in err and "after case" in err
    h, base = _damaged(export, tmp_path / "b")
    with open(base / "commit.def.hex", "a") as f:
        f.write("1\n")
    err = _verify_fails(h, capsys)
    assert "commit.def.hex': trailing lines after the last case (case 23)" in err
