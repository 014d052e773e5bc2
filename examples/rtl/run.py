"""Build a lane DUT with Icarus Verilog and score it against golden vectors through cocotb.

    python examples/rtl/run.py --dut alu                 # passes: every case matches
    python examples/rtl/run.py --dut alu_bug             # exit 1, the first failing case decoded
    python examples/rtl/run.py --dut alu --dataset DIR   # a golden dataset of your own (repeatable)
    python examples/rtl/run.py --dut my_lane.v --top my_lane [--expect-unsupported TMUL:U64,...]

Without --dataset it generates one with `tile-emu golden --per-class 1` (the binary integer ops
on U8..S64 and E4M3 TADD/TSUB/TMUL): every applicable coverage class and cross bin of every
partition gets a case, so the flow closes coverage (`--cases N` asks for N per partition instead).  Exit status: 0 every case matches, 1 a case fails (or a
dataset is damaged; a partition the DUT reports unsupported that --expect-unsupported does not
declare; `supported` = 1 for an (instruction, DataType) pair the instruction table forbids), 2 bad
arguments (a DUT file that is missing or does not build with --top, or whose ports are not the
lane's: tb_alu.PORTS), 3 Icarus Verilog or cocotb is not installed.  On a failing case the
datasets are kept, the case is extracted (`tile-emu golden extract`) beside them, and both paths
and the extract command are printed.
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
    """The lane DUTs of examples/rtl (machine*.v is the multi-block DUT: run_machine.py drives it)."""
    return sorted(p.stem for p in HERE.glob("*.v") if not p.stem.startswith("machine"))


def dut_source(dut: str) -> pathlib.Path | None:
    """The Verilog file --dut names: a DUT of examples/rtl by name, or a path to any .v file."""
    if dut in duts():
        return HERE / f"{dut}.v"
    path = pathlib.Path(dut)
    return path.resolve() if path.is_file() else None


def parse_pairs(text: str) -> list[str]:
    """--expect-unsupported OP:DTYPE,...: each pair an instruction and a DataType of the tables
    (ValueError naming the first that is not)."""
    sys.path.insert(0, str(ROOT))
    from isa.datatypes import BY_NAME
    from isa.instructions import INSTRUCTIONS
    ops = {i.mnemonic for i in INSTRUCTIONS}
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        op, sep, dtype = item.partition(":")
        if not sep or op.upper() not in ops or dtype not in BY_NAME:
            raise ValueError(f"--expect-unsupported {item!r}: OP:DTYPE of an instruction and a DataType "
                             "(TMUL:U64)")
        out.append(f"{op.upper()}:{dtype}")
    return out


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


class BuildError(Exception):
    """The DUT does not build (its source, or --top naming no module of it): one line."""


def simulate(dut: str, folders, build: pathlib.Path, source: pathlib.Path | None = None, top: str = TOPLEVEL) -> dict:
    """Build the DUT (`source`, default examples/rtl/DUT.v; module `top`) and run the testbench
    over the datasets."""
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
    build.mkdir(parents=True, exist_ok=True)
    try:
        runner.build(sources=[source or HERE / f"{dut}.v"], includes=[HERE], hdl_toplevel=top, build_dir=build,
                     timescale=("1ns", "1ps"), log_file=build / "build.log")
    except (SystemExit, Exception) as exc:     # the build log says why: its first error line
        log = (build / "build.log").read_text(errors="replace").splitlines() if (build / "build.log").exists() else []
        first = next((line for line in log if "error" in line.lower() or "Unknown module" in line), None)
        raise BuildError(first.strip() if first else f"{type(exc).__name__}: {exc}") from None
    result = build / "result.json"
    env = {"TB_DATASETS": os.pathsep.join(str(f) for f in folders), "TB_RESULT": str(result),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # cocotb's runner exits the process on a failing test when it sees it runs under pytest (a
    # parent pytest's PYTEST_CURRENT_TEST leaks into this program): the verdict is ours, from TB_RESULT
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        runner.test(hdl_toplevel=top, test_module="tb_alu", test_dir=HERE, build_dir=build, extra_env=env,
                    results_xml=str(build / "results.xml"), log_file=build / "sim.log")
    except SystemExit:                  # the simulator itself failed: the log says why (below)
        pass
    if not result.is_file():
        tail = (build / "sim.log").read_text(errors="replace").splitlines()[-20:] if (build / "sim.log").exists() else []
        raise SystemExit(_fail("the simulation wrote no result; its log ends:\n" + "\n".join(tail), 1))
    return json.loads(result.read_text())


def report(dut: str, r: dict, expected_unsupported=(), folders=(), keep: pathlib.Path | None = None) -> int:
    if r.get("ports"):
        return _fail(f"--dut {dut}: the module's ports are not the lane's (README, 'RTL verification'): "
                     f"{r['ports']}", 2)
    if r.get("error"):
        return _fail(f"the testbench stopped on an error: {r['error']}", 1)
    if r.get("claims"):
        return _fail(f"{dut}: FAIL: supported = 1 for {len(r['claims'])} (instruction, DataType) pair(s) the "
                     f"instruction table forbids (of {r['illegal_driven']} driven): {', '.join(r['claims'][:8])}"
                     + (" ..." if len(r["claims"]) > 8 else ""), 1)
    undeclared = [p for p in r["unsupported"] if p not in expected_unsupported]
    if undeclared:
        return _fail(f"{dut}: FAIL: the DUT reports {len(undeclared)} partition(s) of the datasets unsupported that "
                     f"--expect-unsupported does not declare: {', '.join(undeclared)}", 1)
    f = r["failure"]
    skipped = (f"; {r['rejected']} rejected cases not driven (the lane has no preflight); "
               f"{r['illegal_driven']} illegal (instruction, DataType) pairs unsupported")
    if r["unsupported"]:
        skipped += f"; partitions {dut} does not implement (declared): {', '.join(r['unsupported'])}"
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
    reproduce(f, folders, keep)
    return 1


def reproduce(f: dict, folders, keep: pathlib.Path | None) -> None:
    """The failing case as files (tile-emu golden extract) beside the kept datasets; prints
    where they are and the commands that make and replay them."""
    import shlex
    path = pathlib.Path(f["file"]).resolve()
    folder = next((pathlib.Path(d).resolve() for d in folders
                   if pathlib.Path(d).resolve() in path.parents), None)
    if folder is None:
        return
    spec = f"{path.parent.relative_to(folder).as_posix()}:{f['case']}"
    name = f"case-{spec.replace('/', '_').replace('=', '-').replace(':', '-')}"
    out = (keep or folder.parent) / name
    command = (f"tile-emu golden extract {shlex.quote(str(folder))} --case {shlex.quote(spec)} "
               f"--out {shlex.quote(name)}")
    print(f"  dataset kept: {folder}")
    print(f"  extract: {command}")
    sys.path.insert(0, str(ROOT))
    from emulator.golden import extract
    try:
        r = extract(folder, spec)
        if not out.exists():
            r.write(out)
    except Exception as exc:        # noqa: BLE001  (the verdict stands; the extract says why it could not)
        print(f"  (extract failed: {exc})")
        return
    print(f"  reproducer: {out} (stream.tbs, init.arrow, expected.arrow, expected.jsonl)")
    for c in r.commands(out):
        print(f"    {c}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dut", required=True,
                   help=f"the Verilog DUT: one of examples/rtl ({', '.join(duts())}) or a .v file with the "
                        "lane's ports")
    p.add_argument("--top", default=TOPLEVEL, help=f"the DUT's module name (default {TOPLEVEL})")
    p.add_argument("--expect-unsupported", default="", metavar="OP:DTYPE,...",
                   help="partitions the DUT is declared not to implement (else one it reports unsupported "
                        "fails the run)")
    p.add_argument("--dataset", action="append", default=[], help="a golden dataset folder (repeatable)")
    p.add_argument("--cases", type=int, help="cases per partition of the generated dataset (default: --per-class 1)")
    p.add_argument("--per-class", type=int, default=1,
                   help="cases of every coverage class and cross bin of the generated dataset (default 1)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", action="store_true",
                   help="keep the build folder (logs, results.xml; kept anyway, with the datasets, on a failing case)")
    args = p.parse_args(argv)
    source = dut_source(args.dut)
    if source is None:
        return _fail(f"--dut {args.dut!r}: one of {', '.join(duts())}, or a Verilog file", 2)
    try:
        expected = parse_pairs(args.expect_unsupported)
    except ValueError as exc:
        return _fail(str(exc), 2)
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
    name = source.stem
    build = pathlib.Path(tempfile.mkdtemp(prefix=f"rtl-{name}-"))
    status = 2
    try:
        if not folders:
            folders = generate(build, args.cases, args.seed, args.per_class)
        try:
            result = simulate(name, folders, build / "sim", source=source, top=args.top)
        except BuildError as exc:
            return _fail(f"--dut {args.dut} --top {args.top}: does not build: {exc}", 2)
        status = report(name, result, expected, folders, build)
        return status
    finally:
        if args.keep or (status == 1 and any(build.glob("case-*"))):     # a failing case's files
            print(f"build folder: {build}", file=sys.stderr)
        else:
            shutil.rmtree(build, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
