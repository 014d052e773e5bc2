"""Build the multi-block tile machine (machine.v) with Icarus Verilog and score it against stream
goldens through cocotb, block by block, with the lockstep scoreboard (emulator.cosim).

    python examples/rtl/run_machine.py                        # machine.v: every block matches
    python examples/rtl/run_machine.py --dut machine_bug      # exit 1, the first divergence decoded
    python examples/rtl/run_machine.py --max-fails 5          # go on after a failing stream
    python examples/rtl/run_machine.py --dataset DIR          # a stream dataset of your own (repeatable)

Without --dataset it generates one with `tile-emu golden --streams` constrained to the machine's
subset (--ops SUBSET_OPS --dtypes SUBSET_DTYPES; docs/rtl-machine.md).  Exit status: 0 every
block matches, 1 a block diverges (or the bench cannot run a stream, or a dataset is damaged),
2 bad arguments, 3 Icarus Verilog or cocotb is not installed.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import flow     # examples/rtl/flow.py: its folder is on sys.path (as a script, or tests/examples_loader.py)
from flow import missing_cocotb as missing_tools  # noqa: F401

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUBSET_OPS = "TADD,TSUB,TMUL,TAND,TOR,TXOR,TSHL,TSHR,TMAX,TMIN,TSEL"
SUBSET_DTYPES = "S8,S16,S32,U8,U16,U32"
DUTS = ("machine", "machine_bug")
TOPLEVEL = "machine"


def _fail(message: str, status: int) -> int:
    return flow.fail("run_machine.py", message, status)


def generate(out: pathlib.Path, cases: int, blocks: int, seed: int, group_cases: int,
             illegal: float) -> pathlib.Path:
    """A stream dataset of the machine's subset made with `tile-emu golden --streams`."""
    return flow.golden("run_machine.py", ["--streams", "--ops", SUBSET_OPS, "--dtypes", SUBSET_DTYPES, "--blocks",
                                          str(blocks), "--cases", str(cases), "--group-cases", str(group_cases),
                                          "--seed", str(seed), "--illegal-fraction", str(illegal)],
                       out / "streams")


def check_datasets(folders) -> str | None:
    """A damaged or non-stream dataset is one line, before any build."""
    sys.path.insert(0, str(ROOT))
    from emulator.golden.dataset import GoldenError
    from emulator.golden.streams_dataset import is_stream_dataset, open_stream_dataset
    for f in folders:
        try:
            if not is_stream_dataset(f):
                return f"--dataset {f}: not a stream golden dataset (tile-emu golden --streams)"
            open_stream_dataset(f)
        except GoldenError as exc:
            return f"--dataset {f}: {exc}"
    return None


def simulate(dut: str, folders, build: pathlib.Path, max_fails: int) -> dict:
    """Build the DUT and run tb_machine over the datasets; its result JSON."""
    return flow.cocotb_run("run_machine.py", HERE / f"{dut}.v", TOPLEVEL, "tb_machine", folders, build,
                           {"TB_MAX_FAILS": str(max_fails)})


def report(dut: str, r: dict) -> int:
    if r.get("error"):
        return _fail(f"the testbench stopped on an error: {r['error']}", 1)
    classes = ", ".join(f"{v} {k}" for k, v in sorted(r["classes"].items()))
    for e in r["errors"]:
        print(f"{dut}: ERROR: {e}")
    if not r["failures"] and not r["errors"]:
        print(f"{dut}: PASS: {r.get('probes', 0):,} boundary blocks, {r['streams']:,} streams ({classes}), "
              f"{r['blocks']:,} blocks, "
              f"{r['commits']:,} commit records and {r['faults']:,} faults match the golden records")
        return 0 if r["blocks"] else _fail("no block was driven: the datasets hold no stream", 1)
    for f in r["failures"]:
        print(f"{dut}: FAIL: {f['file']}: case {f['case']} ({f['class']}) block {f['block']}: {f['asm']}")
        print(f"  {f['difference']}")
        if f.get("sources"):
            print(f"  sources there (golden, before the block): {f['sources']}")
    print(f"  ({len(r['failures'])} failing stream(s); {r.get('probes', 0):,} boundary blocks and "
          f"{r['blocks']:,} blocks driven, "
          f"{r['commits']:,} commit records and {r['faults']:,} faults matched)")
    return 1


def parser() -> argparse.ArgumentParser:
    """The command line (mutate.py reads the generated dataset's defaults from it)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dut", default="machine", help=f"the Verilog DUT in examples/rtl ({', '.join(DUTS)})")
    p.add_argument("--dataset", action="append", default=[], help="a stream golden dataset folder (repeatable)")
    p.add_argument("--cases", type=int, default=24, help="streams per shape class of the generated dataset (24)")
    p.add_argument("--blocks", type=int, default=8, help="blocks per stream of the generated dataset (8)")
    p.add_argument("--group-cases", type=int, default=2,
                   help="streams sharing one program in the generated dataset (2: many programs)")
    p.add_argument("--illegal-fraction", type=float, default=0.5,
                   help="streams of the generated dataset with a planted illegal block (0.5: every rejection class)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--max-fails", type=int, default=1, help="failing streams to report before stopping (1)")
    p.add_argument("--keep", action="store_true", help="keep the build folder (logs, dataset)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.dut not in DUTS:
        return _fail(f"--dut {args.dut!r}: one of {', '.join(DUTS)}", 2)
    for name in ("cases", "blocks", "group_cases", "max_fails"):
        if getattr(args, name) <= 0:
            return _fail(f"--{name.replace('_', '-')} must be positive", 2)
    if not 0 <= args.illegal_fraction <= 1:
        return _fail("--illegal-fraction must be between 0 and 1", 2)
    stop, folders = flow.inputs("run_machine.py", missing_tools(), check_datasets, args.dataset)
    if stop is not None:
        return stop
    with flow.scratch(f"rtl-{args.dut}-", lambda _: args.keep) as build:
        if not folders:
            folders = [generate(build, args.cases, args.blocks, args.seed, args.group_cases,
                                args.illegal_fraction)]
        return report(args.dut, simulate(args.dut, folders, build / "sim", args.max_fails))


if __name__ == "__main__":
    sys.exit(main())
