"""The multi-block RTL example (examples/rtl/machine.v, run_machine.py): a Verilog tile machine
runs stream goldens of its subset block by block under cocotb and Icarus Verilog, each block's
records scored by emulator.cosim.compare; the copy with a seeded PE_MASK bug is caught, naming
the block and the element.  Marked `rtl` (python -m pytest -m rtl): these need
`apt-get install -y iverilog` and the rtl extra, and fail -- never skip -- without them."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "examples" / "rtl" / "run_machine.py"
from examples_loader import load_example, tools_fixture  # noqa: E402

run_machine = load_example("rtl", "run_machine")

pytestmark = pytest.mark.rtl


def run(*args, env=None):
    done = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, cwd=ROOT, env=env)
    return done.returncode, done.stdout, done.stderr


tools = tools_fixture(run_machine)


def test_the_clean_machine_matches_every_block_of_the_default_run(tools):
    rc, out, err = run()                      # generates its own constrained stream dataset
    assert rc == 0, out + err
    assert out.startswith("machine: PASS: ") and "match the golden records" in out
    # the default run drives legal streams and the subset's rejection classes, and every one matches
    for cls in ("legal", "illegal_source_missing", "illegal_source_undefined", "illegal_allocation",
                "illegal_pe_mask_mismatch", "illegal_shape_mismatch"):
        assert re.search(rf"\d+ {cls}\b", out), (cls, out)
    faults = int(re.search(r"([\d,]+) faults match", out).group(1).replace(",", ""))
    assert faults > 0
    # and the subset's boundary first: blocks outside it, every verdict the model's
    probes = int(re.search(r"PASS: ([\d,]+) boundary blocks", out).group(1).replace(",", ""))
    assert probes > 500


def test_the_boundary_expects_the_models_verdict_or_unsupported(tools):
    sys.path.insert(0, str(ROOT / "examples" / "rtl"))
    import tb_machine
    from isa.datatypes import datatype
    probes = {label: verdict for label, _, verdict in tb_machine.boundary_probes()}
    fp32, s32, f64 = datatype("FP32").code, datatype("S32").code, datatype("FP64").code
    # an assigned instruction of the subset with a DataType it supports but the machine does not:
    # the model accepts it, the machine says it is outside its subset
    assert probes[f"TADD DataType {fp32}"] == ("unsupported",)
    assert probes[f"TSEL DataType {f64}"] == ("unsupported",)
    # the model's stateless rejections, reason and field
    assert probes[f"TAND DataType {fp32}"] == ("fault", "DATATYPE_UNSUPPORTED", "BSTART.DataType")
    assert probes["TADD DataType 31"] == ("fault", "DATATYPE_RESERVED", "BSTART.DataType")
    # each B.DATR field TADD does not consume, alone: FIELD_NOT_APPLICABLE naming it
    for name in ("Sat", "Canonicalize", "Layout", "CMode", "RMode"):
        key = next(k for k in probes if k.startswith(f"TADD DataType {s32}, BDatr(")
                   and f"{name}=1" in k and k.count("=1") == 1 and "PadValueOrByteId=0" not in k)
        assert probes[key] == ("fault", "FIELD_NOT_APPLICABLE", f"B.DATR.{name}"), key
    # instructions outside the subset: unsupported unless unassigned
    assert probes[f"Mode 0 Function 5 DataType {s32}"] == ("fault", "UNASSIGNED_OPCODE", "BSTART")
    assert probes[f"TDIV DataType {fp32}"] == ("unsupported",)


def test_the_seeded_pe_mask_bug_is_caught_naming_block_and_element(tools):
    rc, out, err = run("--dut", "machine_bug")
    assert rc == 1, out + err
    lines = out.splitlines()
    head = re.match(r"machine_bug: FAIL: .*: case \d+ \(\w+\) block (\d+): (BSTART.*)", lines[0])
    assert head, lines[0]
    diff = re.match(r"\s+machine \d+ block (\d+) PE(\d) tile \d+ element (\d+) \[(\d+),(\d+)\] \w+: "
                    r"expected 0x[0-9a-f]+ \(.*\), got ", lines[1])
    assert diff and diff.group(1) == head.group(1), lines[1]
    assert lines[2].strip().startswith("sources there (golden, before the block): t"), lines[2]
    # the bug reads every PE's sources where the lowest selected PE holds them: the lowest selected
    # PE itself is right, so the divergence is on another PE the block's PE_MASK selects
    mask = int(re.search(r"@0b([01]{4})", head.group(2)).group(1), 2)
    pe = int(diff.group(2))
    assert mask >> pe & 1 and pe != (mask & -mask).bit_length() - 1, (mask, pe)


def test_max_fails_goes_on_after_a_failing_stream(tools):
    rc, out, err = run("--dut", "machine_bug", "--max-fails", "2", "--cases", "8")
    assert rc == 1, out + err
    assert len([x for x in out.splitlines() if x.startswith("machine_bug: FAIL: ")]) == 2
    assert "(2 failing stream(s);" in out


def test_bad_arguments_and_inputs_are_one_line_with_their_exit_status(tmp_path):
    for args in (["--dut", "nope"], ["--cases", "0"], ["--max-fails", "0"], ["--illegal-fraction", "2"]):
        rc, out, err = run(*args)
        assert rc == 2 and err.count("\n") == 1 and err.startswith("run_machine.py: "), (args, err)
    rc, out, err = run("--dataset", str(tmp_path))
    assert rc == 1 and "not a stream golden dataset" in err and err.count("\n") == 1, err


def test_without_icarus_it_says_what_to_install():
    env = {**os.environ, "PATH": str(pathlib.Path(sys.executable).parent)}
    if any((pathlib.Path(d) / "iverilog").exists() for d in env["PATH"].split(os.pathsep)):
        env["PATH"] = "/nonexistent"
    done = subprocess.run([sys.executable, str(RUN)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 3 and "apt-get install -y iverilog" in done.stderr, done.stderr


def test_the_machine_is_plain_verilog_2005_that_yosys_reads(tools):
    here = ROOT / "examples" / "rtl"
    for src in ("machine.v", "machine_bug.v"):
        done = subprocess.run(["iverilog", "-g2005", "-I", str(here), "-o", os.devnull, str(here / src)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    import shutil
    assert shutil.which("yosys"), "Yosys is not installed: apt-get install -y yosys"
    done = subprocess.run(["yosys", "-q", "-p", "read_verilog machine.v; hierarchy -top machine; proc"],
                          capture_output=True, text=True, cwd=here)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
