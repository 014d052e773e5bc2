"""The batch engine's fused pass on results smaller than their destination tiles: 4,096 machines
x 4 PEs of 16x16 FP32 tiles with a 14x14 valid rectangle, TADD into 16x16 destination tiles
(capacity 1 KiB, so 60 elements a tile are padding), against NumPy's float32 add of the same
stacked tiles (the ratio's baseline, as the `batch.TADD.FP32.16x16` case of `tile-emu bench`).
Each figure is the 10th percentile of 100 single calls on the process's CPU clock, ours and the
baseline alternating; compare trees by their ratios, run alternately.

    NUMBA_NUM_THREADS=1 python benchmarks/bench_batch_padded.py [PAD]

PAD: B.DATR's PadValueOrByteId code (0 ZERO, 1 MAX, 2 MIN, 3 NULL; omitted: NULL).
"""
import os
import sys
import time

import numpy as np

from emulator import Machine, MachineBatch
from isa import BDatr, BDim, Block, BStart, TileBinding
from isa.instructions import lookup
from loops import p10_per_call       # benchmarks/loops.py, beside this script

MACHINES, VALID = 4096, 14


def setup(pad: int | None):
    """(the batch's run of the block, NumPy's add of the same tiles)."""
    rng = np.random.default_rng(0)
    a, b = ((rng.random((MACHINES, 4, 16, 16), dtype=np.float32) + 1).view(np.uint32) for _ in range(2))
    first = Machine()
    for p in range(4):
        for t, x in ((1, a), (2, b)):
            first.write_tile(p, t, "FP32", x[0, p], valid_row=VALID, valid_col=VALID)
    tiles = {(p, t): (first.pes[p].tiles[t].desc, np.ascontiguousarray(x[:, p].reshape(MACHINES, -1)),
                      np.ones((MACHINES, 256), bool))
             for p in range(4) for t, x in ((1, a), (2, b))}
    batch = MachineBatch.from_stacks(first.config, MACHINES, tiles)
    row = lookup("TADD")
    block = Block(BStart(row.mode, row.function, 1, row.engine),
                  (TileBinding(1, 15), TileBinding(2, 15), TileBinding(3, 15, 16 * 16 * 4)), BDim(VALID, VALID, 16),
                  None if pad is None else BDatr(PadValueOrByteId=pad))
    assert batch.run([block]).ok
    fa, fb = a.view(np.float32), b.view(np.float32)
    return (lambda: batch.run([block])), (lambda: np.add(fa, fb))


def main() -> None:
    pad = int(sys.argv[1]) if len(sys.argv) > 1 else None
    run, base = setup(pad)
    for rnd in range(2):
        ours, numpy = p10_per_call(run, 100, time.process_time), p10_per_call(base, 100, time.process_time)
        print(f"round {rnd}: PadValue code {pad}: batch {ours * 1e3:.2f} ms a call, NumPy add {numpy * 1e3:.2f} ms, "
              f"ratio {numpy / ours:.2f}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
