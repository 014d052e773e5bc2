"""The command line starts without the heavy libraries (issue 32, "instant start-up"): importing
`emulator.cli`, and the modules of the commands that need no compiled kernels (asm, disasm, show,
diff, fabric), imports none of Numba, SciPy, Arrow's dataset layer, Dask, distributed or CuPy.
Checked in a fresh interpreter by reading sys.modules (no timing: the figures are in
docs/performance.md, "Start-up")."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAVY = ("numba", "scipy", "pyarrow.dataset", "dask", "distributed", "cupy")
LIGHT_COMMANDS = ("asm", "disasm", "show", "diff", "fabric")


def loaded_after(code: str) -> set[str]:
    """The modules of HEAVY (or any of their submodules) that `code` leaves in sys.modules, run in
    a fresh interpreter on this tree."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') "
             f"for h in {HEAVY!r}))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env,
                         check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_library():
    assert loaded_after("import emulator.cli") == set()


@pytest.mark.parametrize("command", LIGHT_COMMANDS)
def test_a_light_command_module_imports_no_heavy_library(command):
    assert loaded_after(f"import emulator.cli, emulator.commands.{command}") == set()


def test_the_light_commands_run_without_a_heavy_library(tmp_path):
    """Not only their modules: asm, disasm, show, diff and fabric check, run on the examples,
    finish without importing any of them."""
    ex = ROOT / "examples"
    tbs, text = tmp_path / "saxpy.tbs", tmp_path / "saxpy.s"
    runs = [["asm", str(ex / "saxpy.s"), "-o", str(tbs)], ["disasm", str(tbs), "-o", str(text)],
            ["show", str(ex / "saxpy.init.arrow")],
            ["diff", str(ex / "saxpy.init.arrow"), str(ex / "absdiff.init.arrow")],
            ["fabric", "check", str(ex / "fabric" / "alu.json"), "-q"]]
    for argv in runs:
        code = ("import contextlib, io\nfrom emulator.cli import main\n"
                f"with contextlib.redirect_stdout(io.StringIO()): status = main({argv!r})\n"
                "assert status in (0, 1), status")
        assert loaded_after(code) == set(), argv[0]


def test_the_package_facades_still_offer_their_names():
    """The lazy package __init__s (PEP 562) resolve the names they always exported."""
    from emulator import Machine, MachineBatch, MachineConfig
    from emulator.calculus import builder, check_plan, run
    from isa import Block, assemble, decode
    from kernels import numeric
    assert callable(numeric.elementwise) and callable(numeric.convert) and callable(numeric.decode)
    import kernels.numeric.elementwise           # noqa: F401  -- the submodule does not shadow the function
    import kernels.numeric.convert               # noqa: F401
    assert callable(numeric.elementwise) and callable(numeric.convert)
    assert all(callable(x) for x in (Machine, MachineBatch, MachineConfig, check_plan, run, Block, assemble, decode))
    assert hasattr(builder, "op")


def test_the_bench_start_up_cases_start_each_command():
    """`tile-emu bench --case startup` times real starts: each case's command runs to exit 0 on
    the files it writes (a failing start raises), and so does its `python -c pass` baseline."""
    from emulator.commands import bench
    cases = [c for c in bench.CASES if c.name.startswith("startup.")]
    assert {c.name for c in cases} == {"startup.version", "startup.asm", "startup.run", "startup.fabric.sim"}
    for case in cases:
        assert case.n == 1
        ours, base = case.setup(case.n)
        ours()
        base()
