"""`tile-emu fabric sim` without --trace or --vcd starts without Arrow (issue 32 target 8, the
fabric CLI's start-up): pyarrow is imported only by the trace writers.  Checked in a fresh
interpreter by reading sys.modules (no timing: docs/performance.md, "Start-up")."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "fabric"


def arrow_modules_after_sim(extra: list[str]) -> tuple[int, list[str]]:
    """(exit status, the pyarrow modules loaded) of `fabric sim` of the mac example, in a fresh
    interpreter on this tree."""
    argv = ["fabric", "sim", str(EX / "mac.graph.json"), "--fabric", str(EX / "mac.fabric.json"),
            "--cycles", "40"] + extra
    code = ("import contextlib, io, json, sys\nfrom emulator.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): status = main({argv!r})\n"
            "print(json.dumps([status, sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow')]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         check=True)
    status, mods = json.loads(out.stdout.splitlines()[-1])
    return status, mods


def test_a_run_without_a_trace_imports_no_arrow():
    status, mods = arrow_modules_after_sim([])
    assert status == 0 and mods == []


def test_a_run_with_a_trace_still_writes_it(tmp_path):
    trace = tmp_path / "t.arrow"
    status, mods = arrow_modules_after_sim(["--trace", str(trace)])
    assert status == 0 and "pyarrow" in mods and trace.stat().st_size > 0
