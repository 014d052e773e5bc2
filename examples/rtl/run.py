"""Build a lane DUT with Icarus Verilog and score it against golden vectors through cocotb.

    python examples/rtl/run.py --dut alu                 # passes: every case matches
    python examples/rtl/run.py --dut alu_bug             # exit 1, the first failing case decoded
    python examples/rtl/run.py --dut alu --dataset DIR   # a golden dataset of your own (repeatable)

Without --dataset it generates one with `tile-emu golden --per-class 1` (the binary integer ops
on U8..S64 and E4M3 TADD/TSUB/TMUL): every applicable coverage class and cross bin of every
partition gets a case, so the flow closes coverage (`--cases N` asks for N per partition instead).  Exit status: 0 every case matches, 1 a case fails (or a
dataset is damaged), 2 bad arguments, 3 Icarus Verilog or cocotb is not installed.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INT_OPS = "TADD,TSUB,TMUL,TAND,TOR,TXOR,TSHL,TSHR,TMAX,TMIN"
INTS = "U8,U16,U32,U64,S8,S16,S32,S64"
E4M3_OPS = "TADD,TSUB,TMUL"
TOPLEVEL = "alu"


def duts() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.v"))


def missing_tools() -> str | None:
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


def generate(out: pathlib.Path, cases: int | None = None, seed: int = 7, per_class: int = 1) -> list[pathlib.Path]:
    """Two datasets made with `tile-emu golden` (ops x DataTypes is a cross product): `cases` per
    partition, or by default `per_class` cases of every coverage point (closure)."""
    sets = {"int": (INT_OPS, INTS), "e4m3": (E4M3_OPS, "E4M3")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    folders = []
    for name, (ops, dtypes) in sets.items():
        folder = out / f"golden-{name}"
        size = ["--cases", str(cases)] if cases is not None else ["--per-class", str(per_class)]
        cmd = [sys.executable, "-m", "emulator.cli", "golden", "--ops", ops, "--dtypes", dtypes,
               *size, "--seed", str(seed), "--quiet", "--out", str(folder)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(_fail(f"tile-emu golden failed: {done.stderr.strip().splitlines()[-1:]}", 1))
        folders.append(folder)
    return folders


def _fail(message: str, status: int) -> int:
    print(f"run.py: {message}", file=sys.stderr)
    return status


def check_datasets(folders) -> str | None:
    """A damaged dataset is one line (the golden reader names the file), before any build."""
    sys.path.insert(0, str(ROOT))
    from emulator.golden.dataset import GoldenError, open_dataset
    for f in folders:
        try:
            open_dataset(f)
        except GoldenError as exc:
            return f"--dataset {f}: {exc}"
    return None


def simulate(dut: str, folders, build: pathlib.Path, source: pathlib.Path | None = None) -> dict:
    """Build the DUT (`source`, default examples/rtl/DUT.v) and run the testbench over the datasets."""
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
    runner.build(sources=[source or HERE / f"{dut}.v"], includes=[HERE], hdl_toplevel=TOPLEVEL, build_dir=build, timescale=("1ns", "1ps"),
                 log_file=build / "build.log")
    result = build / "result.json"
    env = {"TB_DATASETS": os.pathsep.join(str(f) for f in folders), "TB_RESULT": str(result),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # cocotb's runner exits the process on a failing test when it sees it runs under pytest (a
    # parent pytest's PYTEST_CURRENT_TEST leaks into this program): the verdict is ours, from TB_RESULT
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        runner.test(hdl_toplevel=TOPLEVEL, test_module="tb_alu", test_dir=HERE, build_dir=build, extra_env=env,
                    results_xml=str(build / "results.xml"), log_file=build / "sim.log")
    except SystemExit:                  # the simulator itself failed: the log says why (below)
        pass
    if not result.is_file():
        tail = (build / "sim.log").read_text(errors="replace").splitlines()[-20:] if (build / "sim.log").exists() else []
        raise SystemExit(_fail("the simulation wrote no result; its log ends:\n" + "\n".join(tail), 1))
    return json.loads(result.read_text())


def report(dut: str, r: dict) -> int:
    if r.get("error"):
        return _fail(f"the testbench stopped on an error: {r['error']}", 1)
    f = r["failure"]
    skipped = f"; {r['rejected']} rejected cases not driven (the lane has no preflight)"
    if r["unsupported"]:
        skipped += f"; partitions {dut} does not implement: {', '.join(r['unsupported'])}"
    if f is None:
        print(f"{dut}: PASS: {r['cases']:,} cases ({r['lanes']:,} PE lanes, {r['elements']:,} elements) "
              f"of {len(r['partitions'])} partitions match the golden outputs{skipped}")
        return 0 if r["lanes"] else _fail("no case was driven: the datasets hold no partition the DUT implements", 1)
    print(f"{dut}: FAIL: first failing case {f['case']} ({f['class']}) of {f['op']} {f['dtype']}, PE {f['pe']}, "
          f"in {f['file']}")
    if "element" in f:
        print(f"  {f['op']} {f['dtype']} element {f['element']} [{f['row']},{f['col']}]: inputs {f['a']}, {f['b']}")
    print(f"  expected {f['expected']}, got {f['got']}")
    print(f"  scoreboard: {f['difference']}")
    print(f"  ({r['lanes']:,} PE lanes matched before it)")
    return 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dut", required=True, help=f"the Verilog DUT in examples/rtl ({', '.join(duts())})")
    p.add_argument("--dataset", action="append", default=[], help="a golden dataset folder (repeatable)")
    p.add_argument("--cases", type=int, help="cases per partition of the generated dataset (default: --per-class 1)")
    p.add_argument("--per-class", type=int, default=1,
                   help="cases of every coverage class and cross bin of the generated dataset (default 1)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", action="store_true", help="keep the build folder (logs, results.xml)")
    args = p.parse_args(argv)
    if args.dut not in duts():
        return _fail(f"--dut {args.dut!r}: one of {', '.join(duts())}", 2)
    if args.cases is not None and args.cases <= 0:
        return _fail("--cases must be positive", 2)
    if args.per_class <= 0:
        return _fail("--per-class must be positive", 2)
    need = missing_tools()
    if need:
        return _fail(need, 3)
    folders = [pathlib.Path(d) for d in args.dataset]
    bad = check_datasets(folders)
    if bad:
        return _fail(bad, 1)
    build = pathlib.Path(tempfile.mkdtemp(prefix=f"rtl-{args.dut}-"))
    try:
        if not folders:
            folders = generate(build, args.cases, args.seed, args.per_class)
        return report(args.dut, simulate(args.dut, folders, build / "sim"))
    finally:
        if args.keep:
            print(f"build folder: {build}", file=sys.stderr)
        else:
            shutil.rmtree(build, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
