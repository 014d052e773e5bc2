"""What the example drivers (examples/rtl/run.py, run_machine.py, examples/dpi/run.py) do alike:
their one-line errors, the golden datasets they make with `tile-emu golden`, their scratch folder,
and (the cocotb ones) the tool check and the Icarus build + testbench run.

A driver imports it as a sibling module (`import flow`): run as a script, its folder is on
sys.path already; loaded from its path (tests/examples_loader.py) or from examples/dpi, the
driver puts examples/rtl there first."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def fail(prog: str, message: str, status: int) -> int:
    """`prog: message` on stderr; returns the exit status."""
    print(f"{prog}: {message}", file=sys.stderr)
    return status


def tile_emu_env() -> dict:
    """The environment for a `python -m emulator.cli` child: this checkout first on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def golden(prog: str, args: list[str], folder: pathlib.Path, whole_stderr: bool = False) -> pathlib.Path:
    """`tile-emu golden ARGS --quiet --out FOLDER`; on failure the driver's one line (its stderr's
    last line, or all of it) and exit 1."""
    cmd = [sys.executable, "-m", "emulator.cli", "golden", *args, "--quiet", "--out", str(folder)]
    done = subprocess.run(cmd, env=tile_emu_env(), capture_output=True, text=True)
    if done.returncode:
        why = done.stderr.strip() if whole_stderr else done.stderr.strip().splitlines()[-1:]
        raise SystemExit(fail(prog, f"tile-emu golden failed: {why}", 1))
    return folder


@contextlib.contextmanager
def scratch(prefix: str, keep):
    """A temporary build folder; at the end removed, or kept with its path on stderr where
    `keep(folder)` says so."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        if keep(folder):
            print(f"build folder: {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def missing_cocotb() -> str | None:
    """What to install, or None: Icarus Verilog (iverilog, vvp) and cocotb >= 2."""
    if not (shutil.which("iverilog") and shutil.which("vvp")):
        return "Icarus Verilog is not installed: apt-get install -y iverilog"
    try:
        import cocotb
        import cocotb_tools.runner  # noqa: F401
    except ImportError:
        return "cocotb is not installed: pip install -e \".[rtl]\" (cocotb >= 2)"
    if int(cocotb.__version__.split(".")[0]) < 2:
        return f"cocotb {cocotb.__version__} is too old: pip install -e \".[rtl]\" (cocotb >= 2)"
    return None


def inputs(prog: str, missing: str | None, check_datasets, datasets) -> tuple[int | None, list[pathlib.Path]]:
    """Before any build: the tools (`missing`, what to install: exit 3) and the --dataset folders
    (`check_datasets` names a damaged one: exit 1).  (status, []) to stop, or (None, folders)."""
    if missing:
        return fail(prog, missing, 3), []
    folders = [pathlib.Path(d) for d in datasets]
    bad = check_datasets(folders)
    if bad:
        return fail(prog, bad, 1), []
    return None, folders


class BuildError(Exception):
    """The DUT does not build (its source, or the top naming no module of it): one line."""


def cocotb_run(prog: str, source: pathlib.Path, top: str, bench: str, folders, build: pathlib.Path,
               extra_env: dict | None = None) -> dict:
    """Build `source` (module `top`) with Icarus Verilog and run the cocotb testbench `bench` (a
    module of examples/rtl) over the datasets; the result JSON it writes to TB_RESULT."""
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
    build.mkdir(parents=True, exist_ok=True)
    try:
        runner.build(sources=[source], includes=[HERE], hdl_toplevel=top, build_dir=build,
                     timescale=("1ns", "1ps"), log_file=build / "build.log")
    except (SystemExit, Exception) as exc:     # the build log says why: its first error line
        log = (build / "build.log").read_text(errors="replace").splitlines() if (build / "build.log").exists() else []
        first = next((line for line in log if "error" in line.lower() or "Unknown module" in line), None)
        raise BuildError(first.strip() if first else f"{type(exc).__name__}: {exc}") from None
    result = build / "result.json"
    env = {"TB_DATASETS": os.pathsep.join(str(f) for f in folders), "TB_RESULT": str(result), **(extra_env or {}),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # cocotb's runner exits the process on a failing test when it sees it runs under pytest (a
    # parent pytest's PYTEST_CURRENT_TEST leaks into this program): the verdict is ours, from TB_RESULT
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        runner.test(hdl_toplevel=top, test_module=bench, test_dir=HERE, build_dir=build, extra_env=env,
                    results_xml=str(build / "results.xml"), log_file=build / "sim.log")
    except SystemExit:                  # the simulator itself failed: the log says why (below)
        pass
    if not result.is_file():
        tail = (build / "sim.log").read_text(errors="replace").splitlines()[-20:] if (build / "sim.log").exists() else []
        raise SystemExit(fail(prog, "the simulation wrote no result; its log ends:\n" + "\n".join(tail), 1))
    return json.loads(result.read_text())
