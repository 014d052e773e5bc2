"""Element-wise numeric throughput (kernels.numeric.elementwise) against plain-library baselines.

    python -m pytest benchmarks/bench_numeric.py -q --benchmark-only -s

The cases are the `numeric.*` and `profile.*` rows of `tile-emu bench` (emulator/commands/bench.py):
TADD, TMUL, TFMA, TEXP on E4M3, BF16, FP16 and FP32, 2^20 elements of typical data (normal(0, 1);
TEXP uniform in [-8, 8]); TCVT FP32 -> FP16 / BF16 against NumPy's astype(float16) / ml_dtypes'
astype(bfloat16) (target 1x); profile a5's TRSQRT, TREM, TDIV on FP16 against the same operation
under profile ieee (target 0.5: within 2x).  Baselines, timed in the same run: the ml_dtypes round trip through float32
for E4M3 and BF16, NumPy's own float16/float32 operation for FP16/FP32 (its exp is not correctly
rounded, its a*b+c rounds twice).  extra_info records elements/s of both and ratio = baseline
time / our time.  Targets (each case's `target`, issue 9): 8-bit >= 4x, BF16 TADD/TMUL >= 1x
(other BF16 0.5x), FP16 >= 2x, FP32 TADD/TMUL/TFMA >= 0.5x, FP32 TEXP >= 0.25x.
"""
import timeit

import numpy as np
import pytest

from emulator.commands.bench import CASES, warm_up

pytest.importorskip("ml_dtypes")

N = 1 << 20
NUMERIC = [c for c in CASES if c.name.startswith(("numeric.", "profile."))]


@pytest.mark.parametrize("case", NUMERIC, ids=[c.name for c in NUMERIC])
def test_elementwise(benchmark, case):
    ours, base = case.setup(N)
    with np.errstate(all="ignore"):
        warm_up(ours)                       # untimed until settled: compile, build tables, lazy paths
        warm_up(base)
        t_base = min(timeit.repeat(base, number=1, repeat=7))
        benchmark.pedantic(ours, rounds=15, iterations=1, warmup_rounds=1)
    t = benchmark.stats.stats.min
    benchmark.extra_info.update(elements=N, Melem_s=round(N / t / 1e6, 1), baseline_Melem_s=round(N / t_base / 1e6, 1),
                                baseline=case.baseline, ratio=round(t_base / t, 2), target=case.target)
    print(f"\n{case.name}: {N / t / 1e6:.0f} M elem/s, baseline {N / t_base / 1e6:.0f} M elem/s, "
          f"ratio {t_base / t:.2f}" + (f" (target {case.target})" if case.target else ""))
