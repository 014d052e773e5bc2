"""The C ABI's boundary cost: one te_step from C against Machine.step from Python on the same
4-PE 16x16 FP32 TADD block, in the same process and the same run (issue 30: the boundary adds at
most 20%, ratio <= 1.2).

    python benchmarks/bench_cabi.py [--steps 1000] [--rounds 5]
    python -m pytest benchmarks/bench_cabi.py -q --benchmark-only      # the same, extra_info

It builds libtile_emu (emulator.dpi.build) and benchmarks/bench_te_step.c into a temporary
folder, writes the state (tiles 1 and 2: 16x16 FP32 on every PE) and the block's words, and runs
the driver: steps x rounds times, one te_step, one te_step + te_records (the records copied into
caller buffers) and one Machine.step in the embedded interpreter on the model's own machine and
Block object, alternating call by call; the medians of the single calls (`ratio` = te_step /
Machine.step).  Needs a C compiler, the Python headers and cffi (the line says what to install).
`tile-emu bench` has no such case: its cases time two Python callables, and this one is a C
program timing itself.
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIVER = pathlib.Path(__file__).with_name("bench_te_step.c")
BLOCK = """BSTART.VEC TADD, FP32
    B.IOT t1@0b1111, t2@0b1111 -> t3@0b1111
    B.DIM LB0=16, LB1=16
"""


def prepare(folder: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The state file and the block's word file."""
    import numpy as np
    import isa
    from emulator import Machine
    rng = np.random.default_rng(30)
    m = Machine()
    for pe in range(4):
        for t in (1, 2):
            m.write_tile(pe, t, "FP32", rng.standard_normal((16, 16)).astype(np.float32).view(np.uint32))
    init = folder / "init.arrow"
    m.save(init)
    words = np.frombuffer(isa.assemble(BLOCK)[16:], "<u8")
    hexfile = folder / "block.hex"
    hexfile.write_text("".join(f"{int(w):016x}\n" for w in words))
    return init, hexfile


def _numba_env() -> dict:
    """NUMBA_NUM_THREADS as this process has it (the driver's interpreter runs both sides)."""
    import os
    return {k: v for k, v in os.environ.items() if k.startswith("NUMBA_")}


def run(steps: int = 1000, rounds: int = 5) -> dict:
    sys.path.insert(0, str(ROOT))
    from emulator.dpi import build
    need = build.missing()
    if need:
        print(f"bench_cabi: {need}", file=sys.stderr)
        raise SystemExit(3)
    with tempfile.TemporaryDirectory(prefix="bench-cabi-") as tmp:
        folder = pathlib.Path(tmp)
        build.build(folder / "lib")
        lib = folder / "lib"
        exe = folder / "bench_te_step"
        py_inc = sysconfig.get_paths()["include"]
        libdir = sysconfig.get_config_var("LIBDIR")
        pyver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
        subprocess.run(["cc", "-O2", "-I", str(lib), "-I", py_inc, str(DRIVER), "-o", str(exe),
                        str(lib / "libtile_emu.so"), f"-L{libdir}", f"-lpython{pyver}",
                        f"-Wl,-rpath,{lib}", f"-Wl,-rpath,{libdir}"], check=True)
        init, hexfile = prepare(folder)
        done = subprocess.run([str(exe), str(init), str(hexfile), str(steps), str(rounds)], capture_output=True,
                              text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **_numba_env()})
        if done.returncode:
            raise SystemExit(f"bench_cabi: the driver failed: {done.stderr.strip()}")
        return json.loads(done.stdout.splitlines()[-1])


def test_te_step_against_machine_step(benchmark):
    import pytest
    sys.path.insert(0, str(ROOT))
    from emulator.dpi import build
    if build.missing():
        pytest.skip(build.missing())
    result = benchmark.pedantic(run, kwargs={"steps": 1000, "rounds": 5}, rounds=1, iterations=1)
    benchmark.extra_info.update(result)


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    r = run(a.steps, a.rounds)
    print(json.dumps(r))
    print(f"te_step {r['te_step_us']:.1f} us, Machine.step {r['machine_step_us']:.1f} us: ratio {r['ratio']:.3f} "
          f"(with te_records {r['ratio_with_records']:.3f})")
