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


def test_the_buggy_dut_is_a_copy_with_one_changed_line():
    good = (RTL / "alu.v").read_text().splitlines()
    bad = (RTL / "alu_bug.v").read_text().splitlines()
    changed = [line for line in difflib.unified_diff(good, bad, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 3                     # the header comment, and one line replaced
    assert changed[0].startswith("+// alu.v with one seeded bug")
    assert "shr_signed" in changed[1] and "SEEDED BUG" in changed[2]
