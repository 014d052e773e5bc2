"""Lockstep of a SystemVerilog DUT with tile-emu through DPI-C, under Verilator (docs/cosim-c.md).

    python examples/dpi/run.py                      # te_dut.sv on fresh stream goldens: PASS
    python examples/dpi/run.py --seeded-bug         # the copy with a bug: FAIL at its first wrong element
    python examples/dpi/run.py --dataset STREAMS    # a stream golden dataset of your own (golden --streams)

It builds libtile_emu (`tile-emu cosim build`), turns every legal stream of the dataset into an
initial state file and a `$readmemh` word file, builds tb_lockstep.sv + te_dut.sv with
tile_emu_pkg.sv under Verilator (--binary), and runs it: the model steps every block through
DPI-C, the DUT executes the blocks it implements and each of its commits is compared with the
model's record.  Without --dataset it generates one with `tile-emu golden --streams` (legal
streams only: the DUT has no preflight).  Exit status: 0 every commit matches, 1 a difference (the
testbench's FAIL line, naming block, PE, tile and element with decoded values) or a damaged
dataset, 2 bad arguments, 3 Verilator, a C compiler or cffi missing (the line says what to
install).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT / "examples" / "rtl") not in sys.path:     # examples/rtl/flow.py: what the drivers share
    sys.path.insert(0, str(ROOT / "examples" / "rtl"))
import flow  # noqa: E402
from flow import tile_emu_env as _env  # noqa: E402
TOP = "tb_lockstep"


def missing_tools() -> str | None:
    """What to install, or None: Verilator, and what the library build needs."""
    if not shutil.which("verilator"):
        return "Verilator is not installed: apt-get install -y verilator"
    sys.path.insert(0, str(ROOT))
    from emulator.dpi.build import missing
    return missing()


def _fail(message: str, status: int) -> int:
    return flow.fail("run.py", message, status)


def generate(out: pathlib.Path, cases: int, seed: int, blocks: int) -> pathlib.Path:
    """A stream golden dataset made by `tile-emu golden --streams`, legal streams only, two
    streams a group (a group shares its stream: small groups give many different programs)."""
    return flow.golden("run.py", ["--streams", "--blocks", str(blocks), "--cases", str(cases), "--group-cases", "2",
                                  "--seed", str(seed), "--illegal-fraction", "0"], out / "streams", whole_stderr=True)


def stream_cases(dataset: pathlib.Path, out: pathlib.Path, limit: int | None = None):
    """Each legal stream of a stream golden dataset as (name, initial state file, .tbs stream),
    written into `out`: the initial machine rebuilt by emulator.golden from the stored layout,
    payloads and GPRs (docs/golden-format.md, 'Stream goldens'), the stream as stored."""
    sys.path.insert(0, str(ROOT))
    from emulator import MachineBatch
    from emulator.golden import streams_dataset as SD
    from emulator.golden.streams_replay import rebuild
    ds = SD.open_stream_dataset(dataset)
    made = []
    for part, chunk, rec in ds.files:
        t = ds.read(part, chunk, rec)
        for i in range(t.num_rows):
            row = t.slice(i, 1)
            if row.column("class")[0].as_py() != "legal":
                continue
            config, n, tiles, gprs, _ = rebuild(row, ds, rec["path"])
            name = f"{part.path.replace('/', '.').replace('=', '')}.c{row.column('case')[0].as_py()}"
            init = out / f"{name}.init.arrow"
            MachineBatch.from_stacks(config, n, tiles, "cpu", gprs=gprs).machine(0).save(init)
            tbs = out / f"{name}.tbs"
            tbs.write_bytes(row.column("stream")[0].as_py())
            made.append((name, init, tbs))
            if limit is not None and len(made) >= limit:
                return made
    return made


def word_file(tbs: pathlib.Path) -> tuple[pathlib.Path, int]:
    """The stream's words after its 16-byte header, one 16-digit hex word a line ($readmemh)."""
    data = tbs.read_bytes()[16:]
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, len(data), 8)]
    path = tbs.with_suffix(".hex")
    path.write_text("".join(f"{w:016x}\n" for w in words))
    return path, len(words)


def write_listing(cases, listing: pathlib.Path) -> pathlib.Path:
    """The testbench's +cases file: one `INIT WORDS.hex NWORDS NAME` line per case."""
    with listing.open("w") as f:
        for name, init, tbs in cases:
            hexfile, n = word_file(tbs)
            f.write(f"{init} {hexfile} {n} {name}\n")
    return listing


def build_library(out: pathlib.Path) -> pathlib.Path:
    done = subprocess.run([sys.executable, "-m", "emulator.cli", "cosim", "build", "--out", str(out)], env=_env(),
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(_fail(f"tile-emu cosim build failed: {done.stderr.strip()}", done.returncode))
    return out


def build_testbench(lib: pathlib.Path, out: pathlib.Path, seeded_bug: bool) -> pathlib.Path:
    """The Verilator binary of tb_lockstep + te_dut + tile_emu_pkg, linked with libtile_emu."""
    cmd = ["verilator", "--binary", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--top-module", TOP,
           "-I" + str(HERE), "--Mdir", str(out), "-o", TOP,
           "-LDFLAGS", f"{lib / 'libtile_emu.so'} -Wl,-rpath,{lib}",
           str(lib / "tile_emu_pkg.sv"), str(HERE / "te_dut.sv"), str(HERE / f"{TOP}.sv")]
    if seeded_bug:
        cmd.insert(1, "+define+SEEDED_BUG")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise SystemExit(_fail("Verilator failed:\n" + "\n".join(tail), 1))
    return out / TOP


def simulate(binary: pathlib.Path, cases_file: pathlib.Path, trace: bool = False) -> tuple[int, str]:
    args = [str(binary), f"+cases={cases_file}"] + (["+trace"] if trace else [])
    done = subprocess.run(args, capture_output=True, text=True, env=_env())
    out = done.stdout
    lines = [x for x in out.splitlines() if x.startswith(("PASS", "FAIL", "TRACE"))]
    verdict = [x for x in lines if not x.startswith("TRACE")]
    if done.returncode or not verdict:
        raise SystemExit(_fail(f"the simulation ended without a verdict (exit {done.returncode}):\n"
                               + "\n".join((out + done.stderr).splitlines()[-15:]), 1))
    return (0 if verdict[-1].startswith("PASS") else 1), "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", help="a stream golden dataset (tile-emu golden --streams); default: a new one")
    p.add_argument("--seeded-bug", action="store_true", help="build te_dut.sv with SEEDED_BUG (TSUB swaps its operands)")
    p.add_argument("--cases", type=int, default=16, help="streams per partition of the generated dataset")
    p.add_argument("--blocks", type=int, default=8, help="blocks per stream of the generated dataset")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--limit", type=int, help="run at most this many streams")
    p.add_argument("--trace", action="store_true", help="one line per block: executed by the DUT or by the model")
    p.add_argument("--keep", action="store_true", help="keep the build folder")
    args = p.parse_args(argv)
    if args.cases <= 0 or args.blocks <= 0 or (args.limit is not None and args.limit <= 0):
        return _fail("--cases, --blocks and --limit must be positive", 2)
    need = missing_tools()
    if need:
        return _fail(need, 3)
    with flow.scratch("dpi-", lambda _: args.keep) as work:
        dataset = pathlib.Path(args.dataset) if args.dataset else generate(work, args.cases, args.seed, args.blocks)
        from emulator.golden.dataset import GoldenError
        cases_dir = work / "cases"
        cases_dir.mkdir()
        try:
            cases = stream_cases(dataset, cases_dir, args.limit)
        except GoldenError as exc:
            return _fail(f"--dataset {dataset}: {exc}", 1)
        if not cases:
            return _fail(f"{dataset}: no legal stream to run", 1)
        listing = write_listing(cases, work / "cases.txt")
        lib = build_library(work / "lib")
        binary = build_testbench(lib, work / "obj", args.seeded_bug)
        status, text = simulate(binary, listing, args.trace)
        print(text)
        return status


if __name__ == "__main__":
    sys.exit(main())
