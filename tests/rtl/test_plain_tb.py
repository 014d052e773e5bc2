"""Hex exports are self-sufficient (issue 29 item 1): a plain Verilog testbench (tests/rtl/plain_tb.v,
no cocotb, no project Python while it simulates) reads a single-block and a stream export from the
files docs/golden-format.md documents, recounts every file against index.txt, recomputes TADD's
integer sums inside the valid rectangle, checks definedness both ways outside it, and prints the
decoded fields, which are compared here with the Parquet rows decoded independently (the
partition's instruction table row and DataType code, PadValue from the row's assembly text).
Marked `rtl`: needs `apt-get install -y iverilog`."""
from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess

import pyarrow.parquet as pq
import pytest

from golden_exports import golden_hex
from isa import instructions as I
from isa.datatypes import datatype
from isa.errors import REASONS

pytestmark = pytest.mark.rtl
TB = pathlib.Path(__file__).with_name("plain_tb.v")
PADS = {"ZERO": 0, "MAX": 1, "MIN": 2, "NULL": 3}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    assert shutil.which("iverilog") and shutil.which("vvp"), "apt-get install -y iverilog"
    root = tmp_path_factory.mktemp("plain")
    subprocess.run(["iverilog", "-g2005", "-o", str(root / "tb.vvp"), str(TB)], check=True)
    golden_hex(root, "sb", "sbh", "--ops", "TADD", "--dtypes", "S16", "--cases", "60", "--seed", "5")
    golden_hex(root, "st", "sth", "--streams", "--blocks", "3", "--cases", "6", "--illegal-fraction", "0.5", "--seed", "4")
    return root


def run_tb(root, arg) -> list[str]:
    done = subprocess.run(["vvp", "-n", str(root / "tb.vvp"), arg], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def reason_code(name: str) -> int:
    return 0 if not name else [*REASONS, "DECODE_ERROR"].index(name) + 1


def test_the_testbench_checks_a_single_block_export_from_its_files_alone(sim):
    part = sim / "sbh" / "op=TADD" / "dtype=S16"
    out = run_tb(sim, f"+single={part}")
    assert out[-1] == "PASS", "\n".join(out[-20:])
    checked, pads = (int(x) for x in next(x for x in out if x.startswith("CHECKED")).split()[1:])
    assert checked > 100 and pads > 0
    # every file recounted by the testbench: the manifest's line counts
    manifest = json.loads((sim / "sbh" / "manifest.json").read_text())["partitions"][0]["files"]
    counts = {x.split()[1]: int(x.split()[2]) for x in out if x.startswith("COUNT")}
    assert counts == {name: f["lines"] for name, f in manifest.items() if name != "index.txt"}
    # the decoded fields, per case, against the Parquet rows
    rows = [r for f in sorted((sim / "sb").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    fields = [x.split()[1:] for x in out if x.startswith("FIELDS")]
    assert len(fields) == len(rows) == 60
    instr = I.lookup("TADD")
    for f, r in zip(fields, rows):
        pad = re.search(r"PAD=(\w+)", r["asm"])
        want = [r["case"], instr.function, datatype("S16").code, PADS[pad.group(1) if pad else "NULL"], r["pe_mask"],
                r["local_bytes"], r["matrix_bytes"], reason_code(r["reason"])]
        assert [int(x) for x in f[:8]] == want, (f, r["asm"])
        assert f[8:] == ["TADD", pad.group(1) if pad else "NULL"]


def test_the_testbench_fails_a_dut_that_defines_an_element_where_padding_is_required_null(sim, tmp_path):
    part = tmp_path / "p"
    shutil.copytree(sim / "sbh" / "op=TADD" / "dtype=S16", part)
    lines = (part / "cases.txt").read_text().splitlines()
    cols = lines[0][2:].split()
    pads = {int(x.split()[0]): int(x.split()[6]) for x in (part / "fields.txt").read_text().splitlines()[1:]}
    lane = next(v for v in (dict(zip(cols, x.split())) for x in lines[1:])
                if v["outcome"] == "commit" and pads[int(v["case"])] == 3 and v["dst_layout"] == "0"
                and int(v["dst_vcol"]) < int(v["dst_col"]))
    at = int(lane["dst_line"]) + int(lane["dst_vcol"])          # row 0, the first column past ValidCol
    defs = (part / "dst.def.hex").read_text().splitlines()
    assert defs[at] == "0"
    defs[at] = "1"
    (part / "dst.def.hex").write_text("\n".join(defs) + "\n")
    out = run_tb(sim, f"+single={part}")
    assert out[-1] != "PASS" and any(x.startswith(f"FAIL case {lane['case']} ") and "padding 3" in x for x in out)


def test_the_testbench_reads_a_stream_export_from_its_files_alone(sim):
    manifest = json.loads((sim / "sth" / "manifest.json").read_text())
    for entry in manifest["partitions"]:
        out = run_tb(sim, f"+stream={sim / 'sth' / entry['path']}")
        assert out[-1] == "PASS", "\n".join(out[-20:])
        counts = {x.split()[1]: int(x.split()[2]) for x in out if x.startswith("COUNT")}
        assert counts == {name: f["lines"] for name, f in entry["files"].items() if name != "index.txt"}
        rows = [r for f in sorted((sim / "st" / entry["path"]).glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
        machine = [x.split()[1:] for x in out if x.startswith("MACHINE")]
        assert [[int(x) for x in m[:4]] + m[4:] for m in machine] == [
            [r["case"], r["local_bytes"], r["matrix_bytes"], reason_code(r["reason"]), r["reason"] or "-",
             r["field"] or "-"] for r in rows]
        tiles = [[int(x) for x in t.split()[1:]] for t in out if t.startswith("TILE")]
        want = []
        for r in rows:
            for e in json.loads(r["layout"])["initial"]:
                for pe in e["pes"]:
                    want.append([r["case"], pe, e["tile"], ["Local", "Matrix"].index(e["location"]),
                                 ["numeric", "predicate"].index(e["kind"]), e["capacity"],
                                 ["standard", "cube"].index(e["representation"]),
                                 ["", "NC1HWC0", "NDC1HWC0"].index(e["fmap_layout"])])
        assert tiles == want
