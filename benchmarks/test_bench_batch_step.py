"""Fixed cost of one MachineBatch.step on the shape of a stream-golden group (issue 17): 256
machines x 4 PEs of 1 x 8 tiles, a block over every PE, against the numeric call on the same
stacked (1024, 1, 8) operands, measured in the same run.

    python -m pytest benchmarks/test_bench_batch_step.py -q --benchmark-only

extra_info: "per_step_us" (the step's median), "numeric_us" (kernels.numeric.elementwise alone),
"fixed_us" (their difference: what a step costs besides the numeric work) and "calls_per_step"
(cProfile's count of the calls one step makes: a noise-free proxy of the fixed cost on a loaded
machine).  Each step gets a new Block object, as a golden stream's blocks are (its isa.legality
resolution is memoised on the object, so a reused Block would skip it); making it is not timed.
Run it from the tree it measures (pytest imports `emulator` from the rootdir).
"""
import cProfile
import pathlib
import pstats
import sys
import timeit

import numpy as np
import pytest

from emulator import Machine, MachineBatch, MachineConfig
from kernels import numeric

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "emulator"))
from emu_helpers import blk  # noqa: E402

MACHINES, ROWS, COLS = 256, 1, 8
CASES = {   # mnemonic, DataType, sources
    "TADD_S32": ("TADD", "S32", [1, 2]),
    "TMUL_FP32": ("TMUL", "FP32", [3, 4]),
}


def _batch():
    rng = np.random.default_rng(0)
    machines = []
    for _ in range(MACHINES):
        m = Machine(MachineConfig())
        for p in range(4):
            m.write_tile(p, 1, "S32", rng.integers(0, 2**31, (ROWS, COLS), dtype=np.uint64))
            m.write_tile(p, 2, "S32", rng.integers(0, 2**31, (ROWS, COLS), dtype=np.uint64))
            m.write_tile(p, 3, "FP32", (rng.random((ROWS, COLS), dtype=np.float32) + 1).view(np.uint32))
            m.write_tile(p, 4, "FP32", (rng.random((ROWS, COLS), dtype=np.float32) + 1).view(np.uint32))
        machines.append(m)
    return MachineBatch(machines)


def _operands(batch, tiles, dtype):
    """The sources of the block as the numeric call gets them: (4 * MACHINES, ROWS, COLS)."""
    raw = np.dtype(np.uint32)
    return [np.concatenate([e for _, _, e, _ in (batch.stacks(p, t)[0] for p in range(4))]).astype(raw)
            .reshape(-1, ROWS, COLS) for t in tiles]


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_fixed_cost(benchmark, case):
    mnemonic, dtype, sources = CASES[case]
    batch = _batch()
    def block():
        return blk(mnemonic, dtype, sources, 9, mask=0b1111, vc=COLS, vr=ROWS)
    assert len(batch.step(block())) == 4 * MACHINES        # every machine commits on every PE
    ops = _operands(batch, sources, dtype)
    n = 50
    numeric_s = min(timeit.repeat(lambda: numeric.elementwise(mnemonic, dtype, *ops), number=n, repeat=3)) / n
    fresh = block()
    prof = cProfile.Profile()
    prof.enable()
    batch.step(fresh)
    prof.disable()
    calls = pstats.Stats(prof).total_calls
    benchmark.pedantic(batch.step, setup=lambda: ((block(),), {}), rounds=300, warmup_rounds=10)
    per_step = benchmark.stats.stats.median
    assert batch.step_errors() == [None] * MACHINES
    benchmark.extra_info.update(machines=MACHINES, elements=4 * MACHINES * ROWS * COLS, per_step_us=per_step * 1e6,
                                numeric_us=numeric_s * 1e6, fixed_us=(per_step - numeric_s) * 1e6,
                                calls_per_step=calls)
