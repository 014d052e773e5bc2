"""Batched execution throughput: TADD FP32 over 4,096 machines of 4 PEs x 16x16 tiles as one
MachineBatch block (the cpu backend), against a plain NumPy float32 add of the same stacked
arrays measured in the same run.

    python -m pytest benchmarks/bench_batch.py -q --benchmark-only
extra_info: machine_blocks_per_s (target >= 50,000 on the 2-core development box) and ratio
(baseline time / batch time).  `tile-emu bench --case batch --n 4194304` is the same case.
"""
import timeit

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
