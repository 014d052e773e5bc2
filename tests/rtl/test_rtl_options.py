"""examples/rtl/run.py's options for a DUT of one's own (README, "RTL verification"): `--dut FILE
--top NAME` takes any Verilog module with the lane's ports (a port mismatch or a module that
does not build is one line, exit 2); a partition the DUT reports unsupported fails the run
unless `--expect-unsupported OP:DTYPE` declares it; a DUT whose `supported` claims an
(instruction, DataType) pair the instruction table forbids fails; a failing case's dataset is
kept and the case extracted.  Small datasets (4 cases a partition): bounded runtime.  Marked
`rtl` (iverilog and the rtl extra; fail, never skip)."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "examples" / "rtl"
RUN = HERE / "run.py"
from examples_loader import load_example  # noqa: E402

rtl_run = load_example("rtl")

pytestmark = pytest.mark.rtl
INT_OP = "func == F_XOR || func == F_SHL || func == F_SHR || func == F_MAX || func == F_MIN;"
E4M3_OPS = "(is_e4m3 && (func == F_ADD || func == F_SUB || func == F_MUL))"


def run(*args):
    done = subprocess.run([sys.executable, str(RUN), *map(str, args)], capture_output=True, text=True, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    need = rtl_run.missing_tools()
    assert need is None, need
    from emulator.cli import main
    out = tmp_path_factory.mktemp("rtl") / "g"
    assert main(["golden", "--ops", "TADD,TMIN,TSHR", "--dtypes", "S8,U16", "--cases", "4", "--seed", "2",
                 "--quiet", "--out", str(out)]) == 0
    return out


def variant(tmp_path, name: str, old: str, new: str, module: str = "alu") -> pathlib.Path:
    text = (HERE / "alu.v").read_text()
    assert text.count(old) == 1
    path = tmp_path / f"{name}.v"
    path.write_text(text.replace(old, new).replace("module alu (", f"module {module} ("))
    return path


def test_any_verilog_file_with_the_lanes_ports_runs_under_its_own_top(small, tmp_path):
    dut = variant(tmp_path, "my_lane", "assign we = pe_mask[pe];", "assign we = pe_mask[pe];", module="my_lane")
    rc, out, err = run("--dut", dut, "--top", "my_lane", "--dataset", small)
    assert rc == 0, out + err
    assert out.startswith("my_lane: PASS: ") and "illegal (instruction, DataType) pairs unsupported" in out


def test_ports_that_are_not_the_lanes_are_one_line_exit_2(small, tmp_path):
    (tmp_path / "tiny.v").write_text("module tiny (input wire clk, input wire [4:0] func);\nendmodule\n")
    rc, out, err = run("--dut", tmp_path / "tiny.v", "--top", "tiny", "--dataset", small)
    assert rc == 2 and err.count("\n") == 1 and "no port 'dtype'" in err, out + err
    narrow = variant(tmp_path, "narrow", "input  wire [3:0]  pe_mask,", "input  wire [2:0]  pe_mask,")
    rc, out, err = run("--dut", narrow, "--dataset", small)
    assert rc == 2 and err.count("\n") == 1 and "'pe_mask' is 3 bit(s) wide, not 4" in err, out + err
    rc, out, err = run("--dut", "alu", "--top", "nosuch", "--dataset", small)
    assert rc == 2 and err.count("\n") == 1 and "does not build" in err, out + err
    rc, out, err = run("--dut", tmp_path / "missing.v", "--dataset", small)
    assert rc == 2 and err.count("\n") == 1, out + err


def test_a_lane_that_drops_an_instruction_fails_unless_declared(small, tmp_path):
    dut = variant(tmp_path, "no_tmin", INT_OP, INT_OP.replace(" || func == F_MIN;", ";"))
    rc, out, err = run("--dut", dut, "--dataset", small)
    assert rc == 1 and "TMIN:S8, TMIN:U16" in err and "--expect-unsupported" in err, out + err
    rc, out, err = run("--dut", dut, "--dataset", small, "--expect-unsupported", "TMIN:S8,TMIN:U16")
    assert rc == 0 and "(declared): TMIN:S8, TMIN:U16" in out, out + err
    rc, out, err = run("--dut", dut, "--dataset", small, "--expect-unsupported", "TMIN:S9")
    assert rc == 2 and err.count("\n") == 1, out + err


def test_supported_is_checked_against_the_instruction_table(small, tmp_path):
    # TAND has no floating DataType (isa/instructions.py): a lane that claims TAND E4M3 is wrong
    dut = variant(tmp_path, "claims", E4M3_OPS, E4M3_OPS.replace("func == F_MUL", "func == F_MUL || func == F_AND"))
    rc, out, err = run("--dut", dut, "--dataset", small)
    assert rc == 1 and "TAND:E4M3" in err and "forbids" in err, out + err


def test_a_function_code_of_no_binary_instruction_is_never_supported(small, tmp_path):
    # `func` carries a binary element-wise instruction's Function code: 5 is none (README's port
    # table), so a lane that answers 1 for it (every integer op "supported") is wrong
    dut = variant(tmp_path, "claims5", INT_OP, INT_OP.replace("func == F_MIN;", "func == F_MIN || func == 5'd5;"))
    rc, out, err = run("--dut", dut, "--dataset", small)
    assert rc == 1 and "func 5:U8" in err and "forbids" in err, out + err


def test_a_failing_case_keeps_its_dataset_and_is_extracted(small, tmp_path):
    import shutil
    mine = tmp_path / "g"
    shutil.copytree(small, mine)
    rc, out, err = run("--dut", "alu_bug", "--dataset", mine)
    assert rc == 1 and " of TSHR S8" in out.splitlines()[0], out + err
    assert mine.is_dir() and f"dataset kept: {mine}" in out
    extract = next(line for line in out.splitlines() if line.strip().startswith("extract: "))
    assert f"tile-emu golden extract {mine} --case op=TSHR/dtype=S8:" in extract
    folder = pathlib.Path(next(line for line in out.splitlines() if "reproducer: " in line).split("reproducer: ")[1]
                          .split(" (")[0])
    assert sorted(p.name for p in folder.iterdir()) == ["case.json", "expected.arrow", "expected.jsonl", "init.arrow",
                                                         "stream.s", "stream.tbs"]
    shutil.rmtree(folder.parent)
    assert f"build folder: {folder.parent}" in err


def test_a_failure_without_a_failing_case_keeps_nothing(small, tmp_path):
    import tempfile
    before = set(pathlib.Path(tempfile.gettempdir()).glob("rtl-claims-*"))
    dut = variant(tmp_path, "claims", E4M3_OPS, E4M3_OPS.replace("func == F_MUL", "func == F_MUL || func == F_AND"))
    rc, out, err = run("--dut", dut, "--dataset", small)
    assert rc == 1 and "build folder" not in err
    assert set(pathlib.Path(tempfile.gettempdir()).glob("rtl-claims-*")) == before
