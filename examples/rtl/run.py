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
import pathlib
import sys

import flow     # examples/rtl/flow.py: its folder is on sys.path (as a script, or tests/examples_loader.py)
from flow import BuildError, missing_cocotb as missing_tools  # noqa: F401

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


def generate(out: pathlib.Path, cases: int | None = None, seed: int = 7, per_class: int = 1) -> list[pathlib.Path]:
    """Two datasets made with `tile-emu golden` (ops x DataTypes is a cross product): `cases` per
    partition, or by default `per_class` cases of every coverage point (closure)."""
    sets = {"int": (INT_OPS, INTS), "e4m3": (E4M3_OPS, "E4M3")}
    size = ["--cases", str(cases)] if cases is not None else ["--per-class", str(per_class)]
    return [flow.golden("run.py", ["--ops", ops, "--dtypes", dtypes, *size, "--seed", str(seed)],
                        out / f"golden-{name}") for name, (ops, dtypes) in sets.items()]


def _fail(message: str, status: int) -> int:
    return flow.fail("run.py", message, status)


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


def simulate(dut: str, folders, build: pathlib.Path, source: pathlib.Path | None = None, top: str = TOPLEVEL) -> dict:
    """Build the DUT (`source`, default examples/rtl/DUT.v; module `top`) and run the testbench
    over the datasets."""
    return flow.cocotb_run("run.py", source or HERE / f"{dut}.v", top, "tb_alu", folders, build)


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
    stop, folders = flow.inputs("run.py", missing_tools(), check_datasets, args.dataset)
    if stop is not None:
        return stop
    name = source.stem
    status = 2
    # kept with --keep, or with a failing case's files
    with flow.scratch(f"rtl-{name}-", lambda b: args.keep or (status == 1 and any(b.glob("case-*")))) as build:
        if not folders:
            folders = generate(build, args.cases, args.seed, args.per_class)
        try:
            result = simulate(name, folders, build / "sim", source=source, top=args.top)
        except BuildError as exc:
            return _fail(f"--dut {args.dut} --top {args.top}: does not build: {exc}", 2)
        status = report(name, result, expected, folders, build)
        return status


if __name__ == "__main__":
    sys.exit(main())
