"""Our side of the peer comparison (benchmarks/peer/run_peer.sh): the same cases and shapes as
peer_driver.cpp, through tile-emu's public Python API, one line per case in the driver's format
("case<TAB>elements<TAB>seconds<TAB>elem/s", best of --rounds rounds).

  numeric layer: kernels.numeric.elementwise / convert on the raw encodings of all the case's tiles
                 in one call (FP32 4 x 128x128, FP16 16384 x 16x16, TCVT 4 x 128x128);
  machine:       Machine(backend="cpu").execute of one TADD/TMUL/TFMA FP32 block on 4 PEs x 128x128 (target 1),
                 and of one TCVT FP32 -> FP16 block (numeric layer: convert, and convert_status);
  batch:         `tile-emu bench`'s batch.TADD.FP32.16x16 case (4,096 machines x 4 PEs x 16x16, target 4).

Values are drawn from the same ranges as the driver's (TSQRT from [0.5, 2), TFMA's multiplier from
[0.5, 0.9) and addend from [0.1, 0.5)), so neither side meets special values.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from kernels import numeric

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loops import best_per_call, p10_per_call  # noqa: E402  (benchmarks/loops.py)

MIN_SECONDS = 0.2
# PEER_CLOCK=cpu: this process's CPU time, as peer_driver.cpp reads it (run_peer.sh); else the wall clock
CLOCK = time.process_time if os.environ.get("PEER_CLOCK") == "cpu" else time.perf_counter


PERCALL = int(os.environ.get("PEER_PERCALL", "0") or 0)    # as peer_driver.cpp: the 10th percentile of N calls


def timed(name: str, elements: int, fn, rounds: int) -> None:
    best = p10_per_call(fn, PERCALL, CLOCK) if PERCALL > 0 else best_per_call(fn, rounds, CLOCK, MIN_SECONDS)
    print(f"{name}\t{elements}\t{best:.9g}\t{elements / best:.6g}", flush=True)


def draw(rng, shape, lo, hi, np_type):
    return rng.uniform(lo, hi, shape).astype(np_type)


def binary_cases(dt: str, np_type, raw, shape, label, rounds, rng):
    n = int(np.prod(shape))
    a, b = (draw(rng, shape, 0.5, 2.0, np_type).view(raw) for _ in range(2))
    m, c, d = draw(rng, shape, 0.5, 0.9, np_type).view(raw), draw(rng, shape, 0.1, 0.5, np_type).view(raw), \
        draw(rng, shape, 0.5, 2.0, np_type).view(raw)
    for op in ("TADD", "TSUB", "TMUL", "TDIV"):
        timed(f"{op}.{dt}.{label}", n, lambda op=op: numeric.elementwise(op, dt, a, b), rounds)
    timed(f"TSQRT.{dt}.{label}", n, lambda: numeric.elementwise("TSQRT", dt, a), rounds)
    timed(f"TFMA.{dt}.{label}", n, lambda: numeric.elementwise("TFMA", dt, m, d, c), rounds)


def machine_cases(rounds, rng):
    """One Machine, 4 PEs x 128x128 FP32, one block per call through Machine.execute."""
    from emulator import Machine
    from isa import BDim, Block, BStart, TileBinding
    from isa.assembly import assemble_blocks
    from isa.instructions import lookup
    rows = cols = 128
    m = Machine(backend="cpu")              # the fast engine (the reference backend keeps no speed caches)
    # Three 64 KiB tiles per PE (a fourth does not fit the 256 KiB local store next to them): the
    # destination is tile 3, and TFMA computes t3 = t1 * t3 + t2, which converges (t1 < 1).
    for p in range(4):
        for t, (lo, hi) in ((1, (0.5, 0.9)), (2, (0.1, 0.5)), (3, (0.5, 2.0))):
            m.write_tile(p, t, "FP32", draw(rng, (rows, cols), lo, hi, np.float32).view(np.uint32))
    for op in ("TADD", "TMUL", "TFMA"):
        row = lookup(op)
        srcs = (1, 3, 2) if op == "TFMA" else (1, 2)
        binds = tuple(TileBinding(t, 15) for t in srcs) + (TileBinding(3, 15),)
        block = Block(BStart(row.mode, row.function, 1, row.engine), binds, BDim(cols, rows))
        timed(f"machine.{op}.FP32.4x128x128", 4 * rows * cols, lambda block=block: m.execute(block), rounds)
    # TCVT FP32 -> FP16 RNE into a fourth tile (FP16: 32 KiB a PE); no compiled block program covers
    # TCVT yet, so this is the per-block Python path around convert_status (docs/machine.md)
    (block,) = assemble_blocks(f"BSTART.VEC TCVT, FP32\nB.IOT t1@0b1111 -> t4@0b1111\n"
                               f"B.DIM LB0={cols}, LB1={rows}\nB.DATR DataType=FP16, RMode=RNE")
    timed("machine.TCVT.FP32-FP16.4x128x128", 4 * rows * cols, lambda: m.execute(block), rounds)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(32)
    binary_cases("FP32", np.float32, np.uint32, (4, 128, 128), "4x128x128", args.rounds, rng)
    binary_cases("FP16", np.float16, np.uint16, (16384, 16, 16), "16384x16x16", args.rounds, rng)
    try:
        import ml_dtypes
        binary_cases("BF16", ml_dtypes.bfloat16, np.uint16, (16384, 16, 16), "16384x16x16", args.rounds, rng)
    except ImportError:
        pass
    x = draw(rng, (4, 128, 128), -100, 100, np.float32).view(np.uint32)
    h = draw(rng, (4, 128, 128), -100, 100, np.float16).view(np.uint16)
    timed("TCVT.FP32-FP16.4x128x128", x.size, lambda: numeric.convert(x, "FP32", "FP16", rmode="RNE"), args.rounds)
    timed("TCVT.FP16-FP32.4x128x128", h.size, lambda: numeric.convert(h, "FP16", "FP32"), args.rounds)
    # the same conversion with each PE's status (the OR of its flags) instead of a flag per element:
    # what a TCVT block keeps.  Bound once, as `from kernels.numeric import convert_status` binds it:
    # the package resolves a name that is not a submodule's own on every access (about 1.2 us)
    convert_status = numeric.convert_status
    timed("TCVT.FP32-FP16.status.4x128x128", x.size,
          lambda: convert_status(x, "FP32", "FP16", 4, rmode="RNE"), args.rounds)
    try:
        machine_cases(args.rounds, rng)
    except Exception as e:                       # report, keep the other figures
        print(f"# machine cases skipped: {type(e).__name__}: {e}", file=sys.stderr)
    from emulator.commands.bench import CASES
    (case,) = [c for c in CASES if c.name == "batch.TADD.FP32.16x16"]
    ours, _ = case.setup(4096 * 4 * 256)
    timed("batch.TADD.FP32.4096x4x16x16", 4096 * 4 * 256, ours, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
