"""examples/rtl without its tools, and the shape of its buggy copy: checks that need neither
Icarus Verilog nor cocotb, so they run in the default suite (the simulations are `-m rtl`)."""
from __future__ import annotations

import difflib
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RTL = ROOT / "examples" / "rtl"


def test_without_iverilog_the_example_says_what_to_install_and_exits_3(tmp_path):
    done = subprocess.run([sys.executable, str(RTL / "run.py"), "--dut", "alu"], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr == "run.py: Icarus Verilog is not installed: apt-get install -y iverilog\n"


def test_an_unknown_dut_is_a_usage_error():
    done = subprocess.run([sys.executable, str(RTL / "run.py"), "--dut", "nosuch"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("run.py: --dut 'nosuch': one of alu, alu_bug")


def test_the_buggy_dut_is_the_same_source_with_one_line_changed():
    """alu_bug.v defines SEEDED_BUG and includes alu.v, whose only conditional text is the
    seeded line: the two DUTs differ in exactly that line."""
    bad = [line for line in (RTL / "alu_bug.v").read_text().splitlines() if not line.startswith("//")]
    assert bad == ["`define SEEDED_BUG", '`include "alu.v"']
    good = (RTL / "alu.v").read_text().splitlines()
    starts = [i for i, line in enumerate(good) if line.startswith("`ifdef")]
    assert len(starts) == 1 and good[starts[0]] == "`ifdef SEEDED_BUG"
    i = starts[0]
    assert good[i + 2] == "`else" and good[i + 4] == "`endif"
    assert "SEEDED BUG" in good[i + 1] and "shr_signed" in good[i + 3]
    assert sum(line.startswith("`") for line in good) == 3
