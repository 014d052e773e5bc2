"""Batched execution throughput: TADD FP32 over 4,096 machines of 4 PEs x 16x16 tiles as one
MachineBatch block (the cpu backend), against a plain NumPy float32 add of the same stacked
arrays measured in the same run.

    python -m pytest benchmarks/bench_batch.py -q --benchmark-only
extra_info: machine_blocks_per_s (target >= 50,000 on the 2-core development box) and ratio
(baseline time / batch time).  `tile-emu bench --case batch --n 4194304` is the same case.

test_batch_chain_fused: a chain of 8 FP32 TADD/TMUL blocks over the same 4,096 machines, run
with MachineBatch.run(fuse=True) (one pass per cohort, emulator.fusion) against the same
stream unfused, interleaved in the same run; extra_info: both best-of-7 times and the ratio.
"""
import timeit

import numpy as np
import pytest

from emulator.commands.bench import batch_setup

MACHINES = 4096
ELEMENTS_PER_MACHINE = 4 * 16 * 16


@pytest.mark.parametrize("machines", [MACHINES])
def test_batch_tadd_fp32_16x16(benchmark, machines):
    ours, base = batch_setup(machines * ELEMENTS_PER_MACHINE)
    ours()
    base_s = min(timeit.repeat(base, number=5, repeat=3)) / 5
    result = benchmark(ours)
    assert result.ok
    per_block = benchmark.stats.stats.median
    benchmark.extra_info.update(machines=machines, machine_blocks_per_s=machines / per_block,
                                baseline_s=base_s, ratio=base_s / per_block)


def chain_setup(machines: int, rows: int = 16, cols: int = 16):
    """8 element-wise FP32 blocks (TADD, then TMUL/TADD alternating, each reading the previous
    result and tile 1 or 2) over `machines` machines built straight from stacked arrays."""
    from emulator import Machine, MachineBatch
    from isa import BDim, Block, BStart, TileBinding
    from isa.instructions import lookup

    m0 = Machine()
    rng = np.random.default_rng(0)
    tiles = {}
    for p in range(4):
        for t in (1, 2):
            m0.write_tile(p, t, "FP32", np.zeros((rows, cols), np.uint32))
            bits = (rng.random((machines, rows * cols), dtype=np.float32) + 1).view(np.uint32)
            tiles[(p, t)] = (m0.pes[p].tiles[t].desc, bits, np.ones((machines, rows * cols), bool))
    batch = MachineBatch.from_stacks(m0.config, machines, tiles)

    def block(mnemonic, a, b, dest):
        row = lookup(mnemonic)
        return Block(BStart(row.mode, row.function, 1, row.engine),
                     (TileBinding(a, 15), TileBinding(b, 15), TileBinding(dest, 15)), BDim(cols, rows))
    stream = [block("TADD", 1, 2, 3)] + [block("TMUL" if i % 2 == 0 else "TADD", 3 + i, 1 if i % 2 == 0 else 2, 4 + i)
                                         for i in range(7)]
    return batch, stream


@pytest.mark.parametrize("machines", [MACHINES])
def test_batch_chain_fused(benchmark, machines):
    batch, stream = chain_setup(machines)
    assert batch.run(stream, fuse=True).fused == [(0, len(stream))]
    # interleaved, best of 7 each: the box's load moves both alike
    unfused, fused = [], []
    for _ in range(7):
        unfused.append(timeit.timeit(lambda: batch.run(stream), number=1))
        fused.append(timeit.timeit(lambda: batch.run(stream, fuse=True), number=1))
    unfused_s, fused_s = min(unfused), min(fused)
    result = benchmark(lambda: batch.run(stream, fuse=True))
    assert result.ok and result.fused
    benchmark.extra_info.update(machines=machines, blocks=len(stream), unfused_s=unfused_s, fused_s=fused_s,
                                machine_blocks_per_s=machines * len(stream) / fused_s, ratio=unfused_s / fused_s)
